// Stored time series (issue 16): per endpoint and event type, one small document per time bucket in the `metrics`
// container, counting the outcomes the Resolver recorded in that bucket (handled, failed, dead-lettered,
// unsupported, skipped, resubmitted) and a fixed-bin histogram of handling latency, from which p50/p95/p99 are
// read; beside them, per-minute samples of the Service Bus backlog of each topic. The series live in the store,
// not in a browser, so a restart of the console (or of everything) keeps them.
//
// Writes are batched: the Resolver only adds to an in-memory buffer (no I/O on its hot path) and a flush every
// `flushMs` applies one atomic `incr` patch per (endpoint, event type, minute) touched, so several Resolver
// replicas add up exactly. A crash loses at most one flush interval of counts (history, not the record: the
// status rows stay the truth).
//
// Retention (sizes configurable): 1-minute buckets for 2 days, then rolled up into 1-hour buckets, which are
// kept for 30 days. maintain() does both; the console runs it under a lease (server/history/duties.ts).
import type { Container, Database, PatchOperation, SqlParameter } from '@azure/cosmos';
import { openContainer, type ContainerSlot } from './containers.ts';
import { cosmosStatus, rethrowCosmos } from './errors.ts';
import { docId } from './ids.ts';

export const METRICS_CONTAINER = 'metrics';

/** The outcome counts kept per bucket. */
export const OUTCOME_COUNTS = ['handled', 'failed', 'deadLettered', 'unsupported', 'skipped', 'resubmitted'] as const;
export type OutcomeCount = (typeof OUTCOME_COUNTS)[number];

/**
 * Upper bounds (ms) of the latency histogram's bins; the last bin is open. Roughly logarithmic, so a percentile
 * read from them is within one bin (about ×2.5) of the truth anywhere from 10 ms to 30 minutes.
 */
export const LATENCY_BOUNDS_MS = [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 1_800_000] as const;
export const LATENCY_BINS = LATENCY_BOUNDS_MS.length + 1;

export const BACKLOG_FIELDS = ['active', 'deadLetter', 'scheduled'] as const;
export type BacklogField = (typeof BACKLOG_FIELDS)[number];

export interface RetentionOptions {
  /** Size of the fine buckets, ms. Default 60 000 (1 minute). */
  fineMs: number;
  /** Size of the coarse buckets fine ones are rolled up into, ms. Default 3 600 000 (1 hour). */
  coarseMs: number;
  /** Fine buckets older than this are rolled up, ms. Default 2 days. */
  rollupAfterMs: number;
  /** Everything older than this is deleted, ms. Default 30 days. */
  keepMs: number;
}

export const DEFAULT_RETENTION: RetentionOptions = {
  fineMs: 60_000,
  coarseMs: 3_600_000,
  rollupAfterMs: 2 * 86_400_000,
  keepMs: 30 * 86_400_000,
};

type Res = 'f' | 'c';

/** One outcome bucket as stored. Field names are short on purpose: there are many of these documents. */
export interface OutcomeBucketDoc {
  id: string;
  /** Partition key: the endpoint (an endpoint's charts read one partition). */
  endpointId: string;
  kind: 'o';
  /** 'f' fine (minute) or 'c' coarse (hour). */
  res: Res;
  /** Bucket start, epoch ms. */
  t: number;
  eventTypeId: string;
  c: Record<OutcomeCount, number>;
  /** Latency histogram: h.b0 … h.b14, counts per bin of LATENCY_BOUNDS_MS. */
  h: Record<string, number>;
}

/** One backlog sample of one topic (all its subscriptions summed; scheduled is per topic in Service Bus). */
export interface BacklogSampleDoc {
  id: string;
  /** Partition key: the topic, which for endpoint topics is the endpoint id. */
  endpointId: string;
  kind: 'b';
  res: Res;
  t: number;
  active: number;
  deadLetter: number;
  scheduled: number;
}

export interface OutcomeIncrement {
  endpointId: string;
  eventTypeId: string;
  /** When the outcome was recorded. */
  at: Date;
  count: OutcomeCount;
  /** Request enqueued → response recorded, when known. */
  latencyMs?: number;
}

export function latencyBin(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]!) return i;
  return LATENCY_BOUNDS_MS.length;
}

