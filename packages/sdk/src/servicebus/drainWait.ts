// How long a session receiver waits for the broker to answer a credit drain. Why: every receiveMessages() that
// ends with credit left (fewer messages than asked for, or none) drains the link, and @azure/service-bus 7.9 waits
// a fixed 200 ms for the broker's answer; past that it closes the link. For a session receiver that close is fatal:
// the session is gone, every message of the batch still locked fails to settle ("The session lock has expired")
// and comes back with a delivery spent, and the next call on the receiver fails the same way. On a loaded machine
// (the embedded stack runs broker, store, resolver and endpoints on one event loop) the answer often takes longer
// than 200 ms: the Resolver and the endpoints lost session after session, backed off, and a resubmitted credit hold
// and its parked siblings took about 90 s to complete instead of 2 s.
//
// The bound lives in the receiver's batching receiver (an internal of @azure/service-bus, checked here): when it is
// not there (another version, a mock), the receiver is left as it is. A longer wait costs nothing when the broker
// answers (the receive returns on the answer) and a stop does not wait for it (the receive's abort signal ends it).
import type { ServiceBusSessionReceiver } from '@azure/service-bus';

/** Default wait for a drain answer: well above an event loop's lag under load, well below a lock duration. */
export const SESSION_DRAIN_WAIT_MS = 5_000;

interface BatchingReceiverLike {
  _drainTimeoutInMs?: unknown;
}

/**
 * Lets `receiver` wait up to `waitMs` for the broker's answer to a drain instead of the client's 200 ms, so a slow
 * answer no longer costs the session. Returns the receiver (a client without the internal keeps its own bound).
 */
export function tolerateSlowDrain<R extends ServiceBusSessionReceiver>(
  receiver: R,
  waitMs: number = SESSION_DRAIN_WAIT_MS,
): R {
  const session = (receiver as unknown as { _messageSession?: { _batchingReceiverLite?: BatchingReceiverLike } })
    ._messageSession;
  const batching = session?._batchingReceiverLite;
  if (batching && typeof batching._drainTimeoutInMs === 'number') batching._drainTimeoutInMs = Math.max(0, waitMs);
  return receiver;
}
