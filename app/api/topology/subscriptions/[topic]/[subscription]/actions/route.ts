// POST /api/topology/subscriptions/{topic}/{subscription}/actions with `{ action, confirm }`: pause, resume,
// purge the dead-letter queue or restore missing rules. `confirm` must be the subscription name, typed.
import { getContext } from '../../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../../server/http.ts';
import { authorizeOps } from '../../../../../../../server/subscriptions/authz.ts';
import { subscriptionAction, subscriptionActionRun, subscriptionParams } from '../../../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ topic: string; subscription: string }>): Promise<Response> {
  return handle(async () => {
    const params = parseOr400(subscriptionParams, await context.params, 'subscription');
    const body = await readJsonBody(request, subscriptionAction);
    const who = authorizeOps(request, 'subscription');
    return json(await subscriptionActionRun(await getContext(), params, body, who.user));
  });
}
