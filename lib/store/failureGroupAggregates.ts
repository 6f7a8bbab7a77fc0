// Maintained failure-group aggregates: what GET /api/failure-groups reads instead of the failed rows, so the read
// costs the same at 1,000 or 1,000,000 rows (docs/failures.md). One small document per endpoint and group in the
// `failureGroups` container (partition = endpoint): rows per status, per status and event type, per status and
// hour of the row's last update (what `since` and the spark are computed from), first and last arrival, and the
// newest example.
//
// Kept like the endpoint counters (counters.ts): a status write that moves a row into, out of or between groups
// applies the difference between the row version it replaced (read under the etag its write was conditional on)
// and the version it wrote, as atomic `incr` patches. Increments commute, so concurrent Resolvers and consoles
// writing rows of one group add up exactly; a redelivered message that changes nothing writes no row and so
// applies no delta. A lot of writes (writeStatuses: a bulk job's claims) sums its rows' differences per document
// and patches each document once (applyGroupTransitions): the same increments, fewer requests. What can drift is
// what can drift for the counters: a process that dies between the row write and the patch (or a patch that
// fails: counted and logged, see aggregateLosses) leaves the aggregate off by those rows, and rows written around
// the store (the fingerprint backfill, the bench's bulk seeding) are not counted at all. rebuildFailureGroups repairs both
// from the rows: recountEndpoint runs it (after an unclean stop, when a Resolver instance died), and so does
// `npm run backfill:fingerprints`.
//
// lastAt and the example are set by the patch that brings a row in (last writer wins: two writers on one
// endpoint's group in the same few milliseconds can leave them one arrival behind); firstAt is set when the
// document is created. The read refines both with the hour buckets (docs/failures.md).
import type { Container, Database, PatchOperation } from '@azure/cosmos';
import { metrics } from '@opentelemetry/api';
import { createContainerIfMissing } from './containers.ts';
import { cosmosStatus, rethrowCosmos } from './errors.ts';
import { FAILURE_STATUSES, fingerprintOf } from './fingerprint.ts';
import { statusRowId } from './ids.ts';
import type { StatusRow } from './schemas.ts';

export const FAILURE_GROUPS_CONTAINER = 'failureGroups';

export type FailureStatus = (typeof FAILURE_STATUSES)[number];

/** An endpoint's share of one failure group. id = the group id; partition = the endpoint. */
export interface FailureGroupDoc {
  id: string;
  endpointId: string;
  groupId: string;
  errorType: string;
  title: string;
  /** Rows of the group on this endpoint, per status. */
  counts: Record<FailureStatus, number>;
  /** Per status: rows per event type ('' = none). */
  types: Record<FailureStatus, Record<string, number>>;
  /** Per status: rows per hour of their last update, keyed `YYYY-MM-DDTHH` (UTC). */
  hours: Record<FailureStatus, Record<string, number>>;
  firstAt: string;
  lastAt: string;
  example: { eventId: string; sessionId: string; errorText: string | null; at: string } | null;
  /** When rebuildFailureGroups last wrote this document from the rows (null = only ever patched). */
  rebuiltAt: string | null;
}

const EXAMPLE_TEXT_MAX = 1000;

// One open per database (tests and the bench open several); a failed open is forgotten so the next call retries.
const opened = new WeakMap<Database, Promise<Container>>();

export function failureGroupsContainer(database: Database): Promise<Container> {
  let p = opened.get(database);
  if (!p) {
    // The shared creation (containers.ts): a concurrent creation's 409 is fine, a store that does not answer is the
    // store's typed error (a 503 to the console, not the 500 it was on GET /api/failure-groups), a 403 names it.
    p = createContainerIfMissing(database, FAILURE_GROUPS_CONTAINER, '/endpointId');
    opened.set(database, p);
    p.catch(() => {
      if (opened.get(database) === p) opened.delete(database);
    });
  }
  return p;
}

export const hourOf = (iso: string): string => iso.slice(0, 13);

const isFailure = (s: string): s is FailureStatus => (FAILURE_STATUSES as readonly string[]).includes(s);

/** JSON Pointer escaping of one path segment (an event type id may hold '/' or '~'). */
const seg = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** A row's place in the aggregates, or null when it is in no group (not failed, or no fingerprint yet). */
function membership(row: StatusRow | null): { endpointId: string; groupId: string; status: FailureStatus; row: StatusRow } | null {
  if (!row || !isFailure(row.status) || typeof row.fingerprint !== 'string') return null;
  return { endpointId: row.endpointId, groupId: row.fingerprint, status: row.status, row };
}

