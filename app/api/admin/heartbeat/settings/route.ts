// PUT /api/admin/heartbeat/settings with `{ enabled?, intervalSeconds?, timeoutSeconds?, version }`: saved clamped,
// audited; `version` is the settings.version read from GET /api/admin/health (428 without it, 409 and nothing applied
// when the settings changed since). Answers the stored settings with their new version. Owner site-wide.
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
