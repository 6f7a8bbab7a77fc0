// A command reaches three topics: the Manager topic, its endpoint's topic (auto-forwarded), and the Resolver topic (the
// endpoint topic's Resolver subscription forwards a copy of every request). The console holds it to the smallest size
// it has read (server/messageSize.ts CommandMessageSize). Here the Manager and billingendpoint topics report 1024 KB and
// the Resolver topic keeps the emulator's per-topic default, 256 KB: a 300 KB edited resubmit is refused 413 naming
// 256 KB before anything is claimed. Before, it was sent: a namespace enforcing the Resolver topic's size refuses the
// copy's forward, so the Resolver never records the command and Reconcile reads the row as sent. (The emulator
// reports a topic's size as set but enforces only its namespace-wide limit, 1 MiB here: the refused forward itself is
// not reproduced; brokerLimit.test.ts has the Resolver topic at 1024 KB and the same resubmit sent.)
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { seedEvent } from '../testing/seed.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
const stack = useConsoleStack({
  database: 'resolvertopiclimit',
  emulator: { maxMessageSizeBytes: 1024 * 1024 },
  prepare: async (s) => {
    for (const topic of [Topic.Manager, EP]) await s.serviceBus.admin.updateTopic({ ...(await s.serviceBus.admin.getTopic(topic)), maxMessageSizeInKilobytes: 1024 });
    assert.equal((await s.serviceBus.admin.getTopic(Topic.Resolver)).maxMessageSizeInKilobytes, 256, "the emulator's per-topic default");
  },
});

const order = (orderId: string, bytes: number) => ({ orderId, customerId: 'CUST-1', lines: [{ sku: 'x'.repeat(bytes), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' });

describe('the Resolver topic holds commands to its size', () => {
  test('a 300 KB resubmit with the Resolver topic at 256 KB: 413 naming 256 KB; row, history and audit unchanged, nothing sent', async () => {
    const e = await seedEvent(stack.store, Date.now() - 60_000, { endpointId: EP, eventId: 'ORD-resolver-hop', sessionId: 'S-resolver-hop', eventTypeId: 'OrderPlaced', payload: order('ORD-resolver-hop', 10) }, MessageType.ErrorResponse, { errorText: 'boom' });
    const snapshot = async () => ({
      row: await stack.store.getStatusRow(EP, e.eventId, e.sessionId),
      history: (await stack.store.listHistory(e.eventId)).items,
      audits: (await stack.store.listAudits(e.eventId)).items,
    });
    const before = await snapshot();
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(
      new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: order(e.eventId, 300_000), lastMessageId: e.lastMessageId }) }),
      { params: Promise.resolve({ endpointId: EP, eventId: e.eventId }) },
    );
    const body = (await res.json()) as { detail?: string };
    assert.equal(res.status, 413, JSON.stringify(body).slice(0, 500));
    assert.match(body.detail ?? '', /256 KB message limit/);
    assert.deepEqual(await snapshot(), before, 'row, history and audit trail unchanged');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
  });
});