/** The change one write makes to one endpoint's group document. */
export interface GroupChange {
  endpointId: string;
  groupId: string;
  /** incr deltas by JSON Pointer path (zeros removed). */
  incr: Map<string, number>;
  /** Set when a row enters the group: the new lastAt and example. */
  entered: StatusRow | null;
  /** A row of the group (the entering one, else the leaving one): where a new document's title comes from. */
  sample: StatusRow;
  /** How many row writes the change sums (1, or a lot's rows of this document: mergeGroupChanges). */
  writes: number;
}

/**
 * What a status write from `before` to `after` changes in the aggregates: nothing when neither version is in a
 * group; a leave, an enter, or both (a row that moves between statuses, hours or groups). Pure.
 */
export function groupChanges(before: StatusRow | null, after: StatusRow | null): GroupChange[] {
  const out = new Map<string, GroupChange>();
  const bump = (m: NonNullable<ReturnType<typeof membership>>, by: number, entering: boolean) => {
    const key = `${m.endpointId}\u0000${m.groupId}`;
    let c = out.get(key);
    if (!c) out.set(key, (c = { endpointId: m.endpointId, groupId: m.groupId, incr: new Map(), entered: null, sample: m.row, writes: 1 }));
    const add = (path: string) => c.incr.set(path, (c.incr.get(path) ?? 0) + by);
    add(`/counts/${m.status}`);
    add(`/types/${m.status}/${seg(m.row.eventTypeId ?? '')}`);
    add(`/hours/${m.status}/${hourOf(m.row.updatedAt)}`);
    if (entering) {
      c.entered = m.row;
      c.sample = m.row;
    }
  };
  const left = membership(before);
  const entered = membership(after);
  if (left) bump(left, -1, false);
  if (entered) bump(entered, +1, true);
  for (const c of out.values()) for (const [p, n] of c.incr) if (n === 0) c.incr.delete(p);
  return [...out.values()].filter((c) => c.incr.size > 0 || c.entered !== null);
}

/**
 * The changes of several status writes summed per document (endpoint and group): the increments added up (a
 * path that nets to zero is dropped, and so is a document whose change nets to nothing), the newest entering row
 * as lastAt and example (what the last of one-patch-per-row would leave, up to the order of equal timestamps).
 * Each write's difference is still taken from the row version it replaced, so the sum is exactly what the writes'
 * own patches would have added. Pure.
 */
export function mergeGroupChanges(transitions: ReadonlyArray<{ before: StatusRow | null; after: StatusRow | null }>): GroupChange[] {
  const out = new Map<string, GroupChange>();
  for (const t of transitions) {
    for (const c of groupChanges(t.before, t.after)) {
      const key = `${c.endpointId}\u0000${c.groupId}`;
      const m = out.get(key);
      if (!m) {
        out.set(key, { ...c, incr: new Map(c.incr) });
        continue;
      }
      for (const [path, n] of c.incr) m.incr.set(path, (m.incr.get(path) ?? 0) + n);
      if (c.entered && (!m.entered || c.entered.updatedAt >= m.entered.updatedAt)) {
        m.entered = c.entered;
        m.sample = c.entered;
      }
      m.writes += c.writes;
    }
  }
  for (const c of out.values()) for (const [p, n] of c.incr) if (n === 0) c.incr.delete(p);
  return [...out.values()].filter((c) => c.incr.size > 0 || c.entered !== null);
}

/** Cosmos DB's limit of operations in one patch request. */
const PATCH_MAX_OPS = 10;

/**
 * A change split into parts of at most PATCH_MAX_OPS patch operations each (one part unless a lot's change names
 * more than 10 statuses, types and hours): the first carries lastAt and the example. Each part is a change of its
 * own, so a part whose document is missing creates it with that part's increments (applyChange).
 */
function patchParts(change: GroupChange): GroupChange[] {
  const incr = [...change.incr];
  const first = PATCH_MAX_OPS - (change.entered ? 2 : 0);
  if (incr.length <= first) return [change];
  const parts: GroupChange[] = [{ ...change, incr: new Map(incr.slice(0, first)) }];
  for (let i = first; i < incr.length; i += PATCH_MAX_OPS) parts.push({ ...change, incr: new Map(incr.slice(i, i + PATCH_MAX_OPS)), entered: null });
  return parts;
}

function exampleOf(row: StatusRow): NonNullable<FailureGroupDoc['example']> {
  return { eventId: row.eventId, sessionId: row.sessionId, errorText: row.errorText?.slice(0, EXAMPLE_TEXT_MAX) ?? null, at: row.updatedAt };
}

