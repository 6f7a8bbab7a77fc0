// The browser side of the operations API (Topology, Operations, Admin): typed fetch helpers and the shapes the
// pages read. Errors are api.ts's ApiError, carrying the server's `{ error, detail }` so a page can show the
// reason. The shapes are the server's own read models (type-only imports), so they cannot drift.
import type { ReplayOperation as ServerReplayOperation, ReplayPreview, ReplaySelection as ServerReplaySelection, UncertainEvidence } from '../../server/subscriptions/replay.ts';
import type { UncertainDecision } from '../../server/subscriptions/replayJournal.ts';
import type { DeadLetterTotal, DeadLetterWithReplay } from '../../server/subscriptions/routes.ts';
import type { TopicView } from '../../server/subscriptions/overview.ts';
import type { reconcileApply, reconcilePreview, reconcileRowsPreview, reconcileSessionsPreview } from '../../server/reconcile/routes.ts';
import type { RepairTarget } from '../../server/reconcile/stuck.ts';
import type { DrainingTarget } from '../../server/reconcile/draining.ts';
import type { HealthOverview, VersionedHeartbeatSettings } from '../../server/heartbeat/scheduler.ts';
import { callApi } from '../api.ts';

export type { SubscriptionView, TopicView } from '../../server/subscriptions/overview.ts';

/** A dead letter with what the replay journal knows of it (the server's read model). */
export type DeadLetter = DeadLetterWithReplay;

export type ReplaySelection = Pick<ServerReplaySelection, 'sequenceNumbers' | 'all' | 'reason' | 'uncertain' | 'includeWarned'>;

export type { ReplayPreview, UncertainEvidence, UncertainDecision };

export type ReplayOperation = ServerReplayOperation & { interrupted: boolean };

export type { StaleRow } from '../../server/reconcile/reconcile.ts';
export type { DrainingSession, DrainingTarget } from '../../server/reconcile/draining.ts';
/** What the preview answers: the server's own result type (rows, stuck rows, draining sessions). */
export type ReconcilePreview = Awaited<ReturnType<typeof reconcilePreview>>;
/** `?part=rows`: the row findings alone (stale, stuck, overdue handoffs). */
export type ReconcileRows = Awaited<ReturnType<typeof reconcileRowsPreview>>;
/** `?part=sessions`: the session scan alone, possibly cut short at its time budget (`draining.scanLimited`). */
export type ReconcileSessions = Awaited<ReturnType<typeof reconcileSessionsPreview>>;
export type { StuckRow, RepairTarget } from '../../server/reconcile/stuck.ts';
export type { HealthOverview } from '../../server/heartbeat/scheduler.ts';
/** What an apply answers: the server's own result type. */
export type ReconcileResult = Awaited<ReturnType<typeof reconcileApply>>;

const seg = encodeURIComponent;
const sub = (topic: string, subscription: string) => `/api/topology/subscriptions/${seg(topic)}/${seg(subscription)}`;
const post = (body?: unknown): RequestInit => ({ method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) });
const put = (body: unknown): RequestInit => ({ method: 'PUT', body: JSON.stringify(body) });

export const opsApi = {
  topology: () => callApi<{ topics: TopicView[]; generatedAt: string }>('/api/topology/subscriptions'),
  deadLetters: (topic: string, subscription: string, q: { from?: string; reason?: string; pageSize?: number }) => {
    const p = new URLSearchParams();
    if (q.from) p.set('from', q.from);
    if (q.reason) p.set('reason', q.reason);
    if (q.pageSize) p.set('pageSize', String(q.pageSize));
    return callApi<{ items: DeadLetter[]; next: string | null; scanned: number; total: DeadLetterTotal | null }>(`${sub(topic, subscription)}/deadletters?${p.toString()}`);
  },
  previewReplay: (topic: string, subscription: string, sel: ReplaySelection) => callApi<ReplayPreview>(`${sub(topic, subscription)}/replay/preview`, post(sel)),
  replay: (topic: string, subscription: string, sel: ReplaySelection) => callApi<{ operationId: string }>(`${sub(topic, subscription)}/replay`, post(sel)),
  operation: (id: string) => callApi<ReplayOperation>(`/api/topology/operations/${seg(id)}`),
  action: (topic: string, subscription: string, action: 'pause' | 'resume' | 'purge' | 'restoreRules', confirm: string) =>
    callApi<Record<string, unknown>>(`${sub(topic, subscription)}/actions`, post({ action, confirm })),
  reconcileRows: () => callApi<ReconcileRows>('/api/operations/reconcile?part=rows'),
  reconcileSessions: () => callApi<ReconcileSessions>('/api/operations/reconcile?part=sessions'),
  reconcileApply: (
    targets: Array<{ endpointId: string; eventId: string; sessionId: string; rowMessageId: string }>,
    repairs: RepairTarget[] = [],
    sessions: DrainingTarget[] = [],
  ) => callApi<ReconcileResult>('/api/operations/reconcile', post({ targets, repairs, sessions })),
  health: () => callApi<HealthOverview>('/api/admin/health'),
  /** Saves the changed fields if the settings are still at `version` (settings.version of health()); else a 409 ApiError. */
  saveHeartbeatSettings: (s: { enabled?: boolean; intervalSeconds?: number; timeoutSeconds?: number; version: string }) =>
    callApi<VersionedHeartbeatSettings>('/api/admin/heartbeat/settings', put(s)),
  sendHeartbeatNow: () => callApi<{ count: number }>('/api/admin/heartbeat/send-now', post()),
  setHeartbeatIncluded: (endpointId: string, included: boolean) => callApi<unknown>(`/api/admin/heartbeat/endpoints/${seg(endpointId)}`, put({ included })),
};

export const deadLettersHref = (topic: string, subscription: string) => `/topology/subscriptions/${seg(topic)}/${seg(subscription)}`;
