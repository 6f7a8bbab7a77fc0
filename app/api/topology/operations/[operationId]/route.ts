// GET /api/topology/operations/{operationId}: a replay's progress and outcome.
import { authorize } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../server/http.ts';
import { operation, operationParams } from '../../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ operationId: string }>): Promise<Response> {
  return handle(async () => {
    const { operationId } = parseOr400(operationParams, await context.params, 'operation');
    await authorize(request, 'read');
    return json(await operation(await getContext(), operationId));
  });
}
