// How long the host's session connection can legitimately take over one call, and the default bound on a delivery's
// broker calls derived from it (operationTimeoutMs). A bound shorter than the client's own retries would give up
// calls that were still retrying as they should, and take a healthy connection for lost.
import { RetryMode } from '@azure/service-bus';
import type { RetryOptions } from '@azure/service-bus';

/** What @azure/service-bus (core-amqp's Constants) uses for retry options a client leaves unset. */
export const CLIENT_RETRY_DEFAULTS = {
  maxRetries: 3,
  retryDelayInMs: 30_000,
  maxRetryDelayInMs: 90_000,
  timeoutInMs: 60_000,
} as const;

/**
 * The retry options of the host's dedicated session connection. Its operation timeout is `acceptWaitMs` (it is also
 * how long an accept waits for a free session). The retries are set here rather than left to the client's defaults,
 * whose 30 s sleep between attempts made a session-state call or settlement that met a broken connection take up to
 * 4 × 3 s + 3 × 30 s = 102 s: no useful bound is above that. Two retries, half a second apart, keep the worst case
 * at three operation timeouts and one second (10 s with the default acceptWaitMs).
 */
export function dedicatedRetryOptions(acceptWaitMs: number | undefined): RetryOptions {
  return {
    timeoutInMs: Math.max(1000, acceptWaitMs ?? 3000),
    maxRetries: 2,
    retryDelayInMs: 500,
    mode: RetryMode.Fixed,
  };
}

/**
 * The longest a call with these retry options takes before the client answers or gives up: every attempt waits its
 * full timeout, and the client sleeps its delay between attempts (retried errors only; others fail at once).
 */
export function retryWorstCaseMs(options: RetryOptions): number {
  const attempts = (options.maxRetries ?? CLIENT_RETRY_DEFAULTS.maxRetries) + 1;
  const timeout = options.timeoutInMs ?? CLIENT_RETRY_DEFAULTS.timeoutInMs;
  const delay = options.retryDelayInMs ?? CLIENT_RETRY_DEFAULTS.retryDelayInMs;
  const maxDelay = options.maxRetryDelayInMs ?? CLIENT_RETRY_DEFAULTS.maxRetryDelayInMs;
  let sleeps = 0;
  for (let retry = 1; retry < attempts; retry++) {
    // Exponential: up to 1.2 × delay × (2^retry − 1), capped (core-amqp's calculateDelay).
    sleeps += options.mode === RetryMode.Exponential ? Math.min(1.2 * delay * (2 ** retry - 1), maxDelay) : delay;
  }
  return attempts * timeout + sleeps;
}

/**
 * Slack above the client's worst case: its timers and the host's start a moment apart, and a loaded event loop fires
 * either late. A bound that fired first would give up a call the client was still entitled to finish.
 */
const SLACK_MS = 2000;

/**
 * The default operationTimeoutMs: the dedicated session connection's worst case plus slack (12 s with the default
 * acceptWaitMs). Used with `sessionConnection: 'shared'` too: the caller's client's own retries (60 s per attempt by
 * default) are longer than any useful bound, and cutting them is what the bound is for there.
 */
export function defaultOperationTimeoutMs(acceptWaitMs: number | undefined): number {
  return retryWorstCaseMs(dedicatedRetryOptions(acceptWaitMs)) + SLACK_MS;
}
