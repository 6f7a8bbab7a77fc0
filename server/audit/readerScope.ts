// What a per-endpoint reader sees of an audit entry over several endpoints (a bulk job, its controls and its closing
// entry, a reconcile). The entry is found under each endpoint it touched, so a Reader of billing alone finds a job
// over billing and crm - but its details summed crm's counts in, and its endpoint list named crm, while the job
// itself answers 404 to that reader. The writers store each endpoint's part of the counts under
// `details.byEndpoint` (keyed by endpoint id, in the shape of the entry's totals); this keeps only the reader's
// parts, puts their sum in place of each total, and leaves out any other count (it sums over endpoints the reader
// may not read, and cannot be split). Site-wide readers, and readers of every endpoint the entry names, get it whole.
import type { AuditRecord } from './auditLog.ts';

/** The details key holding each endpoint's part of an entry's counts. */
export const BY_ENDPOINT = 'byEndpoint';

/**
 * The details key counting the endpoints whose parts were left out to keep the entry within its size cap
 * (shrinkDetails.ts). Their readers see no counts: the totals are not theirs, and their part is gone.
 */
export const BY_ENDPOINT_TRUNCATED = 'byEndpointTruncated';

/**
 * The details key naming the counts the parts break down, written by shrinkDetails.ts when it drops the parts' zero
 * counts: without it, which keys the kept parts still hold would tell a reader whether an endpoint cut off (or a
 * kept one) had a count other than 0 (a `failed` total shown as 0, or left out).
 */
export const BY_ENDPOINT_KEYS = 'byEndpointKeys';

/**
 * The details key listing the endpoints acted on: only the reader's are named. A job's `leftOut` (endpoints its
 * preparer could only read) stays: it names them, without counts, to the acted-on endpoints' readers by design
 * (app/api/operations/route.ts), a job over one endpoint as one over several.
 */
const ENDPOINT_LIST = 'endpoints';

type Part = Record<string, unknown>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a value holds a number anywhere (a count): such a value without a per-endpoint part is left out. */
const holdsNumber = (v: unknown): boolean =>
  typeof v === 'number' || (Array.isArray(v) ? v.some(holdsNumber) : isObject(v) && Object.values(v).some(holdsNumber));

/** Whether a value holds a number other than 0 anywhere. */
const holdsNonZero = (v: unknown): boolean =>
  (typeof v === 'number' && v !== 0) || (Array.isArray(v) ? v.some(holdsNonZero) : isObject(v) && Object.values(v).some(holdsNonZero));

/**
 * The sum of the parts' values at one key, in the shape of the entry's total (`like`): numbers added, objects
 * added key by key. A count a part lacks is 0: past the size cap the parts' zero counts are left out.
 */
function sumLike(like: unknown, values: readonly unknown[]): unknown {
  if (typeof like === 'number') return values.reduce<number>((a, v) => a + (typeof v === 'number' ? v : 0), 0);
  if (isObject(like)) return Object.fromEntries(Object.entries(like).map(([k, inner]) => [k, sumLike(inner, values.map((v) => (isObject(v) ? v[k] : undefined)))]));
  return undefined;
}

/**
 * The entry as a reader of `readable` endpoints sees it: unchanged unless it names endpoints outside them; then
 * `endpoints` names only theirs with `otherEndpoints` counting the rest, and the details are cut down as above.
 */
export function entryForReader(entry: AuditRecord, readable: ReadonlySet<string>): AuditRecord {
  const endpoints = entry.endpoints;
  if (endpoints === undefined || endpoints.every((e) => readable.has(e))) return entry;
  const mine = endpoints.filter((e) => readable.has(e));
  return { ...entry, endpoints: mine, otherEndpoints: endpoints.length - mine.length, details: entry.details === null ? null : detailsForReader(entry.details, mine, readable) };
}

/** `mine`: the endpoints of the entry the reader may read. */
function detailsForReader(details: Record<string, unknown>, mine: readonly string[], readable: ReadonlySet<string>): Record<string, unknown> {
  const stored: Record<string, unknown> = isObject(details[BY_ENDPOINT]) ? details[BY_ENDPOINT] : {};
  const parts = Object.entries(stored).filter((entry): entry is [string, Part] => readable.has(entry[0]) && isObject(entry[1]));
  // The totals are the reader's only when every one of their endpoints has its part: one left out by the size cap
  // (or an entry written before the parts were kept) would make the sum short, so then no count is shown but the
  // parts kept. Broken down: any key of any part (each part lacks its zero counts once the entry was over the cap).
  const whole = mine.length > 0 && mine.every((e) => isObject(stored[e]));
  const listed = details[BY_ENDPOINT_KEYS];
  const partKeys = new Set(
    Array.isArray(listed)
      ? listed.filter((k): k is string => typeof k === 'string')
      : Object.values(stored).flatMap((part) => (isObject(part) ? Object.keys(part) : [])),
  );
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    if (key === BY_ENDPOINT) out[key] = Object.fromEntries(parts);
    else if (key === ENDPOINT_LIST && Array.isArray(value)) out[key] = value.filter((e) => typeof e === 'string' && readable.has(e));
    // A total: the reader's part of it, when the writer broke it down and the reader's parts are all there; else it
    // is not theirs to see. A total of zeros is zero for every endpoint (its key may be in no part, zeros dropped).
    else if (holdsNumber(value)) {
      if (whole && partKeys.has(key)) out[key] = sumLike(value, parts.map(([, part]) => part[key]));
      else if (whole && !holdsNonZero(value)) out[key] = value;
    } else out[key] = value;
  }
  return out;
}
