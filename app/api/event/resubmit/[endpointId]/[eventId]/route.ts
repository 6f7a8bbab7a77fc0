// POST /api/event/resubmit/{endpointId}/{eventId}: resubmit the stored payload, or with a body
// `{ payload, eventTypeId? }` an edited one. 404 unknown, 409 when the event's state does not allow it. Operator.
// `lastMessageId` (optional, in the body): the event's last message as the caller saw it; 409 when the event has moved
// on since (the event page sends it, so a click on a stale page does not act on a newer failure). Without it, the event
// as it is now.
// An edited payload must match its event type's JSON schema in the catalog (400 naming the failing paths otherwise):
// the type it names, else that of the row the Manager resubmits. An edited resubmission is audited with a structural
// diff against that row's stored payload (paths, not values).
import { requireEndpoint, requireEventType } from '../../../../../../server/api.ts';
import { audited, authorize, actorOf } from '../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../server/context.ts';
import { editedResubmitCheck } from '../../../../../../server/manager/editedResubmit.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../server/http.ts';
import { eventParams, resubmitBody } from '../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ endpointId: string; eventId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId, eventId } = parseOr400(eventParams, await context.params, 'event');
    const who = await authorize(request, 'resubmit', endpointId, { eventId });
    const body = await readJsonBody(request, resubmitBody);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    requireEventType(ctx, body?.eventTypeId);
    const edited = body?.payload !== undefined ? { payload: body.payload, eventTypeId: body.eventTypeId } : undefined;
    // Checked against the row the Manager resubmits (its event type), not the event's newest row: editedResubmit.ts.
    const check = editedResubmitCheck(ctx.catalog, edited);
    const seen = body?.lastMessageId !== undefined ? { seenMessageId: body.lastMessageId } : {};
    const spec = { kind: 'resubmit' as const, ...(edited ? { edited } : {}), ...seen };
    return json(await audited(who, () => ctx.manager.execute(endpointId, eventId, spec, actorOf(who), undefined, check.caller), (r) => ({ ...check.details(), messageId: r.messageId, outcome: r.outcome })));
  });
}
