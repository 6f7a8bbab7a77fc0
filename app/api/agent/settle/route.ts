// POST /api/agent/settle `{ endpointId, eventId, messageId, outcome: 'completed' | 'failed', note?, result?,
// errorText?, errorType? }`: the same path as the operator's handoff routes (Manager claim, command, receipt, the
// agent as auditor). 409 when the event is no longer a pending handoff - a second settlement included. Agent role
// on the endpoint (or Operator); audited.
import { agentCall, agentInput } from '../../../../server/agent/call.ts';
import { settleBody } from '../../../../server/agent/schemas.ts';
import { settleHandoff } from '../../../../server/agent/settle.ts';
import { requireEndpoint } from '../../../../server/api.ts';
import { handle, json, readJsonBody } from '../../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    // Refused (401/403) before the body is read; a bad body is then audited and counted (agentInput).
    const body = await agentInput(request, 'agent.settle', () => readJsonBody(request, settleBody));
    const r = await agentCall(
      request,
      'agent.settle',
      body.endpointId,
      { eventId: body.eventId, target: `handoff ${body.messageId}` },
      async (ctx, who) => {
        requireEndpoint(ctx, body.endpointId);
        return settleHandoff(ctx, body, who);
      },
      (x) => ({ settlement: body.outcome, messageId: x.messageId, outcome: x.outcome }),
    );
    return json(r);
  });
}
