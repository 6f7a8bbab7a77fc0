// POST /api/agent/publish `{ eventTypeId, endpointId?, sessionId?, payload }`: publish as one of the agent's
// endpoints (endpointId may be left out when it holds exactly one), validated against the catalog's JSON schema
// (400 with the schema error). Agent role on the endpoint (or Operator); audited. A retry of a publish made is
// answered its first outcome with `replayed: true`, not sent again (server/agent/publishRecords.ts).
import { agentCall, agentInput } from '../../../../server/agent/call.ts';
import { principalKey } from '../../../../server/auth/principal.ts';
import { publishAsAgent } from '../../../../server/agent/publish.ts';
import { publishBody } from '../../../../server/agent/schemas.ts';
import { agentEndpointOf } from '../../../../server/agent/whoami.ts';
import { handle, json, readJsonBody } from '../../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    // Refused (401/403) before the body is read; a bad body or a missing endpointId is then audited and counted.
    const { body, endpointId } = await agentInput(request, 'agent.publish', async () => {
      const b = await readJsonBody(request, publishBody);
      return { body: b, endpointId: b.endpointId ?? (await agentEndpointOf(request)) };
    });
    const r = await agentCall(
      request,
      'agent.publish',
      endpointId,
      { target: `publish ${body.eventTypeId}` },
      (ctx, who) => publishAsAgent(ctx, endpointId, body.eventTypeId, body.payload, body.sessionId, principalKey(who.principal)),
      (p) => ({ eventTypeId: p.eventTypeId, messageId: p.messageId, sessionId: p.sessionId, ...(p.replayed ? { replayed: true } : {}) }),
    );
    return json(r);
  });
}
