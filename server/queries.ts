// Read models for the console's pages, built on the store. The endpoint overview reads the maintained counters
// (never a scan of events) plus a bounded TOP 1 query and the recent heartbeat records per endpoint; the summary of
// one endpoint (the Endpoint and Event pages) is its catalog entry and one point read of its counters; lists are single-endpoint, bounded pages
// with continuation tokens; nothing here returns a payload except the event details.
import type { SqlParameter } from '@azure/cosmos';
import { z } from 'zod';
import { ResolutionStatus, resolutionStatusSchema } from '@nimbus/sdk/contract';
import type { Catalog } from '@nimbus/sdk/contract';
import {
  blockerOf,
  CONTAINERS,
  heartbeatSettingsSchema,
  queryPage,
  rethrowCosmos,
  STATUS_ROW_SUMMARY_SELECT,
  statusRowSummarySchema,
  type AuditEntry,
  type EndpointCounts,
  type HistoryEntry,
  type MessageStore,
  type Page,
  type StatusRow,
  type StatusRowSummary,
} from '../lib/store/index.ts';
import { notFound } from './http.ts';
import { inScope, type ReadScope } from './auth/readScope.ts';
import { traceUrl, traceUrlTemplate } from './traceLink.ts';
import { inHistoryOrder } from './historyOrder.ts';
import { log } from './log.ts';
import { exactIdFilter } from './exactIdFilterSchema.ts';
import { readEndpointHealth, type HealthReadContext } from './heartbeat/scheduler.ts';

const FAILED_STATUSES = [ResolutionStatus.Failed, ResolutionStatus.DeadLettered, ResolutionStatus.Unsupported];

export interface EndpointOverview {
  endpointId: string;
  owner: string | null;
  description: string | null;
  inCatalog: boolean;
  produces: string[];
  consumes: string[];
  counts: Omit<EndpointCounts, 'endpointId' | 'buckets' | 'recountedAt'>;
  oldestFailureAt: string | null;
  lastActivityAt: string | null;
  /**
   * Read as Admin → Health reads it: `status` the last settled outcome (Pending only while none ever settled), `at`
   * when that outcome was recorded (the answer's time for On), `busy` while the newest probe is overdue but the
   * endpoint keeps answering other messages (the probe is queued behind its backlog, see server/heartbeat/evidence.ts).
   * `evidenceUnknown` is present (true) only while the newest probe is overdue and the endpoint's last answer could
   * not be read (a throttled or failing store), within the bound the sweep leaves such a probe Pending: `status` is
   * then the last settled one, unchecked - neither busy nor silent as far as anyone knows (Admin → Health's
   * "Evidence unknown").
   */
  heartbeat: { status: string; at: string | null; sdkVersion: string | null; busy: boolean; evidenceUnknown?: true };
  /**
   * Present (true) only when the endpoint's counter document exists but no longer parses: `counts` are then zeros
   * because they cannot be read, not because nothing is pending or failed. Logged with the issue paths.
   */
  countersUnreadable?: true;
}

/**
 * What the Endpoint and Event pages show of their endpoint: the catalog's facts and the status counts. No heartbeat,
 * oldest failure or last activity: those are the Endpoints page's, and under load they cost partition scans.
 */
export type EndpointSummary = Pick<
  EndpointOverview,
  'endpointId' | 'owner' | 'description' | 'inCatalog' | 'produces' | 'consumes' | 'counts' | 'countersUnreadable'
>;

/** The summary from the catalog and the endpoint's counter document (none yet, or unreadable: all zero). */
function summaryOf(catalog: Catalog, endpointId: string, c: EndpointCounts | undefined, unreadable = false): EndpointSummary {
  const entry = catalog.endpoints.find((e) => e.id === endpointId);
  return {
    endpointId,
    owner: entry?.owner ?? null,
    description: entry?.description ?? null,
    inCatalog: entry !== undefined,
    produces: entry?.produces ?? [],
    consumes: entry?.consumes ?? [],
    counts: {
      pending: c?.pending ?? 0,
      handoff: c?.handoff ?? 0,
      deferred: c?.deferred ?? 0,
      failed: c?.failed ?? 0,
      deadLettered: c?.deadLettered ?? 0,
      unsupported: c?.unsupported ?? 0,
      completed: c?.completed ?? 0,
      skipped: c?.skipped ?? 0,
    },
    ...(unreadable ? { countersUnreadable: true as const } : {}),
  };
}

