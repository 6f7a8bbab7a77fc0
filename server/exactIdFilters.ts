// The event list's id filters (event type, session, event id), which are matched exactly, spaces and all: which
// values are a filter, in one place for the list route (server/queries.ts eventListQuerySchema, a 400 with this
// message), the pages' URL state (components/urlState.ts, read as no filter) and the Endpoint page's form
// (components/EndpointEventsView.tsx, refused before it is applied). Without zod, so the URL state keeps zod/mini
// alone in every page's first-load bundle.

/** The id filters, with how long an id each takes and how its messages name it. */
export const EXACT_ID_FILTERS = {
  /** Event type ids: the catalog's names, which the contract lets run longer than broker ids. */
  eventTypeId: { max: 260, a: 'an', name: 'event type id', every: 'every event type' },
  /** Service Bus caps message and session ids at 128 characters (lib/store/schemas.ts). */
  sessionId: { max: 128, a: 'a', name: 'session id', every: 'every session' },
  eventId: { max: 128, a: 'an', name: 'event id', every: 'every event' },
} as const;
export type ExactIdFilter = keyof typeof EXACT_ID_FILTERS;

/**
 * Why `value` is not a filter on `field`, or undefined when it is one ('' is one: no filter). An id of spaces alone
 * is refused rather than read as no filter, which would list the whole endpoint while the filter shows an id.
 */
export function exactIdProblem(field: ExactIdFilter, value: string): string | undefined {
  const { max, a, name, every } = EXACT_ID_FILTERS[field];
  if (value === '') return undefined;
  if (value.trim() === '') return `${a} ${name} of spaces alone is not a filter; leave it empty for ${every}`;
  if (value.length > max) return `${a} ${name} longer than ${max} characters is not a filter; no ${name} is that long`;
  return undefined;
}
