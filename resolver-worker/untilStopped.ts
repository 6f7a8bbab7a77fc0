// A wait that a stop ends. Why: stop() must not wait on the store (a write, a probe) when the store is slow or does
// not answer: the Cosmos client's own time-out is a minute, with retries after it. The work itself cannot be called
// back once sent; it goes on unawaited, and whoever raced it treats its message as not resolved (left unsettled, so
// it comes back with its session and its copy is absorbed by the idempotent history and the guard).
// The race itself is lib/concurrency/deadline.ts's, with the stop signal as its only limit.
import { DEADLINE_PASSED, raceDeadline } from '../lib/concurrency/deadline.ts';

/** What untilStopped gives when the signal won. */
export const STOPPED: typeof DEADLINE_PASSED = DEADLINE_PASSED;

/**
 * `work`'s result, or STOPPED as soon as `signal` aborts (at once if it already has). A rejection of `work` after
 * that is observed here (no unhandled rejection) and dropped.
 */
export function untilStopped<T>(work: Promise<T>, signal: AbortSignal): Promise<T | typeof STOPPED> {
  return raceDeadline(work, { signal });
}
