// PUT /api/admin/heartbeat/settings with `{ enabled?, intervalSeconds?, timeoutSeconds? }`: saved clamped, audited.
// Owner site-wide.
import { audited, authorize } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../../server/http.ts';
import { heartbeatSettingsBody, updateHeartbeatSettings } from '../../../../../server/heartbeat/routes.ts';

export const dynamic = 'force-dynamic';

export function PUT(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'heartbeat.settings');
    const body = await readJsonBody(request, heartbeatSettingsBody);
    const ctx = await getContext();
    return json(await audited(who, () => updateHeartbeatSettings(ctx, body, who.user), { requested: body }));
  });
}
