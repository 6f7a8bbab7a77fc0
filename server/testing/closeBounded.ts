// The close of a Service Bus sender or receiver that a test helper opened itself, with a bound. A close met by a
// dropped connection never ends by itself (rhea-promise 3.0.3; @nimbus/sdk/servicebus boundedClose): awaited
// unbounded in a helper, it stalled the whole test file until the runner's 20 min file timeout. The SDK's e2e harness
// bounds its own the same way (packages/sdk/e2e/harness.ts closeBounded); held by server/testing/helperClose.test.ts.
import { boundedClose } from '@nimbus/sdk/servicebus';

/** How long a helper waits for one close: well above a healthy close on a loaded machine. */
export const HELPER_CLOSE_TIMEOUT_MS = 10_000;

/**
 * Closes `part`, waiting at most HELPER_CLOSE_TIMEOUT_MS. A close that fails in time still throws; one given up is
 * said on stderr (a test that then fails shows why its ending took the bound) and the helper goes on.
 */
export async function closeBounded(what: string, part: { close(): Promise<void> }): Promise<void> {
  await boundedClose(`closing ${what}`, () => part.close(), {
    timeoutMs: HELPER_CLOSE_TIMEOUT_MS,
    logger: { warn: (_details, message) => void process.stderr.write(`test helper: ${message}\n`) },
  });
}
