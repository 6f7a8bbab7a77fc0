// One TanStack Query factory per resource the console reads: its key, how it is fetched and how often it is
// refreshed, decided once. Pages call `useQuery(endpointsQuery())`; mutations invalidate with `queryKeys.*`; the
// server components (app/**/page.tsx through components/prefetch.ts) put the same keys into the first HTML, so
// the browser starts from the server's answer instead of a spinner. Not a client module: the server imports the
// keys too (the query functions only run in the browser).
import { infiniteQueryOptions, queryOptions, type QueryClient } from '@tanstack/react-query';
import { api, ApiError } from './api.ts';
import { accessApi } from './audit/accessApi.ts';
import { alertsApi } from './admin/alertsApi.ts';
import { jobsApi, type OperationSummary } from './operations/jobsApi.ts';
import { outcomePhase, outcomePollMs } from './operations/outcomePolling.ts';
import { opsApi } from './topology/opsApi.ts';
import { fetchMetrics, type MetricsArgs } from './charts/metricsApi.ts';
import { readBlockerStandings, readSessionParked, sessionListable } from './sessionParkedRead.ts';
import type { FailuresSearch } from './urlState.ts';

/** Key prefixes, for invalidation after a change (every key of a resource starts with its prefix). */
export const queryKeys = {
  endpoints: ['endpoints'] as const,
  events: (endpointId: string) => ['events', endpointId] as const,
  event: (endpointId: string, eventId: string) => ['event', endpointId, eventId] as const,
  /** Every event list, and every event's details, of one endpoint or (no id) of all. */
  allEvents: (endpointId?: string) => (endpointId === undefined ? (['events'] as const) : (['events', endpointId] as const)),
  allEventDetails: (endpointId?: string) => (endpointId === undefined ? (['event'] as const) : (['event', endpointId] as const)),
  topology: ['topology'] as const,
  deadLetters: (topic: string, subscription: string) => ['deadletters', topic, subscription] as const,
  health: ['health'] as const,
  alertRules: ['alert-rules'] as const,
  alertHistory: ['alert-history'] as const,
  audit: ['audit'] as const,
  metrics: ['metrics'] as const,
  operation: (operationId: string) => ['operation', operationId] as const,
  eventTypes: ['catalog', 'event-types'] as const,
  grants: ['grants'] as const,
  me: ['me'] as const,
  operations: ['operations'] as const,
  failureGroups: ['failure-groups'] as const,
  reconcile: ['reconcile'] as const,
};

/** The endpoints overview (counts, heartbeat): every page that shows counts reads this one. */
export const endpointsQuery = () =>
  queryOptions({ queryKey: queryKeys.endpoints, queryFn: api.endpoints, refetchInterval: 5000, refetchIntervalInBackground: false });

/**
 * One endpoint's catalog facts and counts, for the Endpoint and Event pages: a point read where the overview costs
 * every endpoint's heartbeat and oldest-failure queries. Under the overview's key prefix, so what invalidates the
 * overview (an action, a job) refreshes it too.
 */
export const endpointQuery = (endpointId: string) =>
  queryOptions({ queryKey: [...queryKeys.endpoints, endpointId] as const, queryFn: () => api.endpoint(endpointId), refetchInterval: 5000, refetchIntervalInBackground: false });

