// The browser side of GET /api/metrics: its fetch over a time range, and the ranges the pages offer.
import { callApi } from '../api.ts';

export interface MetricsResponse {
  from: number;
  to: number;
  bucketSeconds: number;
  series: Array<{ name: string; points: Array<[number, number | null]> }>;
}

export const RANGES = [
  ['1h', 3_600_000],
  ['24h', 86_400_000],
  ['7d', 7 * 86_400_000],
  ['30d', 30 * 86_400_000],
] as const;
export type RangeKey = (typeof RANGES)[number][0] | 'custom';

export interface TimeRange {
  key: RangeKey;
  /** For custom: epoch ms. */
  from?: number;
  to?: number;
}

/** The range as from/to now (a preset ends now and moves with the refresh). */
export function resolveRange(r: TimeRange, now = Date.now()): { from: number; to: number } {
  if (r.key === 'custom' && r.from !== undefined && r.to !== undefined) return { from: r.from, to: r.to };
  const ms = RANGES.find(([k]) => k === r.key)?.[1] ?? 3_600_000;
  return { from: now - ms, to: now };
}

export interface MetricsArgs {
  range: TimeRange;
  endpointId?: string;
  eventTypeId?: string;
  bucket?: string;
}

/** GET /api/metrics for a range resolved now (the query factory is metricsQuery in components/queries.ts). */
export function fetchMetrics({ range, endpointId, eventTypeId, bucket }: MetricsArgs): Promise<MetricsResponse> {
  const { from, to } = resolveRange(range);
  const sp = new URLSearchParams({ from: String(Math.floor(from)), to: String(Math.ceil(to)) });
  if (endpointId) sp.set('endpointId', endpointId);
  if (eventTypeId) sp.set('eventTypeId', eventTypeId);
  if (bucket) sp.set('bucket', bucket);
  return callApi<MetricsResponse>(`/api/metrics?${sp}`);
}

export function pointsOf(m: MetricsResponse | undefined, name: string): Array<[number, number | null]> {
  return m?.series.find((s) => s.name === name)?.points ?? [];
}

/** The sum of several series point by point (nulls count as 0 where another series has a value). */
export function sumOf(m: MetricsResponse | undefined, names: string[]): Array<[number, number | null]> {
  const lists = names.map((n) => pointsOf(m, n));
  const base = lists[0] ?? [];
  return base.map(([t], i) => {
    const vs = lists.map((l) => l[i]?.[1] ?? null);
    return [t, vs.every((v) => v === null) ? null : vs.reduce<number>((a, v) => a + (v ?? 0), 0)];
  });
}

/** The event list of an endpoint for one bucket's failures (what a click on a failure spike opens). */
export function failuresHref(endpointId: string, t: number, bucketSeconds: number): string {
  const sp = new URLSearchParams({ status: 'Failed,DeadLettered,Unsupported', from: new Date(t).toISOString(), to: new Date(t + bucketSeconds * 1000).toISOString() });
  return `/endpoints/${encodeURIComponent(endpointId)}?${sp}`;
}
