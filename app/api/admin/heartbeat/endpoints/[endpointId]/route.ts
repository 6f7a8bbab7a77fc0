// PUT /api/admin/heartbeat/endpoints/{endpointId} with `{ included }`: include or exclude it from the probes.
// A heartbeat setting: Owner of the endpoint.
import { audited, authorize } from '../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../server/http.ts';
import { endpointInclusionBody, setEndpointIncluded } from '../../../../../../server/heartbeat/routes.ts';
import { endpointParams } from '../../../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function PUT(request: Request, context: RouteContext<{ endpointId: string }>): Promise<Response> {
  return handle(async () => {
    const { endpointId } = parseOr400(endpointParams, await context.params, 'endpoint');
    const who = await authorize(request, 'heartbeat.settings', endpointId);
    const body = await readJsonBody(request, endpointInclusionBody);
    const ctx = await getContext();
    return json(await audited(who, () => setEndpointIncluded(ctx, endpointId, body.included, who.user), { included: body.included }));
  });
}
