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

const closeGuarded = Symbol('nimbus.drainCloseGuarded');

/** Default wait for a drain answer: well above an event loop's lag under load, well below a lock duration. */
export const SESSION_DRAIN_WAIT_MS = 5_000;

interface BatchingReceiverLike {
  _drainTimeoutInMs?: unknown;
  tryDrainReceiver?: unknown;
  [closeGuarded]?: true;
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
  if (batching) guardDrainClose(batching);
  return receiver;
}

/**
 * When no drain answer comes in time the client closes the link, from a timer that does not catch: if that close
 * fails - the broker detached the link with an error meanwhile, e.g. the session lock ran out while the answer was
 * late (an event loop held up for seconds) - its rejection is unhandled, and under Node's default an unhandled
 * rejection ends the process. Seen in a loaded CI run: the Resolver's receiver on a demo session, "The session lock
 * on 'CUST-2001' expired.". The close's failure is dropped here: the link is gone either way, the receive resolves
 * with what it had (as after a close that succeeds), and the next call on the receiver reports the lost session.
 */
function guardDrainClose(batching: BatchingReceiverLike): void {
  const drain = batching.tryDrainReceiver;
  if (typeof drain !== 'function' || batching[closeGuarded]) return;
  batching.tryDrainReceiver = async function (this: unknown, ...args: unknown[]): Promise<void> {
    try {
      await (drain as (...a: unknown[]) => Promise<void>).apply(this, args);
    } catch {
      // the link was closed with an error: see above
    }
  };
  batching[closeGuarded] = true;
}
