// GET /api/endpoints: every catalog endpoint with its status counts, oldest failure, last activity, heartbeat.
import { handle, json } from '../../../server/http.ts';
import { readEndpoints } from '../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => json(await readEndpoints(request)));
}