function emptyDoc(endpointId: string, groupId: string, sample: StatusRow): FailureGroupDoc {
  const fp = fingerprintOf(sample);
  const perStatus = <T>(make: () => T) => Object.fromEntries(FAILURE_STATUSES.map((s) => [s, make()])) as Record<FailureStatus, T>;
  return {
    id: groupId,
    endpointId,
    groupId,
    errorType: fp?.errorType ?? sample.errorType ?? 'Error',
    title: fp?.title ?? sample.errorText ?? '(no message)',
    counts: perStatus(() => 0),
    types: perStatus(() => ({})),
    hours: perStatus(() => ({})),
    firstAt: sample.updatedAt,
    lastAt: sample.updatedAt,
    example: null,
    rebuiltAt: null,
  };
}

/** A new document with the change applied (the change's first write on this endpoint's group). */
function docWith(change: GroupChange): FailureGroupDoc {
  const doc = emptyDoc(change.endpointId, change.groupId, change.sample);
  for (const [path, n] of change.incr) {
    const [, field, status, key] = path.split('/') as [string, 'counts' | 'types' | 'hours', FailureStatus, string | undefined];
    if (field === 'counts') doc.counts[status] += n;
    else {
      const k = key!.replace(/~1/g, '/').replace(/~0/g, '~');
      doc[field][status][k] = (doc[field][status][k] ?? 0) + n;
    }
  }
  if (change.entered) doc.example = exampleOf(change.entered);
  return doc;
}

function patchOps(change: GroupChange): PatchOperation[] {
  const ops: PatchOperation[] = [...change.incr].map(([path, value]) => ({ op: 'incr', path, value }));
  if (change.entered) {
    ops.push({ op: 'set', path: '/lastAt', value: change.entered.updatedAt });
    ops.push({ op: 'set', path: '/example', value: exampleOf(change.entered) });
  }
  return ops; // one write's change: at most 3 + 3 + 2 = 8; a lot's is split by patchParts
}

async function applyChange(container: Container, change: GroupChange): Promise<void> {
  const item = container.item(change.groupId, change.endpointId);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await item.patch(patchOps(change));
      return;
    } catch (err) {
      if (cosmosStatus(err) !== 404) rethrowCosmos(err, 'failure group update');
    }
    try {
      await container.items.create(docWith(change));
      return;
    } catch (err) {
      // 409: another writer created it first; the patch is retried.
      if (cosmosStatus(err) !== 409) rethrowCosmos(err, 'failure group create');
    }
  }
  rethrowCosmos(new Error('failure group document kept disappearing'), 'failure group update');
}

// ------------------------------------------------------------------ lost changes: visible, not silent

/** Aggregate changes this process could not apply since it started (each repaired by the endpoint's next rebuild). */
const losses = { count: 0, lastAt: null as string | null, lastEndpointId: null as string | null, lastCause: null as string | null };

/** How many group changes this process lost, and the last one's context (tests; a health read can show it). */
export function aggregateLosses(): Readonly<typeof losses> {
  return { ...losses };
}

let lossCounter: { add(n: number, attrs?: Record<string, string>): void } | undefined;

/**
 * Records one lost change to one group's document (a single write's, or a lot's rows of that group summed): a
 * counter (nimbus.store.failure_group_losses, the endpoint as attribute) and one log line naming the endpoint, the
 * group id, the cause (a status code or error name: never an error message, which can quote a payload) and how
 * many row writes the change carried. The rows are written; the aggregate is off by them until the endpoint's
 * next rebuild.
 */
function recordLoss(change: GroupChange, err: unknown, log: (line: string) => void): void {
  const status = cosmosStatus(err);
  const cause = status !== undefined ? `status ${status}` : err instanceof Error ? err.name : 'unknown error';
  losses.count++;
  losses.lastAt = new Date().toISOString();
  losses.lastEndpointId = change.endpointId;
  losses.lastCause = cause;
  lossCounter ??= metrics.getMeter('nimbus.store').createCounter('nimbus.store.failure_group_losses', {
    unit: '{changes}',
    description: 'Failure-group aggregate changes not applied (a rebuild repairs them)',
  });
  lossCounter.add(1, { endpointId: change.endpointId });
  log(
    `failure group aggregate not updated: endpoint ${change.endpointId}, group ${change.groupId} (${cause}); ` +
      `the group's counts are off by ${change.writes === 1 ? 'one row' : `${change.writes} rows`} until the endpoint's recount or npm run backfill:fingerprints`,
  );
}

