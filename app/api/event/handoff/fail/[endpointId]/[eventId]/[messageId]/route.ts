// POST /api/event/handoff/fail/{endpointId}/{eventId}/{messageId} with `{ errorText, errorType? }`: the external
// work failed; the event becomes Failed and its session stays blocked until a resubmit or skip.
import { requireEndpoint } from '../../../../../../../../server/api.ts';
import { authorize } from '../../../../../../../../server/auth.ts';
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
    const body = await readJsonBody(request, handoffFailBody);
    const who = authorize(request, 'handoff', endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    const spec = { kind: 'handoffFail' as const, messageId, errorText: body.errorText, errorType: body.errorType };
    return json(await ctx.manager.execute(endpointId, eventId, spec, who.user));
  });
}