/**
 * One endpoint's summary: a point read of its counters. The Endpoint and Event pages used to read the whole
 * overview for it, and under demo load that was most of their time (docs/console.md, Performance): per endpoint a
 * heartbeat query, an ordered scan for the oldest failure whenever the failed count had moved, and for an endpoint
 * whose probe is overdue another ordered scan for its last answer - all on the one Cosmos server the Resolver writes to.
 */
export async function endpointSummary(store: MessageStore, catalog: Catalog, endpointId: string): Promise<EndpointSummary> {
  let counts: EndpointCounts | undefined;
  let unreadable = false;
  try {
    counts = await store.getCounts(endpointId);
  } catch (err) {
    // A counters document that no longer parses: zero counts marked countersUnreadable, as the overview shows that
    // endpoint, so the endpoint's own pages are not a 500 where the overview copes. Matched by the error's explicit name
    // (the production bundle renames classes); the document id only is logged, never its content.
    if (!(err instanceof Error && err.name === 'CorruptDocumentError')) throw err;
    unreadable = true;
    log.warn({ endpointId, document: (err as { documentId?: unknown }).documentId }, 'counters document corrupt; the summary shows zero counts');
  }
  return summaryOf(catalog, endpointId, counts, unreadable);
}

/**
 * Every endpoint's counter document (MessageStore.listCounterDocs: one query of the small counters container, its
 * 429s and timeouts the store's errors, a 503 "busy" for the console): the counts of those that parse, when each
 * last changed (the overview's last activity), and the endpoints whose document does not parse, each logged once
 * per version of its document.
 */
async function readCounterDocs(store: MessageStore): Promise<{ counted: EndpointCounts[]; touched: Map<string, string>; unreadable: Set<string> }> {
  const { counts, touched, unreadable: broken } = await store.listCounterDocs();
  for (const c of counts) unreadableLogged.delete(c.endpointId);
  const unreadable = new Set<string>();
  for (const doc of broken) {
    if (doc.endpointId !== undefined) unreadable.add(doc.endpointId);
    warnUnreadableOnce(doc.endpointId, doc.version, doc.issuePaths);
  }
  return { counted: counts, touched, unreadable };
}

/**
 * The version (etag) of each unreadable counter document already logged, by endpoint: a broken document is
 * logged once per version, not on every poll of the Endpoints page; forgotten once it parses again.
 */
const unreadableLogged = new Map<string, string | undefined>();

/** Logs where a counter document fails its schema: the endpoint and the issue paths, never the values. */
function warnUnreadableOnce(endpointId: string | undefined, version: string | undefined, issuePaths: string[]): void {
  const key = endpointId ?? '';
  if (unreadableLogged.has(key) && unreadableLogged.get(key) === version) return;
  unreadableLogged.set(key, version);
  log.warn({ endpointId: endpointId ?? null, issuePaths }, 'counters document unreadable; the endpoint shows zero counts, marked countersUnreadable');
}

/** A failed row, as the oldest failure is remembered: its time and where to read it again. */
interface FailedRowRef {
  updatedAt: string;
  eventId: string;
  sessionId: string;
}

/** The endpoint's failed row with the oldest update: one ordered TOP 1 query over its partition. */
async function oldestFailedRow(store: MessageStore, endpointId: string): Promise<FailedRowRef | null> {
  const query = store.database.container(CONTAINERS.events).items.query<Record<string, unknown>>(
    {
      query: 'SELECT TOP 1 c.updatedAt, c.eventId, c.sessionId FROM c WHERE c.endpointId = @ep AND ARRAY_CONTAINS(@s, c.status) ORDER BY c.updatedAt ASC',
      parameters: [
        { name: '@ep', value: endpointId },
        { name: '@s', value: FAILED_STATUSES },
      ],
    },
    { partitionKey: [endpointId] },
  );
  // The raw query's 429 or timeout as the store's error (StoreThrottledError: a 503 "busy" with Retry-After), as
  // for the store's own reads; unmapped it was a 500 "internal error" on the polled overview.
  const r = await query.fetchAll().catch((err: unknown) => rethrowCosmos(err, 'oldest failure read'));
  const v = r.resources[0];
  if (!v || typeof v.updatedAt !== 'string' || typeof v.eventId !== 'string') return null;
  return { updatedAt: v.updatedAt, eventId: v.eventId, sessionId: typeof v.sessionId === 'string' ? v.sessionId : '' };
}

