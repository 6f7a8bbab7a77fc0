// POST /api/topology/subscriptions/{topic}/{subscription}/actions with `{ action, confirm }`: pause, resume,
// purge the dead-letter queue or restore missing rules. `confirm` must be the subscription name, typed
// (`topic/subscription` for a purge).
// Owner of the topic's endpoint (site-wide for platform topics).
import { actorOf, audited, authorizeBeforeBody } from '../../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../../server/http.ts';
import { SUBSCRIPTION_ACTIONS, authorizeSubscription } from '../../../../../../../server/subscriptions/authz.ts';
import { subscriptionAction, subscriptionActionRun, subscriptionParams } from '../../../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ topic: string; subscription: string }>): Promise<Response> {
  return handle(async () => {
    const params = parseOr400(subscriptionParams, await context.params, 'subscription');
    // The body names the action, and the action decides the role. Every one of them needs an Owner: who is Owner
    // nowhere is refused before the body is parsed (audited as `subscription.*`), the rest after.
    await authorizeBeforeBody(request, SUBSCRIPTION_ACTIONS.pause, undefined, { target: `${params.topic}/${params.subscription}` }, 'subscription.*');
    const body = await readJsonBody(request, subscriptionAction);
    const who = await authorizeSubscription(request, SUBSCRIPTION_ACTIONS[body.action], params);
    const ctx = await getContext();
    return json(await audited(who, () => subscriptionActionRun(ctx, params, body, actorOf(who)), (r) => ({ result: r as unknown })));
  });
}
