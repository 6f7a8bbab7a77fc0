// GET /api/endpoints/{endpointId}/events/{eventId}: row, history, audits, parked siblings.
import { handle, json, type RouteContext } from '../../../../../../server/http.ts';
import { readEventDetails } from '../../../../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ endpointId: string; eventId: string }>): Promise<Response> {
  return handle(async () => json(await readEventDetails(request, await context.params)));
}