/**
 * Whether a remembered oldest failure still is the oldest: its row is still failed and untouched since (same
 * updatedAt). Every row written since got a later updatedAt (the write's own clock), so a failure that arrived
 * meanwhile cannot be older; only the remembered row leaving (resubmitted, skipped, answered) moves the oldest.
 * One point read. A row that no longer parses is answered "no": the ordered query decides then.
 */
async function stillOldest(store: MessageStore, endpointId: string, ref: FailedRowRef): Promise<boolean> {
  try {
    const row = await store.getStatusRow(endpointId, ref.eventId, ref.sessionId);
    return row !== null && (FAILED_STATUSES as readonly string[]).includes(row.status) && row.updatedAt === ref.updatedAt;
  } catch (err) {
    if (err instanceof Error && err.name === 'CorruptDocumentError') return false;
    throw err;
  }
}

/**
 * The oldest failure changes only when failures come or go, but finding it is an ordered query over the
 * endpoint's rows: it is cached per endpoint. While the failed count is unchanged the cached one is served; when
 * the count moved (under traffic: on almost every read) one point read of the remembered row tells whether it
 * still stands (stillOldest) and only if not is the query sent again. At least once a minute the query runs
 * anyway, which bounds what a writer's clock running behind could hide (a row written with an earlier time).
 */
const OLDEST_FAILURE_TTL_MS = 60_000;
const oldestFailureCache = new Map<string, { failed: number; value: FailedRowRef | null; at: number }>();

async function oldestFailure(store: MessageStore, endpointId: string, failed: number): Promise<string | null> {
  if (failed === 0) return null;
  const hit = oldestFailureCache.get(endpointId);
  const fresh = hit !== undefined && Date.now() - hit.at < OLDEST_FAILURE_TTL_MS;
  if (fresh && hit.failed === failed) return hit.value?.updatedAt ?? null;
  if (fresh && hit.value && (await stillOldest(store, endpointId, hit.value))) {
    hit.failed = failed;
    return hit.value.updatedAt;
  }
  const value = await oldestFailedRow(store, endpointId);
  oldestFailureCache.set(endpointId, { failed, value, at: Date.now() });
  return value?.updatedAt ?? null;
}

/** An endpoint as the catalog describes it, with its maintained counts: what endpointsOverview adds to is this. */
export type EndpointWithCounts = EndpointSummary;

/**
 * Every catalog endpoint (and any endpoint with data but no longer in the catalog) with its counts: the catalog
 * and one read of the maintained counters, nothing per endpoint. What a caller that shows no activity, failure or
 * heartbeat needs (MCP discover_topology), without the per-endpoint queries endpointsOverview runs for those.
 */
export async function endpointsWithCounts(store: MessageStore, catalog: Catalog): Promise<EndpointWithCounts[]> {
  const { counted, unreadable } = await readCounterDocs(store);
  return withCounts(counted, unreadable, catalog);
}

function withCounts(counted: EndpointCounts[], unreadable: Set<string>, catalog: Catalog): EndpointWithCounts[] {
  const byId = new Map(counted.map((c) => [c.endpointId, c]));
  const ids = [...new Set([...catalog.endpoints.map((e) => e.id), ...counted.map((c) => c.endpointId), ...unreadable])];
  return ids.map((endpointId) => summaryOf(catalog, endpointId, byId.get(endpointId), unreadable.has(endpointId)));
}

/**
 * endpointsWithCounts, and per endpoint its last activity, oldest failure and heartbeat. Reads the maintained
 * counters, never the events: last activity is when the endpoint's counters last moved (a status change), the
 * oldest failure a cached TOP 1 query, the heartbeat the endpoint's recent probe records read by the Health page's
 * rule (one query per endpoint as before; the endpoint's last answer is looked up only while its newest probe is
 * overdue: on every read while no cached answer still proves it busy - the Health page and the heartbeat alert read
 * the same cache, so it must not serve a stale "not busy" - and at most once per probe and sweep tick for an endpoint
 * outside the catalog, which no page or alert judges; evidence.ts lastHandledAtForProbe).
 */
