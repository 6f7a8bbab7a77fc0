// GET /api/endpoints/{endpointId}/events/export?format=csv|json&status=&groupId=&eventTypeId=&…: the filtered list
// as a streamed file (server/failures/export.ts). Reader on the endpoint; same origin; HEAVY_READ_COST of the rate limit.
import { requireEndpoint } from '../../../../../../server/api.ts';
import { authorize, limitRate } from '../../../../../../server/auth/authorize.ts';
import { HEAVY_READ_COST } from '../../../../../../server/auth/rateLimit.ts';
import { getContext } from '../../../../../../server/context.ts';
import { exportEvents, exportQuerySchema } from '../../../../../../server/failures/export.ts';
import { handle, parseOr400, type RouteContext } from '../../../../../../server/http.ts';
import { endpointParams } from '../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ endpointId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId } = parseOr400(endpointParams, await context.params, 'endpoint');
    const { format, ...filter } = parseOr400(exportQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'filter');
    // Up to 100,000 rows read per call: from our own origin only (a link on another site must not spend the
    // caller's budget), and charged against the change rate limit at a scan's cost (429 with Retry-After past it).
    const who = await authorize(request, 'read', endpointId, {}, { effects: true });
    await limitRate(who, HEAVY_READ_COST);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    return exportEvents(ctx.store, endpointId, filter, format);
  });
}
