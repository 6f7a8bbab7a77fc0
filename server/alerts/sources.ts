// The alert rules' real sources: the stored time series (failures per minute), the Service Bus admin plane
// (dead-letter counts), the status rows (blocked sessions, overdue handoffs), the heartbeat overview (endpoint
// heartbeats, the Resolver's liveness). Queries are bounded (TOP 50) and cross-partition only where the rule
// spans endpoints.
import type { ServiceBusAdministrationClient } from '@azure/service-bus';
import type { Database } from '@azure/cosmos';
import { CONTAINERS, type TimeSeriesStore } from '../../lib/store/index.ts';
import { readBacklog } from '../history/backlog.ts';
import { unavailableFailureGroups, type AlertSources, type FailureGroupSource } from './conditions.ts';

export interface SourceDeps {
  database: Database;
  series: TimeSeriesStore;
  admin: ServiceBusAdministrationClient;
  heartbeats(): Promise<{ enabled: boolean; endpoints: Array<{ endpointId: string; included: boolean; lastSeenAt: string | null; busy: boolean; unknown?: boolean }>; resolverLastSeen: string | null }>;
  failureGroups?: FailureGroupSource;
}

export function alertSources(d: SourceDeps): AlertSources {
  const events = () => d.database.container(CONTAINERS.events);
  return {
    async failuresPerMinute(endpointId, now) {
      const minute = Math.floor(now.getTime() / 60_000) * 60_000;
      const series = await d.series.query({ from: minute - 60_000, to: minute + 60_000, bucketMs: 60_000, endpointId });
      const sum = (i: number) =>
        ['failed', 'deadLettered'].reduce((a, name) => a + (series.find((s) => s.name === name)?.points[i]?.[1] ?? 0), 0);
      return { previous: sum(0), current: sum(1) };
    },
    async deadLetters(endpointId) {
      const topics = await readBacklog(d.admin);
      return topics.filter((t) => endpointId === null || t.topic.toLowerCase() === endpointId.toLowerCase()).reduce((a, t) => a + t.deadLetter, 0);
    },
    async blockedSessions(before, endpointId) {
      const r = await events()
        .items.query<{ endpointId: string; eventId: string; sessionId: string; updatedAt: string }>({
          query: `SELECT TOP 50 c.endpointId, c.eventId, c.sessionId, c.updatedAt FROM c WHERE c.status = 'Failed' AND c.sessionId != '' AND c.updatedAt < @before${endpointId ? ' AND c.endpointId = @ep' : ''}`,
          parameters: [{ name: '@before', value: before.toISOString() }, ...(endpointId ? [{ name: '@ep', value: endpointId }] : [])],
        })
        .fetchAll();
      return r.resources.map((x) => ({ endpointId: x.endpointId, eventId: x.eventId, sessionId: x.sessionId, since: x.updatedAt })).sort((a, b) => a.since.localeCompare(b.since));
    },
    async overdueHandoffs(now, endpointId) {
      const r = await events()
        .items.query<{ endpointId: string; eventId: string; expectedBy: string }>({
          query: `SELECT TOP 50 c.endpointId, c.eventId, c.expectedBy FROM c WHERE c.status = 'Pending' AND c.subStatus = 'Handoff' AND IS_STRING(c.expectedBy) AND c.expectedBy < @now${endpointId ? ' AND c.endpointId = @ep' : ''}`,
          parameters: [{ name: '@now', value: now.toISOString() }, ...(endpointId ? [{ name: '@ep', value: endpointId }] : [])],
        })
        .fetchAll();
      return r.resources.sort((a, b) => a.expectedBy.localeCompare(b.expectedBy));
    },
    async heartbeats() {
      const h = await d.heartbeats();
      return { enabled: h.enabled, endpoints: h.endpoints };
    },
    async resolverLastSeen() {
      return (await d.heartbeats()).resolverLastSeen;
    },
    failureGroups: d.failureGroups ?? unavailableFailureGroups,
  };
}
