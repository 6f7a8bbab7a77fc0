// GET /api/endpoints/{endpointId}/events?status=&eventTypeId=&sessionId=&eventId=&from=&to=&q=&continuation=
import { handle, json, type RouteContext } from '../../../../../server/http.ts';
import { readEndpointEvents } from '../../../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ endpointId: string }>): Promise<Response> {
  return handle(async () =>
    json(await readEndpointEvents(request, await context.params, Object.fromEntries(new URL(request.url).searchParams))),
  );
}
