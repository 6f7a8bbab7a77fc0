// PUT /api/admin/heartbeat/endpoints/{endpointId} with `{ included }`: include or exclude it from the probes.
import { getContext } from '../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../server/http.ts';
import { endpointInclusionBody, setEndpointIncluded } from '../../../../../../server/heartbeat/routes.ts';
import { endpointParams } from '../../../../../../server/schemas.ts';
import { authorizeOps } from '../../../../../../server/subscriptions/authz.ts';

export const dynamic = 'force-dynamic';

export function PUT(request: Request, context: RouteContext<{ endpointId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId } = parseOr400(endpointParams, await context.params, 'endpoint');
    const body = await readJsonBody(request, endpointInclusionBody);
    const who = authorizeOps(request, 'heartbeat');
    return json(await setEndpointIncluded(await getContext(), endpointId, body.included, who.user));
  });
}
