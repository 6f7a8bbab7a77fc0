// GET /api/endpoints/{endpointId}/events?status=&eventTypeId=&sessionId=&eventId=&from=&to=&q=&continuation=
import { requireEndpoint } from '../../../../../server/api.ts';
import { authorize } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../server/http.ts';
import { eventListQuerySchema, listEndpointEvents } from '../../../../../server/queries.ts';
import { endpointParams } from '../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ endpointId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId } = parseOr400(endpointParams, await context.params, 'endpoint');
    const query = parseOr400(eventListQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'filter');
    await authorize(request, 'read', endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    return json(await listEndpointEvents(ctx.store, endpointId, query));
  });
}
