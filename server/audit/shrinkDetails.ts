// Shortens an audit entry's details to a size cap while keeping what identifies the action. Replacing them whole by
// a note (what writeAudit did) lost the small fields with the big one: an edited resubmit with a long diff kept
// neither `edited`, nor the event type change, nor the message id. Here the largest values are cut, one halving at a
// time, each cut marked where it happened (`…(truncated, N more)`) and its path listed in `truncated`.
// An entry over many endpoints keeps each one's counts under `byEndpoint` (objects of numbers, which the halving
// cannot cut): past the cap their zero counts are dropped, then whole endpoints' parts, so the totals stay.
import { BY_ENDPOINT, BY_ENDPOINT_KEYS, BY_ENDPOINT_TRUNCATED } from './readerScope.ts';

/** The marker a cut array ends with, or a cut string with. */
export const truncatedMarker = (more: number, unit = ''): string => `…(truncated, ${more} more${unit})`;

/** A string this short is kept whole: it is an id, a name or a status, not what makes details large. */
const KEEP_STRING = 64;

const size = (v: unknown): number => JSON.stringify(v)?.length ?? 0;

const ARRAY_MARKER = /^…\(truncated, (\d+) more\)$/;
const STRING_MARKER = /…\(truncated, (\d+) more characters\)$/;
const isArrayMarker = (v: unknown): v is string => typeof v === 'string' && ARRAY_MARKER.test(v);

/**
 * The path (object keys) to the largest value that can still be cut - a string longer than an id, an array with
 * an item left - searching inside objects (their small fields are what says which action it was); undefined if none.
 */
function largestCuttable(value: unknown): string[] | undefined {
  if (typeof value === 'string') return value.length > KEEP_STRING ? [] : undefined;
  if (Array.isArray(value)) return value.some((v) => !isArrayMarker(v)) ? [] : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  const children = Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => ({ k, n: size(v), inner: largestCuttable(v) }))
    .filter((c) => c.inner !== undefined)
    .sort((a, b) => b.n - a.n);
  const top = children[0];
  return top === undefined ? undefined : [top.k, ...top.inner!];
}

/** `value` with the string or array at `path` halved and marked, the marker counting all that was left out so far. */
function cutAt(value: unknown, path: readonly string[]): unknown {
  if (path.length > 0) {
    const [head, ...rest] = path;
    const o = value as Record<string, unknown>;
    return { ...o, [head!]: cutAt(o[head!], rest) };
  }
  if (typeof value === 'string') {
    const m = STRING_MARKER.exec(value);
    const [kept, more] = m ? [value.slice(0, m.index), Number(m[1])] : [value, 0];
    const keep = Math.floor(kept.length / 2);
    return kept.slice(0, keep) + truncatedMarker(more + kept.length - keep, ' characters');
  }
  const items = value as unknown[];
  const last = items[items.length - 1];
  const [kept, more] = isArrayMarker(last) ? [items.slice(0, -1), Number(ARRAY_MARKER.exec(last)![1])] : [items, 0];
  const keep = Math.floor(kept.length / 2);
  return [...kept.slice(0, keep), truncatedMarker(more + kept.length - keep)];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A part without its zero counts (nested ones included): the reader's cut reads a count left out as 0. */
function withoutZeros(part: Record<string, unknown>): Record<string, unknown> {
  const kept: [string, unknown][] = [];
  for (const [k, v] of Object.entries(part)) {
    const value = isObject(v) ? withoutZeros(v) : v;
    if (value !== 0 && !(isObject(value) && Object.keys(value).length === 0)) kept.push([k, value]);
  }
  return Object.fromEntries(kept);
}

/**
 * The details with each per-endpoint part without its zero counts, and the names of the counts the parts held
 * (`byEndpointKeys`): the reader's cut sums by those, not by the keys the parts still hold (readerScope.ts).
 */
function partsWithoutZeros(details: Record<string, unknown>): Record<string, unknown> {
  const parts = details[BY_ENDPOINT];
  if (!isObject(parts)) return details;
  const keys = [...new Set(Object.values(parts).flatMap((p) => (isObject(p) ? Object.keys(p) : [])))];
  return { ...details, [BY_ENDPOINT]: Object.fromEntries(Object.entries(parts).map(([e, p]) => [e, isObject(p) ? withoutZeros(p) : p])), [BY_ENDPOINT_KEYS]: keys };
}

/**
 * `shrunk` with as many of its first per-endpoint parts as fit in `max` (at least one fewer than now, possibly none),
 * `byEndpointTruncated` counting the parts left out so far: whole parts are kept or left out, never a part cut
 * inside, so a reader's part is either all their counts or absent (readerScope.ts shows no counts then).
 */
function cutParts(shrunk: Record<string, unknown>, cut: ReadonlySet<string>, max: number): Record<string, unknown> {
  const parts = Object.entries(shrunk[BY_ENDPOINT] as Record<string, unknown>);
  const before = typeof shrunk[BY_ENDPOINT_TRUNCATED] === 'number' ? shrunk[BY_ENDPOINT_TRUNCATED] : 0;
  const keeping = (n: number) => ({ ...shrunk, [BY_ENDPOINT]: Object.fromEntries(parts.slice(0, n)), [BY_ENDPOINT_TRUNCATED]: before + parts.length - n });
  const fits = (n: number) => size({ ...keeping(n), truncated: [...cut, BY_ENDPOINT] }) <= max;
  // The most parts that fit: the size grows with every part kept, so the first count that fits, searched by halves.
  let [lo, hi] = [0, parts.length - 1];
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return keeping(lo);
}

/** How many per-endpoint parts the details still keep. */
const partsLeft = (details: Record<string, unknown>): number => (isObject(details[BY_ENDPOINT]) ? Object.keys(details[BY_ENDPOINT]).length : 0);

/**
 * `details` within `max` characters of JSON: as they are when they fit; else with their largest strings and arrays
 * halved (nested ones included) until they fit, each cut marked and its path (`payloadDiff.changes`) listed in
 * `truncated`. The per-endpoint parts (`byEndpoint`) lose their zero counts first, then, when they are the largest
 * value, the last endpoints' parts, as many as needed, counted in `byEndpointTruncated`. Other numbers, booleans and
 * short strings are never cut; details too large in those alone are replaced by a note naming their first keys.
 */
export function shrinkDetails(details: Record<string, unknown>, max: number): Record<string, unknown> {
  if (size(details) <= max) return details;
  let shrunk: Record<string, unknown> = partsWithoutZeros(details);
  if (size(shrunk) <= max) return shrunk;
  const cut = new Set<string>();
  const withCuts = () => ({ ...shrunk, truncated: [...cut] });
  while (size(withCuts()) > max) {
    const { [BY_ENDPOINT]: parts, ...rest } = shrunk;
    const path = largestCuttable(rest);
    if (partsLeft(shrunk) > 0 && (path === undefined || path.length === 0 || size(parts) >= size(shrunk[path[0]!]))) {
      shrunk = cutParts(shrunk, cut, max);
      cut.add(BY_ENDPOINT);
      continue;
    }
    if (path === undefined || path.length === 0)
      return { omitted: 'details too large to record', keys: Object.keys(details).slice(0, 50).map((k) => k.slice(0, KEEP_STRING)) };
    shrunk = cutAt(shrunk, path) as Record<string, unknown>;
    cut.add(path.join('.'));
  }
  return withCuts();
}
