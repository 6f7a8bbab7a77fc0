// Closing a Service Bus part (a client, a sender, a receiver) with a bound. Why: in rhea-promise 3.0.3 (under
// @azure/service-bus 7.9) the close of a link, session or connection that is waiting for the broker's answer when
// the connection drops never settles: its `disconnected` handler clears the operation timer and neither resolves
// nor rejects. A broker that drops the socket just as a host closes (a broker restart during a rolling stop) left
// `await sender.close()` pending for ever, and every step the caller meant to take after it (closing the client,
// the process's own exit path) with it. Measured in packages/sdk/e2e/closeDrop.test.ts: a sender's, a receiver's
// and a client's close still pending 75 s after the drop (past rhea's own 60 s operation timeout).
//
// The close cannot be cancelled: given up, it goes on in the background and its late failure is dropped. The bound's
// timer is cleared as soon as the close settles or the bound passes, so it never outlives the wait; while the close
// runs it keeps the process alive (at most the bound), so the caller's later steps still run.
import { boundedCall, OperationTimeoutError } from '../boundedCall.ts';

/** The bound when the caller has no operation timeout of its own: above rhea's healthy close, well below "for ever". */
export const DEFAULT_CLOSE_TIMEOUT_MS = 30_000;

/** What boundedClose logs to: a pino Logger fits, and so does anything with a `warn(object, message)`. */
export interface CloseLogger {
  warn(details: object, message: string): void;
}

export interface BoundedCloseOptions {
  /** How long the close is waited for. Default DEFAULT_CLOSE_TIMEOUT_MS (30 s). */
  timeoutMs?: number | undefined;
  /** Told when the close is abandoned; nothing is logged otherwise. */
  logger?: CloseLogger | undefined;
  /** Added to the log line (an endpoint id, an entity name); never a connection string or a payload. */
  details?: Record<string, unknown> | undefined;
}

/**
 * Runs `close` and waits for it at most `timeoutMs`. Resolves 'closed' when it settled in time, rejects with its
 * error when it failed in time, and resolves 'abandoned' (after a warning naming `what` and the bound) when it had not
 * settled by then: the caller goes on closing the rest.
 */
export async function boundedClose(
  what: string,
  close: () => PromiseLike<unknown> | unknown,
  options: BoundedCloseOptions = {},
): Promise<'closed' | 'abandoned'> {
  const timeoutMs = Math.max(1, options.timeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
  try {
    await boundedCall(what, async () => close(), { timeoutMs });
    return 'closed';
  } catch (error) {
    if (!(error instanceof OperationTimeoutError && error.operation === what)) throw error;
    options.logger?.warn(
      { ...options.details, close: what, timeoutMs },
      `${what} did not end within ${timeoutMs} ms (connection dropped?); abandoned, closing the rest`,
    );
    return 'abandoned';
  }
}
