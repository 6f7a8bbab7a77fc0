// POST /api/admin/alerts/channels: a new notification channel; its secrets (URL, headers, SMTP password) are
// stored sealed with NIMBUS_ALERTS_KEY and never shown back. Owner site-wide; audited without the secrets.
// (The channels are listed by GET /api/admin/alerts/rules.)
import { actorOf, audited, authorize } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../../server/http.ts';
import { channelInputSchema } from '../../../../../server/alerts/model.ts';
import { channelAuditDetails, createChannel } from '../../../../../server/alerts/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'alerts.manage');
    const body = await readJsonBody(request, channelInputSchema);
    const ctx = await getContext();
    const details = channelAuditDetails(body);
    return json(await audited(who, () => createChannel(ctx, body, actorOf(who)), (c) => ({ channelId: c.id, ...details }), 201), 201);
  });
}
