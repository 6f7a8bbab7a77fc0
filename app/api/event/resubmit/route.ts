// POST /api/event/resubmit with `{ endpointId, eventIds }`: bulk resubmit of stored payloads, one result per event.
import { requireEndpoint, runBulk } from '../../../../server/api.ts';
import { authorize } from '../../../../server/auth.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../server/http.ts';
import { bulkBody } from '../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const body = await readJsonBody(request, bulkBody);
    const who = authorize(request, 'resubmit', body.endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, body.endpointId);
    return json(await runBulk(ctx, body.endpointId, body.eventIds, { kind: 'resubmit' }, who.user));
  });
}
