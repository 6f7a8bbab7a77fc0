// GET /api/endpoints/{endpointId}/events/{eventId}: row, history, audits, parked siblings.
import { requireEndpoint } from '../../../../../../server/api.ts';
import { authorize, readScope } from '../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../server/context.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../../server/http.ts';
import { eventDetails } from '../../../../../../server/queries.ts';
import { eventParams } from '../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ endpointId: string; eventId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId, eventId } = parseOr400(eventParams, await context.params, 'event');
    const who = await authorize(request, 'read', endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    return json(await eventDetails(ctx.store, endpointId, eventId, readScope(who)));
  });
}
