// POST /api/admin/heartbeat/send-now: one probe per included endpoint now, whatever the schedule; `{ count }`.
// Operator site-wide (a probe changes no setting).
import { audited, authorize } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json } from '../../../../../server/http.ts';
import { sendHeartbeatNow } from '../../../../../server/heartbeat/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'heartbeat.send');
    const ctx = await getContext();
    return json(await audited(who, () => sendHeartbeatNow(ctx, who.user), (r) => ({ ...r })));
  });
}