export async function endpointsOverview(store: MessageStore, catalog: Catalog, now: () => Date = () => new Date()): Promise<EndpointOverview[]> {
  const nowMs = now().getTime();
  // Two independent reads, and per endpoint two chains: its heartbeat needs only the heartbeat settings (the catalog
  // names the endpoints), its oldest failure only the counters. Each chain starts as soon as its own read is in,
  // rather than every per-endpoint read waiting for the slower of the two (under load each read waits its turn on
  // the store: the waits add up along the longest chain, docs/console.md Performance).
  const countersRead = readCounterDocs(store);
  const timeoutRead = heartbeatTimeout(store);
  const pendingOf = async (endpointId: string) => (await countersRead).counted.find((c) => c.endpointId === endpointId)?.pending ?? 0;
  const heartbeats = new Map<string, Promise<EndpointOverview['heartbeat']>>();
  const heartbeatFor = (endpointId: string, inCatalog: boolean) => {
    let read = heartbeats.get(endpointId);
    if (!read) {
      read = timeoutRead.then((timeoutSeconds) =>
        heartbeatOf(store, endpointId, { nowMs, timeoutSeconds, backlog: () => pendingOf(endpointId), warn: (m) => log.warn(m), reuseAnyEvidence: !inCatalog }),
      );
      // Started before anything awaits it: a failure must not be an unhandled rejection if the counters read fails
      // first (the overview then rejects with that); it is still seen by the Promise.all below otherwise.
      read.catch(() => undefined);
      heartbeats.set(endpointId, read);
    }
    return read;
  };
  for (const e of catalog.endpoints) heartbeatFor(e.id, true);
  const { counted, touched, unreadable } = await countersRead;
  return Promise.all(
    withCounts(counted, unreadable, catalog).map(async (e): Promise<EndpointOverview> => {
      const { endpointId, counts } = e;
      const [oldestFailureAt, heartbeat] = await Promise.all([oldestFailure(store, endpointId, counts.failed), heartbeatFor(endpointId, e.inCatalog)]);
      return { ...e, oldestFailureAt, lastActivityAt: touched.get(endpointId) ?? null, heartbeat };
    }),
  );
}

/** The heartbeat timeout the sweep applies; unreadable settings are logged and read as the default. */
async function heartbeatTimeout(store: MessageStore): Promise<number> {
  try {
    return (await store.getHeartbeatSettings()).settings.timeoutSeconds;
  } catch (err) {
    log.warn(`heartbeat settings unreadable (${(err as Error)?.message ?? String(err)}); default timeout assumed`);
    return heartbeatSettingsSchema.parse({}).timeoutSeconds;
  }
}

async function heartbeatOf(store: MessageStore, endpointId: string, c: HealthReadContext): Promise<EndpointOverview['heartbeat']> {
  const { health, records } = await readEndpointHealth(store, endpointId, true, c);
  // The record the status comes from: the newest with that status (records are newest first).
  const settled = records.find((r) => r.status === health.status);
  const at = health.status === 'On' || health.status === 'Unsupported' ? health.lastSeenAt : (settled?.updatedAt ?? null);
  // Absent rather than false, as countersUnreadable: the common case's answer stays as it was.
  return { status: health.status, at, sdkVersion: health.sdkVersion, busy: health.busy, ...(health.evidenceUnknown ? { evidenceUnknown: true as const } : {}) };
}


/** Query-string filters of the event list. Unknown keys are ignored; bad values are a 400. */
export const eventListQuerySchema = z.object({
  status: z
    .string()
    .optional()
    .transform((s) => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : []))
    .pipe(z.array(z.union([resolutionStatusSchema, z.literal('Handoff')])).max(10)),
  eventTypeId: exactIdFilter('eventTypeId'),
  sessionId: exactIdFilter('sessionId'),
  eventId: exactIdFilter('eventId'),
  from: z.iso.datetime({ offset: true }).optional().or(z.literal('').transform(() => undefined)),
  to: z.iso.datetime({ offset: true }).optional().or(z.literal('').transform(() => undefined)),
  q: z.string().trim().max(200).optional().transform((v) => v || undefined),
  /** A failure group (server/failures/groups.ts): the rows with that fingerprint. */
  groupId: z.string().trim().regex(/^[0-9a-f]{20}$/, 'a failure group id is 20 hex digits').optional().or(z.literal('').transform(() => undefined)),
  continuation: z.string().max(8192).optional().transform((v) => v || undefined),
  pageSize: z.coerce.number().int().min(1).max(200).optional(),
});
export type EventListQuery = z.output<typeof eventListQuerySchema>;

export interface EventListItem {
  endpointId: string;
  eventId: string;
  sessionId: string;
  eventTypeId: string | null;
  status: string;
  subStatus: string | null;
  messageId: string;
  messageType: string | null;
  errorText: string | null;
  blockedBy: string | null;
  expectedBy: string | null;
  createdAt: string;
  updatedAt: string;
  /**
   * On a row of the Endpoint page's list (GET /api/endpoints/{E}/events, server/heldBack.ts) that may block its
   * session (a failure, a Pending handoff): how many events are parked behind this very event; `atLeast` when the
   * page's parked read stopped at its cap. Absent when the read failed, or stopped at its cap before any parked row
   * naming this event.
   */
  holdsBack?: { count: number; atLeast: boolean };
}

