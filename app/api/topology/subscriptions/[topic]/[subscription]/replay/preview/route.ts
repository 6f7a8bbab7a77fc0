// POST /api/topology/subscriptions/{topic}/{subscription}/replay/preview with a selection: how many dead letters
// a replay would send, and which other subscriptions the copies would also reach. Changes nothing.
import { authorize } from '../../../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../../../server/http.ts';
import { replayPreview, replaySelection, subscriptionParams } from '../../../../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ topic: string; subscription: string }>): Promise<Response> {
  return handle(async () => {
    const params = parseOr400(subscriptionParams, await context.params, 'subscription');
    const selection = await readJsonBody(request, replaySelection);
    await authorize(request, 'read');
    return json(await replayPreview(await getContext(), params, selection));
  });
}
