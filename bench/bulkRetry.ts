// Bulk creates for the benchmark seeders, retried with backoff. Under load the server answers some operations of a
// bulk request with 429 (throttled) or a transient failure, or a kept-alive connection drops under a whole batch;
// sending those operations straight back (as the seeder did) meets the same load again, and two past runs failed
// so. Each retry waits longer (exponential, capped), or as long as the server asked when that is longer; after
// `maxAttempts` sends it gives up with how many operations were left.
import type { BulkOperationResult, OperationInput } from '@azure/cosmos';
import { setTimeout as delay } from 'node:timers/promises';
import { cosmosRetryAfterMs, cosmosStatus } from '../lib/store/errors.ts';

/** What bulk creates need of a container (a Container; a test's fake). */
export interface BulkTarget {
  items: { executeBulkOperations(operations: OperationInput[]): Promise<BulkOperationResult[]> };
}

export interface BulkRetryOptions {
  /** Sends of one operation at the most, the first included (default 8). */
  maxAttempts?: number;
  /** The wait before the first retry, doubled before each next one (default 200 ms)... */
  baseDelayMs?: number;
  /** ...up to this (default 10 s). A longer retry-after from the server is still honoured. */
  maxDelayMs?: number;
  /** How a wait is made (a test records them instead). */
  sleep?: (ms: number) => Promise<void>;
}

export interface BulkCreateResult {
  /** Sends made (1 when every operation landed on the first). */
  attempts: number;
  /** The waits between them, in ms. */
  waits: number[];
}

// No answer (the request failed under the batch), timeout, gone (partition moved), throttled, server errors.
const RETRYABLE = (status: number) => status === 0 || status === 408 || status === 410 || status === 429 || status >= 500;

/**
 * Creates `ops` in bulk. The SDK groups them into batch requests itself; handing it one large list lets it keep
 * several requests in flight (small calls each wait for its batching timer). An operation that failed in a
 * retryable way is sent again after the wait; a 409 on such a later send means an earlier one had landed (its
 * answer was lost), so it counts as written. Any other failure ends it at once, naming how many were left.
 */
export async function bulkCreate(target: BulkTarget, ops: OperationInput[], options: BulkRetryOptions = {}): Promise<BulkCreateResult> {
  const maxAttempts = options.maxAttempts ?? 8;
  const baseDelayMs = options.baseDelayMs ?? 200;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  const sleep = options.sleep ?? ((ms: number) => delay(ms));
  const waits: number[] = [];
  let pending = ops;
  for (let attempt = 1; ; attempt++) {
    const results = await target.items.executeBulkOperations(pending);
    const retry: OperationInput[] = [];
    let refused: { status: number; message: string } | undefined;
    let last: { status: number; message: string } | undefined;
    let hintMs = 0;
    for (const [i, r] of results.entries()) {
      // Landed operations come back as `response`; failed ones as `error`, its `code` the status.
      const status = r.response?.statusCode ?? cosmosStatus(r.error) ?? 0;
      if (status >= 200 && status < 300) continue;
      if (status === 409 && attempt > 1) continue;
      const failure = { status, message: r.error?.message ?? 'no detail' };
      retry.push(pending[i]!);
      if (!RETRYABLE(status)) refused ??= failure;
      else {
        last = failure;
        hintMs = Math.max(hintMs, cosmosRetryAfterMs(r.error) ?? 0);
      }
    }
    if (retry.length === 0) return { attempts: attempt, waits };
    const left = `${retry.length} of ${ops.length} operations not written`;
    if (refused) throw new Error(`bulk create refused (${refused.status}): ${refused.message}; ${left}`);
    if (attempt >= maxAttempts)
      throw new Error(`bulk create gave up after ${attempt} attempts: ${left} (last: ${last?.status}, ${last?.message})`);
    const waitMs = Math.max(Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)), hintMs);
    waits.push(waitMs);
    await sleep(waitMs);
    pending = retry;
  }
}
