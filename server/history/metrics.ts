// GET /api/metrics: the stored time series (lib/store/timeSeries.ts) for a range, summed into buckets of the
// requested size. Validated here so the route stays a few lines; the bucket count is capped so one request cannot
// ask for millions of points.
import { z } from 'zod';
import { TimeSeriesStore, type Series } from '../../lib/store/index.ts';
import type { ReadScope } from '../auth/readScope.ts';
import type { ConsoleContext } from '../context.ts';
import { badRequest } from '../http.ts';
import { exactIdFilter } from '../exactIdFilterSchema.ts';

export const MAX_POINTS = 1500;

const time = z.union([
  z
    .string()
    .regex(/^\d{10,16}$/)
    .transform(Number),
  z
    .string()
    .min(10)
    .max(40)
    .refine((s) => !Number.isNaN(Date.parse(s)), 'not a date-time')
    .transform((s) => Date.parse(s)),
]);

const BUCKET_WORDS: Record<string, number> = { '1m': 60, '5m': 300, '15m': 900, '1h': 3600, '6h': 21_600, '1d': 86_400 };

export const metricsQuerySchema = z
  .object({
    // Exact, spaces and all, by the one id rule (server/exactIdFilters.ts): empty is no filter; spaces alone (which
    // matched no series and charted nothing) and ids longer than any are 400 in the rule's words.
    endpointId: exactIdFilter('endpointId'),
    eventTypeId: exactIdFilter('eventTypeId'),
    from: time.optional(),
    to: time.optional(),
    /** Seconds (a multiple of 60) or 1m, 5m, 15m, 1h, 6h, 1d; default chosen from the range. */
    bucket: z
      .union([z.enum(Object.keys(BUCKET_WORDS) as [string, ...string[]]).transform((w) => BUCKET_WORDS[w]!), z.string().regex(/^\d{2,6}$/).transform(Number)])
      .refine((s) => s >= 60 && s % 60 === 0 && s <= 86_400, 'a bucket is 60 to 86400 seconds, a multiple of 60')
      .optional(),
  })
  .strict();
export type MetricsQuery = z.output<typeof metricsQuerySchema>;

/** The default bucket for a range: about 60 to 300 points on a chart. */
export function autoBucketSeconds(rangeMs: number): number {
  if (rangeMs <= 3 * 3_600_000) return 60;
  if (rangeMs <= 36 * 3_600_000) return 300;
  if (rangeMs <= 8 * 86_400_000) return 3600;
  return 6 * 3600;
}

const KEY = Symbol.for('nimbus.console.timeSeries');
type Slot = { ctx?: ConsoleContext; series?: TimeSeriesStore };
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as Slot;

/** The console process's reader of the metrics container (one per context). */
export function consoleTimeSeries(ctx: ConsoleContext): TimeSeriesStore {
  if (!slot.series || slot.ctx !== ctx) {
    slot.series = new TimeSeriesStore(ctx.store.database);
    slot.ctx = ctx;
  }
  return slot.series;
}

export async function readMetrics(
  ctx: ConsoleContext,
  q: MetricsQuery,
  scope: ReadScope,
  now = Date.now(),
): Promise<{ from: number; to: number; bucketSeconds: number; series: Series[] }> {
  const to = q.to ?? now;
  const from = q.from ?? to - 3_600_000;
  if (from >= to) throw badRequest('from must be before to');
  if (to - from > 31 * 86_400_000) throw badRequest('a range is at most 31 days (the series are kept 30)');
  const bucketSeconds = q.bucket ?? autoBucketSeconds(to - from);
  if ((to - from) / (bucketSeconds * 1000) > MAX_POINTS)
    throw badRequest(`that range and bucket give more than ${MAX_POINTS} points; choose a larger bucket`);
  const series = await consoleTimeSeries(ctx).query({
    from,
    to,
    bucketMs: bucketSeconds * 1000,
    ...(q.endpointId !== undefined ? { endpointId: q.endpointId } : scope.all ? {} : { endpointIds: scope.endpointIds }),
    ...(q.eventTypeId !== undefined ? { eventTypeId: q.eventTypeId } : {}),
  });
  return { from, to, bucketSeconds, series };
}