export function toListItem(r: StatusRowSummary): EventListItem {
  return {
    endpointId: r.endpointId,
    eventId: r.eventId,
    sessionId: r.sessionId,
    eventTypeId: r.eventTypeId,
    status: r.status,
    subStatus: r.subStatus,
    messageId: r.lastMessageId,
    messageType: r.messageType,
    // Lists show the first line of the error only; details carry the full text.
    errorText: r.errorText ? r.errorText.slice(0, 300) : null,
    blockedBy: r.blockedBy,
    expectedBy: r.expectedBy,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

/** A stored row a list matched but could not read (its document no longer parses): its id and what is wrong. */
export interface UnreadableRow {
  id: string;
  /** Field paths and what they should be (lib/store/paging.ts describeIssues), never the values. */
  issues: string;
}

/**
 * One page of an endpoint's events, newest update first, with every filter applied in the query (server-side).
 * 'Handoff' in the status filter means Pending rows parked on a handoff. The error-text filter is a
 * case-insensitive substring match (the store's own listEvents has no text filter, so the query is built here).
 * `unreadable` names the rows of this page that matched but no longer parse, under the export's name for them
 * (server/failures/export.ts): they cannot be listed, and a page that left them out silently would look whole.
 */
export async function listEndpointEvents(
  store: MessageStore,
  endpointId: string,
  f: EventListQuery,
): Promise<{ items: EventListItem[]; continuation: string | null; unreadable: UnreadableRow[] }> {
  const { items, continuation, corrupt } = await readEndpointEventsPage(store, endpointId, f);
  return { items, continuation, unreadable: corrupt };
}

/**
 * listEndpointEvents with the matching rows that no longer parse (id and problem) beside the ones that do: the
 * export names them in its file, so a file missing rows says so.
 */
export async function readEndpointEventsPage(
  store: MessageStore,
  endpointId: string,
  f: EventListQuery,
): Promise<{ items: EventListItem[]; continuation: string | null; corrupt: UnreadableRow[] }> {
  const where = ['c.endpointId = @ep'];
  const parameters: SqlParameter[] = [{ name: '@ep', value: endpointId }];
  const statuses = f.status.filter((s) => s !== 'Handoff');
  const handoff = f.status.includes('Handoff');
  const parts: string[] = [];
  if (statuses.length > 0) {
    parts.push('ARRAY_CONTAINS(@statuses, c.status)');
    parameters.push({ name: '@statuses', value: statuses });
  }
  if (handoff) parts.push(`(c.status = '${ResolutionStatus.Pending}' AND c.subStatus = 'Handoff')`);
  if (parts.length > 0) where.push(`(${parts.join(' OR ')})`);
  const eq = (field: string, name: string, value: string | undefined) => {
    if (value === undefined) return;
    where.push(`c.${field} = @${name}`);
    parameters.push({ name: `@${name}`, value });
  };
  eq('eventTypeId', 'type', f.eventTypeId);
  eq('sessionId', 'session', f.sessionId);
  eq('eventId', 'event', f.eventId);
  if (f.from) {
    where.push('c.updatedAt >= @from');
    parameters.push({ name: '@from', value: new Date(f.from).toISOString() });
  }
  if (f.to) {
    where.push('c.updatedAt < @to');
    parameters.push({ name: '@to', value: new Date(f.to).toISOString() });
  }
  if (f.q) {
    where.push('IS_STRING(c.errorText) AND CONTAINS(LOWER(c.errorText), @q)');
    parameters.push({ name: '@q', value: f.q.toLowerCase() });
  }
  eq('fingerprint', 'group', f.groupId);
  const page = await queryPage(
    store.database.container(CONTAINERS.events),
    { query: `SELECT ${STATUS_ROW_SUMMARY_SELECT} FROM c WHERE ${where.join(' AND ')} ORDER BY c.updatedAt DESC`, parameters },
    statusRowSummarySchema,
    { pageSize: f.pageSize ?? 50, continuationToken: f.continuation, partitionKey: [endpointId] },
    'event list',
  );
  return { items: page.items.map(toListItem), continuation: page.continuationToken ?? null, corrupt: page.corrupt };
}

export interface EventDetailsView {
  event: EventListItem & {
    payload: unknown;
    errorText: string | null;
    errorType: string | null;
    deadLetterReason: string | null;
    deadLetterErrorDescription: string | null;
    correlationId: string | null;
    originatingMessageId: string | null;
    parentMessageId: string | null;
    from: string | null;
    to: string | null;
    retryCount: number | null;
    retryLimit: number | null;
    handoff: { reason: string | null; externalJobId: string | null; expectedBy: string | null } | null;
  };
  /** Other rows of the same event id on this endpoint (other sessions). */
  otherRows: EventListItem[];
  history: Array<{
    messageId: string;
    messageType: string;
    from: string | null;
    to: string | null;
    enqueuedAt: string;
    errorText: string | null;
    errorType: string | null;
    deadLetterReason: string | null;
    retryCount: number | null;
    /** The W3C trace the message belonged to, and its link (NIMBUS_TRACE_URL_TEMPLATE), when recorded. */
    traceId: string | null;
    traceUrl: string | null;
    /** The event body the message carried (requests only: the original and each resubmission), for the diff. */
    payload?: unknown;
  }>;
  /** The trace of the event's latest traced message (an operator's resubmission starts a new one). */
  trace: { traceId: string; url: string | null } | null;
  audits: AuditEntry[];
  /**
   * The first PARKED_LIST_LIMIT (100) events parked in the event's session behind it, oldest first: those naming it
   * as their blocker, and those naming none (`blockedBy` null: parked behind a replay, say), not those parked behind
   * another event of the session. `blockedBy` is read from the park reason when the row has no field.
   */
  parkedSiblings: EventListItem[];
  /** More are parked than parkedSiblings lists (a 101st was read): its length is a lower bound, not the count. */
  parkedSiblingsCapped: boolean;
}

function historyView(h: HistoryEntry, template: string | undefined): EventDetailsView['history'][number] {
  const traceId = h.traceId ?? null;
  return {
    traceId,
    traceUrl: traceUrl(traceId, template),
    messageId: h.messageId,
    messageType: h.messageType,
    from: h.from,
    to: h.to,
    enqueuedAt: h.enqueuedAt,
    errorText: h.errorText,
    errorType: h.errorType,
    deadLetterReason: h.deadLetterReason,
    retryCount: h.retryCount,
    ...(h.payload !== undefined && h.payload !== null ? { payload: h.payload } : {}),
  };
}

/**
 * The event's status rows (one per session it appeared in; usually one), newest update first, its history and
 * audits, and the parked siblings of the session its history last names - read beside the rows.
 */
async function rowsAndHistory(store: MessageStore, endpointId: string, eventId: string) {
  const historyRead = store.listHistory(eventId, { pageSize: 200 });
  // The parked-siblings query is the page's slowest read; it only needs the session, which the history already
  // names, so it starts as soon as the history is read, beside the rows query. One query, for the session of the
  // endpoint's latest message: the leading row (newest update) is almost always that session's, and eventDetails
  // uses the leading row's session only. (It used to start one per session the history names; on an event in three
  // sessions that tripled the page's slowest read.) A wrong guess costs one more query after the rows, never a
  // wrong list.
  const parkedRead = historyRead.then((history) => {
    const latest = inHistoryOrder(history.items).findLast((h) => h.endpointId === endpointId && h.sessionId !== '');
    if (!latest) return undefined;
    const read = parkedSiblings(store, endpointId, latest.sessionId, eventId);
    // Nobody may await it if the guess turns out wrong; keep its rejection from going unhandled.
    read.catch(() => undefined);
    return { sessionId: latest.sessionId, read };
  });
  // The rows by one query over the event's own partition ([endpointId, eventId]; the Manager finds them the same
  // way): every session's row, including one the first page of history does not name (a long history, or entries
  // gone), which point reads of the named sessions missed while another session's row was found.
  const [history, audits, rows, parkedGuess] = await Promise.all([
    historyRead,
    store.listAudits(eventId, { pageSize: 200 }),
    store.listEventRows(endpointId, eventId),
    parkedRead,
  ]);
  // The query leaves out rows that no longer parse; a point read of a session the history names reports one
  // (CorruptDocumentError) rather than answering 404 for an event whose only row is damaged.
  if (rows.length === 0) {
    const named = new Set(history.items.filter((h) => h.endpointId === endpointId && h.sessionId !== '').map((h) => h.sessionId));
    for (const sessionId of named) await store.getStatusRow(endpointId, eventId, sessionId);
  }
  return { rows, history, audits, parkedGuess };
}

/** How many parked events the event page lists. */
export const PARKED_LIST_LIMIT = 100;
/** Most store pages the parked list reads: Cosmos may answer a page short, with a continuation. */
const PARKED_LIST_MAX_PAGES = 4;

/**
 * The events parked behind `eventId` in its session, and whether more than PARKED_LIST_LIMIT are: read until one more
 * than the limit, as search does (searchList), since Azure Cosmos DB may end a full page with a continuation to
 * nothing and "a continuation came" would say "100+" for exactly 100. Exported for bench/eventDetailsParts.ts, which
 * times this read as eventDetails makes it.
 */
export async function parkedSiblings(
  store: MessageStore,
  endpointId: string,
  sessionId: string,
  eventId: string,
): Promise<{ items: StatusRowSummary[]; capped: boolean }> {
  const r = await searchList(
    (continuationToken) =>
      store.listParkedSiblings({ endpointId, sessionId, blockedBy: eventId, pageSize: PARKED_LIST_LIMIT + 1, continuationToken }),
    PARKED_LIST_LIMIT,
    PARKED_LIST_MAX_PAGES,
  );
  return { items: r.items, capped: r.truncated };
}

/**
 * A parked row as the event page shows it: its blocker named (blockerOf). The Resolver writes no `blockedBy`; the
 * row names its blocker in its park reason (the subscriber's blockedByReason text), so it is read from there when
 * absent.
 */
function listItemWithBlocker(r: StatusRowSummary): EventListItem {
  const item = toListItem(r);
  if (r.status !== ResolutionStatus.Deferred) return item;
  return { ...item, blockedBy: blockerOf(r) };
}

/**
 * An event's row, history, audits and the parked siblings of its session; 404 when unknown. The history and the
 * audits are kept per event id, and one event id reaches several endpoints (every consumer of the type): only
 * the entries of endpoints in the caller's read scope are returned.
 */
export async function eventDetails(
  store: MessageStore,
  endpointId: string,
  eventId: string,
  scope: ReadScope = { all: true },
): Promise<EventDetailsView> {
  const d = await rowsAndHistory(store, endpointId, eventId);
  const row: StatusRow | undefined = d.rows[0];
  if (!row) throw notFound(`event ${eventId} is not known on endpoint ${endpointId}`);
  const parked =
    row.sessionId !== ''
      ? await (d.parkedGuess?.sessionId === row.sessionId ? d.parkedGuess.read : parkedSiblings(store, endpointId, row.sessionId, eventId))
      : { items: [], capped: false };
  const isHandoff = row.subStatus === 'Handoff' || row.handoffReason != null;
  const template = traceUrlTemplate();
  // In enqueue order with its ties broken the one way (./historyOrder.ts): the latest traced message is then the
  // same one on every read, not whichever of two entries stamped the same instant the store listed last.
  const history = inHistoryOrder(d.history.items.filter((h) => inScope(scope, h.endpointId))).map((h) => historyView(h, template));
  const latestTrace = history.findLast((h) => h.traceId !== null);
  return {
    event: {
      ...listItemWithBlocker(row),
      errorText: row.errorText,
      payload: row.payload ?? null,
      errorType: row.errorType,
      deadLetterReason: row.deadLetterReason,
      deadLetterErrorDescription: row.deadLetterErrorDescription,
      correlationId: row.correlationId,
      originatingMessageId: row.originatingMessageId,
      parentMessageId: row.parentMessageId,
      from: row.from,
      to: row.to,
      retryCount: row.retryCount,
      retryLimit: row.retryLimit,
      handoff: isHandoff ? { reason: row.handoffReason, externalJobId: row.externalJobId, expectedBy: row.expectedBy } : null,
    },
    otherRows: d.rows.slice(1).map(toListItem),
    history,
    trace: latestTrace ? { traceId: latestTrace.traceId!, url: latestTrace.traceUrl } : null,
    audits: d.audits.items.filter((a) => inScope(scope, a.endpointId)),
    parkedSiblings: parked.items.map(listItemWithBlocker),
    parkedSiblingsCapped: parked.capped,
  };
}

/** How many matches search shows per list (event id prefix, session id prefix). */
export const SEARCH_LIMIT = 25;
/**
 * Most store pages one search list reads (each of SEARCH_LIMIT + 1 rows, so at most 208 rows per list): pages can
 * come back short (a cross-partition page with a continuation, rows that no longer parse), and the search must
 * still end however many of them there are.
 */
export const SEARCH_MAX_PAGES = 8;

export interface SearchResult {
  items: EventListItem[];
  /** How many matches each list shows at most (SEARCH_LIMIT), so the page can say "the first 25". */
  limit: number;
  /**
   * Per list, whether more matched than the first SEARCH_LIMIT shown: the search box is a prefix search, and a
   * short prefix can match thousands of events, so the page says the list was cut instead of implying it is all.
   */
  truncated: { byEventId: boolean; bySessionId: boolean };
  /**
   * Per list, whether it stopped because it had read `maxPages` store pages with the query not at its end, holding no
   * more than `limit` rows: it is also `truncated`, but it shows only what those pages held (perhaps fewer than
   * `limit`) and cannot say whether anything more matches, so the page must not say "the first 25".
   */
  scanLimited: { byEventId: boolean; bySessionId: boolean };
  /** How many store pages a list reads at most (SEARCH_MAX_PAGES), for the page to say where a list stopped. */
  maxPages: number;
  /** How many matches each list holds (a row found by both lists is in `items` once). */
  shown: { byEventId: number; bySessionId: number };
}

/**
 * One search list: the first `limit` rows that parse, reading pages until it holds one more than that (the
 * signal that more matched) or the query has no continuation - a single page is not enough, since Cosmos can
 * answer a cross-partition page with fewer rows than asked for and a continuation, and rows that no longer parse
 * are not shown (nor counted). Stops after `maxPages` pages; a continuation left then counts as truncated, and as
 * `scanLimited` when the list holds no more than `limit` rows (it was stopped by the cap, not cut at its limit).
 */
export async function searchList<T>(
  fetchPage: (continuationToken: string | undefined) => Promise<Page<T>>,
  limit: number,
  maxPages: number,
): Promise<{ items: T[]; truncated: boolean; scanLimited: boolean }> {
  const items: T[] = [];
  let token: string | undefined;
  for (let pages = 0; pages < maxPages; pages++) {
    const page = await fetchPage(token);
    items.push(...page.items);
    token = page.continuationToken;
    if (items.length > limit || token === undefined) break;
  }
  const overLimit = items.length > limit;
  // Out of the loop with a continuation and no row beyond the limit: only the page cap ends it that way.
  const scanLimited = !overLimit && token !== undefined;
  return { items: items.slice(0, limit), truncated: overLimit || scanLimited, scanLimited };
}

/**
 * Search by event id or session id prefix across the endpoints the caller may read (the header's search box).
 * The filter is in the query, so a per-endpoint Reader's 25 results are all theirs. Each list reads until it has
 * one more parsable row than it shows: that extra row is how we know the list was cut (a Cosmos continuation
 * token can be present when nothing follows, so it alone cannot say this).
 */
export async function search(store: MessageStore, q: string, scope: ReadScope = { all: true }): Promise<SearchResult> {
  if (!scope.all && scope.endpointIds.length === 0) {
    const none = { byEventId: false, bySessionId: false };
    return { items: [], limit: SEARCH_LIMIT, maxPages: SEARCH_MAX_PAGES, truncated: none, scanLimited: none, shown: { byEventId: 0, bySessionId: 0 } };
  }
  const endpointIds = scope.all ? undefined : scope.endpointIds;
  const pageSize = SEARCH_LIMIT + 1;
  const [byEvent, bySession] = await Promise.all([
    searchList((continuationToken) => store.searchEvents({ eventIdPrefix: q, pageSize, endpointIds, continuationToken }), SEARCH_LIMIT, SEARCH_MAX_PAGES),
    searchList((continuationToken) => store.searchEvents({ sessionIdPrefix: q, pageSize, endpointIds, continuationToken }), SEARCH_LIMIT, SEARCH_MAX_PAGES),
  ]);
  const seen = new Set<string>();
  const items: EventListItem[] = [];
  for (const r of [...byEvent.items, ...bySession.items]) {
    if (seen.has(r.id + r.endpointId)) continue;
    seen.add(r.id + r.endpointId);
    items.push(toListItem(r));
  }
  return {
    items,
    limit: SEARCH_LIMIT,
    maxPages: SEARCH_MAX_PAGES,
    truncated: { byEventId: byEvent.truncated, bySessionId: bySession.truncated },
    scanLimited: { byEventId: byEvent.scanLimited, bySessionId: bySession.scanLimited },
    shown: { byEventId: byEvent.items.length, bySessionId: bySession.items.length },
  };
}
