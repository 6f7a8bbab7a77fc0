// Backoff after broker errors in the receive loops: 1 s, 2 s, 4 s ... capped, reset by the next success.

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
}

export class Backoff {
  private failures = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 1000;
    this.maxMs = options.maxMs ?? 30_000;
  }

  /** The delay before the next attempt after one more failure. */
  next(): number {
    this.failures++;
    return Math.min(this.maxMs, this.initialMs * 2 ** (this.failures - 1));
  }

  reset(): void {
    this.failures = 0;
  }

  /** The first delay (after a reset). */
  get initial(): number {
    return this.initialMs;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }
}

/** Waits, returning early (without throwing) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