const defaultLog = (line: string) => process.stderr.write(`${JSON.stringify({ level: 'warn', msg: line, time: new Date().toISOString() })}\n`);

/**
 * Applies a status write's change to the aggregates. Called by the store after the row is written (one place per
 * write path). Resolves true when applied (or nothing to apply), false when a change failed: the row is the truth
 * and is already written, so the caller is not failed for it; the loss is counted and logged (recordLoss) and the
 * rebuild repairs the aggregate.
 */
export function applyGroupTransition(
  database: Database,
  before: StatusRow | null,
  after: StatusRow | null,
  log: (line: string) => void = defaultLog,
): Promise<boolean> {
  return applyGroupTransitions(database, [{ before, after }], log);
}

/**
 * applyGroupTransition for a lot of status writes (writeStatuses): their changes summed per document
 * (mergeGroupChanges) and each document patched once - in parts of at most 10 operations, concurrently - instead
 * of once per row. A document whose patch fails is one loss, counted and logged with the number of row writes it
 * carried; the other documents are applied regardless. Resolves false when any was lost.
 */
export async function applyGroupTransitions(
  database: Database,
  transitions: ReadonlyArray<{ before: StatusRow | null; after: StatusRow | null }>,
  log: (line: string) => void = defaultLog,
): Promise<boolean> {
  const changes = mergeGroupChanges(transitions);
  if (changes.length === 0) return true;
  let container: Container;
  try {
    container = await failureGroupsContainer(database);
  } catch (err) {
    for (const c of changes) recordLoss(c, err, log);
    return false;
  }
  const results = await Promise.all(
    changes.map(async (c) => {
      const parts = await Promise.allSettled(patchParts(c).map((part) => applyChange(container, part)));
      const failed = parts.find((p): p is PromiseRejectedResult => p.status === 'rejected');
      if (failed) recordLoss(c, failed.reason, log);
      return !failed;
    }),
  );
  return results.every(Boolean);
}

// ------------------------------------------------------------------ rebuild (repair) from the rows

interface RebuildRow {
  g: string;
  s: string;
  t: string | null;
  u: string;
  v: string;
  n: string;
}

/**
 * Rebuilds one endpoint's group documents from its failed rows: repairs drift (a delta lost in a crash, rows
 * written around the store). Like recountEndpoint, each document is replaced conditionally on the etag read
 * before counting, so a delta applied meanwhile makes the endpoint count again rather than be lost; documents of
 * groups with no rows left are deleted. Returns the number of groups and rows counted.
 */
