// Rate limit of mutating calls per principal: a token bucket per caller, in this process's memory. A person
// clicking through failures never comes near it; a runaway script or a stolen session replaying commands does,
// and gets 429 instead of flooding the broker with commands. Per process on purpose: with several console
// instances the effective limit is a multiple, which is still a bound, and needs no shared store.

export interface RateLimitSettings {
  /** Sustained calls per minute. */
  perMinute: number;
  /** Calls allowed at once before the sustained rate applies. */
  burst: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitSettings = { perMinute: 120, burst: 60 };
/**
 * What a scan of up to 100,000 rows costs from the same bucket (the events export, a bulk job's freeze): 500 store
 * pages, far more than one command, so ten changes' worth - the default burst allows six back to back, then one
 * every 5 s. Clamped to the burst, so a bucket set smaller than this still admits one when full.
 */
export const HEAVY_READ_COST = 10;
const MAX_TRACKED = 10_000;

export function rateLimitSettings(env: Record<string, string | undefined> = process.env): RateLimitSettings {
  const num = (v: string | undefined, d: number) => {
    const n = Number(v);
    return v !== undefined && v !== '' && Number.isInteger(n) && n > 0 ? n : d;
  };
  return {
    perMinute: num(env.NIMBUS_RATE_LIMIT_PER_MINUTE, DEFAULT_RATE_LIMIT.perMinute),
    burst: num(env.NIMBUS_RATE_LIMIT_BURST, DEFAULT_RATE_LIMIT.burst),
  };
}

export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  /**
   * Takes `cost` calls (default one, at most the burst) from the key's bucket; returns 0 when allowed, else the
   * seconds until that many are available. Nothing is taken when refused.
   */
  take(key: string, settings: RateLimitSettings, now = Date.now(), cost = 1): number {
    const perMs = settings.perMinute / 60_000;
    const need = Math.min(Math.max(1, cost), settings.burst);
    const b = this.#buckets.get(key) ?? { tokens: settings.burst, at: now };
    b.tokens = Math.min(settings.burst, b.tokens + (now - b.at) * perMs);
    b.at = now;
    if (b.tokens >= need) {
      b.tokens -= need;
      this.#remember(key, b);
      return 0;
    }
    this.#remember(key, b);
    return Math.max(1, Math.ceil((need - b.tokens) / perMs / 1000));
  }

  #remember(key: string, b: { tokens: number; at: number }): void {
    this.#buckets.delete(key);
    this.#buckets.set(key, b);
    // Oldest-touched first (Map keeps insertion order): forget callers not seen for the longest time.
    while (this.#buckets.size > MAX_TRACKED) this.#buckets.delete(this.#buckets.keys().next().value as string);
  }
}
