// GET /api/metrics?endpointId=&eventTypeId=&from=&to=&bucket=: stored time series as
// `{ from, to, bucketSeconds, series: [{ name, points: [[t, v]] }] }` (docs/operations.md). Any role; with an
// endpointId, a role on that endpoint; without one, the sums cover only the endpoints the caller may read.
import { authorize, readScope } from '../../../server/auth/authorize.ts';
import { getContext } from '../../../server/context.ts';
import { metricsQuerySchema, readMetrics } from '../../../server/history/metrics.ts';
import { handle, json, parseOr400 } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const q = parseOr400(metricsQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'metrics query');
    const who = await authorize(request, 'read', q.endpointId);
    const ctx = await getContext();
    return json(await readMetrics(ctx, q, readScope(who)));
  });
}
