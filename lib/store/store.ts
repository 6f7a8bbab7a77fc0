// The message store on Cosmos DB: status rows, history, audits, counters, heartbeats, and the console's reads.
// Uses only what real Cosmos DB and the embedded server both support (DESIGN.md §6): point reads/writes with a
// partition key, etag-conditional replace, `incr` patches, parameterized queries with WHERE / ORDER BY (one
// property) / continuation tokens, and COUNT. Container layout and the reasons for it: docs/store.md.
import { randomInt, randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import {
  BulkOperationType,
  PartitionKeyKind,
  type Container,
  type CosmosClient,
  type Database,
  type Item,
  type JSONObject,
  type OperationInput,
  type OperationResponse,
  type PatchOperation,
  type RequestOptions,
  type SqlParameter,
} from '@azure/cosmos';
import type { z } from 'zod';
import {
  ALL_MESSAGE_TYPES,
  isRequestType,
  isHistoryOnly,
  MessageType,
  ResolutionStatus,
  resolutionStatusSchema,
  resultingStatus,
  WireText,
  type ResolutionStatus as ResolutionStatusT,
} from '@nimbus/sdk/contract';
import { DEADLINE_PASSED, raceDeadline } from '../concurrency/deadline.ts';
import { createCosmosClient, cosmosConnectionSchema, type CosmosConnection } from './cosmos.ts';
import {
  CorruptDocumentError,
  StoreInputError,
  StoreTransientError,
  cosmosStatus,
  rethrowCosmos,
} from './errors.ts';
import { decideStaleWrite, isGuarded, UnclassifiedWriteError, type GuardedRowView, type IgnoreReason } from './guard.ts';
import { HistoryContext, historyQuestions, type HistoryAnswer, type HistoryQuestions, type RecordedHistory } from './historyContext.ts';
import { docId, statusRowId } from './ids.ts';
import { fingerprintOf } from './fingerprint.ts';
import { applyGroupTransition, applyGroupTransitions, rebuildFailureGroups } from './failureGroupAggregates.ts';
import {
  COUNTER_DOC_ID,
  CounterBuffer,
  applyCounterDelta,
  bucketOf,
  counterDelta,
  countsAsFlushed,
  nextStamps,
  recoverLostDeltas,
  recountedFlushed,
  rowCountViews,
  stampsOnRows,
  toEndpointCounts,
  zeroCounts,
  type CounterTicket,
  type EndpointCounts,
} from './counters.ts';
import { blockerIsOrNoneSql } from './parkedBlocker.ts';
import { answerSql, isAnswer } from './answerRule.ts';
import { RowCache } from './rowCache.ts';
import { carriesMark, nextWriteMarks } from './writeMarks.ts';
import { appliedMessageIdsOf, nextAppliedMessageIds } from './appliedMessages.ts';
import { docIdOf, queryAll, queryPage, stripSystem, type Page, type PageRequest } from './paging.ts';
import {
  COUNTER_BUCKETS,
  auditEntrySchema,
  anyCounterDocSchema,
  auditWriteSchema,
  counterDocSchema,
  countStampSchema,
  describeIssues,
  endpointIdSchema,
  eventRowRefSchema,
  heartbeatRecordSchema,
  heartbeatSettingsSchema,
  heartbeatWriteSchema,
  historyEntrySchema,
  historyWriteSchema,
  serviceHealthSchema,
  statusRowSchema,
  statusWriteSchema,
  type AuditEntry,
  type AuditWrite,
  type CounterBucket,
  type CounterDoc,
  type CountStamp,
  type HeartbeatRecord,
  type HeartbeatSettings,
  type HeartbeatWrite,
  type HistoryEntry,
  type HistoryWrite,
  type ServiceHealth,
  type StatusRow,
  type StatusRowSummary,
  type StatusWrite,
} from './schemas.ts';

export const CONTAINERS = {
  events: 'events',
  history: 'history',
  audits: 'audits',
  counters: 'counters',
  heartbeats: 'heartbeats',
  platform: 'platform',
} as const;

/**
 * The id and partition key of the access probe's documents (probeOutcomeAccess): "~" is in no endpoint id
 * (endpointIdSchema) and in no document id the store derives (docId escapes as ~XX, upper-case hex).
 */
export const ACCESS_PROBE_KEY = '~nimbus-access-probe';

/** Operations in one Cosmos bulk request (the service's limit). */
const BULK_MAX = 100;

/** One item's outcome in a call that settles several independently. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** How often a guarded write re-reads and retries after losing an etag race before it gives up (transient). */
const MAX_WRITE_ATTEMPTS = 10;

/** Rows whose last write's outcome is unknown, remembered at most (oldest forgotten first: a recount repairs). */
const MAX_IN_DOUBT = 10_000;
/** History creates in doubt remembered at most (#createHistory). */
const MAX_HISTORY_IN_DOUBT = 10_000;

/**
 * Writes in doubt settled per pass: their rows read in one bulk request (Cosmos' bulk limit). The ones that landed
 * are then counted together: one counter patch per endpoint and one patch per failure-group document for the lot.
 */
const SETTLE_BATCH = BULK_MAX;

/**
 * How long close() and flushCounters() spend settling writes in doubt (a store that cannot be reached must not
 * hold a shutdown): what is left is repaired by a recount.
 */
const SETTLE_BUDGET_MS = 5_000;

/**
 * How long one settle pass waits for its rows' read before it gives up on it and leaves its writes in doubt for a
 * later pass. Passes run one at a time, so a read that never answers (a stalled endpoint holding the bulk request or
 * the partition-key-range read before it) would otherwise stop all settling until a restart: the client's own
 * request time-out (30 s by default, `requestTimeoutMs`; no retry after a time-out) is far longer, and the read of the partition key ranges takes no abort
 * signal. A healthy bulk read of 100 rows takes tens of milliseconds; 5 s also outlasts the embedded server's
 * pause while it writes a snapshot of a few hundred thousand documents (docs/store.md, "Durability of the embedded
 * server"). Giving up costs only a retry: the pass aborts the bulk request and point reads it gave up on (they
 * take the signal), so none holds a connection to the client's time-out; a ranges read still running goes on.
 */
const SETTLE_READ_TIMEOUT_MS = 5_000;

/**
 * A row write (writeStatus, an item of writeStatuses, restoreStatusRow) sent and answered with no verdict (a
 * connection reset, a timeout, a 5xx): Cosmos may have applied it. Its counter delta and failure-group move are held here until the row is read again - by the row's next write
 * (the message's redelivery) or by the settle pass (#settlePass) - and applied then if the row is the version this
 * write built or carries its mark (writeNo; another writer moved the row on since).
 */
interface InDoubtWrite {
  endpointId: string;
  /** The version the write replaced (null: a create) and the version it wrote. */
  replaced: StatusRow | null;
  written: StatusRow;
  /**
   * Its number among this store's writes: `written` carries it as this store's mark (`lastWrites`), which every
   * writer carries forward, so a row read after another writer moved it on still says whether this write landed.
   */
  writeNo: number;
  /**
   * Settle passes that could not read its row. A pass takes the entries read the fewest times first (oldest first
   * among those), so an unreadable row does not hold back the others; the map itself stays in age order, for
   * eviction at MAX_IN_DOUBT.
   */
  unread: number;
  /**
   * Another write of the same row still in doubt when this one was remembered (two writes of one row in flight at
   * once): kept, not dropped - either may have landed, and both are settled from one read.
   */
  earlier?: InDoubtWrite;
  /**
   * Its counter ticket (a buffering store), pinned while it is in doubt: its window is not flushed before the write
   * is settled, and a landed one's delta joins that window, the one on its row's stamp (CounterBuffer.pin).
   */
  ticket?: CounterTicket;
  /**
   * The version it replaced did not parse (`replaced` is then null): its bucket is unknown, so a landed one is
   * counted as a new row and its endpoint is then recounted from its rows, as its own success would have done
   * (#recountOverUnreadable, #recountAfterLanded).
   */
  overUnreadable?: boolean;
}

/** Writes of one row kept in doubt together at most (see InDoubtWrite.earlier; beyond it, a recount repairs). */
const MAX_IN_DOUBT_PER_ROW = 8;

/**
 * Whether an error from a row write leaves its outcome unknown: a reset, a timeout or a 5xx may come after the
 * server applied it. A refusal (429, 4xx) and a refused connection (nothing was sent) do not.
 */
function outcomeUnknown(err: unknown): boolean {
  if ((err as { code?: unknown } | null)?.code === 'ECONNREFUSED') return false;
  const code = cosmosStatus(err);
  return code === undefined || code === 408 || code >= 500;
}

/**
 * outcomeUnknown for one item of a bulk request (undefined: no answer for it). A request that failed as a whole
 * leaves every item unknown: the SDK rethrows it as a plain Error without its status, so a refusal cannot be told
 * from a reply lost after the server applied the lot. An item's own 408 or 5xx may also come after it was applied;
 * its 429, 449 or another 4xx was not.
 */
function bulkOutcomeUnknown(result: { statusCode: number } | undefined): boolean {
  return result === undefined || result.statusCode === 408 || result.statusCode >= 500;
}

/** Adds one row's move from bucket `from` (null: a new row) to `to` to per-endpoint netted counter deltas. */
function addDelta(deltas: Map<string, Map<CounterBucket, number>>, endpointId: string, from: CounterBucket | null, to: CounterBucket): void {
  let d = deltas.get(endpointId);
  if (!d) deltas.set(endpointId, (d = new Map()));
  d.set(to, (d.get(to) ?? 0) + 1);
  if (from !== null) d.set(from, (d.get(from) ?? 0) - 1);
}

/**
 * The stamps of a stored row that does not parse as a status row, each kept if it reads on its own (as
 * countsAsFlushed and a recovery take them: whole stamps only); undefined when there are none.
 */
function readableStamps(raw: unknown): CountStamp[] | undefined {
  const counted = (raw as { counted?: unknown }).counted;
  if (!Array.isArray(counted)) return undefined;
  const stamps = counted.flatMap((st) => {
    const parsed = countStampSchema.safeParse(st);
    return parsed.success ? [parsed.data] : [];
  });
  return stamps.length > 0 ? stamps : undefined;
}

/** Whether a row read back is the version a write built (updatedAt is that write's own clock reading). */
function isVersion(row: StatusRow, written: StatusRow): boolean {
  return (
    row.lastMessageId === written.lastMessageId &&
    row.status === written.status &&
    row.subStatus === written.subStatus &&
    row.updatedAt === written.updatedAt
  );
}

export type StatusWriteResult =
  | {
      outcome: 'written';
      /** True when the row did not exist before. */
      created: boolean;
      previousStatus: ResolutionStatusT | null;
      /** lastMessageId of the row version this write replaced (null on create): the chain of versions. */
      previousMessageId: string | null;
      /**
       * The ids of the messages applied to the version this write replaced, newest first ([] on create; for a row
       * written before they were kept, its last message id): a message among them is a copy applied again.
       */
      previousMessageIds: string[];
      /**
       * Whether the version this write replaced was written by a conditional write (its `conditional`; undefined on
       * create and for a version of an older writer, which did not say).
       */
      previousConditional: boolean | undefined;
      row: StatusRow;
      /**
       * 'failed' means the row is written but the counter delta is not: a recount repairs it (docs/store.md).
       * 'recounted': the version replaced did not parse (its bucket unknown), so the endpoint's counters were set
       * from its rows after the write (#recountOverUnreadable).
       */
      counters: 'updated' | 'unchanged' | 'queued' | 'failed' | 'recounted';
    }
  | {
      outcome: 'ignored';
      reason: IgnoreReason | 'precondition-failed';
      /** The row that made the write stale (null when it could not be read). */
      current: StatusRow | null;
    };

/** What the current row must look like for a conditional write (each given field must match exactly). */
export interface RowExpectation {
  status?: ResolutionStatusT;
  /** null = the row must not exist. */
  lastMessageId?: string | null;
  /**
   * Whether the version must have been written by a conditional write (its `conditional`): the Manager's undo of
   * its claim asks for true, so the Resolver's record of the command - same id, same status, written unconditionally
   * - is not taken for the claim and rolled back. A version that does not say (an older writer's) matches.
   */
  conditional?: boolean;
  /**
   * The write is the Manager's claim of the row for a command it has not sent yet: the new version names the
   * command's id (lastMessageId) but does not count it among the messages applied (`appliedMessageIds` stays the
   * replaced version's). Only the Resolver's record of the command applies it. So the guard's already-applied rule can
   * ask a console command by its id alone: a copy of a command the Resolver recorded before a later message is
   * refused, while the command's first record - behind messages enqueued before the claim, or after an attempt whose
   * history landed and whose row write did not - is not taken for a copy (docs/resolver.md, "The stale-write guard").
   */
  claim?: boolean;
}

/**
 * The row as the guard sees it for a write. A conditional write (`expect`: Reconcile's repair, the Manager's claim,
 * the Resolver's restore after a refusal) names the version it replaces, so it is never a copy that came back by
 * redelivery: the already-applied rule, which is for those, does not see the row's applied ids. Reconcile re-applies
 * a stored response over the version the operator saw even when that response is among them (a row set back by a
 * writer that bypassed the guard).
 */
function guardView(row: StatusRow | null, expect: RowExpectation | undefined): GuardedRowView | null {
  return expect === undefined || row === null ? row : { status: row.status, messageType: row.messageType, parentMessageId: row.parentMessageId };
}

/** A claim's version keeps the applied ids of the version it replaces, without the claimed id (RowExpectation.claim). */
function claimedAppliedIds(existing: StatusRow | null, claimedId: string): string[] {
  return appliedMessageIdsOf(existing).filter((id) => id !== claimedId);
}

function matchesExpectation(row: StatusRow | null, expect: RowExpectation): boolean {
  if (expect.lastMessageId === null) return row === null;
  if (row === null) return false;
  if (expect.status !== undefined && row.status !== expect.status) return false;
  if (expect.lastMessageId !== undefined && row.lastMessageId !== expect.lastMessageId) return false;
  if (expect.conditional !== undefined && row.conditional !== undefined && row.conditional !== expect.conditional) return false;
  return true;
}

export interface EventFilter extends PageRequest {
  endpointId: string;
  statuses?: ResolutionStatusT[];
  /** Only Pending rows parked on a handoff. */
  handoffOnly?: boolean;
  eventTypeId?: string;
  sessionId?: string;
  eventId?: string;
  /** Inclusive lower / exclusive upper bound on updatedAt (ISO-8601). */
  updatedFrom?: string;
  updatedTo?: string;
}

export interface EventDetails {
  rows: StatusRow[];
  history: Page<HistoryEntry>;
  audits: Page<AuditEntry>;
  /** Rows of this event that no longer parse. */
  corruptRows: { id: string; issues: string }[];
}

/** Most rows one event's rows query reads (one per session the event appeared in; usually one). */
export const EVENT_ROWS_LIMIT = 100;

/** An event's rows on one endpoint as listEventRowsChecked reads them: what parsed, what did not, whether cut. */
export interface EventRows {
  rows: StatusRow[];
  corrupt: { id: string; issues: string }[];
  /** More than EVENT_ROWS_LIMIT rows: the oldest updates are not in `rows`. */
  truncated: boolean;
}

/** An event's rows on one endpoint as listEventSessions finds them (MessageStore.listEventSessions). */
export interface EventSessions {
  /** The sessions of its rows, each row's own (a row whose session no longer reads is counted but not here). */
  sessions: string[];
  /** Every document of the event on the endpoint, whether or not it still parses as a status row. */
  rows: number;
}

/** What MessageStore.listCounterDocs read: see there. */
export interface CounterDocsRead {
  /** The counts of every document that parses, by endpoint id. */
  counts: EndpointCounts[];
  /** Per endpoint, when its counter document was last written (ISO, from `_ts`), readable or not. */
  touched: Map<string, string>;
  /**
   * The documents that no longer parse: `endpointId` undefined when even that is missing or not an endpoint id; `id`
   * the document id; `issues` where and why it fails (the schema's messages, never the values).
   */
  unreadable: { endpointId: string | undefined; id: string; version: string | undefined; issuePaths: string[]; issues: string }[];
}

export interface StoreOptions extends CosmosConnection {
  /** Clock, for tests. */
  now?: () => Date;
  /** An existing client (shared between stores); otherwise one is built from endpoint and key. */
  client?: CosmosClient;
  /**
   * Buffer counter deltas and apply them every this many ms (0 = one patch per transition, before the write
   * returns). The Resolver sets it (e.g. 250) to take the counter round trip off its hot path; see docs/store.md.
   */
  counterFlushMs?: number;
  /**
   * This writer's id in row stamps and in the counters' `flushed` map (with counterFlushMs), and in the marks every
   * row write leaves (`lastWrites`): unique per store instance - the Resolver uses its instance-lease owner, so a
   * survivor can recover its lost deltas. Default: random.
   */
  counterOwner?: string;
  /** Row versions kept to skip the read before a guarded write (0 disables). Default 5000. */
  rowCacheSize?: number;
  /**
   * Every this many ms, while some row write's outcome is unknown (its reply was lost), read those rows and count
   * the writes that landed (docs/store.md, "A row write whose reply is lost"). 0 = only at flushCounters() and
   * close(). Default 5000. No timer runs while nothing is in doubt.
   */
  settleIntervalMs?: number;
  /**
   * Where the store warns of what it has no caller to report to (pino's `warn(fields, message)` fits): a write in
   * doubt over a row that did not parse, found landed (by the settle pass or a later write of its row), whose
   * endpoint could not be recounted. Ids only, never a payload. Default: one JSON line on stderr.
   */
  warn?: StoreWarn;
}

/** The store's warning sink (StoreOptions.warn): the fields are ids, the message names the repair. */
export type StoreWarn = (fields: Record<string, string | null>, message: string) => void;

const stderrWarn: StoreWarn = (fields, message) =>
  process.stderr.write(`${JSON.stringify({ level: 'warn', time: new Date().toISOString(), ...fields, msg: message })}\n`);

/**
 * Fields listed in pages: everything but the payload (bodies can be large and may hold personal data) and the store's
 * bookkeeping (counter stamps, write marks), which no page shows.
 */
const SUMMARY_FIELDS = Object.keys(statusRowSchema.shape).filter(
  (k) => k !== 'payload' && k !== 'counted' && k !== 'lastWrites' && k !== 'appliedMessageIds' && k !== 'conditional',
);
/** The SELECT list of a page of status rows: the store's lists and the console's own event-list query (server/). */
// Bracket notation: `from` is a keyword of Cosmos SQL, so `c.from` does not parse.
export const STATUS_ROW_SUMMARY_SELECT = SUMMARY_FIELDS.map((k) => `c["${k}"]`).join(', ');
export const statusRowSummarySchema = statusRowSchema.omit({ payload: true });

function parseInput<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const r = schema.safeParse(input);
  if (!r.success) throw new StoreInputError(`invalid ${what}: ${describeIssues(r.error)}`);
  return r.data;
}

