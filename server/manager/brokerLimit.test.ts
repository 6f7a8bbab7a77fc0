// The console reads the broker's per-message size from the Manager topic when it opens its connections
// (server/messageSize.ts BrokerMessageSize) and holds its pre-checks to it. On the embedded emulator as a Premium
// namespace would be: a 1 MiB message limit and the Manager topic reporting maxMessageSizeInKilobytes 1024. An edited
// resubmit of 300 KB - over the Standard tier's 256 KB the console held every broker to before - is sent. Without the
// Manage right (a Send-only key on the topic, the real admin client's 401) or when the topic reports no size, the
// Standard tier's limit is used, and the fallback is logged once, naming no key.
// A command is forwarded from the Manager topic to its endpoint's topic, which may take less: the console holds it to
// the smaller of the two (CommandMessageSize). billingendpoint's topic reports 1024 KB as the Manager topic does;
// shippingendpoint's keeps the emulator's per-topic default, 256 KB: a 300 KB resubmit to it is refused 413 naming
// 256 KB, alone and in a bulk lot, before anything is claimed - before, it was sent (the Manager topic took it) and a
// namespace enforcing the endpoint topic's size refused the forward, leaving the row Pending. The emulator reports a
// topic's maxMessageSizeInKilobytes as set but enforces only its namespace-wide limit (docs/emulator.md): the refused
// forward itself is not reproduced here.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKey } from '../../emulator/auth/policies.ts';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { seedEvent } from '../testing/seed.ts';
import { BROKER_MESSAGE_BYTES, BrokerMessageSize, MAX_SENT_BODY_BYTES } from '../messageSize.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
/** An endpoint whose topic takes less than the Manager topic. */
const SMALL_EP = 'shippingendpoint';
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
    await s.serviceBus.admin.updateTopic({ ...(await s.serviceBus.admin.getTopic(EP)), maxMessageSizeInKilobytes: 1024 });
    // Every request's copy is forwarded to the Resolver topic, which holds commands too (resolverTopicLimit.test.ts).
    await s.serviceBus.admin.updateTopic({ ...(await s.serviceBus.admin.getTopic(Topic.Resolver)), maxMessageSizeInKilobytes: 1024 });
    assert.equal((await s.serviceBus.admin.getTopic(SMALL_EP)).maxMessageSizeInKilobytes, 256, "the emulator's per-topic default");
  },
});

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = (body: unknown) => new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const order = (orderId: string, bytes: number) => ({ orderId, customerId: 'CUST-1', lines: [{ sku: 'x'.repeat(bytes), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' });

/** A logger that keeps what it is given. */
function recorder() {
  const lines: Array<{ level: 'info' | 'warn'; o: object; m: string }> = [];
  return { lines, info: (o: object, m: string) => lines.push({ level: 'info', o, m }), warn: (o: object, m: string) => lines.push({ level: 'warn', o, m }) };
}

describe("the broker's message size, read from the Manager topic", () => {
  test('a topic reporting 1024 KB: an edited resubmit of 300 KB is sent', async () => {
    const e = await seedEvent(stack.store, Date.now() - 60_000, { endpointId: EP, eventId: 'ORD-premium', sessionId: 'S-premium', eventTypeId: 'OrderPlaced', payload: order('ORD-premium', 10) }, MessageType.ErrorResponse, { errorText: 'boom' });
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: order('ORD-premium', 300_000), lastMessageId: e.lastMessageId }), params({ endpointId: EP, eventId: e.eventId }));
    assert.equal(res.status, 200, (await res.clone().text()).slice(0, 500));
    assert.equal(((await res.json()) as { outcome: string }).outcome, 'sent');
    assert.ok(messagesOnBroker(stack.emulator.broker) > onBroker, 'the command is on the broker');
  });

  test("an endpoint topic taking 256 KB: a 300 KB resubmit to it is refused 413 naming its limit, alone and in a bulk lot; nothing claimed or sent", async () => {
    const snapshot = async (e: { eventId: string; sessionId: string }) => ({
      row: await stack.store.getStatusRow(SMALL_EP, e.eventId, e.sessionId),
      history: (await stack.store.listHistory(e.eventId)).items,
      audits: (await stack.store.listAudits(e.eventId)).items,
    });
    const seed = (eventId: string, bytes: number) =>
      seedEvent(stack.store, Date.now() - 60_000, { endpointId: SMALL_EP, eventId, sessionId: `S-${eventId}`, eventTypeId: 'OrderPlaced', payload: order(eventId, bytes) }, MessageType.ErrorResponse, { errorText: 'boom' });
    const edited = await seed('ORD-small-topic-edit', 10);
    const stored = await seed('ORD-small-topic-stored', 300_000);
    const before = [await snapshot(edited), await snapshot(stored)];
    const onBroker = messagesOnBroker(stack.emulator.broker);

    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: order(edited.eventId, 300_000), lastMessageId: edited.lastMessageId }), params({ endpointId: SMALL_EP, eventId: edited.eventId }));
    const body = (await res.json()) as { detail: string };
    assert.equal(res.status, 413, JSON.stringify(body).slice(0, 500));
    assert.match(body.detail, new RegExp(`at most ${MAX_SENT_BODY_BYTES} bytes are \\(Service Bus's 256 KB message limit`));

    const bulk = await import('../../app/api/event/resubmit/route.ts');
    const many = await bulk.POST(post({ endpointId: SMALL_EP, eventIds: [stored.eventId] }));
    assert.equal(many.status, 200, await many.clone().text());
    const result = (await many.json()) as { sent: number; results: Array<{ status?: number; detail?: string }> };
    assert.equal(result.sent, 0);
    assert.equal(result.results[0]?.status, 413, JSON.stringify(result.results[0]).slice(0, 500));
    assert.match(result.results[0]?.detail ?? '', /256 KB message limit/);

    assert.deepEqual([await snapshot(edited), await snapshot(stored)], before, 'rows, histories and audit trails unchanged');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
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
