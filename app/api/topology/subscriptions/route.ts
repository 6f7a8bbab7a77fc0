// GET /api/topology/subscriptions: every topic with its subscriptions, counts and rule comparison.
import { authorize } from '../../../../server/auth/authorize.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json } from '../../../../server/http.ts';
import { topologyOverview } from '../../../../server/subscriptions/routes.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authorize(request, 'read');
    return json(await topologyOverview(await getContext()));
  });
}
