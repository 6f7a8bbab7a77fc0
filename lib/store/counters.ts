// Per-endpoint status counters. One small document per endpoint, changed by an atomic `incr` patch whenever a
// status write moves a row from one bucket to another. The delta is computed from the row version the write
// replaced under its etag, so concurrent writers on one row produce deltas that add up exactly.
import type { Container, PatchOperation } from '@azure/cosmos';
import { ResolutionStatus, PendingSubStatus } from '@nimbus/sdk/contract';
import type {
  ResolutionStatus as ResolutionStatusT,
  PendingSubStatus as PendingSubStatusT,
} from '@nimbus/sdk/contract';
import { DEADLINE_PASSED, raceDeadline } from '../concurrency/deadline.ts';
import { classifyCosmosError, CounterRecoveryIncompleteError, CountsRecoveredError, cosmosStatus, rethrowCosmos, StoreClosedError } from './errors.ts';
import { COUNTER_BUCKETS, countStampSchema, type CounterBucket, type CounterDoc, type CountStamp } from './schemas.ts';

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
  return { id: COUNTER_DOC_ID, endpointId, counts: zeroCounts(), recountedAt: null, flushed: {} };
}

/** Patch operations for a move between buckets (none when the bucket does not change). */
export function counterDelta(from: CounterBucket | null, to: CounterBucket): PatchOperation[] {
  if (from === to) return [];
  const ops: PatchOperation[] = [{ op: 'incr', path: `/counts/${to}`, value: 1 }];
  if (from !== null) ops.push({ op: 'incr', path: `/counts/${from}`, value: -1 });
  return ops;
}

/**
 * Applies a delta, creating the endpoint's counter document on first use. With `fenceOwner`, only while no survivor
 * has recovered that writer on this endpoint (else CountsRecoveredError): see recoveredFence.
 */
