// Each page's URL state as one schema: what the page reads from its query string, parsed the same way by the
// server component (to prefetch the right data and name the page) and by the client view (to render and to write
// the next URL). A value that does not parse falls back to its default instead of breaking the page: a URL is
// typed by hand and shared, and a stale link should still open. Writing goes through `toSearch`, which leaves out
// defaults, so one state has one URL (and one query key).
//
// Written with valibot, whose functions are separate modules a bundler keeps only when used: this module is in every
// page's first-load bundle. zod's classic API brought about 140 KB into each page, zod/mini still 85 KB of its core
// (its schema classes are not split); the handful of valibot functions here are a few KB (docs/console.md,
// Performance: the console benchmark's "first-load JavaScript, decoded"). The server's routes keep zod; the
// one rule both must read alike, an ISO-8601 instant, is written out here and held equal to zod's by urlState.test.ts.
import * as v from 'valibot';
import { RULE_TYPES } from '../server/alerts/ruleTypes.ts';
import { exactIdProblem, type ExactIdFilter } from '../server/exactIdFilters.ts';
import { AUDIT_TEXT_FILTER_MAX } from '../server/audit/auditTextFilters.ts';

/** What Next hands a page (`searchParams`) or what `useSearchParams()` gives a client component. */
export type RawSearch = Record<string, string | string[] | undefined> | URLSearchParams | { get(key: string): string | null };

function read(raw: RawSearch, key: string): string | undefined {
  if (typeof (raw as { get?: unknown }).get === 'function') return (raw as { get(k: string): string | null }).get(key) ?? undefined;
  const v = (raw as Record<string, string | string[] | undefined>)[key];
  return Array.isArray(v) ? v[0] : v;
}

/** A page's URL schema: an object whose every field falls back on its own (never fails as a whole). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any field schema; each page's type is inferred
export type SearchSchema = v.ObjectSchema<v.ObjectEntries, any>;
/** What a page's URL schema gives: its state. */
export type SearchOf<S extends SearchSchema> = v.InferOutput<S>;

/** Parses a page's query string with its schema (each field falls back on its own). */
export function parseSearch<S extends SearchSchema>(schema: S, raw: RawSearch): SearchOf<S> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.entries)) {
    const value = read(raw, key);
    if (value !== undefined) input[key] = value;
  }
  return v.parse(schema, input);
}

/** The query string for a state: keys in the schema's order, empty values and defaults left out. */
export function toSearch<S extends SearchSchema>(schema: S, state: Partial<SearchOf<S>>): string {
  const defaults = v.parse(schema, {}) as Record<string, unknown>;
  const sp = new URLSearchParams();
  for (const key of Object.keys(schema.entries)) {
    const v = (state as Record<string, unknown>)[key];
    if (v === undefined || v === '' || v === false || (Array.isArray(v) && v.length === 0)) continue;
    if (JSON.stringify(v) === JSON.stringify(defaults[key])) continue;
    sp.set(key, Array.isArray(v) ? v.join(',') : v === true ? '1' : String(v));
  }
  return sp.toString();
}

const sortDir = v.fallback(v.optional(v.picklist(['asc', 'desc'])), undefined);
const text = (max: number) => v.fallback(v.pipe(v.string(), v.trim(), v.maxLength(max)), '');
/**
 * An id filter taken exactly, spaces and all (event and session ids are whatever their publisher set, and event type
 * and endpoint ids are matched the same way: "S1 " is not "S1"), on every page that filters on one (Endpoint, Flow,
 * Audit); what the routes refuse (spaces alone, too long: the one rule in server/exactIdFilters.ts) is no value. The
 * forms that take typed ids refuse such an id before it reaches the URL (components/exactIdErrors.tsx).
 */
const exactText = (field: ExactIdFilter) =>
  v.fallback(
    v.pipe(
      v.string(),
      v.check((s) => exactIdProblem(field, s) === undefined),
    ),
    '',
  );
const flag = v.fallback(
  v.pipe(
    v.string(),
    v.transform((s) => s === '1' || s === 'true'),
  ),
  false,
);
/**
 * RFC 3339 date-time with seconds and `Z` or a `±hh:mm` offset, as the routes' `z.iso.datetime({ offset: true })`
 * takes it (a valid calendar date, 29 February in leap years only, hours to 23): urlState.test.ts holds the two
 * equal over a set of edge cases, so a URL the page accepts is never a 400 at the route.
 */
const DAY = String.raw`(?:0[1-9]|1\d|2[0-8])`;
const LEAP_YEAR = String.raw`(?:\d\d(?:[2468][048]|[13579][26]|0[48])|(?:[02468][048]|[13579][26])00)`;
const DATE = String.raw`(?:\d{4}-(?:(?:0[13578]|1[02])-(?:${DAY}|29|3[01])|(?:0[469]|11)-(?:${DAY}|29|30)|02-${DAY})|${LEAP_YEAR}-02-29)`;
const HH_MM = String.raw`(?:[01]\d|2[0-3]):[0-5]\d`;
export const ISO_INSTANT = new RegExp(String.raw`^${DATE}T${HH_MM}:[0-5]\d(?:\.\d+)?(?:Z|[+-]${HH_MM})$`);
/** ISO-8601 with an offset (`Z` or `+01:00`): the one form times take in URLs and filters. */
const instant = v.fallback(v.pipe(v.string(), v.regex(ISO_INSTANT)), '');
/** One of `values`, else `fallback`. */
const choice = <const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) => v.fallback(v.picklist(values), fallback);

