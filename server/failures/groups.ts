// Failure groups (GET /api/failure-groups): every Failed, DeadLettered and Unsupported row, grouped by the
// fingerprint the store wrote on it (lib/store/fingerprint.ts). One query reads a small projection of the failed
// rows - four short fields each, no error texts or payloads - and the grouping is done here; the title and example
// of each group come from a point read of its newest row. The embedded Cosmos server has no GROUP BY; with Cosmos
// DB the same projection is served from the index on `status` and `fingerprint` (docs/failures.md).
import { z } from 'zod';
import {
  CONTAINERS,
  FAILURE_STATUSES,
  fingerprintOf,
  rethrowCosmos,
  type MessageStore,
} from '../../lib/store/index.ts';
import { inScope, type ReadScope } from '../auth/readScope.ts';

export const failureGroupsQuerySchema = z.object({
  endpointId: z.string().trim().max(50).optional().transform((v) => v || undefined),
  status: z
    .string()
    .optional()
    .transform((s) => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : []))
    .pipe(z.array(z.enum(FAILURE_STATUSES)).max(3)),
  since: z.iso.datetime({ offset: true }).optional().or(z.literal('').transform(() => undefined)),
});
export type FailureGroupsQuery = { endpointId?: string | undefined; status: Array<(typeof FAILURE_STATUSES)[number]>; since?: string | undefined };

export const SPARK_BUCKETS = 24;
/** Groups returned at most (sorted by count): a page of causes, not of events. */
export const MAX_GROUPS = 200;

export interface FailureGroup {
  groupId: string;
  errorType: string;
  title: string;
  /** The newest row of the group: where to look first. */
  example: { endpointId: string; eventId: string; sessionId: string; errorText: string | null } | null;
  count: number;
  endpoints: Array<{ endpointId: string; count: number }>;
  eventTypes: string[];
  firstAt: string;
  lastAt: string;
  /** Arrivals (updatedAt) per bucket of the spark window, oldest first. */
  spark: number[];
}

export interface FailureGroupsView {
  groups: FailureGroup[];
  /** The spark window: SPARK_BUCKETS equal buckets from `from` to `to`. */
  spark: { from: string; to: string; buckets: number };
  total: number;
}

interface Projected {
  f: string;
  e: string;
  v: string;
  s: string;
  t: string | null;
  u: string;
}

/** The failed rows' projection, matching the filter, in pages of 10,000 (one cross-partition query). */
async function projectedRows(store: MessageStore, q: FailureGroupsQuery, scope: ReadScope): Promise<Projected[]> {
  const where = ['ARRAY_CONTAINS(@statuses, c.status)', 'IS_STRING(c.fingerprint)'];
  const parameters: Array<{ name: string; value: string | string[] }> = [
    { name: '@statuses', value: q.status.length > 0 ? q.status : [...FAILURE_STATUSES] },
  ];
  if (q.endpointId) {
    where.unshift('c.endpointId = @ep');
    parameters.push({ name: '@ep', value: q.endpointId });
  } else if (!scope.all) {
    where.push('ARRAY_CONTAINS(@eps, c.endpointId)');
    parameters.push({ name: '@eps', value: scope.endpointIds });
  }
  if (q.since) {
    where.push('c.updatedAt >= @since');
    parameters.push({ name: '@since', value: new Date(q.since).toISOString() });
  }
  const iterator = store.database.container(CONTAINERS.events).items.query<Projected>(
    {
      query: `SELECT c.fingerprint AS f, c.endpointId AS e, c.eventId AS v, c.sessionId AS s, c.eventTypeId AS t, c.updatedAt AS u FROM c WHERE ${where.join(' AND ')}`,
      parameters,
    },
    { maxItemCount: 10_000, ...(q.endpointId ? { partitionKey: [q.endpointId] } : {}) },
  );
  const out: Projected[] = [];
  try {
    while (iterator.hasMoreResults()) {
      const page = await iterator.fetchNext();
      for (const r of page.resources ?? []) if (typeof r.f === 'string' && typeof r.u === 'string') out.push(r);
    }
  } catch (err) {
    rethrowCosmos(err, 'failure groups');
  }
  return out;
}

export async function failureGroups(
  store: MessageStore,
  q: FailureGroupsQuery,
  scope: ReadScope = { all: true },
  now = new Date(),
): Promise<FailureGroupsView> {
  if (q.endpointId && !inScope(scope, q.endpointId)) return { groups: [], spark: sparkWindow(q, now), total: 0 };
  if (!scope.all && scope.endpointIds.length === 0) return { groups: [], spark: sparkWindow(q, now), total: 0 };
  const rows = await projectedRows(store, q, scope);
  const window = sparkWindow(q, now);
  const from = Date.parse(window.from);
  const span = Math.max(1, Date.parse(window.to) - from);
  interface Acc {
    count: number;
    endpoints: Map<string, number>;
    types: Set<string>;
    first: string;
    last: Projected;
    spark: number[];
  }
  const groups = new Map<string, Acc>();
  for (const r of rows) {
    let g = groups.get(r.f);
    if (!g) {
      g = { count: 0, endpoints: new Map(), types: new Set(), first: r.u, last: r, spark: new Array<number>(SPARK_BUCKETS).fill(0) };
      groups.set(r.f, g);
    }
    g.count++;
    g.endpoints.set(r.e, (g.endpoints.get(r.e) ?? 0) + 1);
    if (r.t) g.types.add(r.t);
    if (r.u < g.first) g.first = r.u;
    if (r.u > g.last.u) g.last = r;
    const at = Date.parse(r.u) - from;
    if (at >= 0) g.spark[Math.min(SPARK_BUCKETS - 1, Math.floor((at / span) * SPARK_BUCKETS))]!++;
  }
  const top = [...groups.entries()].sort((a, b) => b[1].count - a[1].count || a[0].localeCompare(b[0])).slice(0, MAX_GROUPS);
  // The title is derived from an example's text, so it is the same function that made the key (never stale).
  const examples = await Promise.all(
    top.map(([, g]) => store.getStatusRow(g.last.e, g.last.v, g.last.s).catch(() => null)),
  );
  return {
    groups: top.map(([groupId, g], i): FailureGroup => {
      const row = examples[i];
      const fp = row ? fingerprintOf(row) : null;
      return {
        groupId,
        errorType: fp?.errorType ?? row?.errorType ?? 'Error',
        title: fp?.title ?? row?.errorText ?? '(example no longer failed)',
        example: row ? { endpointId: row.endpointId, eventId: row.eventId, sessionId: row.sessionId, errorText: row.errorText?.slice(0, 1000) ?? null } : null,
        count: g.count,
        endpoints: [...g.endpoints.entries()].map(([endpointId, count]) => ({ endpointId, count })).sort((a, b) => b.count - a.count),
        eventTypes: [...g.types].sort(),
        firstAt: g.first,
        lastAt: g.last.u,
        spark: g.spark,
      };
    }),
    spark: window,
    total: rows.length,
  };
}

/** The spark's window: from `since` (default 24 hours back) to now. */
function sparkWindow(q: FailureGroupsQuery, now: Date): FailureGroupsView['spark'] {
  const from = q.since ? new Date(q.since) : new Date(now.getTime() - 24 * 3600_000);
  return { from: from.toISOString(), to: now.toISOString(), buckets: SPARK_BUCKETS };
}
