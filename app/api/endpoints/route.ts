// GET /api/endpoints: every catalog endpoint with its status counts, oldest failure, last activity, heartbeat.
import { authorize } from '../../../server/auth/authorize.ts';
import { getContext } from '../../../server/context.ts';
import { handle, json } from '../../../server/http.ts';
import { endpointsOverview } from '../../../server/queries.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authorize(request, 'read');
    const ctx = await getContext();
    return json({ endpoints: await endpointsOverview(ctx.store, ctx.catalog), generatedAt: new Date().toISOString() });
  });
}
