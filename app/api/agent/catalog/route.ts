// GET /api/agent/catalog: the endpoints this agent holds the Agent's rights on, the event types they produce or
// consume, with JSON schemas (docs/agents.md). The Agent role on some endpoint (or Operator); audited.
import { agentCall } from '../../../../server/agent/call.ts';
import { agentCatalog } from '../../../../server/agent/catalog.ts';
import { handle, json } from '../../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const catalog = await agentCall(request, 'agent.catalog', undefined, {}, async (ctx, who) => agentCatalog(ctx.catalog, who.assignments), (c) => ({
      endpoints: c.endpoints.map((e) => e.id),
    }));
    return json(catalog);
  });
}
