// GET /api/agent/receive?endpointId=&eventTypeId=&waitSeconds=&exclude=&excludeId=: long-poll for the oldest pending
// handoff of the endpoint (non-claiming: handed out again until settled, never after). 200 with the handoff, 204 when
// none came within waitSeconds (<= 30). The Agent role on the endpoint (or Operator); audited.
import { agentCall, agentInput } from '../../../../server/agent/call.ts';
import { receivePendingHandoff } from '../../../../server/agent/handoffs.ts';
import { receiveQuery } from '../../../../server/agent/schemas.ts';
import { requireEndpoint, requireEventType } from '../../../../server/api.ts';
import { handle, json, parseOr400 } from '../../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    // Refused (401/403) before the query is validated; a bad query is then audited and counted (agentInput).
    const q = await agentInput(request, 'agent.receive', () => parseOr400(receiveQuery, receiveInput(new URL(request.url).searchParams), 'query'));
    const found = await agentCall(
      request,
      'agent.receive',
      q.endpointId,
      {},
      async (ctx) => {
        requireEndpoint(ctx, q.endpointId);
        requireEventType(ctx, q.eventTypeId);
        return receivePendingHandoff(ctx.store, q, q.waitSeconds, request.signal);
      },
      (h) => ({ handedOut: h?.eventId ?? null, messageId: h?.messageId ?? null, waitSeconds: q.waitSeconds }),
    );
    return found ? json(found) : new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } });
  });
}

/** The query's fields, `excludeId` with every value it is given (repeated, one id each); the rest by their last value. */
function receiveInput(params: URLSearchParams): Record<string, unknown> {
  return { ...Object.fromEntries(params), excludeId: params.getAll('excludeId') };
}
