// A bound on how many async functions run at once: the Resolver's row work in a batch and the Manager's
// one-event path share the store and the broker with everything else the process does.

export type Limiter = <T>(run: () => Promise<T>) => Promise<T>;

/** Runs the functions given to it at most `max` at a time, the others in the order given; `Infinity`: no bound. */
export function limiter(max: number): Limiter {
  if (max === Infinity) return (run) => run();
  const n = Math.max(1, Math.floor(max));
  let running = 0;
  const queue: Array<() => void> = [];
  return async <T>(run: () => Promise<T>): Promise<T> => {
    if (running < n) running++;
    else await new Promise<void>((r) => queue.push(r)); // a finishing run hands its slot over
    try {
      return await run();
    } finally {
      const next = queue.shift();
      if (next) next();
      else running--;
    }
  };
}
