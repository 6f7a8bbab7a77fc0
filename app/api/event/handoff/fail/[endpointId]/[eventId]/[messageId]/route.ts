// POST /api/event/handoff/fail/{endpointId}/{eventId}/{messageId} with `{ errorText, errorType? }`: the external
// work failed; the event becomes Failed and its session stays blocked until a resubmit or skip.
// Operator on the endpoint; a service principal (bearer token) whose roles map to Operator there may call it too.
import { requireEndpoint } from '../../../../../../../../server/api.ts';
import { audited, authorize, actorOf } from '../../../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../../../server/http.ts';
import { handoffFailBody, handoffParams } from '../../../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(
  request: Request,
  context: RouteContext<{ endpointId: string; eventId: string; messageId: string }>,
): Promise<Response> {
  return handle(async () => {
    const { endpointId, eventId, messageId } = parseOr400(handoffParams, await context.params, 'handoff');
    const who = await authorize(request, 'handoff', endpointId, { eventId, target: `handoff ${messageId}` });
    const body = await readJsonBody(request, handoffFailBody);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    const spec = { kind: 'handoffFail' as const, messageId, errorText: body.errorText, errorType: body.errorType };
    return json(await audited(who, () => ctx.manager.execute(endpointId, eventId, spec, actorOf(who)), (r) => ({ settlement: 'fail', errorType: body.errorType ?? null, messageId: r.messageId, outcome: r.outcome })));
  });
}
