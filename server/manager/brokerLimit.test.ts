// The console reads the broker's per-message size from the Manager topic when it opens its connections
// (server/messageSize.ts BrokerMessageSize) and holds its pre-checks to it. On the embedded emulator as a Premium
// namespace would be: a 1 MiB message limit and the Manager topic reporting maxMessageSizeInKilobytes 1024. An edited
// resubmit of 300 KB - over the Standard tier's 256 KB the console held every broker to before - is sent. Without the
// Manage right (a Send-only key on the topic, the real admin client's 401) or when the topic reports no size, the
// Standard tier's limit is used, and the fallback is logged once, naming no key.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKey } from '../../emulator/auth/policies.ts';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { seedEvent } from '../testing/seed.ts';
import { BROKER_MESSAGE_BYTES, BrokerMessageSize } from '../messageSize.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
const SEND_KEY = generateKey();
const stack = useConsoleStack({
  database: 'brokerlimit',
  emulator: { maxMessageSizeBytes: 1024 * 1024 },
  // Before the console opens its context (the route's first getContext), as a Premium namespace's topic is set up.
  prepare: async (s) => {
    const manager = await s.serviceBus.admin.getTopic(Topic.Manager);
    await s.serviceBus.admin.updateTopic({
      ...manager,
      maxMessageSizeInKilobytes: 1024,
      authorizationRules: [{ claimType: 'SharedAccessKey', keyName: 'manager-send', accessRights: ['Send'], primaryKey: SEND_KEY }],
    });
  },
});

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = (body: unknown) => new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const order = (orderId: string, bytes: number) => ({ orderId, customerId: 'CUST-1', lines: [{ sku: 'x'.repeat(bytes), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' });

function messagesOnBroker(): number {
  const broker = stack.emulator.broker;
  return broker.listTopics().reduce((n, t) => n + broker.listSubscriptions(t.name).reduce((m, s) => m + broker.getSubscriptionRuntime(t.name, s.subscriptionName).totalMessageCount, 0), 0);
}

/** A logger that keeps what it is given. */
function recorder() {
  const lines: Array<{ level: 'info' | 'warn'; o: object; m: string }> = [];
  return { lines, info: (o: object, m: string) => lines.push({ level: 'info', o, m }), warn: (o: object, m: string) => lines.push({ level: 'warn', o, m }) };
}

describe("the broker's message size, read from the Manager topic", () => {
  test('a topic reporting 1024 KB: an edited resubmit of 300 KB is sent', async () => {
    const e = await seedEvent(stack.store, Date.now() - 60_000, { endpointId: EP, eventId: 'ORD-premium', sessionId: 'S-premium', eventTypeId: 'OrderPlaced', payload: order('ORD-premium', 10) }, MessageType.ErrorResponse, { errorText: 'boom' });
    const onBroker = messagesOnBroker();
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: order('ORD-premium', 300_000), lastMessageId: e.lastMessageId }), params({ endpointId: EP, eventId: e.eventId }));
    assert.equal(res.status, 200, (await res.clone().text()).slice(0, 500));
    assert.equal(((await res.json()) as { outcome: string }).outcome, 'sent');
    assert.ok(messagesOnBroker() > onBroker, 'the command is on the broker');
  });

  test('read with Manage: 1 MiB, logged once', async () => {
    const log = recorder();
    assert.equal(await new BrokerMessageSize(stack.serviceBus.admin, Topic.Manager, log).bytes(), 1024 * 1024);
    assert.deepEqual(log.lines.map((l) => [l.level, l.o]), [['info', { topic: Topic.Manager, maxMessageSizeInKilobytes: 1024 }]]);
  });

  test('no Manage right (a Send-only key): the Standard limit, logged once with the status, never the key', async () => {
    const cs = stack.emulator.connectionString.replace(/SharedAccessKeyName=[^;]+;SharedAccessKey=[^;]+/, `SharedAccessKeyName=manager-send;SharedAccessKey=${SEND_KEY}`);
    const sendOnly = createServiceBusClients(cs);
    try {
      const log = recorder();
      assert.equal(await new BrokerMessageSize(sendOnly.admin, Topic.Manager, log).bytes(), BROKER_MESSAGE_BYTES);
      assert.equal(log.lines.length, 1);
      assert.equal(log.lines[0]!.level, 'warn');
      assert.equal((log.lines[0]!.o as { statusCode?: number }).statusCode, 401, JSON.stringify(log.lines[0]));
      assert.match(String((log.lines[0]!.o as { reason?: string }).reason), /no Manage right/, 'a 401 says why, and that it is not read again');
      assert.ok(!JSON.stringify(log.lines).includes(SEND_KEY) && !JSON.stringify(log.lines).includes(stack.emulator.key), 'no key logged');
    } finally {
      await sendOnly.close();
    }
  });

  test('a topic that reports no size, or one Service Bus does not allow: the Standard limit', async () => {
    for (const reported of [{}, { maxMessageSizeInKilobytes: 0 }, { maxMessageSizeInKilobytes: 1.5 }]) {
      const log = recorder();
      const admin = { getTopic: async () => reported } as unknown as ConstructorParameters<typeof BrokerMessageSize>[0];
      assert.equal(await new BrokerMessageSize(admin, Topic.Manager, log).bytes(), BROKER_MESSAGE_BYTES);
      assert.deepEqual(log.lines.map((l) => l.level), ['warn']);
    }
  });
});
