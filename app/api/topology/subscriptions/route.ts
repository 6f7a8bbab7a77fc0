// GET /api/topology/subscriptions: every topic with its subscriptions, counts and rule comparison.
import { handle, json } from '../../../../server/http.ts';
import { readTopology } from '../../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => json(await readTopology(request)));
}