// --- Endpoints (/) ---------------------------------------------------------------------------------------------
export const ENDPOINT_SORTS = ['name', 'failed', 'pending', 'deferred', 'activity'] as const;
export const endpointsSearch = v.object({
  /** Filter by endpoint or owner. */
  q: text(200),
  /** Only endpoints with failed or deferred events. */
  unhealthy: flag,
  sort: choice(ENDPOINT_SORTS, 'failed'),
  /** The sort direction; absent means the column's natural one (names A→Z, counts largest first). */
  dir: sortDir,
});
export type EndpointsSearch = SearchOf<typeof endpointsSearch>;

// --- Endpoint (/endpoints/[endpointId]) --------------------------------------------------------------------------
export const EVENT_STATUSES = ['Failed', 'DeadLettered', 'Unsupported', 'Deferred', 'Pending', 'Handoff', 'Completed', 'Skipped'] as const;
const STATUS_SET = new Set<string>(EVENT_STATUSES);
export const eventListSearch = v.object({
  /** Comma-separated statuses; unknown ones are dropped, the order kept canonical. */
  status: v.fallback(
    v.pipe(
      v.string(),
      v.transform((s): (typeof EVENT_STATUSES)[number][] => {
        const picked = new Set(s.split(',').map((x) => x.trim()).filter((x) => STATUS_SET.has(x)));
        return EVENT_STATUSES.filter((x) => picked.has(x));
      }),
    ),
    [],
  ),
  eventTypeId: exactText('eventTypeId'),
  sessionId: exactText('sessionId'),
  eventId: exactText('eventId'),
  from: instant,
  to: instant,
  /** Error text contains. */
  q: text(200),
  groupId: v.fallback(v.pipe(v.string(), v.regex(/^[0-9a-f]{20}$/)), ''),
});
export type EventListSearch = SearchOf<typeof eventListSearch>;

// --- Topology · Subscriptions (/topology/subscriptions) ----------------------------------------------------------
export const SUBSCRIPTION_SORTS = ['name', 'deadLetter', 'active', 'drift'] as const;
export const subscriptionsSearch = v.object({
  q: text(200),
  /** Only subscriptions needing attention (dead letters, rule drift, not Active). */
  attention: flag,
  sort: choice(SUBSCRIPTION_SORTS, 'deadLetter'),
  /** The sort direction; absent means the column's natural one. */
  dir: sortDir,
});
export type SubscriptionsSearch = SearchOf<typeof subscriptionsSearch>;

// --- Flow (/flow) ----------------------------------------------------------------------------------------------
/** Minutes, the periods GET /api/flow accepts (server/flow.ts). */
export const FLOW_PERIODS = [5, 15, 60, 240, 1440] as const;
export const flowSearch = v.object({
  period: v.fallback(
    v.pipe(
      v.string(),
      v.transform(Number),
      v.check((n) => (FLOW_PERIODS as readonly number[]).includes(n)),
    ),
    15,
  ),
  eventTypeId: exactText('eventTypeId'),
});

// --- Monitor (/monitor) -----------------------------------------------------------------------------------------
/** The chart ranges (RANGES in components/charts/metricsApi.ts), or `custom` between `from` and `to`. */
export const MONITOR_RANGES = ['1h', '24h', '7d', '30d', 'custom'] as const;
export const monitorSearch = v.object({
  range: choice(MONITOR_RANGES, '1h'),
  /** A custom range's ends; ignored for the presets (components/charts/rangeUrl.ts). */
  from: instant,
  to: instant,
});
export type MonitorSearch = SearchOf<typeof monitorSearch>;

// --- Endpoint page as a whole (/endpoints/[endpointId]) ----------------------------------------------------------
/**
 * The event filters (eventListSearch, which alone is the list's query key and the API's query) and the history
 * charts' range. The filters already use `from` and `to` (when an event was updated), so a custom chart range's
 * ends are `rangeFrom` and `rangeTo` (components/charts/rangeUrl.ts).
 */
export const endpointSearch = v.object({
  ...eventListSearch.entries,
  range: choice(MONITOR_RANGES, '1h'),
  rangeFrom: instant,
  rangeTo: instant,
});
export type EndpointSearch = SearchOf<typeof endpointSearch>;

// --- Search (/search) -------------------------------------------------------------------------------------------
export const searchSearch = v.object({ q: text(200) });

// --- Failures (/failures) ---------------------------------------------------------------------------------------
/**
 * The statuses failures are grouped from, each one GET /api/failure-groups takes as `status` (lib/store/fingerprint.ts
 * FAILURE_STATUSES, held equal by urlState.test.ts): written out, as that module hashes with node:crypto and this one
 * is in every page's first-load bundle.
 */
