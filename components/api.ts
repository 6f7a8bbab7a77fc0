// The browser side of the console API: typed fetch helpers and the shapes the pages read. Errors carry the
// server's `{ error, detail }` so the pages can show the reason.
// The response shapes are the server's read models (type-only imports, erased from the browser bundle), so a
// field added or renamed on the server shows up here at compile time instead of drifting.
import type { FlowSnapshot } from '../server/flow.ts';
import type { EndpointOverview, EndpointSummary, EventDetailsView, EventListItem, SearchResult, UnreadableRow } from '../server/queries.ts';
export type { EndpointOverview, EndpointSummary, EventListItem, SearchResult } from '../server/queries.ts';
export type { FlowCounts, FlowSnapshot } from '../server/flow.ts';
export type EventDetails = EventDetailsView;
export type Counts = EndpointOverview['counts'];
export type AuditEntry = EventDetailsView['audits'][number];

export interface CommandResult {
  outcome: 'sent' | 'duplicate';
  messageId: string;
  messageType: string;
}

/** An event type as the catalog describes it; `schema` is the JSON Schema the payload must match (or null). */
export interface CatalogEventTypeView {
  id: string;
  description: string | null;
  sessionKey: string | null;
  schema: Record<string, unknown> | null;
}

export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  /** The server's stable name for this refusal, when it gives one (server/http.ts HttpError.code). */
  readonly code: string | undefined;
  constructor(status: number, error: string, detail: string, code?: string) {
    super(detail || error);
    this.status = status;
    this.detail = detail;
    this.code = code;
  }
}

/** One JSON call to the console API; a non-2xx answer throws ApiError with the server's `{ error, detail }`. */
export async function callApi<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await fetch(path, { ...init, headers: { accept: 'application/json', ...(init?.body ? { 'content-type': 'application/json' } : {}) } });
  const text = await res.text();
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (a proxy error page): reported by status below.
  }
  if (!res.ok) {
    const b = (body ?? {}) as { error?: string; detail?: string; code?: unknown };
    throw new ApiError(res.status, b.error ?? res.statusText, b.detail ?? `request failed with ${res.status}`, typeof b.code === 'string' ? b.code : undefined);
  }
  return body as T;
}

const seg = encodeURIComponent;

export const api = {
  endpoints: () => callApi<{ endpoints: EndpointOverview[]; generatedAt: string }>('/api/endpoints'),
  endpoint: (endpointId: string) => callApi<{ endpoint: EndpointSummary; generatedAt: string }>(`/api/endpoints/${seg(endpointId)}`),
  events: (endpointId: string, query: URLSearchParams) =>
    callApi<{ items: EventListItem[]; continuation: string | null; unreadable?: UnreadableRow[] }>(`/api/endpoints/${seg(endpointId)}/events?${query.toString()}`),
  event: (endpointId: string, eventId: string) => callApi<EventDetails>(`/api/endpoints/${seg(endpointId)}/events/${seg(eventId)}`),
  flow: (period: number, eventTypeId: string) =>
    callApi<FlowSnapshot>(`/api/flow?period=${period}${eventTypeId ? `&eventTypeId=${seg(eventTypeId)}` : ''}`),
  eventTypes: () => callApi<{ eventTypes: CatalogEventTypeView[] }>('/api/catalog/event-types'),
  search: (q: string) => callApi<SearchResult>(`/api/search?q=${seg(q)}`),
  // `lastMessageId`: the event's last message as the page showed it; the server refuses (409) when it has moved on.
  resubmit: (endpointId: string, eventId: string, lastMessageId: string | undefined, edited?: { payload: unknown; eventTypeId?: string }) =>
    callApi<CommandResult>(`/api/event/resubmit/${seg(endpointId)}/${seg(eventId)}`, {
      method: 'POST',
      body: edited || lastMessageId ? JSON.stringify({ ...edited, ...(lastMessageId ? { lastMessageId } : {}) }) : undefined,
    }),
  skip: (endpointId: string, eventId: string, lastMessageId: string | undefined) =>
    callApi<CommandResult>(`/api/event/skip/${seg(endpointId)}/${seg(eventId)}`, {
      method: 'POST',
      body: lastMessageId ? JSON.stringify({ lastMessageId }) : undefined,
    }),
  completeHandoff: (endpointId: string, eventId: string, messageId: string, note?: string) =>
    callApi<CommandResult>(`/api/event/handoff/complete/${seg(endpointId)}/${seg(eventId)}/${seg(messageId)}`, {
      method: 'POST',
      body: JSON.stringify(note ? { note } : {}),
    }),
  failHandoff: (endpointId: string, eventId: string, messageId: string, errorText: string) =>
    callApi<CommandResult>(`/api/event/handoff/fail/${seg(endpointId)}/${seg(eventId)}/${seg(messageId)}`, {
      method: 'POST',
      body: JSON.stringify({ errorText }),
    }),
};

export const eventHref = (endpointId: string, eventId: string) =>
  `/endpoints/${seg(endpointId)}/events/${seg(eventId)}`;
export const endpointHref = (endpointId: string, query?: string) =>
  `/endpoints/${seg(endpointId)}${query ? `?${query}` : ''}`;
