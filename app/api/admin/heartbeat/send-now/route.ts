// POST /api/admin/heartbeat/send-now: one probe per included endpoint now, whatever the schedule; `{ count }`.
import { getContext } from '../../../../../server/context.ts';
import { handle, json } from '../../../../../server/http.ts';
import { sendHeartbeatNow } from '../../../../../server/heartbeat/routes.ts';
import { authorizeOps } from '../../../../../server/subscriptions/authz.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const who = authorizeOps(request, 'heartbeat');
    return json(await sendHeartbeatNow(await getContext(), who.user));
  });
}
