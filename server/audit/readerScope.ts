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

/** The sum of the parts' values at one key: numbers added, objects of numbers added key by key. */
function sumOf(values: readonly unknown[]): unknown {
  if (values.every((v) => typeof v === 'number')) return values.reduce<number>((a, v) => a + (v as number), 0);
  if (values.every(isObject)) {
    const keys = [...new Set(values.flatMap((v) => Object.keys(v)))];
    return Object.fromEntries(keys.map((k) => [k, sumOf(values.map((v) => v[k] ?? 0))]));
  }
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
  return { ...entry, endpoints: mine, otherEndpoints: endpoints.length - mine.length, details: entry.details === null ? null : detailsForReader(entry.details, readable) };
}

function detailsForReader(details: Record<string, unknown>, readable: ReadonlySet<string>): Record<string, unknown> {
  const stored = isObject(details[BY_ENDPOINT]) ? details[BY_ENDPOINT] : {};
  const parts = Object.entries(stored).filter((entry): entry is [string, Part] => readable.has(entry[0]) && isObject(entry[1]));
  const partKeys = new Set(parts.flatMap(([, part]) => Object.keys(part)));
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    if (key === BY_ENDPOINT) out[key] = Object.fromEntries(parts);
    else if (key === ENDPOINT_LIST && Array.isArray(value)) out[key] = value.filter((e) => typeof e === 'string' && readable.has(e));
    // A total: the reader's part of it, when the writer broke it down; else it is not theirs to see.
    else if (partKeys.has(key)) out[key] = sumOf(parts.map(([, part]) => part[key] ?? 0));
    else if (!holdsNumber(value)) out[key] = value;
  }
  return out;
}
