// What each rule type looks at, and whether it is a problem now. Every source is behind a small interface
// (AlertSources), so the evaluator's state machine is tested apart from Cosmos and Service Bus, and the console
// wires the real ones (sources.ts). A rule whose source is missing evaluates to 'unavailable' with the reason,
// which the Alerts page shows; it never fires.
import type { RuleDoc } from './model.ts';

export interface FailureGroup {
  fingerprint: string;
  endpointId: string;
  count: number;
  /** A short description (error type and text, clipped), shown in the notice. */
  label: string;
}

/**
 * Failure groups (rows grouped by a failure fingerprint). Built by another part of the console; until it is
 * there, `unavailableFailureGroups` says so and the "new failure group" rule cannot be evaluated.
 */
export interface FailureGroupSource {
  available: boolean;
  /** Why not, when unavailable. */
  reason?: string;
  list(endpointId: string | null): Promise<FailureGroup[]>;
}

export const unavailableFailureGroups: FailureGroupSource = {
  available: false,
  reason: 'failure groups are not available in this build (the failure fingerprint on status rows is not there yet)',
  list: async () => [],
};

export interface AlertSources {
  /** Failed + dead-lettered outcomes of the endpoint in the last complete minute and in the current one. */
  failuresPerMinute(endpointId: string, now: Date): Promise<{ previous: number; current: number }>;
  /** Dead letters now: summed over every topic, or of the endpoint's topic. */
  deadLetters(endpointId: string | null): Promise<number>;
  /** Sessions blocked by a Failed row last changed before `before` (oldest first, at most 50). */
  blockedSessions(before: Date, endpointId: string | null): Promise<Array<{ endpointId: string; eventId: string; sessionId: string; since: string }>>;
  /** Pending handoffs whose expected-by is before `now` (at most 50). */
  overdueHandoffs(now: Date, endpointId: string | null): Promise<Array<{ endpointId: string; eventId: string; expectedBy: string }>>;
  /**
   * Heartbeat state: whether probes are on, and each included endpoint's last answer and whether it is busy (its
   * probe is queued behind a backlog while it keeps answering other messages; Admin → Health's rule).
   */
  /** `unknown`: the endpoint's last answer could not be read while its probe is overdue (busy or dead: not known). */
  heartbeats(): Promise<{ enabled: boolean; endpoints: Array<{ endpointId: string; included: boolean; lastSeenAt: string | null; busy: boolean; unknown?: boolean }> }>;
  /** When the Resolver last answered its liveness probe. */
  resolverLastSeen(): Promise<string | null>;
  failureGroups: FailureGroupSource;
}

export type Evaluation =
  | { status: 'ok'; value: number; memory?: Record<string, unknown> }
  | {
      status: 'firing';
      value: number;
      summary: string;
      link: string;
      /**
       * The endpoint whose records (an event id, a session id, a failure group's error text) the summary and link
       * name; null when they name only counts and endpoint names, which every role sees in the overviews. The
       * alert reads show the text only to a caller who may read this endpoint (server/alerts/readScope.ts).
       */
      firedFor: string | null;
      memory?: Record<string, unknown>;
    }
  | { status: 'unavailable'; reason: string };

