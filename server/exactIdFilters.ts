// The console's id filters (event type, session, event id, endpoint), which are matched exactly, spaces and all: which
// values are a filter, in one place for every page that filters on an id (and, by the same rule, which are an id a
// command names: the Agent API and the resubmit route). The routes refuse the rest with this
// message (server/queries.ts eventListQuerySchema, server/flow.ts, server/audit/auditLog.ts: a 400), the pages' URL
// state reads it as no filter (components/urlState.ts), and the forms that take typed ids refuse it before it is
// applied (components/exactIdErrors.tsx: the Endpoint page and the Audit log). Without zod, so the URL state keeps
// zod/mini alone in every page's first-load bundle.

/** The id filters, with how long an id each takes and how its messages name it. */
export const EXACT_ID_FILTERS = {
  /** Event type ids: the catalog's names, which the contract lets run longer than broker ids. */
  eventTypeId: { max: 260, a: 'an', name: 'event type id', every: 'every event type' },
  /** Service Bus caps message and session ids at 128 characters (lib/store/schemas.ts). */
  sessionId: { max: 128, a: 'a', name: 'session id', every: 'every session' },
  eventId: { max: 128, a: 'an', name: 'event id', every: 'every event' },
  /**
   * Endpoint ids are the catalog's names: at most 50 characters, letters, digits, '.', '_' and '-' alone (the SDK's
   * NAME_PATTERN, packages/sdk/src/contract/catalogSchema.ts, which lib/store/schemas.ts and server/schemas.ts
   * endpointIdParam follow too; exactIdFilters.test.ts holds this rule's characters equal to NAME_PATTERN, and
   * endpointIdParam is built from this rule). An id with any other character
   * names no endpoint: refused before a route authorizes it, where "crmendpoint " (a pasted space) read as an endpoint
   * the caller has no role on (a 403 and a `denied` audit entry for the caller's own endpoint).
   */
  endpointId: { max: 50, a: 'an', name: 'endpoint id', every: 'every endpoint', chars: /^[A-Za-z0-9._-]+$/ },
} as const;

/** The characters `field`'s ids are made of, when the rule knows them (endpoint ids), and how to say so. */
function badChars(field: ExactIdFilter, value: string): string | undefined {
  const spec = EXACT_ID_FILTERS[field];
  return 'chars' in spec && !spec.chars.test(value) ? 'letters, digits, ".", "_" and "-" alone' : undefined;
}
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
  const chars = badChars(field, value);
  if (chars) return `${a} ${name} is made of ${chars} (no spaces): this one names no endpoint`;
  return undefined;
}

/**
 * Why `value` is not an id a command names (what the Agent API publishes to, a resubmission's event type), or
 * undefined when it is one. The same rule as a filter's, taken as sent, spaces and all, without a filter's empty:
 * a command's id is looked up or sent on, so '' and spaces alone name nothing and are refused, never trimmed into
 * another id (" S1" published into session "S1").
 */
export function exactIdTargetProblem(field: ExactIdFilter, value: string): string | undefined {
  const { max, a, name } = EXACT_ID_FILTERS[field];
  if (value === '') return `${a} ${name} is empty`;
  if (value.trim() === '') return `${a} ${name} of spaces alone names nothing; ids are taken exactly as sent`;
  if (value.length > max) return `${a} ${name} longer than ${max} characters names nothing; no ${name} is that long`;
  const chars = badChars(field, value);
  if (chars) return `${a} ${name} is made of ${chars} (no spaces): this one names no endpoint`;
  return undefined;
}
