// POST /api/event/skip/{endpointId}/{eventId}: skip the event (the subscriber releases its session).
import { requireEndpoint } from '../../../../../../server/api.ts';
import { authorize } from '../../../../../../server/auth.ts';
import { getContext } from '../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../server/http.ts';
import { eventParams, skipBody } from '../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ endpointId: string; eventId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId, eventId } = parseOr400(eventParams, await context.params, 'event');
    await readJsonBody(request, skipBody);
    const who = authorize(request, 'skip', endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, endpointId);
    return json(await ctx.manager.execute(endpointId, eventId, { kind: 'skip' }, who.user));
  });
}
