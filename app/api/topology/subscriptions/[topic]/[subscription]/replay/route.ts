// POST /api/topology/subscriptions/{topic}/{subscription}/replay with a selection: starts the replay and answers
// 202 with its operation id; progress at GET /api/topology/operations/{operationId}. Operator of the topic's endpoint.
import { actorOf, audited } from '../../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../../server/http.ts';
import { authorizeSubscription } from '../../../../../../../server/subscriptions/authz.ts';
import { replaySelection, startReplay, subscriptionParams } from '../../../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ topic: string; subscription: string }>): Promise<Response> {
  return handle(async () => {
    const params = parseOr400(subscriptionParams, await context.params, 'subscription');
    const who = await authorizeSubscription(request, 'replay', params);
    const selection = await readJsonBody(request, replaySelection);
    const ctx = await getContext();
    const started = await audited(who, () => startReplay(ctx, params, selection, actorOf(who)), (r) => ({ operationId: r.operationId, selection: selection as unknown }), 202);
    return json(started, 202);
  });
}