export async function rebuildFailureGroups(database: Database, endpointId: string, now = () => new Date()): Promise<{ groups: number; rows: number }> {
  const container = await failureGroupsContainer(database);
  const events = database.container('events');
  for (let attempt = 1; attempt <= 5; attempt++) {
    let existing: Array<{ id: string; _etag: string }>;
    try {
      existing = (
        await container.items
          .query<{ id: string; _etag: string }>(
            { query: 'SELECT c.id, c._etag FROM c WHERE c.endpointId = @ep', parameters: [{ name: '@ep', value: endpointId }] },
            { partitionKey: endpointId },
          )
          .fetchAll()
      ).resources;
    } catch (err) {
      rethrowCosmos(err, 'failure groups rebuild read');
    }
    const etags = new Map(existing.map((d) => [d.id, d._etag]));
    const rows: RebuildRow[] = [];
    try {
      const it = events.items.query<RebuildRow>(
        {
          query:
            'SELECT c.fingerprint AS g, c.status AS s, c.eventTypeId AS t, c.updatedAt AS u, c.eventId AS v, c.sessionId AS n FROM c WHERE c.endpointId = @ep AND ARRAY_CONTAINS(@statuses, c.status) AND IS_STRING(c.fingerprint)',
          parameters: [
            { name: '@ep', value: endpointId },
            { name: '@statuses', value: [...FAILURE_STATUSES] },
          ],
        },
        { partitionKey: [endpointId], maxItemCount: 10_000 },
      );
      while (it.hasMoreResults()) rows.push(...((await it.fetchNext()).resources ?? []));
    } catch (err) {
      rethrowCosmos(err, 'failure groups rebuild count');
    }
    const docs = new Map<string, { doc: FailureGroupDoc | null; newest: RebuildRow; first: string; acc: RebuildRow[] }>();
    for (const r of rows) {
      if (!isFailure(r.s) || typeof r.u !== 'string') continue;
      let d = docs.get(r.g);
      if (!d) docs.set(r.g, (d = { doc: null, newest: r, first: r.u, acc: [] }));
      d.acc.push(r);
      if (r.u > d.newest.u) d.newest = r;
      if (r.u < d.first) d.first = r.u;
    }
    let lost = false;
    const rebuiltAt = now().toISOString();
    await Promise.all(
      [...docs].map(async ([groupId, d]) => {
        // The newest row, read whole: the title (the same function that made the key) and the example's text.
        const resource = (await events.item(statusRowId(d.newest.v, d.newest.n), [endpointId, d.newest.v]).read().catch(() => null))?.resource as
          | StatusRow
          | undefined;
        const sample: StatusRow = resource ?? ({ endpointId, eventId: d.newest.v, sessionId: d.newest.n, status: d.newest.s, eventTypeId: d.newest.t, updatedAt: d.newest.u, errorText: null, errorType: null, deadLetterReason: null, deadLetterErrorDescription: null } as StatusRow);
        const doc = emptyDoc(endpointId, groupId, sample);
        for (const r of d.acc) {
          const s = r.s as FailureStatus;
          doc.counts[s]++;
          const t = r.t ?? '';
          doc.types[s][t] = (doc.types[s][t] ?? 0) + 1;
          const h = hourOf(r.u);
          doc.hours[s][h] = (doc.hours[s][h] ?? 0) + 1;
        }
        doc.firstAt = d.first;
        doc.lastAt = d.newest.u;
        doc.example = { eventId: sample.eventId, sessionId: sample.sessionId, errorText: sample.errorText?.slice(0, EXAMPLE_TEXT_MAX) ?? null, at: d.newest.u };
        doc.rebuiltAt = rebuiltAt;
        const etag = etags.get(groupId);
        try {
          if (etag === undefined) await container.items.create(doc);
          else await container.item(groupId, endpointId).replace(doc, { accessCondition: { type: 'IfMatch', condition: etag } });
        } catch (err) {
          const code = cosmosStatus(err);
          if (code === 409 || code === 412 || code === 404) lost = true;
          else rethrowCosmos(err, 'failure groups rebuild write');
        }
      }),
    );
    await Promise.all(
      [...etags]
        .filter(([groupId]) => !docs.has(groupId))
        .map(async ([groupId, etag]) => {
          try {
            await container.item(groupId, endpointId).delete({ accessCondition: { type: 'IfMatch', condition: etag } });
          } catch (err) {
            const code = cosmosStatus(err);
            if (code === 412) lost = true;
            else if (code !== 404) rethrowCosmos(err, 'failure groups rebuild delete');
          }
        }),
    );
    if (!lost) return { groups: docs.size, rows: rows.length };
  }
  rethrowCosmos(new Error(`failure groups of ${endpointId} kept changing during the rebuild; try again`), 'failure groups rebuild');
}

/**
 * The endpoints that have failed rows or group documents: what a full rebuild covers. One projection of the
 * failed rows (a one-off command's cost, not a page's).
 */
export async function endpointsWithFailures(database: Database): Promise<string[]> {
  const container = await failureGroupsContainer(database);
  const out = new Set<string>();
  try {
    for (const [c, query] of [
      [database.container('events'), 'SELECT c.endpointId FROM c WHERE ARRAY_CONTAINS(@statuses, c.status)'],
      [container, 'SELECT c.endpointId FROM c'],
    ] as const) {
      const it = c.items.query<{ endpointId: string }>({ query, parameters: [{ name: '@statuses', value: [...FAILURE_STATUSES] }] }, { maxItemCount: 10_000 });
      while (it.hasMoreResults()) for (const r of (await it.fetchNext()).resources ?? []) out.add(r.endpointId);
    }
  } catch (err) {
    rethrowCosmos(err, 'failure groups endpoints');
  }
  return [...out].sort();
}

/** Every endpoint's group documents, or one endpoint's (single partition). */
export async function readFailureGroupDocs(database: Database, endpointId?: string): Promise<FailureGroupDoc[]> {
  const container = await failureGroupsContainer(database);
  try {
    const r = await container.items
      .query<FailureGroupDoc>(
        endpointId
          ? { query: 'SELECT * FROM c WHERE c.endpointId = @ep', parameters: [{ name: '@ep', value: endpointId }] }
          : { query: 'SELECT * FROM c' },
        endpointId ? { partitionKey: endpointId } : {},
      )
      .fetchAll();
    return r.resources;
  } catch (err) {
    rethrowCosmos(err, 'failure groups read');
  }
}
