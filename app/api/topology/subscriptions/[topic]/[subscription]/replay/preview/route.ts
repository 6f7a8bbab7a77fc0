// POST /api/topology/subscriptions/{topic}/{subscription}/replay/preview with a selection: how many dead letters
// a replay would send, and which other subscriptions the copies would also reach. Changes nothing. Reader of the
// topic's endpoint (site-wide for platform topics), as for the dead-letter list. A preview receives (peeks) the
// whole selection like the replay itself, so it counts against the same per-caller rate limit as changes.
import { limitRate } from '../../../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../../../server/http.ts';
import { authorizeDeadLetterRead } from '../../../../../../../../server/subscriptions/authz.ts';
import { replayPreview, replaySelection, subscriptionParams } from '../../../../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ topic: string; subscription: string }>): Promise<Response> {
  return handle(async () => {
    const params = parseOr400(subscriptionParams, await context.params, 'subscription');
    const who = await authorizeDeadLetterRead(request, params);
    const selection = await readJsonBody(request, replaySelection);
    await limitRate(who);
    return json(await replayPreview(await getContext(), params, selection));
  });
}
