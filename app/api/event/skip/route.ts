// POST /api/event/skip with `{ endpointId, eventIds }`: bulk skip, one result per event.
import { requireEndpoint, runBulk } from '../../../../server/api.ts';
import { authorize } from '../../../../server/auth.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../server/http.ts';
import { bulkBody } from '../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const body = await readJsonBody(request, bulkBody);
    const who = authorize(request, 'skip', body.endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, body.endpointId);
    return json(await runBulk(ctx, body.endpointId, body.eventIds, { kind: 'skip' }, who.user));
  });
}
