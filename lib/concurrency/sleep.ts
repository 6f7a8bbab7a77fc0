// A wait that a signal can cut short. Why one helper: the Resolver's retries and probes, the operations runner's
// rate limit and the agent zone's long-poll each wrote it by hand, and a hand-written one easily keeps its timer
// after an abort or its abort listener after the time (one listener per wait on a signal that lives as long as the
// process), or waits out the whole time on a signal that aborted before the wait began (an abort event fires once).
// Node's timers/promises setTimeout rejects on abort; every caller here treats a stop as an ordinary end of the
// wait, so this one resolves and says which ended it.
import { MAX_TIMER_MS } from './deadline.ts';

/**
 * Waits `ms` milliseconds: true when the time passed, false when `signal` aborted first (at once if it already
 * had). Either way its timer is cleared and its abort listener removed. Infinity, or more than a timer can hold
 * (~24.8 days), sets no timer: only the signal ends the wait.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    // Not `ms <= MAX_TIMER_MS`: a NaN delay keeps setTimeout's reading of it (1 ms), as the hand-written waits did.
    if (!(ms > MAX_TIMER_MS)) {
      timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      }, Math.max(0, ms));
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
