// The broker refuses a command for its size after the console's own check let it through: an emulator whose message
// limit (128 KB) is below the console's (server/messageSize.ts), so the pre-check passes and the broker answers
// MessageSizeExceeded. Through the real routes on the embedded emulator and Cosmos: answered 413 (the same command is
// refused again - not 503 "try again"), the claim undone (the event back as it was), the refusal audited
// (CommandNotSent, the only trace a claim leaves) and nothing on the broker. One event alone (its send refused by the
// broker) and in a bulk lot (its message does not fit the broker's batch, which the client sizes from the link).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AuditType } from '../../lib/store/index.ts';
import { MessageType } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { seedEvent } from '../testing/seed.ts';
import { MAX_SENT_BODY_BYTES } from '../messageSize.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
const BROKER_LIMIT = 128 * 1024;
const stack = useConsoleStack({ database: 'brokersizerefusal', emulator: { maxMessageSizeBytes: BROKER_LIMIT } });

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = (body?: unknown) =>
  new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
/** An OrderPlaced payload of about `bytes`. */
const order = (orderId: string, bytes: number) => ({ orderId, customerId: 'CUST-1', lines: [{ sku: 'x'.repeat(bytes), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' });
/** Between the broker's limit and the console's: the console's check passes, the broker refuses. */
const BETWEEN = 160_000;

async function failedEvent(eventId: string, payload: Record<string, unknown>) {
  return seedEvent(stack.store, Date.now() - 60_000, { endpointId: EP, eventId, sessionId: `S-${eventId}`, eventTypeId: 'OrderPlaced', payload }, MessageType.ErrorResponse, { errorText: 'boom' });
}

/** The event as it was (the claim undone), its only new audit the broker's refusal, and no receipt. */
async function assertClaimUndone(e: { eventId: string; sessionId: string; lastMessageId: string }) {
  const row = await stack.store.getStatusRow(EP, e.eventId, e.sessionId);
  assert.deepEqual([row?.status, row?.lastMessageId], ['Failed', e.lastMessageId], 'the claim undone');
  const audits = (await stack.store.listAudits(e.eventId)).items;
  assert.deepEqual(audits.map((a) => a.type), [AuditType.CommandNotSent], 'the refusal audited, no receipt');
  assert.equal(JSON.parse(audits[0]!.data ?? '{}').brokerRefused, true);
}

describe('the broker refuses a command for its size that the console let through', () => {
  test('the limits are as this test needs them', () => {
    assert.ok(BETWEEN + 20_000 < MAX_SENT_BODY_BYTES && BETWEEN > BROKER_LIMIT);
  });

  test('an edited resubmit is answered 413, its claim undone, nothing sent', async () => {
    const e = await failedEvent('ORD-between-1', order('ORD-between-1', 10));
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: order('ORD-between-1', BETWEEN), lastMessageId: e.lastMessageId }), params({ endpointId: EP, eventId: e.eventId }));
    const body = (await res.json()) as { detail: string };
    assert.equal(res.status, 413, JSON.stringify(body).slice(0, 500));
    assert.match(body.detail, /larger than Service Bus accepts; nothing was sent and the event was put back to Failed/);
    await assertClaimUndone(e);
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
  });

  test('a plain resubmit in a bulk lot is answered 413 for its event, its claim undone, nothing sent', async () => {
    const e = await failedEvent('ORD-between-2', order('ORD-between-2', BETWEEN));
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const bulk = await import('../../app/api/event/resubmit/route.ts');
    const many = await bulk.POST(post({ endpointId: EP, eventIds: [e.eventId] }));
    assert.equal(many.status, 200, await many.clone().text());
    const result = (await many.json()) as { sent: number; results: Array<{ eventId: string; status?: number; detail?: string }> };
    assert.equal(result.sent, 0);
    assert.equal(result.results[0]?.status, 413, JSON.stringify(result.results[0]).slice(0, 500));
    await assertClaimUndone(e);
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
  });
});
