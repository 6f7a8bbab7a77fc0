// GET /api/endpoints/{endpointId}/events/export?format=csv|json&status=&groupId=&eventTypeId=&…: the filtered list
// as a streamed file (server/failures/export.ts). Reader on the endpoint.
import { requireEndpoint } from '../../../../../../server/api.ts';
import { authorize } from '../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../server/context.ts';
import { exportEvents, exportQuerySchema } from '../../../../../../server/failures/export.ts';
import { handle, parseOr400, type RouteContext } from '../../../../../../server/http.ts';
import { endpointParams } from '../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ endpointId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId } = parseOr400(endpointParams, await context.params, 'endpoint');
    const { format, ...filter } = parseOr400(exportQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'filter');
    await authorize(request, 'read', endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    return exportEvents(ctx.store, endpointId, filter, format);
  });
}