export const FAILURE_GROUP_STATUSES = ['Failed', 'DeadLettered', 'Unsupported'] as const;
export const failuresSearch = v.object({
  /** Hours back; empty: all time. */
  since: choice(['', '1', '24', '168'], ''),
  /** One status alone; empty: every failure. */
  status: choice(['', ...FAILURE_GROUP_STATUSES], ''),
});
export type FailuresSearch = SearchOf<typeof failuresSearch>;

/**
 * Writes a state into the address bar without a navigation: the history API, which Next's router follows
 * (useSearchParams updates), so filtering a list already on the page costs no server round trip. `push` adds a
 * history entry (Back returns to the state before: a sort, a page, an applied filter); `replace` does not (each
 * keystroke of a filter typed as you go).
 */
export function writeSearch<S extends SearchSchema>(schema: S, state: Partial<SearchOf<S>>, how: 'push' | 'replace' = 'replace'): void {
  const qs = toSearch(schema, state);
  const url = `${window.location.pathname}${qs ? `?${qs}` : ''}`;
  if (url === `${window.location.pathname}${window.location.search}`) return;
  if (how === 'push') window.history.pushState(null, '', url);
  else window.history.replaceState(null, '', url);
}

export function replaceSearch<S extends SearchSchema>(schema: S, state: Partial<SearchOf<S>>): void {
  writeSearch(schema, state, 'replace');
}

// --- Audit (/audit) ---------------------------------------------------------------------------------------------
export const auditSearch = v.object({
  endpointId: exactText('endpointId'),
  eventId: exactText('eventId'),
  /** A user's sign-in name or id, typed: trimmed, as the route takes it (server/audit/auditLog.ts). */
  user: text(AUDIT_TEXT_FILTER_MAX.user),
  /** The route's limits (server/audit/auditTextFilters.ts): a longer value is no filter here, never a 400 there. */
  action: text(AUDIT_TEXT_FILTER_MAX.action),
  /** Comma-separated parts of action names to leave out (server/audit/auditLog.ts). */
  notAction: text(AUDIT_TEXT_FILTER_MAX.notAction),
  outcome: choice(['', 'succeeded', 'failed', 'denied'], ''),
  from: instant,
  to: instant,
});
export type AuditSearch = SearchOf<typeof auditSearch>;

// --- Dead letters (/topology/subscriptions/[topic]/[subscription]) ------------------------------------------------
/** A Service Bus sequence number, as GET …/deadletters takes `from`. */
const SEQUENCE = /^\d{1,19}$/;
/** How many earlier pages "Previous" can walk back through (a longer trail keeps its most recent part). */
export const DEAD_LETTER_TRAIL = 50;
export const deadLettersSearch = v.object({
  /** The dead-letter reason, exactly (the broker's DeadLetterReason). */
  reason: text(4096),
  /** The first sequence number of the page shown; empty: the first page. */
  from: v.fallback(v.pipe(v.string(), v.regex(SEQUENCE)), ''),
  /** The `from` of each page before this one after the first (oldest first), for "Previous". */
  prev: v.fallback(
    v.pipe(
      v.string(),
      v.transform((s) => s.split(',').filter((x) => SEQUENCE.test(x)).slice(-DEAD_LETTER_TRAIL)),
    ),
    [],
  ),
});
export type DeadLettersSearch = SearchOf<typeof deadLettersSearch>;

// --- Admin · Alerts (/admin/alerts) -------------------------------------------------------------------------------
export const ALERT_RULE_SORTS = ['name', 'type', 'state'] as const;
export const alertRulesSearch = v.object({
  /** Filter rules by name or endpoint. */
  q: text(200),
  type: choice(['', ...RULE_TYPES], ''),
  /** Only rules firing now. */
  firing: flag,
  sort: choice(ALERT_RULE_SORTS, 'name'),
  dir: sortDir,
});
export type AlertRulesSearch = SearchOf<typeof alertRulesSearch>;

// --- Alerts (/alerts) ---------------------------------------------------------------------------------------------
export const ALERT_HISTORY_SORTS = ['fired', 'recovered', 'rule'] as const;
/** The history is read newest first, this many at a time ("Show more" adds as many; the API stops at 1000). */
export const ALERT_HISTORY_PAGE = 100;
export const alertHistorySearch = v.object({
  /** Filter by rule name or what happened. */
  q: text(200),
  state: choice(['', 'firing', 'recovered'], ''),
  sort: choice(ALERT_HISTORY_SORTS, 'fired'),
  dir: sortDir,
  /** How many of the newest alerts are loaded. */
  limit: v.fallback(
    v.pipe(
      v.string(),
      v.transform(Number),
      v.check((n) => Number.isInteger(n) && n >= ALERT_HISTORY_PAGE && n <= 1000 && n % ALERT_HISTORY_PAGE === 0),
    ),
    ALERT_HISTORY_PAGE,
  ),
});
export type AlertHistorySearch = SearchOf<typeof alertHistorySearch>;
