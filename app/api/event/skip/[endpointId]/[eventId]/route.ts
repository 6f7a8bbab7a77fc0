// POST /api/event/skip/{endpointId}/{eventId}: skip the event (the subscriber releases its session). Operator.
// Optional body `{ lastMessageId }`: the event's last message as the caller saw it; 409 when it has moved on since
// (as for resubmit). Without it, the event as it is now.
import { requireEndpoint } from '../../../../../../server/api.ts';
import { audited, authorize, actorOf } from '../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../server/http.ts';
import { eventParams, skipBody } from '../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ endpointId: string; eventId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId, eventId } = parseOr400(eventParams, await context.params, 'event');
    const who = await authorize(request, 'skip', endpointId, { eventId });
    const body = await readJsonBody(request, skipBody);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    return json(await audited(who, () => ctx.manager.execute(endpointId, eventId, { kind: 'skip', ...(body?.lastMessageId !== undefined ? { seenMessageId: body.lastMessageId } : {}) }, actorOf(who)), (r) => ({ messageId: r.messageId, outcome: r.outcome })));
  });
}