export async function applyCounterDelta(
  counters: Container,
  endpointId: string,
  ops: PatchOperation[],
  fenceOwner?: string,
): Promise<CounterDoc | undefined> {
  if (ops.length === 0) return undefined;
  const condition = fenceOwner === undefined ? undefined : recoveredFence(fenceOwner);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return (await counters.item(COUNTER_DOC_ID, endpointId).patch<CounterDoc>(condition ? { operations: ops, condition } : ops)).resource;
    } catch (err) {
      const code = cosmosStatus(err);
      if (code === 412 && condition) throw new CountsRecoveredError(endpointId);
      // 400 on `set /flushed/..`: a counter document from before `flushed` existed; give it the map and retry.
      if (code === 400 && ops.some((o) => o.path.startsWith('/flushed/'))) {
        await ensureFlushedMap(counters, endpointId);
        continue;
      }
      if (code !== 404) rethrowCosmos(err, 'counter update');
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

/** `flushed[owner]` of a writer whose lost deltas a survivor has applied: every stamp of it counts as applied. */
export const RECOVERED = Number.MAX_SAFE_INTEGER;

type Deltas = Map<CounterBucket, number>;

function bump(m: Map<string, Deltas>, endpointId: string, bucket: CounterBucket, by: number): void {
  let d = m.get(endpointId);
  if (!d) m.set(endpointId, (d = new Map()));
  d.set(bucket, (d.get(bucket) ?? 0) + by);
}

function addInto(m: Map<string, Deltas>, endpointId: string, deltas: Deltas, sign = 1): void {
  for (const [b, n] of deltas) bump(m, endpointId, b, sign * n);
}

function incrOps(deltas: Deltas | undefined): PatchOperation[] {
  return [...(deltas ?? [])].filter(([, n]) => n !== 0).map(([b, n]) => ({ op: 'incr', path: `/counts/${b}`, value: n }));
}

/**
 * A write's place in a flush window: its row carries the window's stamp, its delta goes into that window. `open`
 * while the write runs, `doubt` while it is in doubt (its reply lost: pinned, see CounterBuffer.pin), `settled` once
 * its delta is added or known to be nothing.
 */
export interface CounterTicket {
  readonly seq: number;
  state: 'open' | 'doubt' | 'settled';
}

/**
 * The stamps a row carries after a write by `owner` in window `seq` moved it from `from` to `to` (docs/store.md,
 * "Exact counters after a crash"). Stamps of windows known to be applied are dropped; the others are carried, even
 * another writer's (it may have died before flushing them). A second move in the same window extends the writer's
 * stamp that ends where this move starts (its `f` stays, `t` becomes the new bucket): the two moves were back to
 * back, so their net is `f` -> `to`. When another writer moved the row in between (the stamp ends elsewhere), the
 * move gets a stamp of its own in the same window: the writer's buffered delta holds both moves, and a recovery,
 * which sums every stamp above `flushed[owner]`, must apply both. Extending regardless applied `f` -> `to` alone
 * (Pending -> Failed, the console's Failed -> Pending, Pending -> Completed recovered as Pending -> Completed: Pending
 * +1, Failed -1 against the rows). Several stamps rather than a new field, so a stamp still reads as `f` -> `t` to a
 * store of an earlier version (its schema drops fields it does not know, and its recovery sums stamps already).
 */
export function nextStamps(
  existing: readonly CountStamp[] | undefined,
  owner: string,
  seq: number,
  from: CounterBucket | null,
  to: CounterBucket,
  known: (owner: string) => number,
): CountStamp[] | undefined {
  const kept = (existing ?? []).filter((st) => st.s > known(st.o)).map((st) => ({ ...st }));
  const mine = kept.find((st) => st.o === owner && st.s === seq && st.t === from);
  if (mine) mine.t = to;
  else if (from !== to) kept.push({ o: owner, s: seq, f: from, t: to });
  const out = kept.filter((st) => st.f !== st.t);
  return out.length > 0 ? out : undefined;
}

/**
 * Accumulates counter deltas in memory and applies them as one patch per endpoint every `intervalMs`: a message
 * then costs no counter round trip of its own, and a request/response pair on one endpoint nets out before it
 * reaches Cosmos. Exact across crashes (docs/store.md): deltas are kept per numbered flush window, every row
 * written carries a stamp naming this writer and its window (nextStamps), and the patch that applies a window
 * also sets `flushed[owner]` to it, atomically, on the counter document. What a killed writer never applied is
 * then exactly its stamps above `flushed[owner]`, which a survivor applies (recoverLostDeltas). A window is
 * flushed only when every write stamped with it has added its delta (tickets), so `flushed` never runs ahead
 * of a delta. A patch whose outcome is unknown (a timeout: it may have been applied) is not simply retried:
 * the next flush reads `flushed[owner]` first, and re-applies it only if it did not land.
 */
export class CounterBuffer {
  readonly #container: Container;
  readonly #intervalMs: number;
  readonly owner: string;
  /** The open window: new tickets are stamped with it. */
  #seq = 1;
  /** Deltas per window, not yet flushed. */
  readonly #windows = new Map<number, Map<string, Deltas>>();
  /** Tickets of writes still running, per window: a flush waits for these. */
  readonly #open = new Map<number, number>();
  /** Tickets of writes in doubt, per window: a flush does not wait for these, and applies no window from theirs on. */
  readonly #pinned = new Map<number, number>();
  /** Set by close(): no ticket is taken from then on (its write would be stamped with a window no flush applies). */
  #closed = false;
  #waiters: Array<() => void> = [];
  /** Per endpoint, a patch that failed after being sent: it may or may not have been applied. */
  readonly #uncertain = new Map<string, { seq: number; deltas: Deltas }>();
  /** Per endpoint, the `flushed` map as the last patch returned it (a lower bound: it only grows). */
  readonly #known = new Map<string, Record<string, number>>();
  /**
   * Endpoints where a flush was refused because a survivor recovered this writer (CountsRecoveredError): the deltas
   * of its rows written after that recovery's read are dropped there, and only a recount restores them.
   */
  readonly #refused = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<unknown> = Promise.resolve();

  constructor(container: Container, intervalMs: number, owner: string) {
    this.#container = container;
    this.#intervalMs = intervalMs;
    this.owner = owner;
  }

  /**
   * Before a row write: the window the row is stamped with. Settle it with add() or cancel(), always (or pin() it
   * when the write goes in doubt). Throws StoreClosedError once close() has been called: the last flush may have
   * run, and a delta added after it would never be applied while `flushed[owner]` claims everything was.
   */
  take(): CounterTicket {
    if (this.#closed) throw new StoreClosedError('the store is closing: no status write is started (its counter delta could not be flushed)');
    const seq = this.#seq;
    this.#open.set(seq, (this.#open.get(seq) ?? 0) + 1);
    return { seq, state: 'open' };
  }

  /**
   * The row stamped with the ticket's window is written (or, for a ticket in doubt, found landed): its delta joins
   * that window, the one on the row's stamp. Settles the ticket.
   */
  add(ticket: CounterTicket, endpointId: string, from: CounterBucket | null, to: CounterBucket): void {
    if (ticket.state !== 'settled' && from !== to) {
      let w = this.#windows.get(ticket.seq);
      if (!w) this.#windows.set(ticket.seq, (w = new Map()));
      bump(w, endpointId, to, 1);
      if (from !== null) bump(w, endpointId, from, -1);
    }
    this.#release(ticket);
  }

  /** The write did not happen (or moved nothing): settles an open ticket. A ticket in doubt is left pinned. */
  cancel(ticket: CounterTicket): void {
    if (ticket.state === 'open') this.#release(ticket);
  }

  /**
   * The write went in doubt (its reply lost: it may have landed, and its row would then carry the ticket's stamp).
   * The ticket's window stays pinned until forget() or add() settles it: no flush applies that window or a later one,
   * so `flushed[owner]` never covers a stamp whose delta may still be added (a recovery would skip it).
   */
  pin(ticket: CounterTicket): void {
    if (ticket.state !== 'open') return;
    this.#release(ticket);
    ticket.state = 'doubt';
    this.#pinned.set(ticket.seq, (this.#pinned.get(ticket.seq) ?? 0) + 1);
  }

  /** A pinned ticket's write did not land (or was overwritten, or is given up on): unpins its window. */
  forget(ticket: CounterTicket): void {
    if (ticket.state === 'doubt') this.#release(ticket);
  }

  #release(ticket: CounterTicket): void {
    const counts = ticket.state === 'open' ? this.#open : ticket.state === 'doubt' ? this.#pinned : undefined;
    ticket.state = 'settled';
    if (!counts) return;
    const n = (counts.get(ticket.seq) ?? 1) - 1;
    if (n > 0) counts.set(ticket.seq, n);
    else counts.delete(ticket.seq);
    if (n <= 0) for (const wake of this.#waiters.splice(0)) wake();
    // Windows held back by this ticket (or holding its delta) are due now.
    if (this.#windows.size > 0) this.#schedule();
  }

  /** close(): no ticket is taken any more (take() throws StoreClosedError); no flush is scheduled by a timer. */
  close(): void {
    this.#closed = true;
    this.stop();
  }

  /** The last applied window of `owner` on this endpoint's counters, as far as this writer has seen. */
  knownFlushed(endpointId: string): (owner: string) => number {
    const known = this.#known.get(endpointId);
    return (owner) => known?.[owner] ?? 0;
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush().catch(() => undefined); // kept for the next flush; nothing to report to
    }, this.#intervalMs);
    this.#timer.unref();
  }

  /**
   * Applies every buffered delta now (one flush at a time). Rejects with the first failure; it is kept.
   * `waitMs` bounds the wait for writes still holding a ticket of a window being closed (a store that does not
   * answer them must not hold a stop): when it runs out, only the windows below the lowest one still open are
   * applied, so `flushed[owner]` never covers a stamp whose delta has not been added, and it resolves false (the
   * rest is a survivor's to recover from the stamps once this writer's lease lapses). Writes in doubt (pinned
   * tickets) are not waited for, and hold back their window the same way. True: everything closed.
   */
  flush(waitMs = Infinity): Promise<boolean> {
    const run = this.#flushing.then(() => this.#flushOnce(waitMs));
    this.#flushing = run.catch(() => undefined);
    return run;
  }

  /** The windows with a ticket of a running write, up to `seq`. */
  #openUpTo(seq: number): number[] {
    return [...this.#open.keys()].filter((s) => s <= seq);
  }

  /** The windows with a ticket not settled (a running write's, or one in doubt), up to `seq`. */
  #unsettledUpTo(seq: number): number[] {
    return [...this.#open.keys(), ...this.#pinned.keys()].filter((s) => s <= seq);
  }

  async #flushOnce(waitMs: number): Promise<boolean> {
    // Close the window; wait for the writes stamped with it (or earlier) to add their deltas.
    const closing = this.#seq++;
    let expired = waitMs <= 0;
    const writesDone = (async () => {
      while (!expired && this.#openUpTo(closing).length > 0) await new Promise<void>((r) => this.#waiters.push(r));
    })();
    // Out of time (Infinity: none): the wait above ends at its next wake-up, and what is still open stays unapplied.
    if ((await raceDeadline(writesDone, { ms: waitMs })) === DEADLINE_PASSED) expired = true;
    const stillOpen = this.#unsettledUpTo(closing);
    const upTo = stillOpen.length > 0 ? Math.min(...stillOpen) - 1 : closing;
    const batch = new Map<string, Deltas>();
    for (const [seq, w] of [...this.#windows]) {
      if (seq > upTo) continue;
      this.#windows.delete(seq);
      for (const [endpointId, d] of w) addInto(batch, endpointId, d);
    }
    for (const endpointId of this.#uncertain.keys()) if (!batch.has(endpointId)) batch.set(endpointId, new Map());
    let firstError: unknown;
    await Promise.all(
      [...batch].map(async ([endpointId, deltas]) => {
        try {
          await this.#apply(endpointId, deltas, upTo);
        } catch (err) {
          firstError ??= err;
        }
      }),
    );
    if (firstError !== undefined) {
      this.#schedule();
      throw firstError;
    }
    return stillOpen.length === 0;
  }

  /** One endpoint's deltas of windows up to `seq`, with `flushed[owner] = seq` in the same patch. */
  async #apply(endpointId: string, deltas: Deltas, seq: number): Promise<void> {
    const doubt = this.#uncertain.get(endpointId);
    const all = new Map<string, Deltas>([[endpointId, new Map(deltas)]]);
    if (doubt) {
      let doc: CounterDoc | undefined;
      try {
        doc = await readCounterDoc(this.#container, endpointId);
      } catch (err) {
        // Nothing sent: this window's deltas wait for the next flush, the doubt stays.
        const w = this.#windows.get(seq) ?? new Map<string, Deltas>();
        this.#windows.set(seq, w);
        addInto(w, endpointId, deltas);
        throw err;
      }
      if (doc?.flushed) this.#known.set(endpointId, doc.flushed);
      // Landed after all (flushed moved to its window): drop it. Otherwise it goes out again with this window.
      if ((doc?.flushed?.[this.owner] ?? 0) < doubt.seq) addInto(all, endpointId, doubt.deltas);
      this.#uncertain.delete(endpointId);
    }
    const merged = all.get(endpointId)!;
    const ops = incrOps(merged);
    if (ops.length === 0 && !doubt) return;
    ops.push({ op: 'set', path: `/flushed/${escapePath(this.owner)}`, value: seq });
    try {
      const doc = await applyCounterDelta(this.#container, endpointId, ops, this.owner);
      if (doc?.flushed) this.#known.set(endpointId, doc.flushed);
    } catch (err) {
      // Refused, not in doubt: a survivor took this writer for dead and applied its stamped deltas here.
      if (err instanceof Error && err.name === 'CountsRecoveredError') {
        this.#refused.add(endpointId);
        throw err;
      }
      // Sent and failed: it may have been applied (a timeout) or not. The next flush finds out.
      this.#uncertain.set(endpointId, { seq, deltas: merged });
      throw err;
    }
  }

  /** The endpoints whose counters refused this writer's flushes since a survivor recovered it (a recount is owed there). */
  get refusedEndpoints(): string[] {
    return [...this.#refused].sort();
  }

  get pendingEndpoints(): number {
    const endpoints = new Set<string>(this.#uncertain.keys());
    for (const w of this.#windows.values()) for (const e of w.keys()) endpoints.add(e);
    return endpoints.size;
  }

  /** Clears the flush timer (close() does it for good). */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** What a writer id must look like to be recovered (it goes into a patch condition's text). */
const WRITER_ID = /^[\w.:@-]+$/;

/**
 * The condition on a buffering writer's flush patch: its `flushed` entry is not RECOVERED, which a survivor's
 * recovery sets in the patch that applies that writer's stamped deltas. A writer that was late, not dead (paused,
 * cut off past its lease), is refused by the store itself wherever a survivor recovered it, whatever the clocks and
 * the order in which its timers fire; a flush that lands first moves `flushed[owner]`, and the recovery's patch,
 * conditional on the entry it read, re-reads and applies only the stamps above it. A writer id no recovery accepts
 * (WRITER_ID) gets no condition: nobody recovers it.
 */
function recoveredFence(owner: string): string | undefined {
  if (!WRITER_ID.test(owner)) return undefined;
  const field = `c.flushed["${owner}"]`;
  return `FROM c WHERE NOT IS_DEFINED(${field}) OR ${field} < ${RECOVERED}`;
}

/** A JSON-pointer segment: `~` and `/` escaped (owner ids hold `:` and such, which need nothing). */
function escapePath(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

async function readCounterDoc(counters: Container, endpointId: string): Promise<(CounterDoc & { _etag?: string }) | undefined> {
  try {
    const r = await counters.item(COUNTER_DOC_ID, endpointId).read<CounterDoc & { _etag?: string }>();
    return r.statusCode === 404 ? undefined : r.resource;
  } catch (err) {
    if (cosmosStatus(err) === 404) return undefined;
    rethrowCosmos(err, 'counters read');
  }
}

/**
 * The `flushed` map a recount writes, from the one it read and the stamps on the rows it counted (docs/store.md, "A
 * recount and `flushed`"). The recount sets the counts to what the rows hold, so every stamp on them is counted: a
 * recovery must apply none of them again. So each writer stamped on the rows gets at least its highest window there
 * (its sound entry when that is higher): keeping a lower entry let a recovery of a dead writer apply those windows a
 * second time. A writer not on the rows keeps a sound entry (an integer window) as it is; a corrupt entry of one (no
 * window can be read from it) becomes RECOVERED, "every stamp of this writer counts as applied", which the recount
 * made true. A `flushed` that is no map names no writer beyond those on the rows. A live writer's next flush sets its
 * own window again: one at least as high, since it flushes the window it stamps with.
 */
export function recountedFlushed(stored: unknown, stamps: readonly unknown[]): Record<string, number> {
  // No prototype: an owner is any string read from the rows, `__proto__` included.
  const flushed = Object.create(null) as Record<string, number>;
  const corrupt: string[] = [];
  if (typeof stored === 'object' && stored !== null && !Array.isArray(stored))
    for (const [owner, window] of Object.entries(stored))
      if (Number.isSafeInteger(window)) flushed[owner] = window as number;
      else corrupt.push(owner);
  for (const st of stamps) {
    // Read as stored: a stamp without a string owner or a whole window names nothing a recovery would apply.
    const { o, s } = (st ?? {}) as { o?: unknown; s?: unknown };
    if (typeof o === 'string' && Number.isSafeInteger(s)) flushed[o] = Math.max(flushed[o] ?? 0, s as number);
  }
  for (const owner of corrupt) flushed[owner] ??= RECOVERED;
  return flushed;
}

/** The stamps on an endpoint's rows (only the rows that carry any): one query of its partition. */
export async function stampsOnRows(events: Container, endpointId: string): Promise<CountStamp[]> {
  const rows = (
    await events.items
      .query<{ counted?: CountStamp[] }>(
        { query: 'SELECT c.counted FROM c WHERE c.endpointId = @ep AND IS_DEFINED(c.counted)', parameters: [{ name: '@ep', value: endpointId }] },
        { partitionKey: [endpointId] },
      )
      .fetchAll()
  ).resources;
  return rows.flatMap((row) => (Array.isArray(row.counted) ? row.counted : []));
}

/** One status row as countsAsFlushed reads it: its status, sub-status and stamps, as stored (unchecked). */
export interface RowCountView {
  s?: unknown;
  u?: unknown;
  k?: unknown;
}

/** The statuses a recount counts a row by (exact string match, as its COUNT queries do). */
const ROW_STATUSES = new Set<string>(COUNTER_BUCKETS.filter((b) => b !== 'Handoff'));

/**
 * What an endpoint's counters document must hold so that every flush and recovery still to come lands on the right
 * counts: the rows' buckets, as a recount counts them (a status it does not know counts nowhere), less every stamp
 * above its writer's entry in `flushed` (the map read, with its etag, before the rows), whose delta that writer's
 * next flush - or a survivor's recovery - has yet to add. Unlike recountEndpoint, which counts those rows as they are
 * and raises the entries instead, so a live buffering writer's next flush adds its open window a second time; this
 * leaves `flushed` as it was and every pending delta to whoever owes it. Needs each row's status and stamps from one
 * read of that row (one query), so a row that moves between two reads is not counted at one version and uncounted at
 * another.
 */
export function countsAsFlushed(rows: readonly RowCountView[], flushed: Readonly<Record<string, number>>): Record<CounterBucket, number> {
  const counts = zeroCounts();
  for (const row of rows) {
    if (typeof row.s === 'string' && ROW_STATUSES.has(row.s)) counts[row.s === ResolutionStatus.Pending && row.u === PendingSubStatus.Handoff ? 'Handoff' : (row.s as CounterBucket)]++;
    if (!Array.isArray(row.k)) continue;
    for (const raw of row.k) {
      // A stamp that does not read names no delta anyone would apply (a recovery takes only whole stamps).
      const st = countStampSchema.safeParse(raw);
      if (!st.success || st.data.s <= (Object.hasOwn(flushed, st.data.o) ? flushed[st.data.o]! : 0)) continue;
      counts[st.data.t]--;
      if (st.data.f !== null) counts[st.data.f]++;
    }
  }
  return counts;
}

/** Every row of an endpoint, as countsAsFlushed reads it: one query of its partition, each row read once. */
export async function rowCountViews(events: Container, endpointId: string): Promise<RowCountView[]> {
  return (
    await events.items
      .query<RowCountView>(
        { query: 'SELECT c.status AS s, c.subStatus AS u, c.counted AS k FROM c WHERE c.endpointId = @ep', parameters: [{ name: '@ep', value: endpointId }] },
        { partitionKey: [endpointId], maxItemCount: 10_000 },
      )
      .fetchAll()
  ).resources;
}

/**
 * The endpoints outside `known` whose rows carry a stamp of `owner`: one query across the events container, a small
 * projection per stamped row of that writer on such an endpoint. It finds the endpoints a writer that died before its
 * first flush there has no counters document on. Endpoints with a document (`known`) are left out of the result (a
 * long-lived writer's stamps are on most rows of those, and they are recovered through their document anyway); Cosmos
 * DB still reads those rows, as neither term is an index seek: a cost paid by the one survivor that recovers a death.
 */
export async function endpointsStampedBy(events: Container, owner: string, known: Iterable<string> = []): Promise<Set<string>> {
  const rows = (
    await events.items
      .query<{ endpointId?: unknown }>({
        query: 'SELECT c.endpointId FROM c WHERE ARRAY_CONTAINS(c.counted, @stamp, true) AND NOT ARRAY_CONTAINS(@known, c.endpointId)',
        parameters: [
          { name: '@stamp', value: { o: owner } },
          { name: '@known', value: [...known] },
        ],
      })
      .fetchAll()
  ).resources;
  return new Set(rows.flatMap((row) => (typeof row.endpointId === 'string' ? [row.endpointId] : [])));
}

/**
 * Applies, once, what a buffering writer that died had not flushed: on each endpoint's counters, the sum of its
 * row stamps above `flushed[owner]`, together with `flushed[owner] = RECOVERED`, in one patch conditional on
 * `flushed[owner]` still being the value read, so a second survivor doing the same applies nothing. An endpoint
 * with stamps of it and no counters document (it died before its first flush there) gets the document created with
 * the deltas and RECOVERED; a create refused because someone created it meanwhile falls back to the patch. Returns
 * how many stamps were applied. Reads every row of an endpoint that carries stamps (a query per endpoint) and the
 * dead writer's stamped rows across endpoints (one query): a cost paid once per crash, not per message.
 */
export async function recoverLostDeltas(
  counters: Container,
  events: Container,
  owner: string,
): Promise<number> {
  if (!WRITER_ID.test(owner)) throw new Error(`not a writer id: ${owner}`);
  const docs = (await counters.items.query<CounterDoc>('SELECT * FROM c').fetchAll()).resources;
  const endpoints = new Set(docs.map((doc) => doc.endpointId));
  for (const endpointId of await endpointsStampedBy(events, owner, [...endpoints])) endpoints.add(endpointId);
  // Each endpoint whatever the others do: one throttled or broken endpoint does not hold back the rest.
  let recovered = 0;
  const failed: string[] = [];
  let first: unknown;
  for (const endpointId of endpoints) {
    try {
      recovered += await recoverEndpoint(counters, events, owner, endpointId);
    } catch (err) {
      failed.push(endpointId);
      first ??= err;
    }
  }
  if (failed.length > 0) {
    // The store's own message when it has one (a native Cosmos error's text can name the account).
    const why = classifyCosmosError(first, 'counter recovery')?.message ?? (first instanceof Error ? first.name : 'error');
    throw new CounterRecoveryIncompleteError(owner, recovered, failed, why);
  }
  return recovered;
}

/** recoverLostDeltas on one endpoint: the number of stamps it applied (0 when someone else did). */
async function recoverEndpoint(counters: Container, events: Container, owner: string, endpointId: string): Promise<number> {
  const mark: PatchOperation = { op: 'set', path: `/flushed/${escapePath(owner)}`, value: RECOVERED };
  for (let attempt = 0; attempt < 3; attempt++) {
    await ensureFlushedMap(counters, endpointId);
    const doc = await readCounterDoc(counters, endpointId);
    const applied = doc?.flushed?.[owner] ?? 0;
    if (applied === RECOVERED) return 0;
    const lost: Deltas = new Map();
    let stamps = 0;
    for (const st of await stampsOnRows(events, endpointId))
      if (st.o === owner && st.s > applied) {
        stamps++;
        lost.set(st.t, (lost.get(st.t) ?? 0) + 1);
        if (st.f !== null) lost.set(st.f, (lost.get(st.f) ?? 0) - 1);
      }
    // Nothing of its to apply here: no mark either. A flush of the writer (if it was late, not dead) then applies
    // only rows this read did not see, which is right.
    if (stamps === 0) return 0;
    if (!doc) {
      // Nobody flushed on this endpoint yet: the document starts with the lost deltas, marked recovered. A 409 is a
      // concurrent creator (a live writer, or another survivor with the same deltas): then the patch path decides.
      const created = newCounterDoc(endpointId);
      for (const [bucket, n] of lost) created.counts[bucket] += n;
      created.flushed = { [owner]: RECOVERED };
      try {
        await counters.items.create(created);
        return stamps;
      } catch (err) {
        if (cosmosStatus(err) !== 409) rethrowCosmos(err, 'counter recovery');
        continue;
      }
    }
    const operations = [...incrOps(lost), mark];
    // Conditional on nobody having recovered it meanwhile (live writers' patches do not matter: they add theirs).
    const field = `c.flushed["${owner}"]`;
    const condition = `FROM c WHERE NOT IS_DEFINED(${field}) OR ${field} = ${applied}`;
    try {
      await counters.item(COUNTER_DOC_ID, endpointId).patch({ operations, condition });
      return stamps;
    } catch (err) {
      if (cosmosStatus(err) !== 412) rethrowCosmos(err, 'counter recovery');
      // The entry moved: another survivor recovered it (the next read says RECOVERED), or the writer was late, not
      // dead, and a flush of its landed (the next read applies only the stamps above it).
    }
  }
  rethrowCosmos(new Error('counter document kept changing'), 'counter recovery');
}

/** Counter documents written before `flushed` existed get an empty map, so `set /flushed/x` has a parent. */
async function ensureFlushedMap(counters: Container, endpointId: string): Promise<void> {
  const doc = await readCounterDoc(counters, endpointId);
  if (!doc || doc.flushed) return;
  try {
    const { _etag, ...rest } = doc;
    await counters.item(COUNTER_DOC_ID, endpointId).replace({ ...rest, flushed: {} }, { accessCondition: { type: 'IfMatch', condition: _etag ?? '' } });
  } catch (err) {
    if (cosmosStatus(err) !== 412) rethrowCosmos(err, 'counter migration');
  }
}
