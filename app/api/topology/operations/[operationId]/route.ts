// GET /api/topology/operations/{operationId}: a replay's progress and outcome. Any role may ask, but an operation
// names the message ids of one subscription's dead letters: only a caller who may read that topic's endpoint
// (platform topics: a role held site-wide) gets it; anybody else gets the same 404 as for an unknown id.
import { authorize, inScope, readScope } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, notFound, parseOr400, type RouteContext } from '../../../../../server/http.ts';
import { operation, operationParams } from '../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ operationId: string }>): Promise<Response> {
  return handle(async () => {
    const { operationId } = parseOr400(operationParams, await context.params, 'operation');
    const who = await authorize(request, 'read');
    const ctx = await getContext();
    const op = await operation(ctx, operationId);
    const endpointId = ctx.catalog.endpoints.find((e) => e.id.toLowerCase() === op.topic.toLowerCase())?.id ?? null;
    if (!inScope(readScope(who), endpointId)) throw notFound(`operation ${operationId} is not known`);
    return json(op);
  });
}
