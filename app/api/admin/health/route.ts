// GET /api/admin/health: heartbeat settings, the Resolver's liveness and every endpoint's heartbeat status.
import { authorize } from '../../../../server/auth/authorize.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json } from '../../../../server/http.ts';
import { healthOverview } from '../../../../server/heartbeat/routes.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authorize(request, 'read');
    return json(await healthOverview(await getContext()));
  });
}
