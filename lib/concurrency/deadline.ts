// A wait with a limit: a promise raced against a time limit and/or an AbortSignal. Why one helper: the store's
// settle pass, its close, the counter flush and the Resolver's stop all give up on work that a slow or silent store
// may hold for the Cosmos client's own time-out (30 s and more), and each wrote the same race by hand (a timer to
// clear, sometimes to unref, a late rejection to observe). The work itself is not cancelled here: whoever gives up
// and can cancel it (an AbortSignal passed to the client) does so on DEADLINE_PASSED.

/** setTimeout's longest delay (about 24.8 days); it takes a longer one, and Infinity, as 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** What raceDeadline gives when the limit won (the time ran out or the signal aborted). */
export const DEADLINE_PASSED: unique symbol = Symbol('deadline passed');

export interface Deadline {
  /** Milliseconds the work is given; none, Infinity (or more than a timer can hold, ~24.8 days) for no time limit. */
  ms?: number;
  /** The limit wins as soon as this aborts, at once if it already has. */
  signal?: AbortSignal;
  /** The timer does not keep the process alive (a background pass); default false: a wait someone awaits. */
  unref?: boolean;
}

/**
 * `work`'s result (or its rejection) when it settles first, DEADLINE_PASSED when the limit wins. The timer is cleared
 * and the signal's listener removed either way. A rejection of `work` after the limit won is observed here (no
 * unhandled rejection) and dropped.
 */
export function raceDeadline<T>(work: Promise<T>, deadline: Deadline): Promise<T | typeof DEADLINE_PASSED> {
  const { ms, signal, unref = false } = deadline;
  if (signal?.aborted) {
    work.catch(() => undefined);
    return Promise.resolve(DEADLINE_PASSED);
  }
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const passed = new Promise<typeof DEADLINE_PASSED>((resolve) => {
    if (ms !== undefined && ms <= MAX_TIMER_MS) {
      timer = setTimeout(() => resolve(DEADLINE_PASSED), Math.max(0, ms));
      if (unref) timer.unref();
    }
    if (signal) {
      onAbort = () => resolve(DEADLINE_PASSED);
      signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  // Promise.race subscribes to `work`, so its late rejection is handled (and ignored, the race being settled).
  return Promise.race([work, passed]).finally(() => {
    clearTimeout(timer);
    if (onAbort) signal!.removeEventListener('abort', onAbort);
  });
}
