// What the two console clients (ConsoleHandoffClient, AgentClient) take from their caller before any request: the
// retry and time-limit options, checked once at construction, and a request body encoded before anything is sent.
// Both are the caller's to get right and fail the same way every time, so they are refused as a HandoffClientError
// rather than found later as a failure that looks transient: a NaN `attempts` never ended a retry loop (`attempt >=
// NaN` is never true), a negative or NaN `timeoutMs` made every request throw a RangeError that `serve` retried for
// ever, and a body JSON cannot encode threw a plain TypeError.
import { z } from 'zod';
import { describeIssues } from './contract/index.ts';
import { HandoffClientError } from './handoffClient.ts';

/** The longest time a Node timer holds (2^31 - 1 ms, about 24.8 days); a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;
/**
 * The most `timeoutMs` may be: a receive's time limit is its long-poll wait (at most 30 s) plus `timeoutMs`, and that
 * sum must still fit a timer (past it, every receive timed out at once: a review found it).
 */
export const MAX_TIMEOUT_MS = MAX_TIMER_MS - 60_000;

const requestOptionsSchema = z.object({
  retry: z
    .object({
      // 0 was always taken as 1 (the first attempt is always made), and Infinity retried a call for ever (each wait
      // bounded by maxMs): both kept.
      attempts: z
        .custom<number>((v) => v === Number.POSITIVE_INFINITY || (typeof v === 'number' && Number.isInteger(v) && v >= 0), 'retry.attempts is a whole number (0 or more) or Infinity')
        .optional(),
      initialMs: z.number().finite().min(0).max(MAX_TIMER_MS).optional(),
      maxMs: z.number().finite().min(0).max(MAX_TIMER_MS).optional(),
    })
    .optional(),
  timeoutMs: z.number().finite().positive().max(MAX_TIMEOUT_MS).optional(),
});

export interface RequestTiming {
  attempts: number;
  initialMs: number;
  maxMs: number;
  timeoutMs: number;
}

/** The retry and time-limit options with their defaults, or a HandoffClientError naming what is wrong. */
export function requestTiming(options: { retry?: { attempts?: number; initialMs?: number; maxMs?: number }; timeoutMs?: number }): RequestTiming {
  const parsed = requestOptionsSchema.safeParse({ retry: options.retry, timeoutMs: options.timeoutMs });
  if (!parsed.success) throw new HandoffClientError(`invalid client options: ${describeIssues(parsed.error)}`);
  const { retry, timeoutMs } = parsed.data;
  return {
    attempts: Math.max(1, retry?.attempts ?? 4),
    initialMs: retry?.initialMs ?? 500,
    maxMs: retry?.maxMs ?? 10_000,
    timeoutMs: timeoutMs ?? 30_000,
  };
}

/**
 * A request's body as JSON, or a HandoffClientError before anything is sent: what JSON cannot encode (a circular
 * object, a BigInt, a toJSON that throws) fails the same way every time, so it is the caller's to fix, not a
 * transient failure (JSON.stringify's own TypeError was not told from one). JSON.stringify's message names a
 * property path or a type, not a value.
 */
export function encodeBody(what: string, body: unknown): string {
  try {
    return JSON.stringify(body);
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/\s+/g, ' ') : `a ${typeof err} was thrown`;
    throw new HandoffClientError(`${what} cannot be encoded as JSON, so nothing was sent: ${why}`, { cause: err });
  }
}
