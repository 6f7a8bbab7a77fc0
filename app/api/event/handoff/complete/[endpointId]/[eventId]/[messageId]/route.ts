// POST /api/event/handoff/complete/{endpointId}/{eventId}/{messageId} with `{ note?, result? }`: the external
// work succeeded. 409 unless the event is a pending handoff and messageId is its handoff message.
// Operator on the endpoint; a service principal (bearer token) whose roles map to Operator there may call it too.
import { requireEndpoint } from '../../../../../../../../server/api.ts';
import { audited, authorize, actorOf } from '../../../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../../../server/http.ts';
import { handoffCompleteBody, handoffParams } from '../../../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(
  request: Request,
  context: RouteContext<{ endpointId: string; eventId: string; messageId: string }>,
): Promise<Response> {
  return handle(async () => {
    const { endpointId, eventId, messageId } = parseOr400(handoffParams, await context.params, 'handoff');
    const who = await authorize(request, 'handoff', endpointId, { eventId, target: `handoff ${messageId}` });
    const body = await readJsonBody(request, handoffCompleteBody);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    const spec = { kind: 'handoffComplete' as const, messageId, note: body?.note, result: body?.result };
    return json(await audited(who, () => ctx.manager.execute(endpointId, eventId, spec, actorOf(who)), (r) => ({ settlement: 'complete', messageId: r.messageId, outcome: r.outcome })));
  });
}
