// GET /api/topology/subscriptions/{topic}/{subscription}/deadletters?from=&pageSize=&reason=: a page of dead letters.
// Bodies included, so Reader of the topic's endpoint (site-wide for platform topics).
import { getContext } from '../../../../../../../server/context.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../../../server/http.ts';
import { authorizeDeadLetterRead } from '../../../../../../../server/subscriptions/authz.ts';
import { deadLetterQuery, deadLetters, subscriptionParams } from '../../../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ topic: string; subscription: string }>): Promise<Response> {
  return handle(async () => {
    const params = parseOr400(subscriptionParams, await context.params, 'subscription');
    const url = new URL(request.url);
    const query = parseOr400(deadLetterQuery, Object.fromEntries(url.searchParams), 'query');
    await authorizeDeadLetterRead(request, params);
    return json(await deadLetters(await getContext(), params, query));
  });
}
