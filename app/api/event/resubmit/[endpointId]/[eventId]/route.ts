// POST /api/event/resubmit/{endpointId}/{eventId}: resubmit the stored payload, or with a body
// `{ payload, eventTypeId? }` an edited one. 404 unknown, 409 when the event's state does not allow it.
import { requireEndpoint, requireEventType } from '../../../../../../server/api.ts';
import { authorize } from '../../../../../../server/auth.ts';
import { getContext } from '../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../server/http.ts';
import { eventParams, resubmitBody } from '../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ endpointId: string; eventId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId, eventId } = parseOr400(eventParams, await context.params, 'event');
    const body = await readJsonBody(request, resubmitBody);
    const who = authorize(request, 'resubmit', endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    requireEventType(ctx, body?.eventTypeId);
    const spec = body ? { kind: 'resubmit' as const, edited: { payload: body.payload, eventTypeId: body.eventTypeId } } : { kind: 'resubmit' as const };
    return json(await ctx.manager.execute(endpointId, eventId, spec, who.user));
  });
}
