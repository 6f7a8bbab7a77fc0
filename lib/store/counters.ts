// Per-endpoint status counters. One small document per endpoint, changed by an atomic `incr` patch whenever a
// status write moves a row from one bucket to another. The delta is computed from the row version the write
// replaced under its etag, so concurrent writers on one row produce deltas that add up exactly.
import type { Container, PatchOperation } from '@azure/cosmos';
import { ResolutionStatus, PendingSubStatus } from '@nimbus/sdk/contract';
import type {
  ResolutionStatus as ResolutionStatusT,
  PendingSubStatus as PendingSubStatusT,
} from '@nimbus/sdk/contract';
import { cosmosStatus, rethrowCosmos } from './errors.ts';
import { COUNTER_BUCKETS, type CounterBucket, type CounterDoc } from './schemas.ts';

export const COUNTER_DOC_ID = 'counts' as const;

/** The bucket a row counts in: Pending rows parked on a handoff count apart (and are added back for display). */
export function bucketOf(status: ResolutionStatusT, subStatus: PendingSubStatusT | null): CounterBucket {
  if (status === ResolutionStatus.Pending && subStatus === PendingSubStatus.Handoff) return 'Handoff';
  return status;
}

export function zeroCounts(): Record<CounterBucket, number> {
  return Object.fromEntries(COUNTER_BUCKETS.map((b) => [b, 0])) as Record<CounterBucket, number>;
}

export function newCounterDoc(endpointId: string): CounterDoc {
  return { id: COUNTER_DOC_ID, endpointId, counts: zeroCounts(), recountedAt: null };
}

/** Patch operations for a move between buckets (none when the bucket does not change). */
export function counterDelta(from: CounterBucket | null, to: CounterBucket): PatchOperation[] {
  if (from === to) return [];
  const ops: PatchOperation[] = [{ op: 'incr', path: `/counts/${to}`, value: 1 }];
  if (from !== null) ops.push({ op: 'incr', path: `/counts/${from}`, value: -1 });
  return ops;
}

/** Applies a delta, creating the endpoint's counter document on first use. */
export async function applyCounterDelta(
  counters: Container,
  endpointId: string,
  ops: PatchOperation[],
): Promise<void> {
  if (ops.length === 0) return;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await counters.item(COUNTER_DOC_ID, endpointId).patch(ops);
      return;
    } catch (err) {
      if (cosmosStatus(err) !== 404) rethrowCosmos(err, 'counter update');
    }
    try {
      await counters.items.create(newCounterDoc(endpointId));
    } catch (err) {
      // 409: another writer created it first; either way the patch is retried.
      if (cosmosStatus(err) !== 409) rethrowCosmos(err, 'counter create');
    }
  }
  rethrowCosmos(new Error('counter document kept disappearing'), 'counter update');
}

/** Display columns of the console's endpoint overview. */
export interface EndpointCounts {
  endpointId: string;
  /** Pending, handoffs included. */
  pending: number;
  /** Of `pending`: rows parked on an external system. */
  handoff: number;
  deferred: number;
  /** The Failed column: Failed + DeadLettered + Unsupported. */
  failed: number;
  deadLettered: number;
  unsupported: number;
  completed: number;
  skipped: number;
  /** The raw buckets, for diagnostics. */
  buckets: Record<CounterBucket, number>;
  /** When a recount last repaired these numbers (null = never). */
  recountedAt: string | null;
}

export function toEndpointCounts(doc: CounterDoc): EndpointCounts {
  const c = doc.counts;
  return {
    endpointId: doc.endpointId,
    pending: c.Pending + c.Handoff,
    handoff: c.Handoff,
    deferred: c.Deferred,
    failed: c.Failed + c.DeadLettered + c.Unsupported,
    deadLettered: c.DeadLettered,
    unsupported: c.Unsupported,
    completed: c.Completed,
    skipped: c.Skipped,
    buckets: { ...c },
    recountedAt: doc.recountedAt,
  };
}

/**
 * Accumulates counter deltas in memory and applies them as one patch per endpoint every `intervalMs`: a
 * message then costs no counter round trip of its own, and a request/response pair on one endpoint nets out
 * before it reaches Cosmos. A failed flush keeps its deltas for the next one. What a crash loses (at most one
 * interval of deltas) is what recountEndpoint repairs, exactly as for a crash between a row write and an
 * immediate patch.
 */
export class CounterBuffer {
  readonly #container: Container;
  readonly #intervalMs: number;
  #pending = new Map<string, Map<CounterBucket, number>>();
  #timer: NodeJS.Timeout | undefined;

  constructor(container: Container, intervalMs: number) {
    this.#container = container;
    this.#intervalMs = intervalMs;
  }

  add(endpointId: string, from: CounterBucket | null, to: CounterBucket): void {
    if (from === to) return;
    this.#bump(endpointId, to, 1);
    if (from !== null) this.#bump(endpointId, from, -1);
    this.#schedule();
  }

  #bump(endpointId: string, bucket: CounterBucket, by: number): void {
    let m = this.#pending.get(endpointId);
    if (!m) this.#pending.set(endpointId, (m = new Map()));
    m.set(bucket, (m.get(bucket) ?? 0) + by);
  }

  #schedule(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush().catch(() => undefined); // kept for the next flush; nothing to report to
    }, this.#intervalMs);
    this.#timer.unref();
  }

  /** Applies every buffered delta now. Rejects with the first failure; failed deltas stay buffered. */
  async flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = new Map();
    let firstError: unknown;
    await Promise.all(
      [...batch].map(async ([endpointId, deltas]) => {
        const ops: PatchOperation[] = [...deltas]
          .filter(([, n]) => n !== 0)
          .map(([b, n]) => ({ op: 'incr', path: `/counts/${b}`, value: n }));
        try {
          await applyCounterDelta(this.#container, endpointId, ops);
        } catch (err) {
          for (const [b, n] of deltas) this.#bump(endpointId, b, n);
          firstError ??= err;
        }
      }),
    );
    if (firstError !== undefined) {
      this.#schedule();
      throw firstError;
    }
  }

  get pendingEndpoints(): number {
    return this.#pending.size;
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