const seg = encodeURIComponent;
const endpointLink = (ep: string, query = '') => `/endpoints/${seg(ep)}${query ? `?${query}` : ''}`;
const eventLink = (ep: string, ev: string) => `/endpoints/${seg(ep)}/events/${seg(ev)}`;
const ago = (ms: number) => (ms >= 3_600_000 ? `${Math.round(ms / 360_000) / 10} h` : ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`);

export async function evaluateRule(rule: RuleDoc, src: AlertSources, now: Date, memory: Record<string, unknown> | undefined): Promise<Evaluation> {
  switch (rule.type) {
    case 'failureRate': {
      const ep = rule.endpointId!;
      const { previous, current } = await src.failuresPerMinute(ep, now);
      const value = Math.max(previous, current);
      if (value <= (rule.threshold ?? 0)) return { status: 'ok', value };
      const from = new Date(Math.floor(now.getTime() / 60_000) * 60_000 - 60_000).toISOString();
      return {
        status: 'firing',
        value,
        summary: `${ep}: ${value} failures in a minute (threshold ${rule.threshold})`,
        link: endpointLink(ep, `status=Failed,DeadLettered&from=${seg(from)}`),
        firedFor: ep,
      };
    }
    case 'deadLetterBacklog': {
      const value = await src.deadLetters(rule.endpointId);
      if (value <= (rule.threshold ?? 0)) return { status: 'ok', value };
      return {
        status: 'firing',
        value,
        summary: `${value} dead letters ${rule.endpointId ? `on ${rule.endpointId}'s topic` : 'in the namespace'} (threshold ${rule.threshold})`,
        link: '/topology/subscriptions',
        firedFor: rule.endpointId,
      };
    }
    case 'blockedSession': {
      const t = (rule.durationSeconds ?? 0) * 1000;
      const blocked = await src.blockedSessions(new Date(now.getTime() - t), rule.endpointId);
      if (blocked.length === 0) return { status: 'ok', value: 0 };
      const oldest = blocked[0]!;
      return {
        status: 'firing',
        value: blocked.length,
        summary: `${blocked.length} session(s) blocked longer than ${ago(t)}; oldest: ${oldest.endpointId} session ${oldest.sessionId} since ${oldest.since}`,
        link: eventLink(oldest.endpointId, oldest.eventId),
        firedFor: oldest.endpointId,
      };
    }
    case 'pendingHandoff': {
      const overdue = await src.overdueHandoffs(now, rule.endpointId);
      if (overdue.length === 0) return { status: 'ok', value: 0 };
      const first = overdue[0]!;
      return {
        status: 'firing',
        value: overdue.length,
        summary: `${overdue.length} pending handoff(s) past their expected-by; first: ${first.endpointId} event ${first.eventId} expected by ${first.expectedBy}`,
        link: overdue.length === 1 ? eventLink(first.endpointId, first.eventId) : endpointLink(first.endpointId, 'status=Handoff'),
        firedFor: first.endpointId,
      };
    }
    case 'heartbeatMissing': {
      const hb = await src.heartbeats();
      if (!hb.enabled) return { status: 'unavailable', reason: 'endpoint heartbeats are off (Admin → Health)' };
      const t = (rule.durationSeconds ?? 0) * 1000;
      // A busy endpoint's probe is only queued behind its backlog: it answered other messages within the timeout,
      // so its heartbeat is late, not missing. Once it falls silent for a timeout it is no longer busy and counts.
      const silent = hb.endpoints.filter(
        (e) =>
          e.included &&
          !e.busy &&
          (rule.endpointId === null || e.endpointId === rule.endpointId) &&
          (e.lastSeenAt === null || now.getTime() - Date.parse(e.lastSeenAt) > t),
      );
      // Unknown (its last answer unreadable, a throttled store): neither missing nor fine. With nothing known to be
      // missing the rule cannot say, and 'unavailable' keeps a firing alert firing rather than sending "recovered"
      // for an endpoint that may still be dead.
      const missing = silent.filter((e) => !e.unknown);
      if (missing.length === 0 && silent.length > 0)
        return { status: 'unavailable', reason: `last answer unreadable for ${silent.map((e) => e.endpointId).join(', ')}` };
      if (missing.length === 0) return { status: 'ok', value: 0 };
      return {
        status: 'firing',
        value: missing.length,
        summary: `no heartbeat for more than ${ago(t)} from ${missing.map((e) => e.endpointId).join(', ')}`,
        link: '/admin/health',
        // Names and heartbeat states only: Admin → Health shows them to every role.
        firedFor: rule.endpointId,
      };
    }
    case 'resolverLiveness': {
      const t = (rule.durationSeconds ?? 120) * 1000;
      const seen = await src.resolverLastSeen();
      const age = seen === null ? Number.POSITIVE_INFINITY : now.getTime() - Date.parse(seen);
      if (age <= t) return { status: 'ok', value: Math.round(age / 1000) };
      return {
        status: 'firing',
        value: Number.isFinite(age) ? Math.round(age / 1000) : -1,
        summary: seen === null ? 'the Resolver has never answered its liveness probe' : `the Resolver last answered its liveness probe ${ago(age)} ago (limit ${ago(t)})`,
        link: '/admin/health',
        firedFor: null,
      };
    }
    case 'newFailureGroup': {
      if (!src.failureGroups.available) return { status: 'unavailable', reason: src.failureGroups.reason ?? 'failure groups are not available' };
      const groups = await src.failureGroups.list(rule.endpointId);
      const known = new Set(Array.isArray(memory?.known) ? (memory.known as string[]) : []);
      const current = groups.map((g) => g.fingerprint);
      // The first evaluation learns what exists: a group is new when it appears after the rule was created.
      if (memory?.known === undefined) return { status: 'ok', value: 0, memory: { known: current } };
      const fresh = groups.filter((g) => !known.has(g.fingerprint));
      const nextMemory = { known: [...new Set([...known, ...current])].slice(-5000) };
      if (fresh.length === 0) return { status: 'ok', value: 0, memory: nextMemory };
      const g = fresh[0]!;
      return {
        status: 'firing',
        value: fresh.length,
        summary: `new failure group on ${g.endpointId}: ${g.label} (${g.count} event${g.count === 1 ? '' : 's'})${fresh.length > 1 ? `, and ${fresh.length - 1} more` : ''}`,
        link: endpointLink(g.endpointId, 'status=Failed'),
        firedFor: g.endpointId,
        memory: nextMemory,
      };
    }
  }
}
