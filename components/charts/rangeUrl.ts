// A chart time range as URL state (monitorSearch and endpointSearch in components/urlState.ts) and back. A preset
// is its key alone; a custom range is `range=custom` with both ends as ISO-8601 instants, so a shared link shows
// the same window. A custom range the URL cannot honour (an end missing or not a time, or from not before to) is
// the default range: a hand-edited or truncated link still opens the page. The Endpoint page names the ends
// `rangeFrom`/`rangeTo` (its `from`/`to` filter the events); its functions rename and reuse Monitor's. A link to the
// Endpoint page from a page showing a range (Monitor's failure bars and endpoint cards, the Endpoint page's session
// links) carries that range along with `withEndpointRange`, so the charts there show the window the operator was
// looking at instead of the default hour.
import { toIsoWithOffset } from '../isoTime.ts';
import type { TimeZoneMode } from '../timeZone.tsx';
import { endpointSearch, parseSearch, toSearch, type EndpointSearch, type MonitorSearch } from '../urlState.ts';
import type { TimeRange } from './metricsApi.ts';

export const DEFAULT_RANGE: TimeRange = { key: '1h' };

/** The range a parsed URL state names. */
export function rangeFromSearch(s: Pick<MonitorSearch, 'range' | 'from' | 'to'>): TimeRange {
  if (s.range !== 'custom') return { key: s.range };
  const from = Date.parse(s.from);
  const to = Date.parse(s.to);
  if (Number.isNaN(from) || Number.isNaN(to) || from >= to) return DEFAULT_RANGE;
  return { key: 'custom', from, to };
}

/** The URL state of a range; the ends are written on the wall clock the viewer chose (components/isoTime.ts). */
export function searchFromRange(r: TimeRange, zone: TimeZoneMode): Pick<MonitorSearch, 'range' | 'from' | 'to'> {
  if (r.key !== 'custom' || r.from === undefined || r.to === undefined) return { range: r.key === 'custom' ? DEFAULT_RANGE.key : r.key, from: '', to: '' };
  return { range: 'custom', from: toIsoWithOffset(new Date(r.from), zone), to: toIsoWithOffset(new Date(r.to), zone) };
}

type EndpointRangeSearch = Pick<EndpointSearch, 'range' | 'rangeFrom' | 'rangeTo'>;

/** The Endpoint page's history range (endpointSearch). */
export function rangeFromEndpointSearch(s: EndpointRangeSearch): TimeRange {
  return rangeFromSearch({ range: s.range, from: s.rangeFrom, to: s.rangeTo });
}

/** The Endpoint page's URL state of a range; it leaves the event filters (`from`, `to`, …) alone. */
export function endpointSearchFromRange(r: TimeRange, zone: TimeZoneMode): EndpointRangeSearch {
  const { range, from, to } = searchFromRange(r, zone);
  return { range, rangeFrom: from, rangeTo: to };
}

/**
 * An Endpoint page link (`/endpoints/{E}` with its filters, as endpointHref and failuresHref build it) that opens the
 * charts on `r`. The query is rewritten in endpointSearch's canonical form, one URL per state; a range already in
 * the link is replaced, the default range adds nothing.
 */
export function withEndpointRange(href: string, r: TimeRange, zone: TimeZoneMode): string {
  const at = href.indexOf('?');
  const path = at < 0 ? href : href.slice(0, at);
  const current = parseSearch(endpointSearch, new URLSearchParams(at < 0 ? '' : href.slice(at + 1)));
  const qs = toSearch(endpointSearch, { ...current, ...endpointSearchFromRange(r, zone) });
  return qs ? `${path}?${qs}` : path;
}
