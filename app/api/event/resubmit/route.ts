// POST /api/event/resubmit with `{ endpointId, eventIds }`: bulk resubmit of stored payloads, one result per event.
// Operator on the endpoint.
import { requireEndpoint, runBulk } from '../../../../server/api.ts';
import { audited, authorize, authorizeBeforeBody, actorOf } from '../../../../server/auth/authorize.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../server/http.ts';
import { bulkBody } from '../../../../server/schemas.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    // The body names the endpoint; nobody without a role that could allow this gets the body parsed.
    await authorizeBeforeBody(request, 'resubmit');
    const body = await readJsonBody(request, bulkBody);
    const who = await authorize(request, 'resubmit', body.endpointId);
    const ctx = await getContext();
    requireEndpoint(ctx, body.endpointId);
    const result = await audited(
      who,
      () => runBulk(ctx, body.endpointId, body.eventIds, { kind: 'resubmit' }, actorOf(who)),
      (r) => ({ bulk: true, eventIds: body.eventIds.slice(0, 100), requested: r.requested, sent: r.sent, duplicates: r.duplicates, failed: r.failed }),
    );
    return json(result);
  });
}
