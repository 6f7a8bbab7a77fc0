// The Resolver's store-failure budget (seed-message-flows flow 11; research-resolver §1.10). Scheduled
// replacements and broker redeliveries spend ONE budget: attempt = ThrottleRetryCount + DeliveryCount. Kept in
// one place because the limit must equal the Resolver subscription's MaxDeliveryCount (10): if the Resolver did
// not dead-letter explicitly on the last attempt, the broker would, with the vaguer MaxDeliveryCountExceeded.

export interface BudgetOptions {
  /** Attempts before the message is dead-lettered; equal to the subscription's MaxDeliveryCount. Default 10. */
  maxAttempts: number;
  /** First backoff delay. Default 5 s (tests pass a few ms). */
  baseDelayMs: number;
  /** Backoff cap. Default 300 s. */
  maxDelayMs: number;
}

export const DEFAULT_BUDGET: Readonly<BudgetOptions> = Object.freeze({
  maxAttempts: 10,
  baseDelayMs: 5_000,
  maxDelayMs: 300_000,
});

/**
 * The 1-based attempt this delivery represents. The JS client reports the AMQP header's delivery-count, which
 * Service Bus writes as "previous attempts" (0 on the first delivery), so one is added; a missing or odd value
 * counts as the first delivery. A missing or unparsable ThrottleRetryCount counts as 0.
 */
export function logicalAttempt(throttleRetryCount: number | undefined, wireDeliveryCount: number | undefined): number {
  const previous = Number.isInteger(wireDeliveryCount) && wireDeliveryCount! > 0 ? wireDeliveryCount! : 0;
  const rescheduled = Number.isInteger(throttleRetryCount) && throttleRetryCount! > 0 ? throttleRetryCount! : 0;
  return rescheduled + previous + 1;
}

/** True when this attempt is the last one the budget allows: the message is dead-lettered instead of retried. */
export function budgetExhausted(attempt: number, options: BudgetOptions = DEFAULT_BUDGET): boolean {
  return attempt >= options.maxAttempts;
}

/** base · 2^(attempt−1), capped: 5, 10, 20, 40, 80, 160, 300, 300… seconds with the defaults. */
export function backoffMs(attempt: number, options: BudgetOptions = DEFAULT_BUDGET): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 30));
  return Math.min(options.baseDelayMs * 2 ** exponent, options.maxDelayMs);
}

/** The delay before the next attempt: the backoff, or the store's retry-after when that is longer. */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  options: BudgetOptions = DEFAULT_BUDGET,
): { delayMs: number; source: 'provider' | 'backoff' } {
  const backoff = backoffMs(attempt, options);
  if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > backoff) {
    return { delayMs: Math.ceil(retryAfterMs), source: 'provider' };
  }
  return { delayMs: backoff, source: 'backoff' };
}