/** The q-quantile (0..1) of a histogram, interpolated linearly inside its bin; null for an empty histogram. */
export function quantileOf(h: readonly number[], q: number): number | null {
  const total = h.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < h.length; i++) {
    const n = h[i] ?? 0;
    if (n > 0 && seen + n >= rank) {
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      if (i >= LATENCY_BOUNDS_MS.length) return lower; // the open bin: its lower bound is all we know
      const upper = LATENCY_BOUNDS_MS[i]!;
      return Math.round(lower + ((rank - seen) / n) * (upper - lower));
    }
    seen += n;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}

const floorTo = (t: number, size: number) => Math.floor(t / size) * size;

function outcomeId(res: Res, t: number, endpointId: string, eventTypeId: string): string {
  return docId('o', res, String(t), endpointId, eventTypeId);
}

function backlogId(res: Res, t: number, topic: string): string {
  return docId('b', res, String(t), topic);
}

function zeroOutcomeDoc(res: Res, t: number, endpointId: string, eventTypeId: string): OutcomeBucketDoc {
  const h: Record<string, number> = {};
  for (let i = 0; i < LATENCY_BINS; i++) h[`b${i}`] = 0;
  return {
    id: outcomeId(res, t, endpointId, eventTypeId),
    endpointId,
    kind: 'o',
    res,
    t,
    eventTypeId,
    c: Object.fromEntries(OUTCOME_COUNTS.map((k) => [k, 0])) as Record<OutcomeCount, number>,
    h,
  };
}

/** Cosmos applies at most 10 operations per patch. */
const MAX_PATCH_OPS = 10;

/** Adds `ops` to a document, creating it (all zeros) first when missing; concurrent creators are fine. */
async function incrementDoc(container: Container, id: string, pk: string, ops: PatchOperation[], create: () => object): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      for (let i = 0; i < ops.length; i += MAX_PATCH_OPS) await container.item(id, pk).patch(ops.slice(i, i + MAX_PATCH_OPS));
      return;
    } catch (err) {
      if (cosmosStatus(err) !== 404) rethrowCosmos(err, 'metrics update');
    }
    try {
      await container.items.create(create());
    } catch (err) {
      if (cosmosStatus(err) !== 409) rethrowCosmos(err, 'metrics create');
    }
  }
  rethrowCosmos(new Error('metrics document kept disappearing'), 'metrics update');
}

interface PendingBucket {
  endpointId: string;
  eventTypeId: string;
  t: number;
  c: Map<OutcomeCount, number>;
  h: Map<number, number>;
}

export interface Series {
  name: string;
  points: Array<[number, number | null]>;
}

export interface SeriesQuery {
  from: number;
  to: number;
  bucketMs: number;
  endpointId?: string;
  /** Only these endpoints (a caller whose roles name single endpoints); ignored when endpointId is set. */
  endpointIds?: string[];
  eventTypeId?: string;
}

/** Names of the series a query returns, in order. */
export const SERIES_NAMES = [
  ...OUTCOME_COUNTS,
  'latencyP50',
  'latencyP95',
  'latencyP99',
  'backlogActive',
  'backlogDeadLetter',
  'backlogScheduled',
] as const;

export interface TimeSeriesStoreOptions {
  retention?: Partial<RetentionOptions>;
  /** How often buffered increments are written. Default 2000 ms. */
  flushMs?: number;
  now?: () => number;
}

/**
 * The metrics container: the Resolver's buffered writer (add/flush), the backlog collector's writer, the API's
 * reader and the maintenance pass. One per process and database.
 */
