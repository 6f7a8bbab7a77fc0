// POST /api/topology/subscriptions/{topic}/{subscription}/replay with a selection: starts the replay and answers
// 202 with its operation id; progress at GET /api/topology/operations/{operationId}.
import { getContext } from '../../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../../server/http.ts';
import { authorizeOps } from '../../../../../../../server/subscriptions/authz.ts';
import { replaySelection, startReplay, subscriptionParams } from '../../../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ topic: string; subscription: string }>): Promise<Response> {
  return handle(async () => {
    const params = parseOr400(subscriptionParams, await context.params, 'subscription');
    const selection = await readJsonBody(request, replaySelection);
    const who = authorizeOps(request, 'replay');
    return json(await startReplay(await getContext(), params, selection, who.user), 202);
  });
}
