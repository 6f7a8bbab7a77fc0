// The browser side of the console API: typed fetch helpers and the shapes the pages read. Errors carry the
// server's `{ error, detail }` so the pages can show the reason.
export interface Counts {
  pending: number;
  handoff: number;
  deferred: number;
  failed: number;
  deadLettered: number;
  unsupported: number;
  completed: number;
  skipped: number;
}

export interface EndpointOverview {
  endpointId: string;
  owner: string | null;
  description: string | null;
  inCatalog: boolean;
  produces: string[];
  consumes: string[];
  counts: Counts;
  oldestFailureAt: string | null;
  lastActivityAt: string | null;
  heartbeat: { status: string; at: string | null; sdkVersion: string | null };
}

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
}

export interface AuditEntry {
  id: string;
  type: string;
  auditor: string;
  comment: string | null;
  data: string | null;
  at: string;
}

export interface EventDetails {
  event: EventListItem & {
    payload: unknown;
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
  }>;
  audits: AuditEntry[];
  parkedSiblings: EventListItem[];
}

export interface CommandResult {
  outcome: 'sent' | 'duplicate';
  messageId: string;
  messageType: string;
}

export interface BulkResult {
  requested: number;
  sent: number;
  duplicates: number;
  failed: number;
  results: Array<{ eventId: string; outcome: string; status?: number; detail?: string }>;
}

export interface FlowCounts {
  total: number;
  completed: number;
  failed: number;
  deferred: number;
  deadLettered: number;
  unsupported: number;
  pending: number;
  skipped: number;
}

export interface FlowSnapshot {
  periodMinutes: number;
  from: string;
  eventTypes: Array<{
    eventTypeId: string;
    producers: string[];
    consumers: Array<{ endpointId: string; counts: FlowCounts; truncated: boolean }>;
  }>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  constructor(status: number, error: string, detail: string) {
    super(detail || error);
    this.status = status;
    this.detail = detail;
  }
}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await fetch(path, { ...init, headers: { accept: 'application/json', ...(init?.body ? { 'content-type': 'application/json' } : {}) } });
  const text = await res.text();
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (a proxy error page): reported by status below.
  }
  if (!res.ok) {
    const b = (body ?? {}) as { error?: string; detail?: string };
    throw new ApiError(res.status, b.error ?? res.statusText, b.detail ?? `request failed with ${res.status}`);
  }
  return body as T;
}

const seg = encodeURIComponent;

export const api = {
  endpoints: () => call<{ endpoints: EndpointOverview[]; generatedAt: string }>('/api/endpoints'),
  events: (endpointId: string, query: URLSearchParams) =>
    call<{ items: EventListItem[]; continuation: string | null }>(`/api/endpoints/${seg(endpointId)}/events?${query.toString()}`),
  event: (endpointId: string, eventId: string) => call<EventDetails>(`/api/endpoints/${seg(endpointId)}/events/${seg(eventId)}`),
  flow: (period: number, eventTypeId: string) =>
    call<FlowSnapshot>(`/api/flow?period=${period}${eventTypeId ? `&eventTypeId=${seg(eventTypeId)}` : ''}`),
  search: (q: string) => call<{ items: EventListItem[] }>(`/api/search?q=${seg(q)}`),
  resubmit: (endpointId: string, eventId: string, edited?: { payload: unknown; eventTypeId?: string }) =>
    call<CommandResult>(`/api/event/resubmit/${seg(endpointId)}/${seg(eventId)}`, {
      method: 'POST',
      body: edited ? JSON.stringify(edited) : undefined,
    }),
  skip: (endpointId: string, eventId: string) =>
    call<CommandResult>(`/api/event/skip/${seg(endpointId)}/${seg(eventId)}`, { method: 'POST' }),
  bulk: (action: 'resubmit' | 'skip', endpointId: string, eventIds: string[]) =>
    call<BulkResult>(`/api/event/${action}`, { method: 'POST', body: JSON.stringify({ endpointId, eventIds }) }),
  completeHandoff: (endpointId: string, eventId: string, messageId: string, note?: string) =>
    call<CommandResult>(`/api/event/handoff/complete/${seg(endpointId)}/${seg(eventId)}/${seg(messageId)}`, {
      method: 'POST',
      body: JSON.stringify(note ? { note } : {}),
    }),
  failHandoff: (endpointId: string, eventId: string, messageId: string, errorText: string) =>
    call<CommandResult>(`/api/event/handoff/fail/${seg(endpointId)}/${seg(eventId)}/${seg(messageId)}`, {
      method: 'POST',
      body: JSON.stringify({ errorText }),
    }),
};

export const eventHref = (endpointId: string, eventId: string) =>
  `/endpoints/${seg(endpointId)}/events/${seg(eventId)}`;
export const endpointHref = (endpointId: string, query?: string) =>
  `/endpoints/${seg(endpointId)}${query ? `?${query}` : ''}`;
