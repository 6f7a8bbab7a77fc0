// An agent's publish goes to its endpoint's own topic (not through the Manager topic): it is held to that topic's
// message size (server/messageSize.ts CommandMessageSize.topicBytes). On the embedded stack as a Premium namespace
// would be: the emulator at 1 MiB, the Manager topic and billingendpoint's reporting 1024 KB, storefrontendpoint's the
// emulator's per-topic default 256 KB; sign-in on, sealed session cookies, the console's real publish route and the
// SDK's AgentClient. A 300 KB OrderPlaced as storefrontendpoint is refused 413 naming 256 KB, nothing claimed or
// sent; the same size as billingendpoint is sent. Before, only the Manager topic's 1 MB was checked: the event was
// sent (answered 200), and a namespace enforcing the topic's size would have refused it only after its record was
// claimed. The emulator reports a topic's size as set but enforces only its namespace-wide limit (docs/emulator.md).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Topic } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { agentAs, publishRecordOf } from './testing/agentRoutes.ts';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { AgentRequestError } from '../../packages/sdk/src/agentClient.ts';
import { MAX_SENT_BODY_BYTES } from '../messageSize.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

/** The endpoint whose topic takes less than the Manager topic (the emulator's per-topic default). */
const SMALL_EP = 'storefrontendpoint';
/** An endpoint whose topic takes what the Manager topic takes. */
const LARGE_EP = 'billingendpoint';
const SECRET = 'publish-topic-size-test-session-secret-0123456789';
const stack = useConsoleStack({
  database: 'publishtopicsize',
  emulator: { maxMessageSizeBytes: 1024 * 1024 },
  env: oidcTestEnv(SECRET, { roles: { 'Order.Publish': `Agent:${SMALL_EP}`, 'Invoice.Publish': `Agent:${LARGE_EP}` }, groups: {} }),
  // Before the console opens its context (the route's first getContext), as a Premium namespace's topics are set up.
  prepare: async (s) => {
    // The Resolver topic and erpendpoint's too: every event's copy is forwarded to the Resolver topic, and
    // InvoiceIssued to its consumer erpendpoint (publishForwardSize.test.ts): their sizes hold publishes as well.
    for (const topic of [Topic.Manager, Topic.Resolver, LARGE_EP, 'erpendpoint']) await s.serviceBus.admin.updateTopic({ ...(await s.serviceBus.admin.getTopic(topic)), maxMessageSizeInKilobytes: 1024 });
    assert.equal((await s.serviceBus.admin.getTopic(SMALL_EP)).maxMessageSizeInKilobytes, 256, "the emulator's per-topic default");
  },
});

describe("an agent's publish is held to its endpoint topic's message size", () => {
  test('a 300 KB event fits a topic taking 1024 KB: sent', async () => {
    const { client } = agentAs(SECRET, { kind: 'user', id: 'oid-billing', name: 'billing@test', roles: ['Invoice.Publish'], groups: [] });
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const invoice = { invoiceId: 'INV-big', orderId: 'ORD-big-invoice', amount: 1, currency: 'EUR', note: 'x'.repeat(300_000) };
    const published = await client.publish({ endpointId: LARGE_EP, eventTypeId: 'InvoiceIssued', payload: invoice });
    assert.equal(published.endpointId, LARGE_EP);
    assert.ok(messagesOnBroker(stack.emulator.broker) > onBroker, 'the event is on the broker');
  });

  test('a 300 KB event to a topic taking 256 KB (the Manager topic 1024 KB): 413 naming 256 KB, once; nothing claimed or sent', async () => {
    const { client, seen } = agentAs(SECRET, { kind: 'user', id: 'oid-orders', name: 'orders@test', roles: ['Order.Publish'], groups: [] });
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const order = { orderId: 'ORD-big', customerId: 'C-1', lines: [{ sku: 'x'.repeat(300_000), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' };
    const err = await client.publish({ endpointId: SMALL_EP, eventTypeId: 'OrderPlaced', payload: order }).then(
      (answer) => assert.fail(`sent: ${JSON.stringify(answer)}`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AgentRequestError, String(err));
    assert.equal(err.status, 413, err.message);
    assert.match(err.detail, new RegExp(`at most ${MAX_SENT_BODY_BYTES} bytes are \\(Service Bus's 256 KB message limit`));
    assert.equal(seen.requests, 1, 'not retried');
    assert.equal(await publishRecordOf(stack.store.database, SMALL_EP, 'OrderPlaced', order), undefined, 'no publish record claimed');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
  });
});
