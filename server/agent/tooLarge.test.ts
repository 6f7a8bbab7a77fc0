// A settlement result or a publish payload too large for the broker (embedded stack: the emulator's 256 KB message
// limit, sign-in on, sealed session cookies, the console's real route handlers and the SDK's AgentClient). Refused
// 413 naming the limit before anything is claimed or sent, and the client does not retry it. Before, the broker's
// refusal (MessageSizeExceeded) was answered 503 "try again": the client retried it, and every settlement attempt
// wrote a claim, its undo and a CommandNotSent entry into the event's history.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { agentAs } from './testing/agentRoutes.ts';
import { seedEvent } from '../testing/seed.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { AgentRequestError } from '../../packages/sdk/src/agentClient.ts';
import { MAX_SENT_BODY_BYTES } from '../messageSize.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'too-large-test-session-secret-0123456789-abcdef';
const stack = useConsoleStack({
  database: 'toolarge',
  env: oidcTestEnv(SECRET, { roles: { 'Ledger.Import': 'Agent:erpendpoint', 'Order.Publish': 'Agent:storefrontendpoint' }, groups: {} }),
});

const refusal = async (p: Promise<unknown>): Promise<AgentRequestError> => {
  const err = await p.then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof AgentRequestError, String(err));
  return err;
};

describe('too large for the broker', () => {
  test('a settlement with a 300 KB result is refused 413 before its claim, once; the handoff stays pending, its history untouched', async () => {
    const h = await seedEvent(stack.store, Date.now() - 60_000, { endpointId: 'erpendpoint', eventId: 'INV-big', sessionId: 'S-big', eventTypeId: 'InvoiceIssued', payload: { invoiceId: 'INV-big' } }, MessageType.PendingHandoffResponse, { handoffReason: 'Ledger import queued' });
    const { client, seen } = agentAs(SECRET, { kind: 'user', id: 'oid-ledger', name: 'ledger@test', roles: ['Ledger.Import'], groups: [] });
    const err = await refusal(client.complete({ endpointId: 'erpendpoint', eventId: h.eventId, messageId: h.lastMessageId }, { blob: 'x'.repeat(300_000) }));
    assert.equal(err.status, 413, err.message);
    assert.match(err.detail, new RegExp(`at most ${MAX_SENT_BODY_BYTES} bytes`));
    assert.equal(seen.requests, 1, 'not retried');
    const trail = (await stack.store.listAudits(h.eventId)).items.map((a) => a.type);
    assert.deepEqual(trail.filter((t) => t === 'CommandNotSent'), [], 'no claim undone');
    const row = (await stack.store.getEvent('erpendpoint', h.eventId, 5))?.rows[0];
    assert.deepEqual([row?.status, row?.lastMessageId], ['Pending', h.lastMessageId], 'the handoff as it was, never claimed');
  });

  test('a publish with a 300 KB payload is refused 413 before it is sent, once', async () => {
    const { client, seen } = agentAs(SECRET, { kind: 'user', id: 'oid-orders', name: 'orders@test', roles: ['Order.Publish'], groups: [] });
    const order = { orderId: 'ORD-big', customerId: 'C-1', lines: [{ sku: 'x'.repeat(300_000), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' };
    const err = await refusal(client.publish({ eventTypeId: 'OrderPlaced', payload: order }));
    assert.equal(err.status, 413, err.message);
    assert.match(err.detail, /256 KB/);
    assert.equal(seen.requests, 1, 'not retried');
  });

  test('a publish whose payload fits as JSON but not as sent (quote-dense, escaped again inside EventJson) is refused 413 before its record is claimed', async () => {
    const { client, seen } = agentAs(SECRET, { kind: 'user', id: 'oid-orders', name: 'orders@test', roles: ['Order.Publish'], groups: [] });
    const order = { orderId: 'ORD-quotes', customerId: 'C-1', lines: [{ sku: '"'.repeat(122_000), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' };
    const asJson = Buffer.byteLength(JSON.stringify(order), 'utf8');
    assert.ok(asJson <= MAX_SENT_BODY_BYTES && asJson > MAX_SENT_BODY_BYTES - 2_000, `the payload's JSON is just under the limit: ${asJson}`);
    const err = await refusal(client.publish({ eventTypeId: 'OrderPlaced', payload: order }));
    assert.equal(err.status, 413, err.message);
    // The pre-check's answer (the body's size, the limit), not the broker's refusal after a claim.
    assert.match(err.detail, new RegExp(`is \\d+ bytes as sent; at most ${MAX_SENT_BODY_BYTES} bytes`));
    assert.equal(seen.requests, 1, 'not retried');
  });
});
