// Failure groups (GET /api/failure-groups): every Failed, DeadLettered and Unsupported row, grouped by the
// fingerprint the store wrote on it (lib/store/fingerprint.ts). Read from the maintained aggregates
// (lib/store/failureGroupAggregates.ts: one small document per endpoint and group, kept by the store's writes), so
// the read costs the same at any number of rows: one query of a few hundred documents at most, no status rows.
// `since` is honoured to the hour (the aggregates count rows per hour of their last update); the spark is built
// from the same hour buckets (docs/failures.md).
import { z } from 'zod';
import { FAILURE_STATUSES, type MessageStore } from '../../lib/store/index.ts';
import {
  hourOf,
  readFailureGroupDocs,
  type FailureGroupDoc,
  type FailureStatus,
} from '../../lib/store/failureGroupAggregates.ts';
import { inScope, type ReadScope } from '../auth/readScope.ts';
import { exactIdFilter } from '../exactIdFilterSchema.ts';

export const failureGroupsQuerySchema = z.object({
  // Exact, by the one id rule (server/exactIdFilters.ts): spaces alone were trimmed into no filter (every endpoint).
  endpointId: exactIdFilter('endpointId'),
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
  /**
   * The start of the window the counts cover: the hour of `since` (null: any time). "Resubmit all" sends it as the
   * selection's `updatedFrom`, so the job acts on the rows the count counted, not on the group's older rows too.
   */
  countedFrom: string | null;
}

/** `since` honoured to the hour: the aggregates count rows per hour of their last update (docs/failures.md). */
const floorHour = (d: Date): Date => new Date(Math.floor(d.getTime() / 3600_000) * 3600_000);

export async function failureGroups(
  store: MessageStore,
  q: FailureGroupsQuery,
  scope: ReadScope = { all: true },
  now = new Date(),
): Promise<FailureGroupsView> {
  const window = sparkWindow(q, now);
  const countedFrom = q.since ? floorHour(new Date(q.since)).toISOString() : null;
  if (q.endpointId && !inScope(scope, q.endpointId)) return { groups: [], spark: window, total: 0, countedFrom };
  if (!scope.all && scope.endpointIds.length === 0) return { groups: [], spark: window, total: 0, countedFrom };
  const docs = (await readFailureGroupDocs(store.database, q.endpointId)).filter((d) => inScope(scope, d.endpointId));
  const statuses: FailureStatus[] = q.status.length > 0 ? q.status : [...FAILURE_STATUSES];
  const sinceHour = countedFrom ? hourOf(countedFrom) : null;
  const from = Date.parse(window.from);
  const span = Math.max(1, Date.parse(window.to) - from);
  interface Acc {
    count: number;
    endpoints: Map<string, number>;
    types: Set<string>;
    firstHour: string;
    lastHour: string;
    first: string | null;
    newest: FailureGroupDoc;
    spark: number[];
  }
  const groups = new Map<string, Acc>();
  let total = 0;
  for (const d of docs) {
    let count = 0;
    let firstHour: string | null = null;
    let lastHour: string | null = null;
    const spark = new Array<number>(SPARK_BUCKETS).fill(0);
    const types = new Set<string>();
    for (const s of statuses) {
      let inStatus = 0;
      for (const [hour, nRaw] of Object.entries(d.hours?.[s] ?? {})) {
        const n = Math.max(0, nRaw);
        if (n === 0 || (sinceHour !== null && hour < sinceHour)) continue;
        inStatus += n;
        if (firstHour === null || hour < firstHour) firstHour = hour;
        if (lastHour === null || hour > lastHour) lastHour = hour;
        const at = Date.parse(`${hour}:00:00.000Z`) - from;
        if (at >= 0) spark[Math.min(SPARK_BUCKETS - 1, Math.floor((at / span) * SPARK_BUCKETS))]! += n;
      }
      count += inStatus;
      if (inStatus > 0) for (const [t, n] of Object.entries(d.types?.[s] ?? {})) if (n > 0 && t !== '') types.add(t);
    }
    if (count === 0 || firstHour === null || lastHour === null) continue;
    total += count;
    let g = groups.get(d.groupId);
    if (!g) {
      g = { count: 0, endpoints: new Map(), types: new Set(), firstHour, lastHour, first: null, newest: d, spark: new Array<number>(SPARK_BUCKETS).fill(0) };
      groups.set(d.groupId, g);
    }
    g.count += count;
    g.endpoints.set(d.endpointId, (g.endpoints.get(d.endpointId) ?? 0) + count);
    for (const t of types) g.types.add(t);
    for (let i = 0; i < SPARK_BUCKETS; i++) g.spark[i]! += spark[i]!;
    // firstAt: the document's first arrival when its hour still has rows in the window, else that hour's start.
    const first = hourOf(d.firstAt) === firstHour ? d.firstAt : `${firstHour}:00:00.000Z`;
    if (g.first === null || first < g.first) g.first = first;
    if (firstHour < g.firstHour) g.firstHour = firstHour;
    if (lastHour > g.lastHour || (lastHour === g.lastHour && d.lastAt > g.newest.lastAt)) {
      g.lastHour = lastHour;
      g.newest = d;
    }
  }
  const top = [...groups.entries()].sort((a, b) => b[1].count - a[1].count || a[0].localeCompare(b[0])).slice(0, MAX_GROUPS);
  return {
    groups: top.map(([groupId, g]): FailureGroup => {
      const d = g.newest;
      // lastAt: the newest arrival when its hour still has rows in the window, else the end of the newest such hour.
      const lastAt = hourOf(d.lastAt) === g.lastHour ? d.lastAt : new Date(Date.parse(`${g.lastHour}:00:00.000Z`) + 3600_000 - 1).toISOString();
      return {
        groupId,
        errorType: d.errorType,
        title: d.title,
        example: d.example
          ? { endpointId: d.endpointId, eventId: d.example.eventId, sessionId: d.example.sessionId, errorText: d.example.errorText }
          : null,
        count: g.count,
        endpoints: [...g.endpoints.entries()].map(([endpointId, count]) => ({ endpointId, count })).sort((a, b) => b.count - a.count || a.endpointId.localeCompare(b.endpointId)),
        eventTypes: [...g.types].sort(),
        firstAt: g.first ?? d.firstAt,
        lastAt,
        spark: g.spark,
      };
    }),
    spark: window,
    total,
    countedFrom,
  };
}

/** The spark's window: from the hour of `since` (default 24 hours back) to now. */
function sparkWindow(q: FailureGroupsQuery, now: Date): FailureGroupsView['spark'] {
  // Whole hours, the current one last: with the default window each bucket is one hour of arrivals.
  const from = floorHour(q.since ? new Date(q.since) : new Date(now.getTime() - 23 * 3600_000));
  const to = new Date(floorHour(now).getTime() + 3600_000);
  return { from: from.toISOString(), to: to.toISOString(), buckets: SPARK_BUCKETS };
}
