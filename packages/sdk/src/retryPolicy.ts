// Retry policies: how long to wait before the n-th scheduled RetryRequest, and whether to send one at all.
// All durations are milliseconds. The arithmetic is pure (randomness is injected) so it is unit-tested exactly.
import { z } from 'zod';
import { describeIssues } from './contract/index.ts';

export const BackoffStrategy = { Fixed: 'Fixed', Linear: 'Linear', Exponential: 'Exponential' } as const;
export type BackoffStrategy = (typeof BackoffStrategy)[keyof typeof BackoffStrategy];

export const JitterMode = { None: 'None', Full: 'Full', Bounded: 'Bounded' } as const;
export type JitterMode = (typeof JitterMode)[keyof typeof JitterMode];

const duration = z.number().finite().nonnegative();

export const retryPolicySchema = z
  .object({
    /** How many RetryRequests at most (attempts 0..MaxRetries-1). 0 never retries. */
    maxRetries: z.number().int().nonnegative().default(0),
    strategy: z
      .enum([BackoffStrategy.Fixed, BackoffStrategy.Linear, BackoffStrategy.Exponential])
      .default('Fixed'),
    baseDelayMs: duration.default(60_000),
    /** Cap applied after jitter (and to a Retry-After hint). */
    maxDelayMs: duration.optional(),
    jitter: z.enum([JitterMode.None, JitterMode.Full, JitterMode.Bounded]).default('None'),
    /** Bounded jitter adds d * U[0, factor). Must be finite and non-negative. */
    boundedJitterFactor: z
      .number()
      .refine((f) => Number.isFinite(f) && f >= 0, 'boundedJitterFactor must be finite and non-negative')
      .default(0.25),
  })
  .strict();

export type RetryPolicyInput = z.input<typeof retryPolicySchema>;
export type RetryPolicy = Readonly<z.output<typeof retryPolicySchema>>;

export class InvalidRetryPolicyError extends Error {
  override readonly name = 'InvalidRetryPolicyError';
}

/** Validates and fills defaults; a bad policy is a configuration error, raised when the host is built. */
export function retryPolicy(input: RetryPolicyInput): RetryPolicy {
  const parsed = retryPolicySchema.safeParse(input);
  if (!parsed.success)
    throw new InvalidRetryPolicyError(`invalid retry policy: ${describeIssues(parsed.error)}`);
  return Object.freeze(parsed.data);
}

/** The deterministic backoff for a 0-based attempt, before jitter and cap. */
export function backoffDelayMs(policy: RetryPolicy, attempt: number): number {
  const a = Math.max(0, Math.floor(attempt));
  switch (policy.strategy) {
    case 'Fixed':
      return policy.baseDelayMs;
    case 'Linear':
      return policy.baseDelayMs * (a + 1);
    case 'Exponential':
      return policy.baseDelayMs * 2 ** a;
  }
}

/**
 * The delay before the retry of 0-based `attempt`: backoff, then jitter, then the MaxDelay cap (the cap applies
 * after jitter, so jitter never exceeds it). `random` returns U[0,1) and is injected for tests.
 *  - None: d
 *  - Full: d + d*U  in [d, 2d)
 *  - Bounded: d + d*factor*U  in [d, d*(1+factor))
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const d = backoffDelayMs(policy, attempt);
  let delay = d;
  if (policy.jitter !== 'None' && d > 0) {
    const u = Math.min(Math.max(random(), 0), 1 - Number.EPSILON);
    const span = policy.jitter === 'Full' ? d : d * policy.boundedJitterFactor;
    // floor keeps the jitter strictly below its span, so the upper bound stays exclusive.
    delay = d + Math.min(Math.floor(span * u), Math.max(0, Math.ceil(span) - 1));
  }
  if (policy.maxDelayMs !== undefined && delay > policy.maxDelayMs) delay = policy.maxDelayMs;
  return delay;
}

/**
 * The delay to schedule when a Retry-After hint is known: the longer of the policy delay and the hint, still capped
 * at MaxDelay.
 */
export function delayWithHintMs(
  policy: RetryPolicy,
  policyDelayMs: number,
  hintMs: number | undefined,
): number {
  let delay = hintMs !== undefined && hintMs > policyDelayMs ? hintMs : policyDelayMs;
  if (policy.maxDelayMs !== undefined && delay > policy.maxDelayMs) delay = policy.maxDelayMs;
  return delay;
}
