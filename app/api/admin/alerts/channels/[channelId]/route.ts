// PUT /api/admin/alerts/channels/{channelId}: replaces a channel's settings (a secret left out keeps the stored
// one, unless the edit moves the channel to another server: then it must be given again); DELETE removes a channel
// no rule uses. Owner site-wide; audited without the secrets, with the destination settings an edit changes.
import { actorOf, audited, authorize } from '../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../server/http.ts';
import { alertIdSchema, channelInputSchema } from '../../../../../../server/alerts/model.ts';
import { channelAuditDetails, channelEditChanges, deleteChannel, updateChannel } from '../../../../../../server/alerts/routes.ts';

export const dynamic = 'force-dynamic';

export function PUT(request: Request, { params }: RouteContext<{ channelId: string }>): Promise<Response> {
  return handle(async () => {
    const channelId = parseOr400(alertIdSchema, (await params).channelId, 'channel id');
    const who = await authorize(request, 'alerts.manage', undefined, { target: `alert channel ${channelId}` });
    const body = await readJsonBody(request, channelInputSchema);
    const ctx = await getContext();
    // Read before the edit: the entry says where the channel moves (host, port, recipients, the URL's server).
    const changes = await channelEditChanges(ctx, channelId, body);
    return json(await audited(who, () => updateChannel(ctx, channelId, body, actorOf(who)), { channelId, ...channelAuditDetails(body, changes) }));
  });
}

export function DELETE(request: Request, { params }: RouteContext<{ channelId: string }>): Promise<Response> {
  return handle(async () => {
    const channelId = parseOr400(alertIdSchema, (await params).channelId, 'channel id');
    const who = await authorize(request, 'alerts.manage', undefined, { target: `alert channel ${channelId}` });
    const ctx = await getContext();
    await audited(who, () => deleteChannel(ctx, channelId), { channelId });
    return json({ deleted: channelId });
  });
}