export class TimeSeriesStore {
  readonly #slot: ContainerSlot = {};
  readonly #database: Database;
  readonly retention: RetentionOptions;
  readonly #flushMs: number;
  readonly #now: () => number;
  #pending = new Map<string, PendingBucket>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(database: Database, options: TimeSeriesStoreOptions = {}) {
    this.#database = database;
    this.retention = { ...DEFAULT_RETENTION, ...options.retention };
    this.#flushMs = options.flushMs ?? 2_000;
    this.#now = options.now ?? Date.now;
  }

  container(): Promise<Container> {
    return openContainer(this.#slot, this.#database, METRICS_CONTAINER, '/endpointId');
  }

  /** Buffers one outcome: no I/O here; the flush timer writes it. */
  add(inc: OutcomeIncrement): void {
    const t = floorTo(inc.at.getTime(), this.retention.fineMs);
    const key = `${t}\u0000${inc.endpointId}\u0000${inc.eventTypeId}`;
    let b = this.#pending.get(key);
    if (!b) this.#pending.set(key, (b = { endpointId: inc.endpointId, eventTypeId: inc.eventTypeId, t, c: new Map(), h: new Map() }));
    b.c.set(inc.count, (b.c.get(inc.count) ?? 0) + 1);
    if (inc.latencyMs !== undefined && Number.isFinite(inc.latencyMs)) {
      const bin = latencyBin(Math.max(0, inc.latencyMs));
      b.h.set(bin, (b.h.get(bin) ?? 0) + 1);
    }
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.flush().catch(() => undefined); // kept for the next flush
      }, this.#flushMs);
      this.#timer.unref();
    }
  }

  get pendingBuckets(): number {
    return this.#pending.size;
  }

  /** Writes every buffered bucket now; failed ones stay buffered. Flushes never overlap. */
  flush(): Promise<void> {
    const run = this.#flushing.then(() => this.#flushOnce());
    this.#flushing = run.catch(() => undefined);
    return run;
  }

  async #flushOnce(): Promise<void> {
    const batch = this.#pending;
    this.#pending = new Map();
    if (batch.size === 0) return;
    const c = await this.container();
    let firstError: unknown;
    await Promise.all(
      [...batch.values()].map(async (b) => {
        const ops: PatchOperation[] = [];
        for (const [k, n] of b.c) ops.push({ op: 'incr', path: `/c/${k}`, value: n });
        for (const [bin, n] of b.h) ops.push({ op: 'incr', path: `/h/b${bin}`, value: n });
        try {
          await incrementDoc(c, outcomeId('f', b.t, b.endpointId, b.eventTypeId), b.endpointId, ops, () =>
            zeroOutcomeDoc('f', b.t, b.endpointId, b.eventTypeId),
          );
        } catch (err) {
          this.#merge(b);
          firstError ??= err;
        }
      }),
    );
    if (firstError !== undefined) throw firstError;
  }

  #merge(b: PendingBucket): void {
    const key = `${b.t}\u0000${b.endpointId}\u0000${b.eventTypeId}`;
    const into = this.#pending.get(key);
    if (!into) {
      this.#pending.set(key, b);
      return;
    }
    for (const [k, n] of b.c) into.c.set(k, (into.c.get(k) ?? 0) + n);
    for (const [k, n] of b.h) into.h.set(k, (into.h.get(k) ?? 0) + n);
  }

  /** Stops the timer after a last flush (best effort). */
  async close(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush().catch(() => undefined);
  }

  /** Stores one backlog sample per topic for the minute of `at` (a second sample in the same minute replaces it). */
  async recordBacklog(at: Date, samples: Array<{ topic: string } & Record<BacklogField, number>>): Promise<void> {
    const c = await this.container();
    const t = floorTo(at.getTime(), this.retention.fineMs);
    for (const s of samples) {
      const doc: BacklogSampleDoc = {
        id: backlogId('f', t, s.topic),
        endpointId: s.topic,
        kind: 'b',
        res: 'f',
        t,
        active: s.active,
        deadLetter: s.deadLetter,
        scheduled: s.scheduled,
      };
      await c.items.upsert(doc);
    }
  }

  /** The series of a query, every bucket of the range present (counts 0, percentiles and backlog null when empty). */
  async query(q: SeriesQuery): Promise<Series[]> {
    const c = await this.container();
    const from = floorTo(q.from, q.bucketMs);
    const slots = Math.max(1, Math.ceil((q.to - from) / q.bucketMs));
    const params: SqlParameter[] = [
      { name: '@from', value: from },
      { name: '@to', value: q.to },
    ];
    let where = 'c.t >= @from AND c.t < @to';
    const opts = q.endpointId !== undefined ? { partitionKey: q.endpointId } : {};
    if (q.endpointId !== undefined) {
      where += ' AND c.endpointId = @e';
      params.push({ name: '@e', value: q.endpointId });
    } else if (q.endpointIds !== undefined) {
      where += ' AND ARRAY_CONTAINS(@eps, c.endpointId)';
      params.push({ name: '@eps', value: q.endpointIds });
    }
    const outcomeWhere = q.eventTypeId !== undefined ? `${where} AND c.eventTypeId = @et` : where;
    const outcomeParams = q.eventTypeId !== undefined ? [...params, { name: '@et', value: q.eventTypeId }] : params;
    try {
      const [outcomes, backlog] = await Promise.all([
        c.items
          .query<OutcomeBucketDoc>({ query: `SELECT c.t, c.res, c.c, c.h FROM c WHERE c.kind = 'o' AND ${outcomeWhere}`, parameters: outcomeParams }, opts)
          .fetchAll(),
        c.items
          .query<BacklogSampleDoc>({ query: `SELECT c.t, c.res, c.endpointId, c.active, c.deadLetter, c.scheduled FROM c WHERE c.kind = 'b' AND ${where}`, parameters: params }, opts)
          .fetchAll(),
      ]);
      return buildSeries(from, slots, q.bucketMs, outcomes.resources, backlog.resources);
    } catch (err) {
      rethrowCosmos(err, 'metrics query');
    }
  }

  /**
   * Rolls fine buckets older than `rollupAfterMs` into coarse ones and deletes everything older than `keepMs`.
   * Each hour's minute documents are summed into the hour document (an incr patch) and then deleted; a crash
   * between the two can count that hour's minutes twice, which only history (never the record) would show.
   * Backlog samples are rolled up as the hour's maximum. Returns what it did, for the log and the tests.
   */
  async maintain(): Promise<{ rolledUp: number; deleted: number }> {
    const c = await this.container();
    const now = this.#now();
    const { coarseMs, rollupAfterMs, keepMs } = this.retention;
    const rollupBefore = floorTo(now - rollupAfterMs, coarseMs);
    let rolledUp = 0;
    let deleted = 0;
    const fine = await c.items
      .query<OutcomeBucketDoc | BacklogSampleDoc>({
        query: "SELECT * FROM c WHERE c.res = 'f' AND c.t < @before",
        parameters: [{ name: '@before', value: rollupBefore }],
      })
      .fetchAll();
    const groups = new Map<string, Array<OutcomeBucketDoc | BacklogSampleDoc>>();
    for (const d of fine.resources) {
      const hour = floorTo(d.t, coarseMs);
      const key = d.kind === 'o' ? JSON.stringify(['o', hour, d.endpointId, d.eventTypeId]) : JSON.stringify(['b', hour, d.endpointId]);
      const g = groups.get(key);
      if (g) g.push(d);
      else groups.set(key, [d]);
    }
    for (const docs of groups.values()) {
      const first = docs[0]!;
      const hour = floorTo(first.t, coarseMs);
      if (hour < now - keepMs) {
        // Already past retention: nothing to keep.
      } else if (first.kind === 'o') {
        const sums = zeroOutcomeDoc('c', hour, first.endpointId, first.eventTypeId);
        for (const d of docs as OutcomeBucketDoc[]) {
          for (const k of OUTCOME_COUNTS) sums.c[k] += d.c[k] ?? 0;
          for (const [k, n] of Object.entries(d.h)) sums.h[k] = (sums.h[k] ?? 0) + n;
        }
        const ops: PatchOperation[] = [
          ...OUTCOME_COUNTS.filter((k) => sums.c[k] !== 0).map((k): PatchOperation => ({ op: 'incr', path: `/c/${k}`, value: sums.c[k] })),
          ...Object.entries(sums.h)
            .filter(([, n]) => n !== 0)
            .map(([k, n]): PatchOperation => ({ op: 'incr', path: `/h/${k}`, value: n })),
        ];
        await incrementDoc(c, sums.id, sums.endpointId, ops, () => zeroOutcomeDoc('c', hour, first.endpointId, first.eventTypeId));
      } else {
        const samples = docs as BacklogSampleDoc[];
        const doc: BacklogSampleDoc = {
          id: backlogId('c', hour, first.endpointId),
          endpointId: first.endpointId,
          kind: 'b',
          res: 'c',
          t: hour,
          active: Math.max(...samples.map((s) => s.active)),
          deadLetter: Math.max(...samples.map((s) => s.deadLetter)),
          scheduled: Math.max(...samples.map((s) => s.scheduled)),
        };
        const existing = await c.item(doc.id, doc.endpointId).read<BacklogSampleDoc>();
        if (existing.resource) {
          doc.active = Math.max(doc.active, existing.resource.active);
          doc.deadLetter = Math.max(doc.deadLetter, existing.resource.deadLetter);
          doc.scheduled = Math.max(doc.scheduled, existing.resource.scheduled);
        }
        await c.items.upsert(doc);
      }
      for (const d of docs) {
        await c.item(d.id, d.endpointId).delete().catch((err: unknown) => {
          if (cosmosStatus(err) !== 404) throw err;
        });
        rolledUp++;
      }
    }
    const old = await c.items
      .query<{ id: string; endpointId: string }>({
        query: 'SELECT c.id, c.endpointId FROM c WHERE c.t < @before',
        parameters: [{ name: '@before', value: now - keepMs }],
      })
      .fetchAll();
    for (const d of old.resources) {
      await c.item(d.id, d.endpointId).delete().catch((err: unknown) => {
        if (cosmosStatus(err) !== 404) throw err;
      });
      deleted++;
    }
    return { rolledUp, deleted };
  }
}

