// GET /api/endpoints/{endpointId}: one endpoint's catalog facts and status counts (the Endpoint and Event pages).
import { handle, json, type RouteContext } from '../../../../server/http.ts';
import { readEndpoint } from '../../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ endpointId: string }>): Promise<Response> {
  return handle(async () => json(await readEndpoint(request, await context.params)));
}
