// Closing a receiver or sender that one request (or one job step) opened for itself: a dead-letter peek or purge, a
// Reconcile session inspection or repair. Bounded because in rhea-promise 3.0.3 a close that is waiting for the
// broker's answer when the connection drops never settles (packages/sdk/src/servicebus/boundedClose.ts): a purge's
// receiver close met by a broker restart left the POST unanswered for ever, and the audit after it unwritten
// (server/subscriptions/closeDrop.test.ts). The request's work is done by then, so the close is given up with a
// warning and the request answers; the abandoned close goes on in the background.
import { boundedClose } from '@nimbus/sdk/servicebus';
import { log } from './log.ts';

/**
 * How long a request waits for the close of a part it opened. Shorter than the SDK's 30 s default: an operator is
 * waiting for the answer, and a healthy close takes milliseconds (seconds on a loaded machine).
 */
export const REQUEST_CLOSE_TIMEOUT_MS = 10_000;

/**
 * Closes `part`, waiting at most REQUEST_CLOSE_TIMEOUT_MS; never throws (a failed close of a part the request is done
 * with changes nothing in its answer). `details` go to the warning: entity names, never a connection string or body.
 */
export async function closeForRequest(what: string, part: { close(): Promise<void> }, details?: Record<string, unknown>): Promise<void> {
  await boundedClose(`closing ${what}`, () => part.close(), { timeoutMs: REQUEST_CLOSE_TIMEOUT_MS, logger: log, details }).catch(() => undefined);
}
