// POST /api/admin/alerts/channels/{channelId}/test: sends a test notice now and says whether it arrived.
// Owner site-wide (it makes the console call out); audited.
import { audited, authorize } from '../../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../../server/context.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../../../server/http.ts';
import { alertIdSchema } from '../../../../../../../server/alerts/model.ts';
import { testChannel } from '../../../../../../../server/alerts/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, { params }: RouteContext<{ channelId: string }>): Promise<Response> {
  return handle(async () => {
    const channelId = parseOr400(alertIdSchema, (await params).channelId, 'channel id');
    const who = await authorize(request, 'alerts.manage', undefined, { target: `alert channel ${channelId}` });
    const ctx = await getContext();
    return json(await audited(who, () => testChannel(ctx, channelId), (r) => ({ channelId, delivered: r.ok })));
  });
}
