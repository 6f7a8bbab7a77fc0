// GET /api/admin/health: heartbeat settings, the Resolver's liveness and every endpoint's heartbeat status.
import { handle, json } from '../../../../server/http.ts';
import { readHealth } from '../../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => json(await readHealth(request)));
}
