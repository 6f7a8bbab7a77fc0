// GET /api/topology/subscriptions/{topic}/{subscription}/deadletters?from=&pageSize=&reason=: a page of dead letters.
// Bodies included, so Reader of the topic's endpoint (site-wide for platform topics).
import { handle, json, type RouteContext } from '../../../../../../../server/http.ts';
import { readDeadLetters } from '../../../../../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ topic: string; subscription: string }>): Promise<Response> {
  return handle(async () => json(await readDeadLetters(request, await context.params, Object.fromEntries(new URL(request.url).searchParams))));
}