function histogramOf(d: Pick<OutcomeBucketDoc, 'h'>): number[] {
  return Array.from({ length: LATENCY_BINS }, (_, i) => d.h?.[`b${i}`] ?? 0);
}

/** Sums stored buckets into the query's slots. Backlog per slot: the latest sample per topic, summed over topics. */
export function buildSeries(
  from: number,
  slots: number,
  bucketMs: number,
  outcomes: Array<Pick<OutcomeBucketDoc, 't' | 'c' | 'h'>>,
  backlog: Array<Pick<BacklogSampleDoc, 't' | 'endpointId' | BacklogField>>,
): Series[] {
  const counts = OUTCOME_COUNTS.map(() => new Array<number>(slots).fill(0));
  const hist = Array.from({ length: slots }, () => new Array<number>(LATENCY_BINS).fill(0));
  for (const d of outcomes) {
    const i = Math.floor((d.t - from) / bucketMs);
    if (i < 0 || i >= slots) continue;
    OUTCOME_COUNTS.forEach((k, j) => (counts[j]![i]! += d.c?.[k] ?? 0));
    histogramOf(d).forEach((n, j) => (hist[i]![j]! += n));
  }
  // Latest sample of each topic within each slot.
  const latest = new Map<string, Pick<BacklogSampleDoc, 't' | BacklogField>>();
  for (const s of backlog) {
    const i = Math.floor((s.t - from) / bucketMs);
    if (i < 0 || i >= slots) continue;
    const key = `${i}\u0000${s.endpointId}`;
    const had = latest.get(key);
    if (!had || had.t < s.t) latest.set(key, s);
  }
  const backlogSlots = BACKLOG_FIELDS.map(() => new Array<number | null>(slots).fill(null));
  for (const [key, s] of latest) {
    const i = Number(key.split('\u0000')[0]);
    BACKLOG_FIELDS.forEach((f, j) => (backlogSlots[j]![i] = (backlogSlots[j]![i] ?? 0) + s[f]));
  }
  const t = (i: number) => from + i * bucketMs;
  const series: Series[] = OUTCOME_COUNTS.map((name, j) => ({ name, points: counts[j]!.map((v, i): [number, number] => [t(i), v]) }));
  for (const [name, q] of [
    ['latencyP50', 0.5],
    ['latencyP95', 0.95],
    ['latencyP99', 0.99],
  ] as const) {
    series.push({ name, points: hist.map((h, i): [number, number | null] => [t(i), quantileOf(h, q)]) });
  }
  const backlogNames = { active: 'backlogActive', deadLetter: 'backlogDeadLetter', scheduled: 'backlogScheduled' } as const;
  BACKLOG_FIELDS.forEach((f, j) => series.push({ name: backlogNames[f], points: backlogSlots[j]!.map((v, i): [number, number | null] => [t(i), v]) }));
  return series;
}
