// PUT /api/admin/heartbeat/settings with `{ enabled?, intervalSeconds?, timeoutSeconds? }`: saved clamped, audited.
import { getContext } from '../../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../../server/http.ts';
import { heartbeatSettingsBody, updateHeartbeatSettings } from '../../../../../server/heartbeat/routes.ts';
import { authorizeOps } from '../../../../../server/subscriptions/authz.ts';

export const dynamic = 'force-dynamic';

export function PUT(request: Request): Promise<Response> {
  return handle(async () => {
    const body = await readJsonBody(request, heartbeatSettingsBody);
    const who = authorizeOps(request, 'heartbeat');
    return json(await updateHeartbeatSettings(await getContext(), body, who.user));
  });
}
