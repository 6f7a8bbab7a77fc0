// Who a refused second handoff settlement names (embedded stack, sign-in on, sealed session cookies): a settlement
// repeated with another error text is refused 409 saying when the first was sent. A caller who may read the event's
// audit trail (an Operator on the endpoint) is told by whom, as on the console; an Agent-only caller is not - the
// operator's name is not its to learn through the Agent API - it is told "another principal", and still the time.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import type * as ContextModule from '../context.ts';
import { msg, uniq } from '../../lib/store/testing/fixtures.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'settle-conflict-names-test-secret-0123456789-abcdef';
const EP = 'erpendpoint';
const OPERATOR = 'Alice Operator';

let getContext: typeof ContextModule.getContext;
const stack = useConsoleStack({
  database: 'settlenames',
  env: oidcTestEnv(SECRET, { roles: { 'Ledger.Import': `Agent:${EP}`, 'Erp.Ops': `Operator:${EP}` }, groups: {} }),
  seed: true,
  prepare: async () => void ({ getContext } = await import('../context.ts')),
});

const principal = (id: string, role: string): Principal => ({ kind: 'user', id: `oid-${id}`, name: `${id}@test`, roles: [role], groups: [] });

function settleRequest(who: Principal, body: unknown): Request {
  return new Request('http://127.0.0.1:3000/api/agent/settle', {
    method: 'POST',
    headers: { host: '127.0.0.1:3000', 'content-type': 'application/json', cookie: `${SESSION_COOKIE}=${sealSession(who, { secret: SECRET, maxAgeSeconds: 600 })}` },
    body: JSON.stringify(body),
  });
}

/** A pending handoff that an operator has failed with 'disk full' (claimed, sent, receipted); its handoff id. */
async function failedByOperator(eventId: string): Promise<string> {
  const sessionId = `S-${eventId}`;
  const request = msg(MessageType.EventRequest, { endpointId: EP, eventId, sessionId, payload: { eventId } });
  const handoff = msg(MessageType.PendingHandoffResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, handoffReason: 'ERP import' });
  for (const m of [request, handoff]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  const messageId = (await stack.store.getStatusRow(EP, eventId, sessionId))!.lastMessageId;
  const first = await (await getContext()).manager.execute(EP, eventId, { kind: 'handoffFail', messageId, errorText: 'disk full' }, OPERATOR);
  assert.equal(first.outcome, 'sent');
  return messageId;
}

describe('a second handoff settlement with another text: who the 409 names', () => {
  test('an Agent-only caller learns when, not who; an Operator on the endpoint learns both', async () => {
    const { POST } = await import('../../app/api/agent/settle/route.ts');
    const eventId = uniq('settled');
    const messageId = await failedByOperator(eventId);
    const body = { endpointId: EP, eventId, messageId, outcome: 'failed', errorText: 'quota exceeded' };

    const asAgent = await POST(settleRequest(principal('ledger', 'Ledger.Import'), body));
    assert.equal(asAgent.status, 409);
    const agentDetail = ((await asAgent.json()) as { detail: string }).detail;
    assert.match(agentDetail, /already sent \(by another principal at \d{4}-\d\d-\d\dT[\d:.]+Z, with a different error text\)/, agentDetail);
    assert.doesNotMatch(agentDetail, new RegExp(OPERATOR), "the operator's name is not the agent's to learn");

    const asOperator = await POST(settleRequest(principal('ops', 'Erp.Ops'), body));
    assert.equal(asOperator.status, 409);
    const operatorDetail = ((await asOperator.json()) as { detail: string }).detail;
    assert.match(operatorDetail, new RegExp(`already sent \\(by ${OPERATOR} at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, with a different error text\\)`), operatorDetail);
  });
});