const statusListSchema = resolutionStatusSchema.array().max(10);

/** A time bound as the stored format (toISOString), or a StoreInputError for anything unparsable. */
function isoParam(value: string, what: string): string {
  const t = Date.parse(value);
  if (Number.isNaN(t))
    throw new StoreInputError(`${what} is not a date-time: ${JSON.stringify(value.slice(0, 40))}`);
  return new Date(t).toISOString();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The row version a status write makes of `existing` (null: no row yet). Fields that describe the event fall
 * back to what the row knows; fields that describe the outcome come from this message.
 */
function buildStatusRow(
  w: z.output<typeof statusWriteSchema>,
  id: string,
  status: ResolutionStatusT,
  subStatus: ReturnType<typeof resultingStatus>['subStatus'],
  existing: StatusRow | null,
  now: string,
): StatusRow {
  return {
    id,
    endpointId: w.endpointId,
    eventId: w.eventId,
    sessionId: w.sessionId,
    status,
    subStatus: subStatus ?? null,
    messageType: w.messageType,
    // Fields that describe the event fall back to what the row knows when this message lacks them
    // (responses often carry no event type or body); fields that describe the outcome come from this message.
    eventTypeId: w.eventTypeId ?? existing?.eventTypeId ?? null,
    correlationId: w.correlationId ?? existing?.correlationId ?? null,
    originatingMessageId: w.originatingMessageId ?? existing?.originatingMessageId ?? null,
    retryLimit: w.retryLimit ?? existing?.retryLimit ?? null,
    lastMessageId: w.messageId,
    appliedMessageIds: nextAppliedMessageIds(existing, w.messageId),
    parentMessageId: w.parentMessageId,
    from: w.from,
    to: w.to,
    enqueuedAt: w.enqueuedAt,
    requestMessageId: w.payload !== undefined ? (w.requestMessageId ?? w.messageId) : (existing?.requestMessageId ?? null),
    payload: w.payload !== undefined ? w.payload : existing?.payload,
    errorText: w.errorText,
    errorType: w.errorType,
    deadLetterReason: w.deadLetterReason,
    deadLetterErrorDescription: w.deadLetterErrorDescription,
    retryCount: w.retryCount,
    handoffReason: w.handoffReason,
    externalJobId: w.externalJobId,
    expectedBy: w.expectedBy,
    blockedBy: w.blockedBy,
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
    eventIdLower: w.eventId.toLowerCase(),
    sessionIdLower: w.sessionId.toLowerCase(),
    // Computed as the row is written, so failure groups are one indexed field to read (docs/failures.md).
    fingerprint:
      fingerprintOf({
        status,
        errorType: w.errorType,
        errorText: w.errorText,
        deadLetterReason: w.deadLetterReason,
        deadLetterErrorDescription: w.deadLetterErrorDescription,
        eventTypeId: w.eventTypeId ?? existing?.eventTypeId ?? null,
        eventId: w.eventId,
        sessionId: w.sessionId,
      })?.groupId ?? null,
  };
}

/** Opens (creating if missing) the database and containers, and returns the store. */
export async function createStore(options: StoreOptions): Promise<MessageStore> {
  const conn = parseInput(cosmosConnectionSchema, options, 'Cosmos connection settings');
  const client = options.client ?? createCosmosClient({ ...conn, credential: options.credential });
  try {
    const { database } = await client.databases.createIfNotExists({ id: conn.database });
    const containers = await ensureContainers(database);
    return new MessageStore(client, database, containers, {
      now: options.now ?? (() => new Date()),
      ownsClient: options.client == null,
      counterFlushMs: options.counterFlushMs ?? 0,
      counterOwner: options.counterOwner ?? `store-${randomUUID()}`,
      rowCacheSize: options.rowCacheSize ?? 5000,
      settleIntervalMs: options.settleIntervalMs ?? 5000,
      warn: options.warn ?? stderrWarn,
    });
  } catch (err) {
    if (options.client == null) client.dispose();
    rethrowCosmos(err, 'store initialisation');
  }
}

async function ensureContainers(database: Database): Promise<Record<keyof typeof CONTAINERS, Container>> {
  const make = async (id: string, paths: string[]) =>
    (
      await database.containers.createIfNotExists({
        id,
        partitionKey:
          paths.length > 1 ? { paths, kind: PartitionKeyKind.MultiHash, version: 2 } : { paths, version: 2 },
      })
    ).container;
  // Sequential: containers are created once per database, and the embedded server is single-threaded anyway.
  return {
    events: await make(CONTAINERS.events, ['/endpointId', '/eventId']),
    history: await make(CONTAINERS.history, ['/eventId']),
    audits: await make(CONTAINERS.audits, ['/eventId']),
    counters: await make(CONTAINERS.counters, ['/endpointId']),
    heartbeats: await make(CONTAINERS.heartbeats, ['/endpointId']),
    platform: await make(CONTAINERS.platform, ['/id']),
  };
}

export class MessageStore {
  readonly #client: CosmosClient;
  readonly #c: Record<keyof typeof CONTAINERS, Container>;
  readonly #now: () => Date;
  readonly #ownsClient: boolean;
  readonly #rowCache: RowCache;
  readonly #counterBuffer: CounterBuffer | undefined;
  /** Per row (cache key), a write whose outcome is unknown: see InDoubtWrite. Oldest first. */
  readonly #inDoubt = new Map<string, InDoubtWrite>();
  /** Per history entry (event + id), the token of this store's create of it whose answer was lost: see #createHistory. */
  readonly #historyInDoubt = new Map<string, string>();
  /** Per endpoint, the recount after a write over an unreadable row that runs or waits (#recountOverUnreadable). */
  readonly #unreadableRecounts = new Map<string, { started: boolean; done: Promise<boolean> }>();
  readonly #settleIntervalMs: number;
  #settleTimer: NodeJS.Timeout | undefined;
  /** The last settle pass started (they run one at a time, each after the one before). */
  #settling: Promise<unknown> = Promise.resolve();
  /** Settle passes started and not yet done: a pass may have taken entries whose counts are still on the way. */
  #passesRunning = 0;
  #closed = false;
  /**
   * This store instance's id in the marks it leaves on the rows it writes (`lastWrites`, lib/store/writeMarks.ts):
   * its counter owner, which is unique per instance (random unless the caller names it, as the Resolver does).
   */
  readonly #writerId: string;
  /** The number of this store's last row write (every attempt takes a new one): the `n` of its marks. */
  #writeNo = 0;
  readonly #warn: StoreWarn;
  readonly database: Database;

  constructor(
    client: CosmosClient,
    database: Database,
    containers: Record<keyof typeof CONTAINERS, Container>,
    options: {
      now: () => Date;
      ownsClient: boolean;
      counterFlushMs: number;
      counterOwner: string;
      rowCacheSize: number;
      settleIntervalMs?: number;
      warn?: StoreWarn;
    },
  ) {
    this.#client = client;
    this.database = database;
    this.#c = containers;
    this.#now = options.now;
    this.#ownsClient = options.ownsClient;
    this.#rowCache = new RowCache(options.rowCacheSize);
    this.#counterBuffer =
      options.counterFlushMs > 0 ? new CounterBuffer(containers.counters, options.counterFlushMs, options.counterOwner) : undefined;
    this.#settleIntervalMs = options.settleIntervalMs ?? 0;
    this.#writerId = options.counterOwner;
    this.#warn = options.warn ?? stderrWarn;
  }

  /**
   * Settles the writes in doubt it can (bounded in time; best effort: one whose row cannot be read waits for the
   * next pass), then applies buffered counter deltas (no-op without counterFlushMs). Rejects if Cosmos refuses
   * those deltas.
   */
  async flushCounters(): Promise<void> {
    await this.#settleWithin(SETTLE_BUDGET_MS);
    await this.#counterBuffer?.flush();
  }

  /**
   * Settles the writes in doubt it can and flushes buffered counter deltas, each step bounded (SETTLE_BUDGET_MS), then
   * releases the client's sockets and timers (only when the store built the client itself). Resolves true when every
   * counter delta it knows of is applied; false when something is left (a write still running or in doubt, a patch
   * refused or unanswered): the stamps of what is left are above `flushed[owner]`, so a writer that then lets its
   * lease lapse instead of releasing it has a survivor apply them (docs/store.md, "Closing the store").
   */
  async close(): Promise<boolean> {
    this.#closed = true;
    // From here a status write that would take a counter ticket is refused (StoreClosedError, before it sends
    // anything): taken after the last flush, its delta would never be applied.
    this.#counterBuffer?.close();
    if (this.#settleTimer !== undefined) clearTimeout(this.#settleTimer);
    this.#settleTimer = undefined;
    await this.#settleWithin(SETTLE_BUDGET_MS);
    let clean = await this.#flushWithin(SETTLE_BUDGET_MS);
    // A write still running at the settle above (a Resolver's stop does not wait for its writes) that ended without
    // an answer is in doubt now, its window pinned: its delta counts only if it is settled and flushed here (the
    // settle timer does nothing once closed). One still in doubt after this keeps its window unflushed: false.
    if (this.#inDoubt.size > 0 || this.#passesRunning > 0) {
      await this.#settleWithin(SETTLE_BUDGET_MS);
      // This flush's answer stands alone: it applies every window up to the one it closes, those the first one held
      // back (a write in doubt then, now settled) or could not apply (a patch failed: kept, and sent again) too.
      clean = await this.#flushWithin(SETTLE_BUDGET_MS);
    }
    if (this.#ownsClient) this.#client.dispose();
    return clean && this.#inDoubt.size === 0;
  }

  /**
   * The counter buffer's flush, bounded as a whole: its wait for writes in flight and its patches. Safe to give up
   * on: a patch applies its deltas and `flushed[owner]` together or not at all. False when anything was not applied.
   */
  async #flushWithin(budgetMs: number): Promise<boolean> {
    if (!this.#counterBuffer) return true;
    const flushed = await raceDeadline(this.#counterBuffer.flush(budgetMs).catch(() => false), { ms: budgetMs });
    return flushed !== DEADLINE_PASSED && flushed;
  }

  /**
   * Row writes whose outcome is still unknown (their reply was lost and their row not read since). A landed one a
   * settle pass is still counting is no longer listed: flushCounters() and close() wait for that pass.
   */
  get writesInDoubt(): number {
    return this.#inDoubt.size;
  }

  #iso(): string {
    return this.#now().toISOString();
  }

  // ---------------------------------------------------------------- status rows

  /**
   * Writes one message's status through the stale-write guard. Atomic: the row is read, the guard decides, and
   * the write is conditional on the etag read (or a create when there was no row); a lost race re-reads and
   * decides again. Returns 'written' or 'ignored' with the guard's reason; a write that keeps losing races
   * throws StoreTransientError, never a silent "ignored". A 429 throws StoreThrottledError.
   * `expect` adds a compare-and-swap precondition on the current row (reconcile-stale-pending, operator
   * claims): when the row no longer matches, the write is ignored with reason 'precondition-failed'.
   */
  writeStatus(input: StatusWrite, expect?: RowExpectation): Promise<StatusWriteResult> {
    return this.#writeStatus(input, expect, this.#historyContext());
  }

  /**
   * writeStatus for several rows at once (a bulk operation's claims: one row each, in different partitions), in
   * as few requests as Cosmos' bulk API allows - the versions not in the row cache read in one bulk request, the
   * conditional writes (If-Match the version read, or a create) in another, one counter patch per endpoint and one
   * failure-group patch per group document for the lot. Each write is decided exactly as writeStatus decides it. A
   * write the lot cannot settle by itself (the guard or `expect` refuses it, its row is unreadable, its conditional
   * write lost a race or failed) is then done by writeStatus alone, so every answer is the one writeStatus would
   * give; a row named twice is written one after the other the same way. Results are in the order of `items`; an error settles only its own item.
   * A bulk write with no verdict (its request failed as a whole, or its own 408/5xx) is remembered in doubt as
   * writeStatus remembers its own, so the single write it falls back to (or the settle pass) counts it once if it
   * landed; that single write then finds the row already written and answers as writeStatus would.
   */
  async writeStatuses(items: ReadonlyArray<{ input: StatusWrite; expect?: RowExpectation }>): Promise<Settled<StatusWriteResult>[]> {
    const out: Array<Settled<StatusWriteResult> | undefined> = new Array(items.length);
    const single: number[] = [];
    const seen = new Set<string>();
    const lot: Array<{
      k: number;
      w: z.output<typeof statusWriteSchema>;
      status: ResolutionStatusT;
      subStatus: ReturnType<typeof resultingStatus>['subStatus'];
      id: string;
      cacheKey: string;
      pk: [string, string];
      existing?: StatusRow | null;
      etag?: string;
    }> = [];
    items.forEach(({ input }, k) => {
      let w: z.output<typeof statusWriteSchema>;
      try {
        w = parseInput(statusWriteSchema, input, 'status write');
      } catch (error) {
        out[k] = { ok: false, error };
        return;
      }
      const id = statusRowId(w.eventId, w.sessionId);
      const cacheKey = `${w.endpointId}/${id}`;
      // A row with a write in doubt is settled by writeStatus, which reads it first.
      if (seen.has(cacheKey) || this.#inDoubt.has(cacheKey)) return single.push(k);
      seen.add(cacheKey);
      const { status, subStatus } = resultingStatus(w.messageType, w.deadLetterErrorDescription);
      lot.push({ k, w, status, subStatus, id, cacheKey, pk: [w.endpointId, w.eventId] });
    });
    // The versions to decide on: cached (a bulk read just made, the Resolver's own writes), else read in bulk.
    const unread = lot.filter((x) => {
      const cached = this.#rowCache.get(x.cacheKey);
      if (cached) [x.existing, x.etag] = [cached.row, cached.etag];
      return !cached;
    });
    const read = await this.#bulkReadRows(unread.map((x) => ({ id: x.id, pk: x.pk })));
    unread.forEach((x, i) => {
      const r = read[i];
      if (r !== undefined) [x.existing, x.etag] = [r.row, r.etag];
    });
    const now = this.#iso();
    const writes: Array<{ x: (typeof lot)[number]; row: StatusRow; ticket: CounterTicket | undefined; writeNo: number }> = [];
    /** Per item, the row its bulk write built when that write had no verdict: the fallback may prove it landed. */
    const builtInDoubt = new Map<number, { existing: StatusRow | null; row: StatusRow }>();
    try {
      for (const x of lot) {
        const expect = items[x.k]!.expect;
        const existing = x.existing;
        let apply = false;
        // Unknown version (unreadable, a failed read) or any refusal: writeStatus decides and explains it.
        if (existing !== undefined && (existing === null || x.etag) && (expect === undefined || matchesExpectation(existing, expect))) {
          try {
            isGuarded(x.status, x.w.messageType); // throws for a write the guard cannot classify
            const incoming = { status: x.status, messageType: x.w.messageType, messageId: x.w.messageId };
            const view = guardView(existing, expect);
            // A copy that may be past the row's applied ids needs the history's answer: writeStatus asks it.
            // Rule 8 is not asked here (recordsHistory false): it is asked of a message's record
            // (recordOutcome(s)), and this bulk write records no history (its callers: the Manager's claims).
            apply = decideStaleWrite(incoming, view).apply && historyQuestions(incoming, view, x.w, false) === undefined;
          } catch {
            apply = false; // an unclassified write: writeStatus reports it
          }
        }
        if (!apply) {
          single.push(x.k);
          continue;
        }
        const row = buildStatusRow(x.w, x.id, x.status, x.subStatus, existing ?? null, now);
        row.conditional = expect !== undefined;
        if (expect?.claim) row.appliedMessageIds = claimedAppliedIds(existing ?? null, x.w.messageId);
        const ticket = this.#counterBuffer?.take();
        const previous = existing ? bucketOf(existing.status, existing.subStatus) : null;
        const next = bucketOf(row.status, row.subStatus);
        if (ticket) {
          const stamps = nextStamps(existing?.counted, this.#counterBuffer!.owner, ticket.seq, previous, next, this.#counterBuffer!.knownFlushed(x.w.endpointId));
          if (stamps) row.counted = stamps;
          else delete row.counted;
        } else if (existing?.counted) row.counted = existing.counted;
        const writeNo = this.#markWrite(row, existing ?? null);
        writes.push({ x, row, ticket, writeNo });
      }
      const results = await this.#bulk(
        this.#c.events,
        writes.map(({ x, row }): OperationInput =>
          x.existing
            ? { operationType: BulkOperationType.Replace, id: x.id, partitionKey: x.pk, ifMatch: x.etag ?? '', resourceBody: row as unknown as JSONObject }
            : { operationType: BulkOperationType.Create, partitionKey: x.pk, resourceBody: row as unknown as JSONObject },
        ),
      );
      const deltas = new Map<string, Map<CounterBucket, number>>();
      const moved: Array<{ before: StatusRow | null; after: StatusRow }> = [];
      /** Writes of this store in doubt on the lot's rows, remembered while the lot was in flight, that landed. */
      const lateLanded: InDoubtWrite[] = [];
      const settledLate = new Set<number>();
      writes.forEach(({ x, row, ticket, writeNo }, i) => {
        const r = results[i];
        if (r === undefined || r.statusCode >= 300) {
          this.#rowCache.forgetIfStill(x.cacheKey, x.etag);
          // No verdict: the write may have landed. Remembered as writeStatus remembers its own, so the single write
          // below (which reads a row in doubt first) or the settle pass counts it once if it did.
          if (bulkOutcomeUnknown(r)) {
            this.#remember(x.cacheKey, { endpointId: x.w.endpointId, replaced: x.existing ?? null, written: row, writeNo, unread: 0, ticket });
            builtInDoubt.set(x.k, { existing: x.existing ?? null, row });
          }
          single.push(x.k); // lost a race (409/412/404) or failed: writeStatus reads again, decides, classifies
          return;
        }
        this.#rowCache.set(x.cacheKey, row, r.etag);
        const existing = x.existing ?? null;
        // As in #writeStatusChainAttempts: a write of this row remembered in doubt after the lot left it out (a
        // writeStatus of this store running beside it) is settled now - the row was `existing` until this replaced it.
        const late = this.#inDoubt.get(x.cacheKey);
        if (late) {
          lateLanded.push(...this.#takeDoubt(x.cacheKey, late, row, existing, writeNo));
          settledLate.add(x.k);
        }
        const previous = existing ? bucketOf(existing.status, existing.subStatus) : null;
        const next = bucketOf(row.status, row.subStatus);
        if (ticket) this.#counterBuffer!.add(ticket, x.w.endpointId, previous, next);
        else if (previous !== next) addDelta(deltas, x.w.endpointId, previous, next);
        moved.push({ before: existing, after: row });
        out[x.k] = {
          ok: true,
          value: {
            outcome: 'written',
            created: existing === null,
            previousStatus: existing?.status ?? null,
            previousMessageId: existing?.lastMessageId ?? null,
            previousMessageIds: appliedMessageIdsOf(existing),
            previousConditional: existing?.conditional,
            row,
            counters: previous === next ? 'unchanged' : ticket ? 'queued' : 'updated',
          },
        };
      });
      // One counter patch per endpoint for the lot; as in writeStatus, a failed one is reported, not thrown.
      const failedCounters = await this.#applyDeltas(deltas);
      for (const o of out) if (o?.ok && o.value.outcome === 'written' && failedCounters.has(o.value.row.endpointId)) o.value.counters = 'failed';
      // Counted together, before the lot's own group moves (as writeStatus settles before its own); a failed patch is
      // reported on every item that settled a write, as writeStatus reports it.
      if (!(await this.#countLanded(lateLanded)))
        for (const k of settledLate) {
          const o = out[k];
          if (o?.ok && o.value.outcome === 'written') o.value.counters = 'failed';
        }
      // The lot's failure-group changes summed per group document: one patch each, not one per row.
      await applyGroupTransitions(this.database, moved);
    } finally {
      for (const { ticket } of writes) if (ticket) this.#counterBuffer!.cancel(ticket); // no-op when add() settled it
    }
    // One at a time per row only where the row repeats; distinct rows concurrently.
    const byRow = new Map<string, number[]>();
    for (const k of single.sort((a, b) => a - b)) {
      const w = items[k]!.input;
      const key = `${w.endpointId}\u0000${w.eventId}\u0000${w.sessionId ?? ''}`;
      byRow.set(key, [...(byRow.get(key) ?? []), k]);
    }
    await Promise.all(
      [...byRow.values()].map(async (ks) => {
        for (const k of ks) {
          try {
            const result = await this.writeStatus(items[k]!.input, items[k]!.expect);
            const built = builtInDoubt.get(k);
            // The bulk write landed after all (the fallback's read found the very row it built, and counted it): it is
            // this call's write, answered as such - not as a refusal, which would tell the Manager that someone else
            // claimed the row (it then answers 409 "being sent" for a command nothing sends).
            out[k] = { ok: true, value: built && result.outcome === 'ignored' && result.current && isVersion(result.current, built.row) ? this.#landedInDoubt(built) : result };
          } catch (error) {
            out[k] = { ok: false, error };
          }
        }
      }),
    );
    return out as Settled<StatusWriteResult>[];
  }

  /** writeStatuses' answer for an item whose bulk write had no verdict but landed (counted when it was settled). */
  #landedInDoubt({ existing, row }: { existing: StatusRow | null; row: StatusRow }): StatusWriteResult {
    const previous = existing ? bucketOf(existing.status, existing.subStatus) : null;
    const next = bucketOf(row.status, row.subStatus);
    return {
      outcome: 'written',
      created: existing === null,
      previousStatus: existing?.status ?? null,
      previousMessageId: existing?.lastMessageId ?? null,
      previousMessageIds: appliedMessageIdsOf(existing),
      previousConditional: existing?.conditional,
      row,
      counters: previous === next ? 'unchanged' : this.#counterBuffer ? 'queued' : 'updated',
    };
  }

  /**
   * Point reads of several status rows in one bulk request (a bulk operation that knows each event's session),
   * in the order given: the row, null when there is none, undefined when it could not be read or does not parse
   * (read it with getStatusRow, where the error surfaces). The versions read are cached with their etags, so
   * writeStatuses right after needs no second read.
   */
  async getStatusRows(keys: ReadonlyArray<{ endpointId: string; eventId: string; sessionId: string }>): Promise<Array<StatusRow | null | undefined>> {
    const read = await this.#bulkReadRows(keys.map((k) => ({ id: statusRowId(k.eventId, k.sessionId), pk: [k.endpointId, k.eventId] })));
    return read.map((r, i) => {
      if (r === undefined) return undefined;
      const k = keys[i]!;
      if (r.row) this.#rowCache.set(`${k.endpointId}/${statusRowId(k.eventId, k.sessionId)}`, r.row, r.etag);
      return r.row;
    });
  }

  async #bulkReadRows(keys: ReadonlyArray<{ id: string; pk: [string, string] }>): Promise<Array<{ row: StatusRow | null; etag: string | undefined } | undefined>> {
    const results = await this.#bulk(this.#c.events, keys.map((k): OperationInput => ({ operationType: BulkOperationType.Read, id: k.id, partitionKey: k.pk })));
    return results.map((r) => {
      if (r === undefined) return undefined;
      if (r.statusCode === 404) return { row: null, etag: undefined };
      if (r.statusCode >= 300) return undefined;
      const parsed = statusRowSchema.safeParse(r.resourceBody);
      return parsed.success ? { row: parsed.data, etag: r.etag } : undefined;
    });
  }

  /**
   * Cosmos' bulk API, 100 operations a request (its limit): each operation's status code, etag and body, or
   * undefined when its request failed as a whole (the caller then does that operation alone, where the failure is
   * classified). `items.bulk`, not `executeBulkOperations`: the latter waits for partial batches in steps of one
   * second (measured: 1,000 ms for 50 point reads, against 8 ms here and 30-200 ms for 50 single reads). `options`
   * go with each request (the settle pass's abort signal: an aborted request is one that failed as a whole).
   */
  async #bulk(
    container: Container,
    ops: OperationInput[],
    options?: RequestOptions,
  ): Promise<Array<{ statusCode: number; etag?: string; resourceBody?: unknown } | undefined>> {
    const out: Array<{ statusCode: number; etag?: string; resourceBody?: unknown } | undefined> = [];
    for (let i = 0; i < ops.length; i += BULK_MAX) {
      const part = ops.slice(i, i + BULK_MAX);
      let results: OperationResponse[];
      try {
        results = await container.items.bulk(part, { continueOnError: true }, options);
      } catch {
        out.push(...part.map(() => undefined));
        continue;
      }
      for (let j = 0; j < part.length; j++) {
        const r = results[j];
        out.push(r ? { statusCode: r.statusCode, etag: r.eTag, resourceBody: r.resourceBody } : undefined);
      }
    }
    return out;
  }

  /**
   * The Resolver's hot path for one message: the history entry and the guarded status write. The history
   * create runs alongside the status row's read and is awaited before the status is written, so history is
   * still recorded first (a crash in between leaves history without status, which redelivery completes) while
   * the message costs two sequential round trips before the write instead of three.
   *
   * `mayBeLate`: the message may arrive after messages enqueued after it - the Resolver's throttle replacement or a
   * broker redelivery of it. Its earlier attempt may have lost its history create as well as its row write, so an
   * entry this call creates does not prove a first arrival, and the guard's history questions are asked as for a
   * copy (HistoryContext.answer). Left out for a first delivery: its entry created here spares the query.
   *
   * `originalTimeUnknown`: the write's enqueuedAt is not the message's original enqueue time (a Resolver replacement
   * whose OriginalEnqueuedTimeUtc was missing or rejected); rule 8 then asks without its enqueue-time bound.
   *
   * `onHistory`: told the history write's result once it is stored, before the call returns or throws - also when
   * the status write then fails, which the result cannot say: the Resolver counts some outcomes by the call that
   * created their history entry (resolver-worker/outcomeMetrics.ts), and that call may be one whose row write failed.
   */
  async recordOutcome(args: {
    history: HistoryWrite;
    status: StatusWrite;
    expect?: RowExpectation;
    mayBeLate?: boolean;
    originalTimeUnknown?: boolean;
    onHistory?: (history: RecordedHistory) => void;
  }): Promise<{ history: { recorded: boolean; entry: HistoryEntry }; status: StatusWriteResult }> {
    const history = this.recordHistory(args.history);
    history.catch(() => undefined); // observed below; this only keeps an early status failure from orphaning it
    let status: StatusWriteResult;
    try {
      status = await this.#writeStatus(
        args.status,
        args.expect,
        this.#historyContext(history, args.mayBeLate ? [args.status.messageId] : [], args.originalTimeUnknown ? [args.status.messageId] : []),
      );
    } catch (err) {
      const recorded = await history.catch(() => undefined);
      if (recorded !== undefined) args.onHistory?.(recorded);
      throw err;
    }
    const recorded = await history;
    args.onHistory?.(recorded);
    return { history: recorded, status };
  }

  /**
   * recordOutcome for several messages about one status row (one endpoint, event and session), in their order:
   * the history entries go in one transactional batch (one partition: the event), and the status writes are
   * decided one after another by the guard and stored as one conditional write of the final row (see
   * #writeStatusChain). Two requests for the lot instead of two per message; the Resolver uses it for the messages
   * of one row that arrive in one receive, which is what a backlog looks like. Each result is what recordOutcome
   * would have returned for that message, except that `counters` describes the combined transition. A failure
   * throws and leaves the status unwritten (history entries may be recorded; they are idempotent).
   */
  async recordOutcomes(
    items: Array<{
      history: HistoryWrite;
      status: StatusWrite;
      mayBeLate?: boolean;
      originalTimeUnknown?: boolean;
      onHistory?: (history: RecordedHistory) => void;
    }>,
  ): Promise<Array<{ history: { recorded: boolean; entry: HistoryEntry }; status: StatusWriteResult }>> {
    if (items.length === 0) return [];
    if (items.length === 1) return [await this.recordOutcome(items[0]!)];
    // Checked before anything is written (the chain checks the parsed writes again).
    const rowOf = (w: StatusWrite | HistoryWrite) => `${w.endpointId}\u0000${w.eventId}\u0000${w.sessionId ?? ''}`;
    const row = rowOf(items[0]!.status);
    if (items.some((i) => rowOf(i.status) !== row || rowOf(i.history) !== row))
      throw new StoreInputError('recordOutcomes takes messages about one status row (one endpoint, event and session)');
    const history = this.#recordHistoryBatch(items.map((i) => i.history));
    history.catch(() => undefined); // observed below; this only keeps an early status failure from orphaning it
    let statuses: StatusWriteResult[];
    try {
      statuses = await this.#writeStatusChain(
        items.map((i) => i.status),
        undefined,
        this.#historyContext(
          history,
          items.filter((i) => i.mayBeLate).map((i) => i.status.messageId),
          items.filter((i) => i.originalTimeUnknown).map((i) => i.status.messageId),
        ),
      );
    } catch (err) {
      const recorded = await history.catch(() => undefined);
      if (recorded !== undefined) items.forEach((i, k) => i.onHistory?.(recorded[k]!));
      throw err;
    }
    const entries = await history;
    items.forEach((i, k) => i.onHistory?.(entries[k]!));
    return statuses.map((status, k) => ({ history: entries[k]!, status }));
  }

  /**
   * History entries of one event in one transactional batch of creates. If the batch fails for any reason (an
   * entry already recorded by a redelivered copy fails it as a whole on Cosmos DB), the entries are recorded one by
   * one instead, each idempotent as in recordHistory, with the same entries and create tokens: an entry the failed batch
   * did create (the embedded server's batches are not atomic; a batch whose answer was lost) is reported as recorded
   * by this call (#createHistory), where it used to be reported as already recorded.
   */
  async #recordHistoryBatch(inputs: HistoryWrite[]): Promise<Array<{ recorded: boolean; entry: HistoryEntry }>> {
    const recordedAt = this.#iso();
    const entries = inputs.map((input): HistoryEntry => {
      const w = parseInput(historyWriteSchema, input, 'history entry');
      return { ...w, id: docId(w.messageId), recordedAt, createToken: randomUUID() };
    });
    const eventId = entries[0]!.eventId; // one event: recordOutcomes checked that every entry is about one row
    // A batch may not create one id twice (two copies of a message in one receive): one by one instead.
    if (new Set(entries.map((e) => e.id)).size !== entries.length) return Promise.all(inputs.map((i) => this.recordHistory(i)));
    let allCreated = false;
    try {
      const response = await this.#c.history.items.batch(
        // The entries are JSON by construction (parsed from the schema); the SDK's JSONObject type cannot see that.
        entries.map((entry) => ({ operationType: BulkOperationType.Create, resourceBody: entry as unknown as JSONObject })),
        eventId,
      );
      allCreated =
        response.result !== undefined &&
        response.result.length === entries.length &&
        response.result.every((r) => r.statusCode >= 200 && r.statusCode < 300);
    } catch {
      // The SDK rethrows a failed batch as a plain Error without its status code, so the cause (an entry already
      // there, a batch over the size limit, a throttle, an outage) cannot be told apart here. The entries are
      // recorded one by one below, where a real failure surfaces again with its status and is classified.
    }
    if (allCreated) return entries.map((entry) => ({ recorded: true, entry }));
    // The same entries, tokens included: one the failed batch did create (the embedded server's batches are not
    // atomic; a batch whose answer was lost) is then reported as recorded by this call, not as a copy's.
    const one = [];
    for (const entry of entries) one.push(await this.#createHistory(entry));
    return one;
  }

  /**
   * The history context of one writeStatus / recordOutcome(s) call (lib/store/historyContext.ts): `recorded`, the
   * call's own history write (none for a plain writeStatus); `mayBeLate`, the ids the caller marked late;
   * `timeUnknown`, the ids whose enqueuedAt is not their original time (rule 8 asked without its bound). Its
   * questions are answered by #historyAnswer.
   */
  #historyContext(
    recorded?: Promise<RecordedHistory | RecordedHistory[]>,
    mayBeLate: Iterable<string> = [],
    timeUnknown: Iterable<string> = [],
  ): HistoryContext {
    return new HistoryContext((w, questions) => this.#historyAnswer(w, questions), recorded, mayBeLate, timeUnknown);
  }

  async #writeStatus(input: StatusWrite, expect: RowExpectation | undefined, history: HistoryContext): Promise<StatusWriteResult> {
    return (await this.#writeStatusChain([input], expect, history))[0]!;
  }

  /**
   * Applies the status writes of several messages about one row, in order, with one conditional write of the
   * final version: each message is decided by the guard against the row as the messages before it left it,
   * exactly as if each had been written alone, and the row is written once (If-Match the version the chain
   * started from, or a create). The counters move once, from the first version's bucket to the last's. A chain
   * of one is the single guarded write.
   */
  async #writeStatusChain(inputs: StatusWrite[], expect: RowExpectation | undefined, history: HistoryContext): Promise<StatusWriteResult[]> {
    const writes = inputs.map((input) => {
      const w = parseInput(statusWriteSchema, input, 'status write');
      const { status, subStatus } = resultingStatus(w.messageType, w.deadLetterErrorDescription);
      try {
        return { w, status, subStatus, guarded: isGuarded(status, w.messageType) };
      } catch (err) {
        if (err instanceof UnclassifiedWriteError) throw new StoreInputError(err.message);
        throw err;
      }
    });
    // All about one row: recordOutcomes checks that before anything is written.
    const first = writes[0]!.w;
    const id = statusRowId(first.eventId, first.sessionId);
    const item = this.#c.events.item(id, [first.endpointId, first.eventId]);
    const cacheKey = `${first.endpointId}/${id}`;
    // The flush window this write's row is stamped with; the window is not flushed before the ticket is settled.
    const ticket = this.#counterBuffer?.take();
    try {
      return await this.#writeStatusChainAttempts(writes, expect, history, item, id, cacheKey, ticket);
    } finally {
      if (ticket) this.#counterBuffer!.cancel(ticket); // no-op when add() settled it
    }
  }

  async #writeStatusChainAttempts(
    writes: Array<{ w: z.output<typeof statusWriteSchema>; status: ResolutionStatusT; subStatus: ReturnType<typeof resultingStatus>['subStatus']; guarded: boolean }>,
    expect: RowExpectation | undefined,
    history: HistoryContext,
    item: Item,
    id: string,
    cacheKey: string,
    ticket: CounterTicket | undefined,
  ): Promise<StatusWriteResult[]> {
    const first = writes[0]!.w;
    /** A landed write in doubt whose counter delta could not be applied either: reported for a recount. */
    let landedUncounted = false;
    for (let attempt = 1; attempt <= MAX_WRITE_ATTEMPTS; attempt++) {
      // Attempt 1 may decide without a read: from the cached version, or - for a request copy, which normally
      // opens its row - by assuming there is no row yet. Either way the write itself is conditional (If-Match
      // the cached etag, or create), so a wrong assumption costs a 412/409 and a fresh read on the next attempt.
      let exists: boolean;
      let existing: StatusRow | null = null;
      let unreadable = false;
      // An unreadable row's stamps that still read: another writer's pending deltas, carried like a readable row's.
      let rawStamps: CountStamp[] | undefined;
      let etag: string | undefined;
      let optimistic = false;
      // A write of this row in doubt is settled from a fresh read, never from an assumed version.
      const doubt = this.#inDoubt.get(cacheKey);
      const cached = attempt === 1 && !doubt ? this.#rowCache.get(cacheKey) : undefined;
      if (cached) {
        ({ row: existing, etag } = cached);
        exists = true;
        optimistic = true;
      } else if (attempt === 1 && !doubt && first.messageType === MessageType.EventRequest && expect === undefined) {
        exists = false;
        optimistic = true;
      } else {
        let raw: unknown;
        try {
          const read = await item.read();
          raw = read.statusCode === 404 ? undefined : read.resource;
          etag = read.etag;
        } catch (err) {
          if (cosmosStatus(err) !== 404) rethrowCosmos(err, 'status row read');
        }
        exists = raw !== undefined;
        if (exists) {
          const parsed = statusRowSchema.safeParse(raw);
          if (parsed.success) existing = parsed.data;
          else {
            unreadable = true;
            rawStamps = readableStamps(raw);
          }
        }
        if (doubt && !(await this.#settleDoubt(cacheKey, doubt, existing))) landedUncounted = true;
      }
      // Whatever must be stored before the status (the history entries) completes before any decision is acted on.
      await history.waitForHistory();

      const now = this.#iso();
      const results: StatusWriteResult[] = [];
      // The row as the messages so far leave it; `rowExists` / `rowUnreadable` describe that version.
      let current = existing;
      let rowExists = exists;
      let rowUnreadable = unreadable;
      let applied = false;
      for (const { w, status, subStatus, guarded } of writes) {
        let refusal: { reason: IgnoreReason | 'precondition-failed' } | undefined;
        if (rowUnreadable && guarded) refusal = { reason: 'unreadable-row' };
        else if (expect !== undefined && !matchesExpectation(current, expect))
          refusal = { reason: 'precondition-failed' };
        else {
          const view = guardView(current, expect);
          const incoming = { status, messageType: w.messageType, messageId: w.messageId };
          // Rules 7 (past the applied ids) and 8 read the history's answers, when asked, from the call's context.
          const decision = decideStaleWrite(await history.answer(incoming, view, w), view);
          if (!decision.apply) refusal = { reason: decision.reason };
        }
        if (refusal !== undefined) {
          results.push({ outcome: 'ignored', reason: refusal.reason, current });
          continue;
        }
        const row = buildStatusRow(w, id, status, subStatus, current, now);
        row.conditional = expect !== undefined;
        if (expect?.claim) row.appliedMessageIds = claimedAppliedIds(current, w.messageId);
        results.push({
          outcome: 'written',
          created: !rowExists,
          previousStatus: current?.status ?? null,
          previousMessageId: current?.lastMessageId ?? null,
          previousMessageIds: appliedMessageIdsOf(current),
          previousConditional: current?.conditional,
          row,
          counters: 'unchanged', // set below, once the write is done
        });
        current = row;
        rowExists = true;
        rowUnreadable = false;
        applied = true;
      }

      if (!applied) {
        // A refusal is never conditional on an etag, so one decided from an assumed version is confirmed first.
        if (optimistic) continue;
        if (existing) this.#rowCache.set(cacheKey, existing, etag);
        return results;
      }

      const final = current!;
      // Buckets of the version this write replaces and of the new one.
      const previous = existing ? bucketOf(existing.status, existing.subStatus) : null;
      const next = bucketOf(final.status, final.subStatus);
      // Over an unreadable row, its stamps that still read: dropping them, the recount below would not take off a
      // buffering writer's window not yet flushed, and that writer's flush would then add it over the recount.
      const carried = existing ? existing.counted : rawStamps;
      if (ticket) {
        const stamps = nextStamps(carried, this.#counterBuffer!.owner, ticket.seq, previous, next, this.#counterBuffer!.knownFlushed(first.endpointId));
        if (stamps) final.counted = stamps;
        else delete final.counted;
      } else if (carried) final.counted = carried; // another writer's, carried (see counters.ts)
      const writeNo = this.#markWrite(final, existing);
      try {
        const written = exists
          ? await item.replace(final, { accessCondition: { type: 'IfMatch', condition: etag ?? '' } })
          : await this.#c.events.items.create(final);
        this.#rowCache.set(cacheKey, final, written.etag);
      } catch (err) {
        this.#rowCache.forgetIfStill(cacheKey, etag);
        const code = cosmosStatus(err);
        // 409: created concurrently; 412: changed since our read; 404: deleted since our read. Decide again.
        if (code === 409 || code === 412 || code === 404) {
          if (!optimistic) await sleep(randomInt(0, 4 * attempt + 1));
          continue;
        }
        // No verdict: the write may have landed. Its counter delta waits for the next read of the row.
        if (outcomeUnknown(err))
          this.#remember(cacheKey, { endpointId: first.endpointId, replaced: existing, written: final, writeNo, unread: 0, ticket, overUnreadable: unreadable });
        rethrowCosmos(err, 'status row write');
      }
      // A write of this row remembered in doubt while this one was in flight (after its read) is settled now: the
      // row was `existing` until this write replaced it, so that write landed if it built `existing`. A recount it
      // needs (it replaced a row that did not parse) waits for this write's own delta: the row counted now is this one.
      const late = this.#inDoubt.get(cacheKey);
      const lateLanded = late ? this.#takeDoubt(cacheKey, late, final, existing, writeNo) : [];
      if (!(await this.#countLanded(lateLanded, 'caller-recounts'))) landedUncounted = true;
      let counters: 'updated' | 'unchanged' | 'queued' | 'failed' | 'recounted' = previous === next ? 'unchanged' : 'updated';
      if (ticket) {
        this.#counterBuffer!.add(ticket, first.endpointId, previous, next);
        if (counters === 'updated') counters = 'queued';
      } else {
        try {
          await applyCounterDelta(this.#c.counters, first.endpointId, counterDelta(previous, next));
        } catch {
          // The row is the truth and is already written; failing the call now would make the caller retry a
          // write that then sees no transition. Reported instead, repaired by recountEndpoint.
          counters = 'failed';
        }
      }
      // An unreadable old row's bucket is unknown: only the new bucket was counted above, and the old one may still
      // hold it. The endpoint is recounted from its rows now, after this write's delta is applied or buffered (with
      // its stamp on the row), so the counts come out right; the caller is told a recount is due only if that fails.
      if (unreadable) counters = (await this.#recountOverUnreadable(first.endpointId)) ? 'recounted' : 'failed';
      await this.#recountAfterLanded(lateLanded);
      if (landedUncounted) counters = 'failed';
      // Failure-group aggregates move with the row, from the version replaced to the one written (never throws).
      await applyGroupTransition(this.database, existing, final);
      for (const r of results) if (r.outcome === 'written') r.counters = counters;
      return results;
    }
    throw new StoreTransientError(
      `status row ${first.endpointId}/${id} kept changing under ${MAX_WRITE_ATTEMPTS} write attempts`,
    );
  }

  /**
   * Gives `row`, about to be sent over `existing` (null: a create), this write's mark - a new write number - with the
   * other writers' marks carried forward from `existing` (lib/store/writeMarks.ts). Returns the write number.
   */
  #markWrite(row: StatusRow, existing: StatusRow | null): number {
    const writeNo = ++this.#writeNo;
    row.lastWrites = nextWriteMarks(existing?.lastWrites, this.#writerId, writeNo);
    return writeNo;
  }

  #remember(cacheKey: string, doubt: InDoubtWrite): void {
    if (doubt.ticket) this.#counterBuffer!.pin(doubt.ticket);
    const earlier = this.#inDoubt.get(cacheKey);
    if (earlier) {
      doubt.earlier = earlier;
      let d: InDoubtWrite = doubt;
      for (let n = 1; n < MAX_IN_DOUBT_PER_ROW && d.earlier; n++) d = d.earlier;
      this.#giveUp(d.earlier);
      delete d.earlier;
    }
    this.#inDoubt.delete(cacheKey);
    this.#inDoubt.set(cacheKey, doubt);
    if (this.#inDoubt.size > MAX_IN_DOUBT) {
      const oldest = this.#inDoubt.keys().next().value!;
      this.#giveUp(this.#inDoubt.get(oldest));
      this.#inDoubt.delete(oldest);
    }
    this.#scheduleSettle();
  }

  /**
   * Writes in doubt dropped without a read (beyond the caps): their windows are unpinned, so the counters flush on;
   * a landed one is then left to a recount (docs/store.md, residue).
   */
  #giveUp(doubt: InDoubtWrite | undefined): void {
    for (let d = doubt; d; d = d.earlier) if (d.ticket) this.#counterBuffer?.forget(d.ticket);
  }

  /**
   * Settles a write in doubt from a fresh read of its row (`current`: null when there is none or it does not
   * parse): if the row is the version that write built, it landed and its delta is applied now; otherwise it never
   * landed or has been overwritten since, and it is forgotten. Checked and taken in one synchronous step right after
   * the read, so the row's next write and the settle pass, whichever reads first, settle it once. False when a
   * landed write's counter patch failed (immediate counters): the caller reports it for a recount.
   */
  async #settleDoubt(cacheKey: string, doubt: InDoubtWrite, current: StatusRow | null, before: StatusRow | null = null, settlingWriteNo?: number): Promise<boolean> {
    return this.#countLanded(this.#takeDoubt(cacheKey, doubt, current, before, settlingWriteNo));
  }

  /**
   * #settleDoubt's synchronous half: forgets the entry (with the row's earlier writes in doubt) and returns the
   * writes that landed, to be counted. A write landed if `current` is its version, or if a version known to have
   * been the row's was (`before`: the version a successful write just replaced; or the version another write in
   * doubt read and built on), or if any of those carries its mark: another writer moved the row on from its version
   * and carried the mark forward. Only that write can have left its mark, so a write of this store that read the
   * same version and did not land is never taken for it. `settlingWriteNo`: the write of this store whose success
   * settles it (a late settle, with `before` the version that write replaced). Only the entries numbered before that
   * write are older than it and judged here; one numbered after it read its version or a later one (newer: neither
   * version shows whether it landed), or read the same version and lost the If-Match to it (never landed). Those are
   * put back, still pinned, for a fresh read of the row (the settle pass, the row's next write).
   */
  #takeDoubt(cacheKey: string, doubt: InDoubtWrite, current: StatusRow | null, before: StatusRow | null = null, settlingWriteNo?: number): InDoubtWrite[] {
    if (this.#inDoubt.get(cacheKey) !== doubt) return []; // settled already, by whoever read first
    this.#inDoubt.delete(cacheKey);
    const writes: InDoubtWrite[] = [];
    for (let d: InDoubtWrite | undefined = doubt; d; d = d.earlier) writes.push(d);
    const newer = settlingWriteNo === undefined ? [] : writes.filter((w) => w.writeNo > settlingWriteNo);
    if (newer.length > 0) {
      // Newest first as they stood: relinked oldest to newest, so the head is the newest and `earlier` the older.
      let chain: InDoubtWrite | undefined;
      for (const w of [...newer].reverse()) {
        w.earlier = chain;
        chain = w;
      }
      this.#inDoubt.set(cacheKey, chain!);
      this.#scheduleSettle();
    }
    const judged = writes.filter((w) => !newer.includes(w));
    const versions = [current, before, ...writes.map((w) => w.replaced)].filter((v): v is StatusRow => v !== null);
    const landed = judged.filter((w) => versions.some((v) => isVersion(v, w.written) || carriesMark(v, this.#writerId, w.writeNo)));
    // The others never landed (or were overwritten since): nothing of theirs to count, their windows are unpinned.
    for (const w of judged) if (w.ticket && !landed.includes(w)) this.#counterBuffer?.forget(w.ticket);
    return landed;
  }

  /** Arms the next settle pass; nothing runs while no write is in doubt (or with settleIntervalMs 0, or closed). */
  #scheduleSettle(): void {
    if (this.#settleTimer !== undefined || this.#settleIntervalMs <= 0 || this.#closed || this.#inDoubt.size === 0) return;
    this.#settleTimer = setTimeout(() => {
      this.#settleTimer = undefined;
      void this.#settlePass().finally(() => this.#scheduleSettle());
    }, this.#settleIntervalMs);
    this.#settleTimer.unref(); // a store waiting to settle does not keep the process alive; close() settles
  }

  /** Settle passes until nothing is in doubt, a pass can read none of its rows, or `budgetMs` have passed. */
  async #settleWithin(budgetMs: number): Promise<void> {
    if (this.#inDoubt.size === 0 && this.#passesRunning === 0) return;
    let expired = false;
    const passes = (async () => {
      // A pass already running (the timer's) may have taken every entry and still be counting the landed ones: a
      // flush or a close that did not wait for it would lose those counts (the client disposed under them).
      await this.#settling;
      while (!expired && this.#inDoubt.size > 0) {
        if ((await this.#settlePass()) === 0) return; // none of the rows could be read: a later pass tries again
      }
    })();
    // Out of time: the pass running goes on (it never rejects), and no other starts after it.
    if ((await raceDeadline(passes, { ms: budgetMs })) === DEADLINE_PASSED) expired = true;
  }

  /**
   * One settle pass (one at a time): reads the rows of the oldest SETTLE_BATCH writes in doubt in one bulk request
   * and settles each as the row's next write would (#settleDoubt), counting the landed ones together. A row that
   * could not be read keeps its entry for a later pass, which tries the others first. Never rejects; returns how
   * many it settled.
   */
  #settlePass(): Promise<number> {
    this.#passesRunning++;
    const run = this.#settling
      .then(() => this.#settleOnce())
      .catch(() => 0)
      .finally(() => this.#passesRunning--);
    this.#settling = run;
    return run;
  }

  async #settleOnce(): Promise<number> {
    // Fewest failed reads first; sort is stable, so oldest first among equals.
    const batch = [...this.#inDoubt].sort(([, a], [, b]) => a.unread - b.unread).slice(0, SETTLE_BATCH);
    if (batch.length === 0) return 0;
    // Aborted when the pass gives up: the bulk request and any point read still running are cancelled at once
    // instead of holding a connection until the client's own time-out, and a read still waiting (the ranges read
    // takes no signal) then sends no point reads of its own when it finally fails (every pass given up while the
    // ranges read hangs would otherwise fire its fallback in one burst at the recovering store).
    const giveUp = new AbortController();
    // The client adds an abort listener per request in flight, and a fallback reads up to SETTLE_BATCH rows at once
    // (a bulk call sends one request per partition-key range): Node's default of 10 would warn of a leak each pass.
    setMaxListeners(0, giveUp.signal);
    const reading = this.#readInDoubtRows(batch.map(([, d]) => d), giveUp.signal);
    // A read given up on is dropped: its rows are read again by a later pass. Its timer does not keep the process
    // alive, no more than the settle timer does.
    const reads = await raceDeadline(reading, { ms: SETTLE_READ_TIMEOUT_MS, unref: true });
    if (reads === DEADLINE_PASSED) {
      giveUp.abort();
      for (const [, doubt] of batch) doubt.unread++; // not read: left in doubt, never settled from nothing
      return 0;
    }
    let settled = 0;
    const landed: InDoubtWrite[] = [];
    batch.forEach(([cacheKey, doubt], i) => {
      const r = reads[i];
      if (r === undefined || (r.statusCode >= 300 && r.statusCode !== 404)) {
        doubt.unread++; // not read (the store is down, throttled): a later pass tries it again, after the others
        return;
      }
      const parsed = r.statusCode === 404 ? undefined : statusRowSchema.safeParse(r.resourceBody);
      landed.push(...this.#takeDoubt(cacheKey, doubt, parsed?.success ? parsed.data : null));
      settled++;
    });
    // Nobody to report a failed counter patch to here: like any failed patch, the recount repairs it.
    await this.#countLanded(landed).catch(() => undefined);
    return settled;
  }

  /**
   * The settle pass's read of its rows: one bulk request, or, when that request failed as a whole, one point read a
   * row. Cosmos' bulk API first needs the container's partition key ranges, and @azure/cosmos 4.9 keeps a failed read
   * of them for good (its cache holds the rejected promise): after one such failure (a stalled endpoint's read ends
   * at the client's time-out) every bulk call of the client fails at once, before sending anything, and no pass
   * could read a row again until a restart. Point reads are routed by their partition key and need no ranges. One
   * goes first, so a store that is down costs a pass one request more, not one a row. `giveUp` (the pass gave up)
   * cancels the bulk request and the point reads; the ranges read takes no signal, so an abort never ends it early
   * (the cache keeps only a failure of its own: a time-out, an error answer) and a bulk call waiting on it sends
   * nothing once it is read. No point read starts after it.
   */
  async #readInDoubtRows(
    doubts: readonly InDoubtWrite[],
    giveUp: AbortSignal,
  ): Promise<Array<{ statusCode: number; resourceBody?: unknown } | undefined>> {
    const reads = await this.#bulk(
      this.#c.events,
      doubts.map((d): OperationInput => ({ operationType: BulkOperationType.Read, id: d.written.id, partitionKey: [d.endpointId, d.written.eventId] })),
      { abortSignal: giveUp },
    );
    if (doubts.length === 0 || giveUp.aborted || reads.some((r) => r !== undefined)) return reads;
    const readOne = async (d: InDoubtWrite): Promise<{ statusCode: number; resourceBody?: unknown } | undefined> => {
      try {
        const r = await this.#c.events.item(d.written.id, [d.endpointId, d.written.eventId]).read({ abortSignal: giveUp });
        return { statusCode: r.statusCode, resourceBody: r.resource };
      } catch (err) {
        return cosmosStatus(err) === 404 ? { statusCode: 404 } : undefined; // not read (an abort too): counted as unread
      }
    };
    const first = await readOne(doubts[0]!);
    if (first === undefined || giveUp.aborted) return reads;
    return [first, ...(await Promise.all(doubts.slice(1).map(readOne)))];
  }

  /**
   * Writes in doubt that did land: their counter deltas and failure-group moves, as their own success would have
   * applied them (the redelivered copy that finds the row already written moves nothing itself) - netted, one
   * counter patch per endpoint and one patch per group document for the lot - and, for one that replaced a row that
   * did not parse, its endpoint's recount (#recountAfterLanded), unless `recount` leaves that to the caller (a write
   * that settles it after landing itself recounts once its own delta is applied too). False when a counter patch
   * failed (immediate counters): the caller reports it for a recount.
   */
  async #countLanded(doubts: readonly InDoubtWrite[], recount: 'now' | 'caller-recounts' = 'now'): Promise<boolean> {
    if (doubts.length === 0) return true;
    const deltas = new Map<string, Map<CounterBucket, number>>();
    for (const doubt of doubts) {
      const from = doubt.replaced ? bucketOf(doubt.replaced.status, doubt.replaced.subStatus) : null;
      const to = bucketOf(doubt.written.status, doubt.written.subStatus);
      // Into the window on its row's stamp (its pinned ticket), not the current one: that window is not flushed yet,
      // so a recovery after a crash either finds the stamp above `flushed[owner]` or the delta applied with it.
      if (doubt.ticket) this.#counterBuffer!.add(doubt.ticket, doubt.endpointId, from, to);
      else if (from !== to) addDelta(deltas, doubt.endpointId, from, to);
    }
    const failed = await this.#applyDeltas(deltas);
    await applyGroupTransitions(
      this.database,
      doubts.map((d) => ({ before: d.replaced, after: d.written })),
    );
    if (recount === 'now') await this.#recountAfterLanded(doubts);
    return failed.size === 0;
  }

  /**
   * After landed writes in doubt are counted: those that replaced a row that did not parse counted their new bucket
   * only (the old one is unknown and may still be counted), so their endpoints are recounted from the rows, as the
   * write's own success does it (#recountOverUnreadable: shared per endpoint, bounded). When an endpoint cannot be
   * recounted (its counters document does not parse, the attempts failed), the write that would have answered
   * `counters: 'failed'` is gone (its reply was lost), and whoever settled it may have no caller at all (the settle
   * pass) or a refused one: the store says it itself, once per such write, as the Resolver says `counters: 'failed'`
   * (ids only, never the payload). Never rejects.
   */
  async #recountAfterLanded(doubts: readonly InDoubtWrite[]): Promise<void> {
    const byEndpoint = new Map<string, InDoubtWrite[]>();
    for (const d of doubts) if (d.overUnreadable) byEndpoint.set(d.endpointId, [...(byEndpoint.get(d.endpointId) ?? []), d]);
    await Promise.all(
      [...byEndpoint].map(async ([endpointId, ds]) => {
        if (await this.#recountOverUnreadable(endpointId)) return;
        for (const { written: w } of ds)
          this.#warn(
            { endpointId, eventId: w.eventId, sessionId: w.sessionId, messageId: w.lastMessageId, messageType: w.messageType },
            `store: ${endpointId}'s counters may be off after ${w.messageType} ${w.lastMessageId} (its reply was lost, it landed over a row that did not parse, and the endpoint could not be recounted): run npm run recount -- ${endpointId}`,
          );
      }),
    );
  }

  /**
   * Netted counter deltas, one patch per endpoint (in steps of 10 operations, Cosmos' limit per patch). Never
   * throws: the endpoints whose patch failed are returned, for the caller to report (a recount repairs them).
   */
  async #applyDeltas(deltas: ReadonlyMap<string, ReadonlyMap<CounterBucket, number>>): Promise<Set<string>> {
    const failed = new Set<string>();
    await Promise.all(
      [...deltas].map(async ([endpointId, d]) => {
        const ops: PatchOperation[] = [...d].filter(([, n]) => n !== 0).map(([bucket, n]) => ({ op: 'incr', path: `/counts/${bucket}`, value: n }));
        try {
          for (let i = 0; i < ops.length; i += 10) await applyCounterDelta(this.#c.counters, endpointId, ops.slice(i, i + 10));
        } catch {
          failed.add(endpointId);
        }
      }),
    );
    return failed;
  }

  /**
   * Puts a status row back to a version it had before (the Manager undoing its own claim after a failed send,
   * Reconcile restoring an abandoned claim). Not a message's outcome, so the stale-write guard does not decide:
   * the write is a compare-and-swap on the row as `expect` describes it (If-Match the etag read), and the row
   * becomes `previous` exactly (its payload included), with a fresh `updatedAt`. The counters move with it.
   * Answers 'ignored' / 'precondition-failed' when the row is no longer the version `expect` names. A restore whose
   * reply is lost is remembered in doubt like a status write (settled by the row's next read here or the settle
   * pass), and a write in doubt on the row is settled from the restore's own read before the row moves on.
   */
  async restoreStatusRow(previous: StatusRow, expect: RowExpectation & { lastMessageId: string }): Promise<StatusWriteResult> {
    const id = statusRowId(previous.eventId, previous.sessionId);
    const item = this.#c.events.item(id, [previous.endpointId, previous.eventId]);
    const cacheKey = `${previous.endpointId}/${id}`;
    const ticket = this.#counterBuffer?.take();
    try {
      return await this.#restoreStatusRowAttempts(previous, expect, item, id, cacheKey, ticket);
    } finally {
      if (ticket) this.#counterBuffer!.cancel(ticket);
    }
  }

  async #restoreStatusRowAttempts(
    previous: StatusRow,
    expect: RowExpectation & { lastMessageId: string },
    item: Item,
    id: string,
    cacheKey: string,
    ticket: CounterTicket | undefined,
  ): Promise<StatusWriteResult> {
    /** A landed write in doubt whose counter delta could not be applied either: reported for a recount. */
    let landedUncounted = false;
    for (let attempt = 1; attempt <= MAX_WRITE_ATTEMPTS; attempt++) {
      // The write in doubt this read may settle is the one known before the read is sent: a write remembered while
      // the read is in flight may have landed after the read was served, and would be forgotten from a stale read.
      const doubt = this.#inDoubt.get(cacheKey);
      let raw: unknown;
      let etag: string | undefined;
      try {
        const read = await item.read();
        raw = read.statusCode === 404 ? undefined : read.resource;
        etag = read.etag;
      } catch (err) {
        if (cosmosStatus(err) !== 404) rethrowCosmos(err, 'status row read');
      }
      const parsed = raw === undefined ? undefined : statusRowSchema.safeParse(raw);
      const current = parsed?.success ? parsed.data : null;
      // A write of this row in doubt (an earlier restore's or writeStatus's) is settled from this read before the
      // row moves on: otherwise the version it built would be replaced uncounted and the doubt forgotten later.
      if (doubt && !(await this.#settleDoubt(cacheKey, doubt, current))) landedUncounted = true;
      if (!current || !matchesExpectation(current, expect)) return { outcome: 'ignored', reason: 'precondition-failed', current };
      // `conditional` as the version put back had it: a copy of that version's own command is still no first record.
      const row: StatusRow = { ...previous, id, createdAt: current.createdAt, updatedAt: this.#iso() };
      // The ids of the row as it is now with the restored message first: `previous` may be rebuilt from a history
      // entry (Reconcile) or older than the messages applied since, whose copies must still read as copies. The
      // version undone is not among them: a restore undoes a claim (the Manager's after a failed send, Reconcile's
      // of an abandoned one), and the claim's MessageId, derived from the message it answers, comes back legitimately
      // - the operator's retry claims it again, a send in doubt reaches the Resolver - and must apply, not be refused
      // by the guard as a copy applied before a later message (docs/resolver.md, "The stale-write guard").
      row.appliedMessageIds = nextAppliedMessageIds(current, previous.lastMessageId).filter(
        (m) => m === previous.lastMessageId || m !== current.lastMessageId,
      );
      const from = bucketOf(current.status, current.subStatus);
      const to = bucketOf(row.status, row.subStatus);
      delete row.counted;
      const stamps = ticket
        ? nextStamps(current.counted, this.#counterBuffer!.owner, ticket.seq, from, to, this.#counterBuffer!.knownFlushed(previous.endpointId))
        : current.counted;
      if (stamps) row.counted = stamps;
      // The marks of the row as it is now, not of `previous` (an older version: its mark of this store would be stale).
      const writeNo = this.#markWrite(row, current);
      try {
        const written = await item.replace(row, { accessCondition: { type: 'IfMatch', condition: etag ?? '' } });
        this.#rowCache.set(cacheKey, row, written.etag);
      } catch (err) {
        this.#rowCache.forgetIfStill(cacheKey, etag);
        const code = cosmosStatus(err);
        if (code === 412 || code === 404) continue; // changed since our read: decide again
        // No verdict: the restore may have landed. Its counter delta waits for the next read of the row (the
        // caller's retry reads it first; the Manager and Reconcile may never retry: then the settle pass).
        if (outcomeUnknown(err)) this.#remember(cacheKey, { endpointId: previous.endpointId, replaced: current, written: row, writeNo, unread: 0, ticket });
        rethrowCosmos(err, 'status row restore');
      }
      const late = this.#inDoubt.get(cacheKey); // as in #writeStatusChainAttempts, its recount after this delta
      const lateLanded = late ? this.#takeDoubt(cacheKey, late, row, current, writeNo) : [];
      if (!(await this.#countLanded(lateLanded, 'caller-recounts'))) landedUncounted = true;
      let counters: 'updated' | 'unchanged' | 'queued' | 'failed' = from === to ? 'unchanged' : 'updated';
      if (ticket) {
        this.#counterBuffer!.add(ticket, previous.endpointId, from, to);
        if (counters === 'updated') counters = 'queued';
      } else if (from !== to) {
        try {
          await applyCounterDelta(this.#c.counters, previous.endpointId, counterDelta(from, to));
        } catch {
          counters = 'failed'; // the row is written; the recount repairs the counters (as in #writeStatusChain)
        }
      }
      await this.#recountAfterLanded(lateLanded);
      if (landedUncounted) counters = 'failed';
      await applyGroupTransition(this.database, current, row); // as in #writeStatusChain
      return { outcome: 'written', created: false, previousStatus: current.status, previousMessageId: current.lastMessageId, previousMessageIds: appliedMessageIdsOf(current), previousConditional: current.conditional, row, counters };
    }
    throw new StoreTransientError(`status row ${previous.endpointId}/${id} kept changing under ${MAX_WRITE_ATTEMPTS} restore attempts`);
  }

  /** The status row of one event in one session, or null. A row that does not parse throws CorruptDocumentError. */
  async getStatusRow(endpointId: string, eventId: string, sessionId = ''): Promise<StatusRow | null> {
    const id = statusRowId(eventId, sessionId);
    let resource: unknown;
    try {
      const r = await this.#c.events.item(id, [endpointId, eventId]).read();
      if (r.statusCode === 404) return null;
      resource = r.resource;
    } catch (err) {
      if (cosmosStatus(err) === 404) return null;
      rethrowCosmos(err, 'status row read');
    }
    const parsed = statusRowSchema.safeParse(resource);
    if (!parsed.success) throw new CorruptDocumentError(CONTAINERS.events, id, describeIssues(parsed.error));
    return parsed.data;
  }

  /** Events of one endpoint, newest update first, one bounded page at a time. No payloads. */
  async listEvents(filter: EventFilter): Promise<Page<StatusRowSummary>> {
    const endpointId = parseInput(endpointIdSchema, filter.endpointId, 'endpoint id');
    const where = ['c.endpointId = @ep'];
    const parameters: SqlParameter[] = [{ name: '@ep', value: endpointId }];
    if (filter.statuses && filter.statuses.length > 0) {
      where.push('ARRAY_CONTAINS(@statuses, c.status)');
      parameters.push({
        name: '@statuses',
        value: parseInput(statusListSchema, filter.statuses, 'status filter'),
      });
    }
    if (filter.handoffOnly)
      where.push(`c.status = '${ResolutionStatus.Pending}' AND c.subStatus = 'Handoff'`);
    const eq = (field: string, name: string, value: string | undefined) => {
      if (value === undefined) return;
      where.push(`c.${field} = @${name}`);
      parameters.push({ name: `@${name}`, value });
    };
    eq('eventTypeId', 'type', filter.eventTypeId);
    eq('sessionId', 'session', filter.sessionId);
    eq('eventId', 'event', filter.eventId);
    if (filter.updatedFrom !== undefined) {
      where.push('c.updatedAt >= @from');
      parameters.push({ name: '@from', value: isoParam(filter.updatedFrom, 'updatedFrom') });
    }
    if (filter.updatedTo !== undefined) {
      where.push('c.updatedAt < @to');
      parameters.push({ name: '@to', value: isoParam(filter.updatedTo, 'updatedTo') });
    }
    return queryPage(
      this.#c.events,
      {
        query: `SELECT ${STATUS_ROW_SUMMARY_SELECT} FROM c WHERE ${where.join(' AND ')} ORDER BY c.updatedAt DESC`,
        parameters,
      },
      statusRowSummarySchema,
      { ...filter, partitionKey: [endpointId] },
      'event list',
    );
  }

  /**
   * The parked (Deferred) rows of a session, oldest first: the order they will be replayed in. With `blockedBy`,
   * only those parked behind that event, and never the event itself: a row names its blocker in `blockedBy` when a
   * store sets it, else in its park reason (errorText; the Resolver writes only that; parkedBlocker.ts), and a session
   * blocked again later holds rows parked behind another event, which are not this one's. A row that names no
   * blocker (parked behind a replay in progress, or a reason in another form) is kept: nothing says it waits on
   * another event, and the caller can tell it apart (blockerOf gives null for it).
   */
  async listParkedSiblings(
    args: { endpointId: string; sessionId: string; blockedBy?: string } & PageRequest,
  ): Promise<Page<StatusRowSummary>> {
    const endpointId = parseInput(endpointIdSchema, args.endpointId, 'endpoint id');
    const where = [
      'c.endpointId = @ep',
      'c.sessionId = @session',
      `c.status = '${ResolutionStatus.Deferred}'`,
    ];
    const parameters: SqlParameter[] = [
      { name: '@ep', value: endpointId },
      { name: '@session', value: args.sessionId },
    ];
    if (args.blockedBy !== undefined) {
      // The blocker rule (parkedBlocker.ts) in the query; it binds @blocker, which also leaves the event itself out.
      const blocker = blockerIsOrNoneSql(args.sessionId, args.blockedBy);
      where.push('c.eventId != @blocker', blocker.condition);
      parameters.push(...blocker.parameters);
    }
    return queryPage(
      this.#c.events,
      {
        query: `SELECT ${STATUS_ROW_SUMMARY_SELECT} FROM c WHERE ${where.join(' AND ')} ORDER BY c.createdAt ASC`,
        parameters,
      },
      statusRowSummarySchema,
      { ...args, partitionKey: [endpointId] },
      'parked siblings',
    );
  }

  /**
   * Search across endpoints by event id or session id prefix (case-insensitive), newest update first. A
   * cross-partition query: meant for an operator's search box, not for hot paths.
   */
  async searchEvents(
    args: { eventIdPrefix?: string; sessionIdPrefix?: string; endpointIds?: string[] } & PageRequest,
  ): Promise<Page<StatusRowSummary>> {
    const where: string[] = [];
    const parameters: SqlParameter[] = [];
    if (args.eventIdPrefix) {
      where.push('STARTSWITH(c.eventIdLower, @eventPrefix)');
      parameters.push({ name: '@eventPrefix', value: args.eventIdPrefix.toLowerCase() });
    }
    if (args.sessionIdPrefix) {
      where.push('STARTSWITH(c.sessionIdLower, @sessionPrefix)');
      parameters.push({ name: '@sessionPrefix', value: args.sessionIdPrefix.toLowerCase() });
    }
    if (where.length === 0) throw new StoreInputError('search needs an event id or a session id prefix');
    if (args.endpointIds && args.endpointIds.length > 0) {
      where.push('ARRAY_CONTAINS(@eps, c.endpointId)');
      parameters.push({ name: '@eps', value: args.endpointIds });
    }
    return queryPage(
      this.#c.events,
      {
        query: `SELECT ${STATUS_ROW_SUMMARY_SELECT} FROM c WHERE ${where.join(' AND ')} ORDER BY c.updatedAt DESC`,
        parameters,
      },
      statusRowSummarySchema,
      args,
      'event search',
    );
  }

  /** One event on one endpoint: its row(s) (one per session it appeared in), first page of history and audits. */
  async getEvent(endpointId: string, eventId: string, pageSize = 100): Promise<EventDetails | null> {
    const [rows, history, audits] = await Promise.all([
      this.#eventRows(endpointId, eventId),
      this.listHistory(eventId, { pageSize }),
      this.listAudits(eventId, { pageSize }),
    ]);
    if (rows.items.length === 0 && rows.corrupt.length === 0 && history.items.length === 0) return null;
    return { rows: rows.items, history, audits, corruptRows: rows.corrupt };
  }

  /**
   * The status rows of one event on one endpoint (one per session it appeared in), newest update first, without
   * history or audits: for a caller that already has those. Rows that no longer parse are left out.
   */
  async listEventRows(endpointId: string, eventId: string): Promise<StatusRow[]> {
    return (await this.#eventRows(endpointId, eventId)).items;
  }

  /**
   * The same rows, saying what the set leaves out: rows that no longer parse, and whether there were more than
   * EVENT_ROWS_LIMIT (the oldest updates are then missing). For a caller that decides on the whole set - the
   * Manager must not claim one row when a claim it cannot see may sit in another.
   */
  async listEventRowsChecked(endpointId: string, eventId: string): Promise<EventRows> {
    const r = await this.#eventRows(endpointId, eventId);
    return { rows: r.items, corrupt: r.corrupt, truncated: r.truncated };
  }

  /**
   * Per event of several on one endpoint, the sessions it has a row in and how many documents it has - every row,
   * whether or not it still parses as a status row: one query within the endpoint's partitions. The synchronous
   * bulk commands name events, and the Manager's lot reads rows by point read, which needs the session; the lot
   * acts on that row alone only when it is the event's whole set (`rows` is 1), as listEventRowsChecked's caller
   * would. One query serves both, so a bulk command does not read the same partitions twice. A row whose session
   * no longer reads (it cannot be point-read) is counted in `rows` but not in `sessions`; a row damaged elsewhere
   * is in both (only its eventId and sessionId are read here). An event without a row is absent. Undefined when the
   * answer would be incomplete (more than `limit` rows): the caller then finds each event's rows as for one event.
   */
  async listEventSessions(endpointId: string, eventIds: readonly string[], limit = 10_000): Promise<Map<string, EventSessions> | undefined> {
    parseInput(endpointIdSchema, endpointId, 'endpoint id');
    const out = new Map<string, EventSessions>();
    if (eventIds.length === 0) return out;
    const r = await queryAll(
      this.#c.events,
      {
        // Every document the condition matches has a string eventId (ARRAY_CONTAINS of strings), so each is read
        // and counted, however damaged the rest of it is.
        query: 'SELECT c.eventId, c.sessionId FROM c WHERE c.endpointId = @ep AND ARRAY_CONTAINS(@events, c.eventId)',
        parameters: [
          { name: '@ep', value: endpointId },
          { name: '@events', value: [...new Set(eventIds)] },
        ],
      },
      eventRowRefSchema,
      { partitionKey: [endpointId], limit },
      'event sessions',
    );
    if (r.truncated || r.corrupt.length > 0) return undefined;
    for (const { eventId, sessionId } of r.items) {
      const e = out.get(eventId) ?? { sessions: [], rows: 0 };
      e.rows++;
      if (sessionId !== null) e.sessions.push(sessionId);
      out.set(eventId, e);
    }
    return out;
  }

  #eventRows(endpointId: string, eventId: string) {
    parseInput(endpointIdSchema, endpointId, 'endpoint id');
    return queryAll(
      this.#c.events,
      {
        query: 'SELECT * FROM c WHERE c.endpointId = @ep AND c.eventId = @event ORDER BY c.updatedAt DESC',
        parameters: [
          { name: '@ep', value: endpointId },
          { name: '@event', value: eventId },
        ],
      },
      statusRowSchema,
      { partitionKey: [endpointId, eventId], limit: EVENT_ROWS_LIMIT },
      'event rows',
    );
  }

  // ---------------------------------------------------------------- history

  /**
   * Records one message in the event's history. Idempotent per MessageId: a second write of the same id (a
   * broker redelivery, a throttle reschedule, a replayed dead letter) keeps the first entry and reports it.
   */
  async recordHistory(input: HistoryWrite): Promise<{ recorded: boolean; entry: HistoryEntry }> {
    const w = parseInput(historyWriteSchema, input, 'history entry');
    return this.#createHistory({ ...w, id: docId(w.messageId), recordedAt: this.#iso(), createToken: randomUUID() });
  }

  /**
   * Creates one history entry; `recorded` says whether this store created it. A 409 is not always someone else's
   * entry: a create whose answer was lost (a time-out, a reset, a 5xx after the server applied it) landed, and the
   * message's retry then meets its own entry. Before, that retry reported it as already recorded, and the outcomes
   * counted by the call that creates their entry (a failure, a console command: resolver-worker/outcomeMetrics.ts)
   * were counted by no call. The entry carries this create's token; a 409 reads the entry and reports it recorded
   * when the token is this call's (the SDK's own retry, a batch that landed before failing) or that of a create of
   * this store left in doubt (#historyInDoubt): counted once, on the retry. A genuine copy finds another token.
   */
  async #createHistory(entry: HistoryEntry): Promise<{ recorded: boolean; entry: HistoryEntry }> {
    const key = `${entry.eventId}\u0000${entry.id}`;
    try {
      await this.#c.history.items.create(entry);
      this.#historyInDoubt.delete(key);
      return { recorded: true, entry };
    } catch (err) {
      if (cosmosStatus(err) !== 409) {
        if (outcomeUnknown(err) && entry.createToken !== undefined) this.#rememberHistoryInDoubt(key, entry.createToken);
        rethrowCosmos(err, 'history write');
      }
    }
    const existing = await this.getHistory(entry.eventId, entry.messageId);
    const token = existing?.createToken;
    const mine = token !== undefined && (token === entry.createToken || token === this.#historyInDoubt.get(key));
    this.#historyInDoubt.delete(key);
    return { recorded: mine, entry: existing ?? entry };
  }

  /** Remembers a history create left in doubt; the oldest is let go past MAX_HISTORY_IN_DOUBT (its count is lost). */
  #rememberHistoryInDoubt(key: string, token: string): void {
    this.#historyInDoubt.delete(key);
    this.#historyInDoubt.set(key, token);
    if (this.#historyInDoubt.size > MAX_HISTORY_IN_DOUBT) this.#historyInDoubt.delete(this.#historyInDoubt.keys().next().value!);
  }

  /**
   * One history entry by its MessageId: a point read (the entry's id is docId(messageId) in the event's partition),
   * so a message is found however many other entries the event has. Null when it was never recorded.
   */
  async getHistory(eventId: string, messageId: string): Promise<HistoryEntry | null> {
    const id = docId(messageId);
    let resource: unknown;
    try {
      const r = await this.#c.history.item(id, eventId).read();
      if (r.statusCode === 404) return null;
      resource = r.resource;
    } catch (err) {
      if (cosmosStatus(err) === 404) return null;
      rethrowCosmos(err, 'history read');
    }
    const parsed = historyEntrySchema.safeParse(resource);
    if (!parsed.success) throw new CorruptDocumentError(CONTAINERS.history, id, describeIssues(parsed.error));
    return parsed.data;
  }

  /**
   * The entries that answer one message on one endpoint's session (their ParentMessageId is `messageId` and they
   * are answers by Reconcile's rule, isAnswer in ./answerRule.ts), newest first, at most `limit`. A query in the
   * event's partition filtered on that link: an answer's own MessageId is the subscriber's and cannot be derived, and
   * a list read of the history stops at its cap, oldest first, so the newest entries - an answer among them - are
   * the ones it lacks. The query leaves out the entries naming the message that are no answer (notices, the deferred
   * processor's trigger, refused unauthorised commands, control requests that did not settle), so `limit` counts
   * answers only: any number of those, newer than an answer, never hide it. Its term is wider than the rule in one
   * place (a control request whose description is only whitespace), so the rule is applied to what it returns and
   * the query pages on until `limit` answers pass or the results end. Documents the term matched that no longer
   * parse are in `corrupt` (one may have been an answer).
   */
  async listHistoryAnswers(
    eventId: string,
    endpointId: string,
    sessionId: string,
    messageId: string,
    limit = 10,
  ): Promise<{ items: HistoryEntry[]; corrupt: Page<unknown>['corrupt'] }> {
    const answer = answerSql();
    const where = `c.parentMessageId = @parent AND ${answer.condition}`;
    return this.#sessionHistoryNewestFirst(eventId, endpointId, sessionId, where, [{ name: '@parent', value: messageId }, ...answer.parameters], limit, 'history answers', isAnswer);
  }

  /**
   * The subscriber's CommandRefused notices naming one message on one endpoint's session, newest first, at most
   * `limit` (by default the newest alone). Reconcile's stuck check reads it for a row its message got no answer to,
   * when the event's list is cut or holds entries that do not parse (a refusal is no answer, so listHistoryAnswers never returns one): a query of its own, so neither answers nor
   * other notices take its place in a limit. Documents that no longer parse are in `corrupt` and do not count toward
   * `limit` (the query pages on past them): a damaged newer notice never hides a readable older one.
   */
  async listHistoryRefusals(
    eventId: string,
    endpointId: string,
    sessionId: string,
    messageId: string,
    limit = 1,
  ): Promise<{ items: HistoryEntry[]; corrupt: Page<unknown>['corrupt'] }> {
    const params = [
      { name: '@parent', value: messageId },
      { name: '@refused', value: WireText.CommandRefused },
    ];
    return this.#sessionHistoryNewestFirst(eventId, endpointId, sessionId, 'c.parentMessageId = @parent AND c.deadLetterReason = @refused', params, limit, 'history refusals', () => true);
  }

  /**
   * The entries of one endpoint's session enqueued after `after` whose outcome is one of `statuses`, newest first, at
   * most `limit`. An entry's outcome is the contract's resultingStatus (its type's status, or DeadLettered for any
   * type with a non-blank DeadLetterErrorDescription: a dead-lettered request too); a history-only entry (a subscriber
   * notice, the deferred processor's trigger, a refused unauthorised command: isHistoryOnly, which never wrote the
   * row) is no outcome and is never returned. The query leaves notices and
   * other types out itself, so `limit` counts outcomes only: newer notices never crowd out a response behind them.
   * Its test of the description is wider than the contract's (any non-empty string: Cosmos's TRIM is not relied on
   * to trim what JavaScript's does), so the exact test is made here on what it returns, paging on until `limit`
   * entries pass or the results end. A query in the event's partition: a list read of the history stops at its cap,
   * oldest first, so the newest entries - a response that settled the event after a message, without naming that
   * message - are the ones it lacks (Reconcile's later-response check, server/reconcile/answers.ts). Entries the
   * query matched that no longer parse are in `corrupt`.
   */
  async listHistoryAfter(
    eventId: string,
    endpointId: string,
    sessionId: string,
    after: string,
    statuses: readonly ResolutionStatusT[],
    limit = 10,
  ): Promise<{ items: HistoryEntry[]; corrupt: Page<unknown>['corrupt'] }> {
    // Compared as stored (ISO strings), the way a list read's entries are compared with a row's enqueuedAt.
    const since = parseInput(historyWriteSchema.shape.enqueuedAt, after, 'after');
    const wanted = new Set<string>(parseInput(resolutionStatusSchema.array().min(1), statuses, 'statuses'));
    const types = ALL_MESSAGE_TYPES.filter((t) => wanted.has(resultingStatus(t).status));
    const deadLettered = wanted.has(ResolutionStatus.DeadLettered) ? " OR (IS_STRING(c.deadLetterErrorDescription) AND LENGTH(c.deadLetterErrorDescription) > 0)" : '';
    const where = `c.enqueuedAt > @after AND (NOT IS_STRING(c.deadLetterReason) OR NOT ARRAY_CONTAINS(@notices, c.deadLetterReason)) AND (ARRAY_CONTAINS(@types, c.messageType)${deadLettered})`;
    const params = [
      { name: '@after', value: since },
      { name: '@types', value: types },
      { name: '@notices', value: [WireText.CommandRefused, WireText.ReplayGap] },
    ];
    // History-only entries (a notice, the deferred processor's trigger, a refused unauthorised command) never wrote
    // the row, so their dead-letter description makes no outcome of them.
    const isOutcome = (h: HistoryEntry) => !isHistoryOnly(h) && wanted.has(resultingStatus(h.messageType, h.deadLetterErrorDescription).status);
    return this.#sessionHistoryNewestFirst(eventId, endpointId, sessionId, where, params, limit, 'history after', isOutcome);
  }

  /**
   * The outcomes of one endpoint's session, newest first, at most `limit`: its responses (entries of a type that is
   * not a request) and its dead-lettered requests (a request a non-blank dead-letter description made DeadLettered,
   * as the Resolver wrote its row); a history-only entry (a subscriber notice, the deferred processor's trigger, a
   * refused unauthorised command: isHistoryOnly, which never wrote the row) is no
   * outcome and is never returned. How the Resolver finds the outcome to put back after a refusal
   * (resolver-worker/resolve.ts): a list read of the history stops at its cap, oldest first, so on a long event the
   * newest outcome is the one it lacks. The description test of the query is wider than the contract's (any
   * non-empty string, as in listHistoryAfter), so the exact test runs on what it returns and it pages on until
   * `limit` entries pass.
   */
  async listSessionResponses(
    eventId: string,
    endpointId: string,
    sessionId: string,
    limit = 10,
  ): Promise<{ items: HistoryEntry[]; corrupt: Page<unknown>['corrupt'] }> {
    const where =
      '(NOT IS_STRING(c.deadLetterReason) OR NOT ARRAY_CONTAINS(@notices, c.deadLetterReason)) AND ' +
      '(ARRAY_CONTAINS(@types, c.messageType) OR (IS_STRING(c.deadLetterErrorDescription) AND LENGTH(c.deadLetterErrorDescription) > 0))';
    const params = [
      { name: '@types', value: ALL_MESSAGE_TYPES.filter((t) => !isRequestType(t)) },
      { name: '@notices', value: [WireText.CommandRefused, WireText.ReplayGap] },
    ];
    const isOutcome = (h: HistoryEntry) =>
      !isHistoryOnly(h) && (!isRequestType(h.messageType) || resultingStatus(h.messageType, h.deadLetterErrorDescription).status === ResolutionStatus.DeadLettered);
    return this.#sessionHistoryNewestFirst(eventId, endpointId, sessionId, where, params, limit, 'session responses', isOutcome);
  }

  /**
   * The history's answers for the stale-write guard, from the entries of one endpoint's session that are not
   * history-only (a notice, the deferred processor's trigger, a refused unauthorised command never wrote the row, and
   * one may name anything): with `copyOf`, whether one names that message as its parent (rule 7 past the row's
   * applied ids, asksHistoryForCopy); with `retryOf`, whether one is a RetryRequest naming that delivery as its
   * parent, enqueued no earlier than the failure (`at`, its enqueuedAt) (rule 8, asksHistoryForRetry). One query in
   * the event's partition that stops at the first such entry: when both are asked and that entry answers one, the
   * other is answered false - the write is refused either way.
   *
   * Why the enqueue time: the retry that supersedes a failure is the one the SDK scheduled after sending it (decide.ts
   * sends the ErrorResponse, then schedules the RetryRequest; a scheduled message's enqueue time is when it became
   * active, later still), so it is never enqueued before the failure. An SDK before per-delivery retry ids derived
   * them from the event (deriveId('retry', eventId, n)), so an earlier series' retry of the same event can name the
   * same delivery id as a later series' final failure; without the bound it refused that final failure and left the
   * row Pending with the session blocked. Compared as stored (ISO strings, as listHistoryAfter compares them); a
   * write without an enqueue time (null) is asked without the bound, as before.
   */
  async #historyAnswer(
    { eventId, endpointId, sessionId }: Pick<z.output<typeof statusWriteSchema>, 'eventId' | 'endpointId' | 'sessionId'>,
    { copyOf, retryOf, answerOf }: HistoryQuestions,
  ): Promise<HistoryAnswer> {
    // Rule 2's history form, asked of a late RetryRequest only (never beside the other two, which are asked of
    // responses): an entry naming it as parent, enqueued no earlier than it (an older SDK's retry ids repeat from one
    // series to the next, so an earlier series' answer may name the same id; unknown time: no bound).
    if (answerOf !== undefined) {
      const bound = answerOf.at !== null ? ' AND c.enqueuedAt >= @at' : '';
      const params: SqlParameter[] = [{ name: '@self', value: answerOf.id }, ...(answerOf.at !== null ? [{ name: '@at', value: answerOf.at }] : [])];
      const [found] = (await this.#sessionHistoryNewestFirst(eventId, endpointId, sessionId, `c.parentMessageId = @self${bound}`, params, 1, 'history parent link', (h) => !isHistoryOnly(h))).items;
      return { answeredInHistory: found !== undefined && found.parentMessageId === answerOf.id && (answerOf.at === null || found.enqueuedAt >= answerOf.at) };
    }
    const copy = 'c.parentMessageId = @self';
    const at = retryOf?.at ?? null;
    const since = at !== null ? ' AND c.enqueuedAt >= @at' : '';
    const retry = `(c.parentMessageId = @parent AND c.messageType = @retry${since})`;
    const where = copyOf !== undefined && retryOf !== undefined ? `(${copy} OR ${retry})` : copyOf !== undefined ? copy : retry;
    const params: SqlParameter[] = [
      ...(copyOf !== undefined ? [{ name: '@self', value: copyOf }] : []),
      ...(retryOf !== undefined ? [{ name: '@parent', value: retryOf.parent }, { name: '@retry', value: MessageType.RetryRequest }] : []),
      ...(at !== null ? [{ name: '@at', value: at }] : []),
    ];
    const [found] = (await this.#sessionHistoryNewestFirst(eventId, endpointId, sessionId, where, params, 1, 'history parent link', (h) => !isHistoryOnly(h))).items;
    const answer: HistoryAnswer = {};
    if (copyOf !== undefined) answer.supersededInHistory = found !== undefined && found.parentMessageId === copyOf;
    if (retryOf !== undefined) {
      answer.retriedInHistory =
        found !== undefined &&
        found.messageType === MessageType.RetryRequest &&
        found.parentMessageId === retryOf.parent &&
        (at === null || found.enqueuedAt >= at);
    }
    return answer;
  }

  /**
   * The entries of one endpoint's session that also match `where`, newest first, at most `limit` (the queries above).
   * With `keep`, only the entries it keeps count and are returned: the query is paged until `limit` are kept.
   */
  async #sessionHistoryNewestFirst(
    eventId: string,
    endpointId: string,
    sessionId: string,
    where: string,
    parameters: SqlParameter[],
    limit: number,
    operation: string,
    keep?: (h: HistoryEntry) => boolean,
  ): Promise<{ items: HistoryEntry[]; corrupt: Page<unknown>['corrupt'] }> {
    parseInput(endpointIdSchema, endpointId, 'endpoint id');
    const spec = {
      query: `SELECT * FROM c WHERE c.eventId = @event AND c.endpointId = @ep AND c.sessionId = @session AND ${where} ORDER BY c.enqueuedAt DESC`,
      parameters: [{ name: '@event', value: eventId }, { name: '@ep', value: endpointId }, { name: '@session', value: sessionId }, ...parameters],
    };
    if (!keep) {
      const { items, corrupt } = await queryAll(this.#c.history, spec, historyEntrySchema, { partitionKey: eventId, limit }, operation);
      return { items, corrupt };
    }
    const items: HistoryEntry[] = [];
    const corrupt: Page<unknown>['corrupt'] = [];
    let token: string | undefined;
    do {
      const page = await queryPage(this.#c.history, spec, historyEntrySchema, { partitionKey: eventId, pageSize: limit, continuationToken: token }, operation);
      items.push(...page.items.filter(keep));
      corrupt.push(...page.corrupt);
      token = page.continuationToken;
    } while (token !== undefined && items.length < limit);
    return { items: items.slice(0, limit), corrupt };
  }

  /** The event's messages in enqueue order (the Flow tab), paged. */
  listHistory(eventId: string, page: PageRequest = {}): Promise<Page<HistoryEntry>> {
    return queryPage(
      this.#c.history,
      {
        query: 'SELECT * FROM c WHERE c.eventId = @event ORDER BY c.enqueuedAt ASC',
        parameters: [{ name: '@event', value: eventId }],
      },
      historyEntrySchema,
      { ...page, partitionKey: eventId },
      'history list',
    );
  }

  // ---------------------------------------------------------------- audits

  /** Appends an audit entry. With a caller-chosen `id` the write is idempotent (a retry keeps one entry). */
  async recordAudit(input: AuditWrite): Promise<AuditEntry> {
    const w = parseInput(auditWriteSchema, input, 'audit entry');
    const entry: AuditEntry = {
      ...w,
      id: w.id !== undefined ? docId(w.id) : randomUUID(),
      at: w.at ?? this.#iso(),
    };
    try {
      await this.#c.audits.items.create(entry);
    } catch (err) {
      if (cosmosStatus(err) !== 409) rethrowCosmos(err, 'audit write');
    }
    return entry;
  }

  /**
   * recordAudit for several entries at once (a bulk operation's receipts, one per event: different partitions), in
   * one bulk request per 100. Each entry is idempotent as in recordAudit (an id already there is kept); one the bulk
   * request could not write is written alone, where a failure surfaces classified. In the order given.
   */
  async recordAudits(inputs: readonly AuditWrite[]): Promise<Settled<AuditEntry>[]> {
    const out: Settled<AuditEntry>[] = new Array(inputs.length);
    const lot: Array<{ k: number; entry: AuditEntry }> = [];
    inputs.forEach((input, k) => {
      try {
        const w = parseInput(auditWriteSchema, input, 'audit entry');
        lot.push({ k, entry: { ...w, id: w.id !== undefined ? docId(w.id) : randomUUID(), at: w.at ?? this.#iso() } });
      } catch (error) {
        out[k] = { ok: false, error };
      }
    });
    const results = await this.#bulk(
      this.#c.audits,
      lot.map(({ entry }): OperationInput => ({ operationType: BulkOperationType.Create, partitionKey: entry.eventId, resourceBody: entry as unknown as JSONObject })),
    );
    await Promise.all(
      lot.map(async ({ k, entry }, i) => {
        const code = results[i]?.statusCode;
        if (code !== undefined && ((code >= 200 && code < 300) || code === 409)) {
          out[k] = { ok: true, value: entry };
          return;
        }
        try {
          out[k] = { ok: true, value: await this.recordAudit(inputs[k]!) };
        } catch (error) {
          out[k] = { ok: false, error };
        }
      }),
    );
    return out;
  }

  /**
   * One audit of one event by the id it was written with (a point read): how the Manager finds a command's "sent"
   * receipt, which no number of other audits on the event can push out of sight. Null when there is none.
   */
  async getAudit(eventId: string, id: string): Promise<AuditEntry | null> {
    const docKey = docId(id);
    let resource: unknown;
    try {
      const r = await this.#c.audits.item(docKey, eventId).read();
      if (r.statusCode === 404) return null;
      resource = r.resource;
    } catch (err) {
      if (cosmosStatus(err) === 404) return null;
      rethrowCosmos(err, 'audit read');
    }
    const parsed = auditEntrySchema.safeParse(resource);
    if (!parsed.success) throw new CorruptDocumentError(CONTAINERS.audits, docKey, describeIssues(parsed.error));
    return parsed.data;
  }

  /** Audits of one event, newest first. */
  listAudits(eventId: string, page: PageRequest = {}): Promise<Page<AuditEntry>> {
    return queryPage(
      this.#c.audits,
      {
        query: 'SELECT * FROM c WHERE c.eventId = @event ORDER BY c.at DESC',
        parameters: [{ name: '@event', value: eventId }],
      },
      auditEntrySchema,
      { ...page, partitionKey: eventId },
      'audit list',
    );
  }

  /** Audits recorded against one endpoint, newest first (cross-partition: the endpoint's Audit tab). */
  listEndpointAudits(endpointId: string, page: PageRequest = {}): Promise<Page<AuditEntry>> {
    return queryPage(
      this.#c.audits,
      {
        query: 'SELECT * FROM c WHERE c.endpointId = @ep ORDER BY c.at DESC',
        parameters: [{ name: '@ep', value: endpointId }],
      },
      auditEntrySchema,
      page,
      'endpoint audit list',
    );
  }

  // ---------------------------------------------------------------- counters

  /**
   * Counters of every endpoint: listCounterDocs (one query of the small counters container, its errors the store's)
   * in the shape the Resolver's recount, the readiness check and the heartbeat backlog take. `unreadable` names the
   * endpoints whose document exists but does not parse (by its endpointId, the partition key, when that still is an
   * endpoint id): they are not in `endpoints`, and a recount of them rewrites the document. `corrupt` has every
   * document that does not parse, with where it fails.
   */
  async getAllCounts(): Promise<{ endpoints: EndpointCounts[]; corrupt: { id: string; issues: string }[]; unreadable: string[] }> {
    const { counts, unreadable } = await this.listCounterDocs();
    return {
      endpoints: counts,
      corrupt: unreadable.map((d) => ({ id: d.id, issues: d.issues })),
      unreadable: unreadable.flatMap((d) => (d.endpointId === undefined ? [] : [d.endpointId])).sort((a, b) => a.localeCompare(b)),
    };
  }

  /**
   * Every counter document in one read of the counters container, each judged on its own: the counts of those that
   * parse, when each document was last written (its `_ts`, also for one that no longer parses), and the documents that
   * no longer parse with their endpoint, version (etag: it changes with every write, `_ts` only each second) and the
   * failing fields' paths (never their values). One read gives all three, so a document written between two reads
   * cannot be taken for an unreadable one. A document is placed by its endpointId only when that is an endpoint id
   * (the store writes no other; a planted one would be a link to nowhere, or a value in a log). Goes through
   * queryAll: a 429 or timeout is a StoreThrottledError / StoreTransientError, as for every other store read.
   * getAllCounts is built on it: the one counters query of the store.
   */
  async listCounterDocs(): Promise<CounterDocsRead> {
    const r = await queryAll(this.#c.counters, { query: 'SELECT * FROM c' }, anyCounterDocSchema, { limit: 10_000 }, 'counters read');
    const counts: EndpointCounts[] = [];
    const touched = new Map<string, string>();
    const unreadable: CounterDocsRead['unreadable'] = [];
    for (const raw of r.items) {
      const endpointId = endpointIdSchema.safeParse(raw.endpointId).data;
      if (endpointId !== undefined && typeof raw._ts === 'number') touched.set(endpointId, new Date(raw._ts * 1000).toISOString());
      const parsed = counterDocSchema.safeParse(stripSystem(raw));
      if (parsed.success) counts.push(toEndpointCounts(parsed.data));
      else
        unreadable.push({
          endpointId,
          id: docIdOf(raw),
          version: typeof raw._etag === 'string' ? raw._etag : undefined,
          issuePaths: parsed.error.issues.slice(0, 10).map((i) => i.path.map(String).join('.') || '(root)'),
          issues: describeIssues(parsed.error),
        });
    }
    counts.sort((a, b) => a.endpointId.localeCompare(b.endpointId));
    return { counts, touched, unreadable };
  }

  async getCounts(endpointId: string): Promise<EndpointCounts> {
    try {
      const r = await this.#c.counters.item(COUNTER_DOC_ID, endpointId).read();
      if (r.statusCode === 404)
        return toEndpointCounts({ id: COUNTER_DOC_ID, endpointId, counts: zeroCounts(), recountedAt: null });
      const parsed = counterDocSchema.safeParse(r.resource);
      if (!parsed.success)
        throw new CorruptDocumentError(
          CONTAINERS.counters,
          `${endpointId}/counts`,
          describeIssues(parsed.error),
        );
      return toEndpointCounts(parsed.data);
    } catch (err) {
      if (cosmosStatus(err) === 404)
        return toEndpointCounts({ id: COUNTER_DOC_ID, endpointId, counts: zeroCounts(), recountedAt: null });
      rethrowCosmos(err, 'counters read');
    }
  }

  /**
   * Recounts one endpoint's rows and replaces its counters: repairs any drift (a crash between a row write and
   * its counter patch, a corrupt row overwritten). The replace is conditional on the counter document's etag
   * read before counting, so a delta applied meanwhile makes it count again rather than be lost.
   */
  async recountEndpoint(endpointId: string): Promise<EndpointCounts> {
    parseInput(endpointIdSchema, endpointId, 'endpoint id');
    for (let attempt = 1; attempt <= 5; attempt++) {
      let etag: string | undefined;
      // As stored, unchecked: the document may be corrupt (that is often why it is recounted).
      let stored: unknown;
      try {
        const r = await this.#c.counters.item(COUNTER_DOC_ID, endpointId).read<Record<string, unknown>>();
        etag = r.statusCode === 404 ? undefined : r.etag;
        stored = r.resource?.flushed;
      } catch (err) {
        if (cosmosStatus(err) !== 404) rethrowCosmos(err, 'counters read');
      }
      const counts = await this.#countRows(endpointId);
      // The stamps after the counts: a row a live writer adds between the two reads is then missing from the counts
      // but covered by its entry, which its own next flush makes right if that flush lands (the other order would
      // count it twice, the recount and then that flush). If that flush fails without landing, or the writer dies
      // first, the row's delta is lost until the next recount (docs/store.md, "A recount and `flushed`": limits).
      let stamps: unknown[];
      try {
        stamps = await stampsOnRows(this.#c.events, endpointId);
      } catch (err) {
        rethrowCosmos(err, 'recount');
      }
      // Every writer stamped on the rows is covered up to its highest window there: the recount counted those.
      const flushed = recountedFlushed(stored, stamps);
      const doc: CounterDoc = { id: COUNTER_DOC_ID, endpointId, counts, recountedAt: this.#iso(), flushed };
      try {
        if (etag === undefined) await this.#c.counters.items.create(doc);
        else
          await this.#c.counters
            .item(COUNTER_DOC_ID, endpointId)
            .replace(doc, { accessCondition: { type: 'IfMatch', condition: etag } });
      } catch (err) {
        const code = cosmosStatus(err);
        if (code !== 409 && code !== 412) rethrowCosmos(err, 'counters recount');
        continue;
      }
      // The failure-group aggregates drift for the same reasons as the counters: repaired alongside.
      await rebuildFailureGroups(this.database, endpointId, this.#now);
      return toEndpointCounts(doc);
    }
    throw new StoreTransientError(`counters of ${endpointId} kept changing during the recount; try again`);
  }

  /**
   * After a write over a row that did not parse: sets the endpoint's counters from its rows, at most one recount per
   * endpoint waiting to start (a write that finds one queued joins it: it starts after this write landed, which is all
   * this write needs). Resolves false when the counters could not be set (the caller reports `counters: 'failed'`).
   */
  #recountOverUnreadable(endpointId: string): Promise<boolean> {
    const queued = this.#unreadableRecounts.get(endpointId);
    if (queued && !queued.started) return queued.done;
    const entry: { started: boolean; done: Promise<boolean> } = { started: false, done: Promise.resolve(false) };
    entry.done = (queued?.done ?? Promise.resolve(true)).then(async () => {
      entry.started = true;
      try {
        return await this.#recountAsFlushed(endpointId);
      } finally {
        if (this.#unreadableRecounts.get(endpointId) === entry) this.#unreadableRecounts.delete(endpointId);
      }
    });
    this.#unreadableRecounts.set(endpointId, entry);
    return entry.done;
  }

  /**
   * Replaces an endpoint's counts with those of its rows as every writer's flushes and recoveries still to come expect
   * them (countsAsFlushed: the rows, less the stamps above `flushed`), If-Match the counters document read before the
   * rows, keeping its `flushed` as it was. Exact while writers go on (a buffering writer's delta not yet flushed is
   * its stamp on the row; any patch that lands meanwhile changes the etag and the rows are read again), unlike
   * recountEndpoint, except for a writer with immediate counters whose row lands before the read and its patch after
   * the replace (docs/store.md, "A terminal write over an unreadable row"). Bounded: three attempts; false when they
   * fail, or when the counters document itself does not parse (its `flushed` cannot be trusted: npm run recount).
   */
  async #recountAsFlushed(endpointId: string): Promise<boolean> {
    const item = this.#c.counters.item(COUNTER_DOC_ID, endpointId);
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        let etag: string | undefined;
        let stored: CounterDoc | undefined;
        try {
          const r = await item.read();
          if (r.statusCode !== 404) {
            const parsed = counterDocSchema.safeParse(r.resource);
            if (!parsed.success) return false;
            stored = parsed.data;
            etag = r.etag;
          }
        } catch (err) {
          if (cosmosStatus(err) !== 404) throw err;
        }
        const counts = countsAsFlushed(await rowCountViews(this.#c.events, endpointId), stored?.flushed ?? {});
        const doc: CounterDoc = { ...(stored ?? { id: COUNTER_DOC_ID, endpointId, flushed: {} }), counts, recountedAt: this.#iso() };
        if (etag === undefined) await this.#c.counters.items.create(doc);
        else await item.replace(doc, { accessCondition: { type: 'IfMatch', condition: etag } });
        return true;
      } catch (err) {
        const code = cosmosStatus(err);
        // 409/412: a writer created or patched the document since it was read: read the rows again.
        if (code !== 409 && code !== 412) return false;
      }
    }
    return false;
  }

  /**
   * Applies, exactly once, the counter deltas a buffering writer (counterFlushMs) had not flushed when it died: its
   * row stamps above its `flushed` window on each endpoint's counters (counters.ts, docs/store.md). Unlike a
   * recount, exact while other writers go on writing. Returns how many stamps were applied.
   */
  async recoverCounters(deadOwner: string): Promise<number> {
    try {
      return await recoverLostDeltas(this.#c.counters, this.#c.events, deadOwner);
    } catch (err) {
      rethrowCosmos(err, 'counter recovery');
    }
  }

  /**
   * Endpoints whose counters refused this writer's flushes because a survivor took it for dead and recovered its
   * stamped deltas there (lib/store/counters.ts, the recovered fence): deltas of rows it wrote after that are dropped,
   * so those endpoints' counters are too low until a recount (`npm run recount`). Empty for a writer never taken for dead.
   */
  get countsRefusedEndpoints(): string[] {
    return this.#counterBuffer?.refusedEndpoints ?? [];
  }

  /** This store's writer id in counter stamps (undefined without counterFlushMs). */
  get counterOwner(): string | undefined {
    return this.#counterBuffer?.owner;
  }

  async #countRows(endpointId: string): Promise<Record<CounterBucket, number>> {
    const count = async (extra: string, status: string): Promise<number> => {
      try {
        const r = await this.#c.events.items
          .query<number>(
            {
              query: `SELECT VALUE COUNT(1) FROM c WHERE c.endpointId = @ep AND c.status = @status${extra}`,
              parameters: [
                { name: '@ep', value: endpointId },
                { name: '@status', value: status },
              ],
            },
            { partitionKey: [endpointId] },
          )
          .fetchAll();
        return r.resources[0] ?? 0;
      } catch (err) {
        rethrowCosmos(err, 'recount');
      }
    };
    const counts = zeroCounts();
    const buckets = COUNTER_BUCKETS.filter((b) => b !== 'Handoff');
    const [handoff, ...rest] = await Promise.all([
      count(" AND c.subStatus = 'Handoff'", ResolutionStatus.Pending),
      ...buckets.map((b) => count('', b)),
    ]);
    buckets.forEach((b, i) => (counts[b] = rest[i] ?? 0));
    counts.Handoff = handoff ?? 0;
    counts.Pending -= counts.Handoff;
    return counts;
  }

  // ---------------------------------------------------------------- heartbeats and platform records

  /**
   * Upserts an endpoint heartbeat record keyed by probe id: the sender's Pending record and the reply merge.
   * Fields the new write leaves null keep their stored value (the reply does not know when the probe was sent).
   */
  async recordHeartbeat(input: HeartbeatWrite): Promise<HeartbeatRecord> {
    const w = parseInput(heartbeatWriteSchema, input, 'heartbeat');
    const id = docId(w.probeId);
    const item = this.#c.heartbeats.item(id, w.endpointId);
    for (let attempt = 1; attempt <= MAX_WRITE_ATTEMPTS; attempt++) {
      let existing: HeartbeatRecord | null = null;
      let etag: string | undefined;
      try {
        const r = await item.read();
        if (r.statusCode !== 404) {
          const parsed = heartbeatRecordSchema.safeParse(r.resource);
          existing = parsed.success ? parsed.data : null; // an unreadable record is simply replaced
          etag = r.etag;
        }
      } catch (err) {
        if (cosmosStatus(err) !== 404) rethrowCosmos(err, 'heartbeat read');
      }
      const doc: HeartbeatRecord = {
        id,
        endpointId: w.endpointId,
        probeId: w.probeId,
        status: w.status,
        sentAt: w.sentAt ?? existing?.sentAt ?? null,
        receivedAt: w.receivedAt ?? existing?.receivedAt ?? null,
        answeredAt: w.answeredAt ?? existing?.answeredAt ?? null,
        sdkVersion: w.sdkVersion ?? existing?.sdkVersion ?? null,
        intervalSeconds:
          w.intervalSeconds && w.intervalSeconds > 0
            ? w.intervalSeconds
            : (existing?.intervalSeconds ?? null),
        updatedAt: this.#iso(),
      };
      try {
        if (etag === undefined) await this.#c.heartbeats.items.create(doc);
        else await item.replace(doc, { accessCondition: { type: 'IfMatch', condition: etag } });
        return doc;
      } catch (err) {
        const code = cosmosStatus(err);
        if (code !== 409 && code !== 412 && code !== 404) rethrowCosmos(err, 'heartbeat write');
      }
    }
    throw new StoreTransientError(
      `heartbeat ${w.endpointId}/${w.probeId} kept changing under concurrent writes`,
    );
  }

  /**
   * The sweep's Off for an unanswered probe: written only while the record is still Pending, conditional on the
   * etag read, so a reply recordHeartbeat stores meanwhile is never overwritten (a lost race re-reads, and a record
   * no longer Pending - answered - is left as the reply wrote it). True when this call turned it Off; false when it
   * was no longer Pending or there is no such record.
   */
  async turnPendingHeartbeatOff(endpointId: string, probeId: string): Promise<boolean> {
    const id = docId(probeId);
    const item = this.#c.heartbeats.item(id, endpointId);
    for (let attempt = 1; attempt <= MAX_WRITE_ATTEMPTS; attempt++) {
      let existing: HeartbeatRecord;
      let etag: string | undefined;
      try {
        const r = await item.read();
        if (r.statusCode === 404) return false;
        const parsed = heartbeatRecordSchema.safeParse(r.resource);
        if (!parsed.success) return false; // not a probe this sweep can judge; a reply replaces it
        existing = parsed.data;
        etag = r.etag;
      } catch (err) {
        if (cosmosStatus(err) === 404) return false;
        rethrowCosmos(err, 'heartbeat read');
      }
      if (existing.status !== 'Pending' || etag === undefined) return false;
      try {
        await item.replace({ ...existing, status: 'Off', updatedAt: this.#iso() }, { accessCondition: { type: 'IfMatch', condition: etag } });
        return true;
      } catch (err) {
        const code = cosmosStatus(err);
        if (code === 404) return false;
        if (code !== 412) rethrowCosmos(err, 'heartbeat write');
      }
    }
    throw new StoreTransientError(`heartbeat ${endpointId}/${probeId} kept changing under concurrent writes`);
  }

  /** An endpoint's most recent heartbeat records, newest probe first. */
  async listHeartbeats(endpointId: string, limit = 20): Promise<HeartbeatRecord[]> {
    const r = await queryAll(
      this.#c.heartbeats,
      {
        query: 'SELECT * FROM c WHERE c.endpointId = @ep ORDER BY c.updatedAt DESC',
        parameters: [{ name: '@ep', value: endpointId }],
      },
      heartbeatRecordSchema,
      { partitionKey: endpointId, limit },
      'heartbeat list',
    );
    return r.items;
  }

  /**
   * The endpoints with a probe still Pending that was sent at or before `sentBefore` (ISO), across partitions: how
   * the heartbeat sweep finds probes of endpoints no longer in the catalog. At most `limit` probes are read.
   */
  async listOverduePendingHeartbeatEndpoints(sentBefore: string, limit = 1000): Promise<string[]> {
    const r = await queryAll(
      this.#c.heartbeats,
      {
        query: "SELECT c.endpointId FROM c WHERE c.status = 'Pending' AND c.sentAt <= @before",
        parameters: [{ name: '@before', value: sentBefore }],
      },
      heartbeatRecordSchema.pick({ endpointId: true }),
      { limit },
      'overdue heartbeat list',
    );
    return [...new Set(r.items.map((i) => i.endpointId))];
  }

  async getHeartbeatSettings(): Promise<{ settings: HeartbeatSettings; etag: string | undefined }> {
    const raw = await this.#readPlatform('settings_heartbeat');
    if (raw === null) return { settings: heartbeatSettingsSchema.parse({}), etag: undefined };
    const parsed = heartbeatSettingsSchema.safeParse(raw.doc.value);
    if (!parsed.success)
      throw new CorruptDocumentError(CONTAINERS.platform, 'settings_heartbeat', describeIssues(parsed.error));
    return { settings: parsed.data, etag: raw.etag };
  }

  /**
   * Saves the heartbeat settings; fields left out keep their stored values (an operator's save does not reset
   * the scheduler's lastSentAt). With `ifMatch` the save is conditional (returns false when another instance
   * changed them first): the scheduler claims a send this way so only one instance sends per interval, and an
   * operator's save is refused when the settings changed since they were read. `null` is the condition for
   * settings never saved (the defaults): it creates the document only if nobody else has meanwhile.
   */
  async saveHeartbeatSettings(settings: Partial<HeartbeatSettings>, ifMatch?: string | null): Promise<boolean> {
    const { settings: current } = await this.getHeartbeatSettings();
    const value = parseInput(heartbeatSettingsSchema, { ...current, ...settings }, 'heartbeat settings');
    if (value.timeoutSeconds > value.intervalSeconds) {
      throw new StoreInputError('heartbeat timeoutSeconds must not exceed intervalSeconds');
    }
    return this.#writePlatform('settings_heartbeat', value, ifMatch);
  }

  async setServiceHealth(input: z.input<typeof serviceHealthSchema>): Promise<ServiceHealth> {
    const value = parseInput(serviceHealthSchema, input, 'service health');
    await this.#writePlatform(docId('service', value.serviceId), value);
    return value;
  }

  /**
   * The sweep's Off for a service's unanswered liveness probe: written only while the stored record still carries
   * that probe's message id (the service's answer clears it, a newer probe replaces it), conditional on the etag
   * read, so an answer stored meanwhile is never overwritten by Off (a lost race re-reads). True when this call
   * turned it Off.
   */
  async turnServiceProbeOff(serviceId: string, probeMessageId: string): Promise<boolean> {
    const id = docId('service', serviceId);
    for (let attempt = 1; attempt <= MAX_WRITE_ATTEMPTS; attempt++) {
      const raw = await this.#readPlatform(id);
      if (raw === null || raw.etag === undefined) return false;
      const parsed = serviceHealthSchema.safeParse(raw.doc.value);
      if (!parsed.success || parsed.data.lastProbeMessageId !== probeMessageId) return false;
      if (await this.#writePlatform(id, { ...parsed.data, status: 'Off', lastProbeMessageId: null }, raw.etag)) return true;
    }
    throw new StoreTransientError(`service health ${serviceId} kept changing under concurrent writes`);
  }

  async getServiceHealth(serviceId: string): Promise<ServiceHealth | null> {
    const id = docId('service', serviceId);
    const raw = await this.#readPlatform(id);
    if (raw === null) return null;
    const parsed = serviceHealthSchema.safeParse(raw.doc.value);
    if (!parsed.success)
      throw new CorruptDocumentError(CONTAINERS.platform, id, describeIssues(parsed.error));
    return parsed.data;
  }

  /**
   * Proves that this identity may still create and read documents in the containers an outcome's record writes
   * beside `platform` (status rows, history, heartbeats): a create of one probe document per container (201 the
   * first time, 409 after: both mean the create was allowed, since Cosmos checks access before it looks for a
   * conflict) and a point read of it. The Resolver runs it while receiving is halted on a denial (docs/resolver.md,
   * "Store access denied"): a data-plane role scoped to some containers refuses the message path in one of them
   * while `platform` answers, and a probe of `platform` alone resumed receiving into the same refusal, a delivery
   * spent each time, until the broker dead-lettered the messages. Throws the first failure (a 401/403 as Cosmos
   * gave it). The documents are never removed (the message path needs no delete permission, so the probe must not
   * either): one per container, under ACCESS_PROBE_KEY, which no endpoint id can be; they carry no status, counted
   * mark or searchable field, so no console query shows them (every cross-partition query filters on one of those,
   * the others name their partition).
   */
  async probeOutcomeAccess(): Promise<void> {
    const k = ACCESS_PROBE_KEY;
    const probes: Array<{ container: Container; doc: Record<string, string>; pk: string | string[] }> = [
      { container: this.#c.events, doc: { id: k, endpointId: k, eventId: k }, pk: [k, k] },
      { container: this.#c.history, doc: { id: k, eventId: k }, pk: k },
      { container: this.#c.heartbeats, doc: { id: k, endpointId: k }, pk: k },
    ];
    for (const { container, doc, pk } of probes) {
      try {
        await container.items.create({ ...doc, accessProbe: true });
      } catch (err) {
        if (cosmosStatus(err) !== 409) rethrowCosmos(err, `access probe create in ${container.id}`);
      }
      try {
        await container.item(k, pk).read();
      } catch (err) {
        rethrowCosmos(err, `access probe read in ${container.id}`);
      }
    }
  }

  async #readPlatform(id: string): Promise<{ doc: { value: unknown }; etag: string | undefined } | null> {
    try {
      const r = await this.#c.platform.item(id, id).read<{ value: unknown }>();
      if (r.statusCode === 404 || r.resource === undefined) return null;
      return { doc: r.resource, etag: r.etag };
    } catch (err) {
      if (cosmosStatus(err) === 404) return null;
      rethrowCosmos(err, 'platform record read');
    }
  }

  /** `ifMatch`: undefined writes whatever is stored, null creates only if absent, an etag replaces only that version. */
  async #writePlatform(id: string, value: unknown, ifMatch?: string | null): Promise<boolean> {
    const doc = { id, value, updatedAt: this.#iso() };
    try {
      if (ifMatch === undefined) await this.#c.platform.items.upsert(doc);
      else if (ifMatch === null) await this.#c.platform.items.create(doc);
      else
        await this.#c.platform
          .item(id, id)
          .replace(doc, { accessCondition: { type: 'IfMatch', condition: ifMatch } });
      return true;
    } catch (err) {
      const code = cosmosStatus(err);
      if (ifMatch !== undefined && (code === 412 || code === 404 || code === 409)) return false;
      rethrowCosmos(err, 'platform record write');
    }
  }
}
