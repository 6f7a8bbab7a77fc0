// The browser side of the alerts API. Shapes come from the server's modules (type-only imports).
import { callApi } from '../api.ts';
import type { ChannelView, RuleType } from '../../server/alerts/model.ts';
import type { AlertView, RuleView } from '../../server/alerts/routes.ts';

export type { AlertView, ChannelView, RuleType, RuleView };

export interface RuleBody {
  name: string;
  type: RuleType;
  endpointId: string | null;
  threshold: number | null;
  durationSeconds: number | null;
  cooldownSeconds: number;
  channelIds: string[];
  enabled: boolean;
}

const json = (method: string, body?: unknown): RequestInit => ({ method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
const seg = encodeURIComponent;

export const alertsApi = {
  rules: () => callApi<{ rules: RuleView[]; channels: ChannelView[] }>('/api/admin/alerts/rules'),
  createRule: (b: RuleBody) => callApi<RuleView>('/api/admin/alerts/rules', json('POST', b)),
  updateRule: (id: string, b: RuleBody) => callApi<RuleView>(`/api/admin/alerts/rules/${seg(id)}`, json('PUT', b)),
  deleteRule: (id: string) => callApi<unknown>(`/api/admin/alerts/rules/${seg(id)}`, json('DELETE')),
  createChannel: (b: Record<string, unknown>) => callApi<ChannelView>('/api/admin/alerts/channels', json('POST', b)),
  updateChannel: (id: string, b: Record<string, unknown>) => callApi<ChannelView>(`/api/admin/alerts/channels/${seg(id)}`, json('PUT', b)),
  deleteChannel: (id: string) => callApi<unknown>(`/api/admin/alerts/channels/${seg(id)}`, json('DELETE')),
  testChannel: (id: string) => callApi<{ ok: boolean; error?: string }>(`/api/admin/alerts/channels/${seg(id)}/test`, json('POST')),
  history: (limit: number) => callApi<{ alerts: AlertView[] }>(`/api/alerts/history?limit=${limit}`),
};

export const RULE_LABELS: Record<RuleType, string> = {
  failureRate: 'Failure rate above N per minute on an endpoint',
  newFailureGroup: 'A new failure group',
  deadLetterBacklog: 'Dead-letter backlog above N',
  blockedSession: 'A session blocked longer than T',
  pendingHandoff: 'A pending handoff past its expected-by',
  heartbeatMissing: 'No heartbeat for T',
  resolverLiveness: "The Resolver's own liveness",
};