/** An endpoint's event list for one filter (a canonical query string, see eventListSearch in urlState.ts). */
export const eventsQuery = (endpointId: string, queryString: string) =>
  infiniteQueryOptions({
    queryKey: [...queryKeys.events(endpointId), queryString] as const,
    queryFn: ({ pageParam }) => {
      const sp = new URLSearchParams(queryString);
      if (pageParam) sp.set('continuation', pageParam);
      return api.events(endpointId, sp);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.continuation ?? undefined,
    // Only the first page refreshes: refetching every loaded page would repeat the whole scroll.
    refetchInterval: (query) => ((query.state.data?.pages.length ?? 0) <= 1 ? 10_000 : false),
  });

/**
 * A session's parked (Deferred) rows, for the event page's command dialogs (components/SessionFate.tsx): the first
 * 200 and whether more are parked (components/sessionParkedRead.ts readSessionParked: one list read, a second of one row
 * when the first page comes full with a continuation; at most 4 when Cosmos returns short pages with continuations). Read once per opening - not kept (gcTime 0), not polled, not
 * refetched on focus - and only for a session the list route can be asked for exactly (sessionListable).
 */
export const sessionParkedQuery = (endpointId: string, sessionId: string) =>
  queryOptions({
    queryKey: ['session-parked', endpointId, sessionId] as const,
    queryFn: () =>
      readSessionParked((pageSize, continuation) =>
        api.events(
          endpointId,
          new URLSearchParams({ status: 'Deferred', sessionId, pageSize: String(pageSize), ...(continuation ? { continuation } : {}) }),
        ),
      ),
    enabled: sessionListable(sessionId),
    staleTime: 0,
    gcTime: 0,
    retry: 0,
    refetchOnWindowFocus: false,
  });

/**
 * Whether the events a session's parked rows name as their blocker still hold it (the event page's dialogs, when
 * parked rows name another event than the dialog's: components/SessionFate.tsx). One small list read per blocker,
 * the first few, once per opening, never polled; `blockers` empty: no read.
 */
export const sessionBlockersQuery = (endpointId: string, sessionId: string, blockers: readonly string[]) =>
  queryOptions({
    queryKey: ['session-blockers', endpointId, sessionId, blockers] as const,
    queryFn: () =>
      readBlockerStandings(
        (q) => api.events(endpointId, new URLSearchParams({ eventId: q.eventId, sessionId: q.sessionId, pageSize: String(q.pageSize) })),
        sessionId,
        blockers,
      ),
    enabled: blockers.length > 0 && sessionListable(sessionId),
    staleTime: 0,
    gcTime: 0,
    retry: 0,
    refetchOnWindowFocus: false,
  });

/** One event's details; `followUntil` (epoch ms) follows it closely after an action until the outcome is in. */
export const eventQuery = (endpointId: string, eventId: string, followUntil = 0) =>
  queryOptions({
    queryKey: queryKeys.event(endpointId, eventId),
    queryFn: () => api.event(endpointId, eventId),
    refetchInterval: () => (Date.now() < followUntil ? 1000 : 10_000),
  });

export const flowQuery = (period: number, eventTypeId: string) =>
  queryOptions({ queryKey: ['flow', period, eventTypeId] as const, queryFn: () => api.flow(period, eventTypeId), refetchInterval: 5000 });

/** The event types the flow has seen (for the filter's choices): slow to change. */
export const flowTypesQuery = () => queryOptions({ queryKey: ['flow-types'] as const, queryFn: () => api.flow(5, ''), staleTime: 300_000 });

export const searchQuery = (q: string) => queryOptions({ queryKey: ['search', q] as const, queryFn: () => api.search(q), enabled: q !== '' });

export const topologyQuery = () => queryOptions({ queryKey: queryKeys.topology, queryFn: opsApi.topology, refetchInterval: 10_000 });

export const healthQuery = () => queryOptions({ queryKey: queryKeys.health, queryFn: opsApi.health, refetchInterval: 5000 });

export const alertRulesQuery = () => queryOptions({ queryKey: queryKeys.alertRules, queryFn: alertsApi.rules, refetchInterval: 10_000 });

/** The alert history, newest first: the latest `limit` alerts (the page's "Show more" raises it). */
export const alertHistoryQuery = (limit: number) =>
  queryOptions({
    queryKey: [...queryKeys.alertHistory, limit] as const,
    queryFn: () => alertsApi.history(limit),
    refetchInterval: 15_000,
    // "Show more" keeps the rows on screen while the longer list loads.
    placeholderData: (prev) => prev,
  });

/** Dead letters per page (the server component prefetches the same page). */
export const DEAD_LETTER_PAGE_SIZE = 25;

/** One page of a subscription's dead letters: `from` is the page's first sequence number ('' the start). */
export const deadLettersQuery = (topic: string, subscription: string, reason: string, from: string, opts: { paused?: boolean } = {}) =>
  queryOptions({
    queryKey: [...queryKeys.deadLetters(topic, subscription), reason, from] as const,
    queryFn: () => opsApi.deadLetters(topic, subscription, { from: from || undefined, reason: reason || undefined, pageSize: DEAD_LETTER_PAGE_SIZE }),
    // Not while a replay runs: the list changes under it; it is read again when the replay ends.
    refetchInterval: opts.paused ? false : 15_000,
  });

/** A replay's progress: every second until it is no longer running. Disabled without an operation. */
export const replayOperationQuery = (operationId: string | null) =>
  queryOptions({
    queryKey: queryKeys.operation(operationId ?? ''),
    queryFn: () => opsApi.operation(operationId!),
    enabled: operationId !== null,
    // An unknown operation stays unknown: the page is told at once (and stops polling) rather than after a retry.
    retry: (failures, error) => !(error instanceof ApiError && error.status === 404) && failures < 1,
    refetchInterval: (query) => (query.state.data && query.state.data.state !== 'running' ? false : 1000),
  });

/** The audit log for one filter (a canonical query string, see auditSearch in urlState.ts), page by page. */
export const auditQuery = (queryString: string) =>
  infiniteQueryOptions({
    queryKey: [...queryKeys.audit, queryString] as const,
    initialPageParam: '',
    queryFn: ({ pageParam }) => {
      const sp = new URLSearchParams(queryString);
      if (pageParam) sp.set('continuation', pageParam);
      return accessApi.audit(sp);
    },
    getNextPageParam: (last) => last.continuation ?? undefined,
  });

/** The metrics time series over a range (GET /api/metrics); a preset range slides with time, a custom one is fixed. */
export const metricsQuery = (args: MetricsArgs & { enabled?: boolean }) => {
  const { range, endpointId, eventTypeId, bucket } = args;
  return queryOptions({
    queryKey: [...queryKeys.metrics, range.key, range.from, range.to, endpointId, eventTypeId, bucket] as const,
    queryFn: () => fetchMetrics(args),
    refetchInterval: range.key === 'custom' ? false : 30_000,
    enabled: args.enabled ?? true,
    placeholderData: (prev) => prev,
  });
};

/** The catalog's event types (for the resubmit editor's schema check): they change only with a deployment. */
export const eventTypesQuery = () => queryOptions({ queryKey: queryKeys.eventTypes, queryFn: api.eventTypes, staleTime: Infinity });

export const grantsQuery = () => queryOptions({ queryKey: queryKeys.grants, queryFn: accessApi.grants });

/** The caller's identity and permissions (a minute: the server decides every call anyway). */
export const meQuery = () => queryOptions({ queryKey: queryKeys.me, queryFn: accessApi.me, staleTime: 60_000 });

/** The bulk jobs: every second while the drawer is open, else every 10 s. */
export const operationsQuery = (open: boolean) =>
  queryOptions({ queryKey: queryKeys.operations, queryFn: jobsApi.list, refetchInterval: open ? 1000 : 10_000, retry: 0 });

/**
 * What became of a bulk job's events (the drawer's "now:" line): read again every 5 s while the job is going or its
 * events are in progress (they are handled after the job has sent their commands), then no more (outcomePolling.ts).
 */
export const operationOutcomeQuery = (operationId: string, op: Pick<OperationSummary, 'state' | 'finishedAt'>) =>
  queryOptions({
    queryKey: [...queryKeys.operation(operationId), 'outcome', outcomePhase(op.state)] as const,
    queryFn: () => jobsApi.outcome(operationId),
    // The going phase's last answer stays on screen while the ended phase's first read is on its way.
    placeholderData: (previous) => previous,
    refetchInterval: (query) => outcomePollMs(op, query.state.data),
    retry: 0,
  });

/**
 * Failure groups as the Failures page's URL state asks: optionally only those seen in the last `since` hours (the
 * window moves with each refresh), optionally of one status alone.
 */
export const failureGroupsQuery = ({ since: sinceHours, status }: FailuresSearch) =>
  queryOptions({
    queryKey: [...queryKeys.failureGroups, sinceHours, status] as const,
    queryFn: () =>
      jobsApi.groups(
        new URLSearchParams({
          ...(sinceHours ? { since: new Date(Date.now() - Number(sinceHours) * 3600_000).toISOString() } : {}),
          ...(status ? { status } : {}),
        }),
      ),
    refetchInterval: 15_000,
    retry: 0,
  });

/**
 * Reconcile's two reads, apart: the row findings (store reads, quick) and the broker's session scan (slow on a loaded
 * broker, bounded by its time budget), so the rows show as soon as they come. Both under queryKeys.reconcile: one
 * invalidation reads both again.
 */
export const reconcileRowsQuery = () =>
  queryOptions({ queryKey: [...queryKeys.reconcile, 'rows'] as const, queryFn: opsApi.reconcileRows, refetchOnWindowFocus: false });
export const reconcileSessionsQuery = () =>
  queryOptions({ queryKey: [...queryKeys.reconcile, 'sessions'] as const, queryFn: opsApi.reconcileSessions, refetchOnWindowFocus: false });

/**
 * A bulk job moved (processed more events, or ended): what it changes is read again now instead of at each query's
 * next refresh (failure groups wait 15 s): the failure groups, the endpoints' counts, and the event lists and
 * event details of the job's endpoints (all of them when it does not say which).
 */
export function invalidateAfterJob(qc: QueryClient, endpoints: readonly string[]): Promise<unknown> {
  const scopes = endpoints.length > 0 ? endpoints : [undefined];
  return Promise.all([
    qc.invalidateQueries({ queryKey: queryKeys.failureGroups }),
    qc.invalidateQueries({ queryKey: endpointsQuery().queryKey }),
    ...scopes.flatMap((e) => [qc.invalidateQueries({ queryKey: queryKeys.allEvents(e) }), qc.invalidateQueries({ queryKey: queryKeys.allEventDetails(e) })]),
  ]);
}
