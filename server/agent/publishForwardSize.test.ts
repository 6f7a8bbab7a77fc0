// An agent's publish goes to its endpoint's topic, whose forwarder subscriptions pass it on to the topics of the event
// type's consumers (and every copy to the Resolver topic): it is held to the smallest size read among them
// (server/messageSize.ts CommandMessageSize.topicBytes). On the embedded stack as a Premium namespace would be: the
// emulator at 1 MiB, the Manager, Resolver and billingendpoint topics reporting 1024 KB, erpendpoint's the emulator's
// per-topic default 256 KB. A 300 KB InvoiceIssued from billingendpoint (its one consumer: erpendpoint) is refused 413
// naming 256 KB, nothing claimed or sent. Before, only billingendpoint's own topic was checked: it was sent (200), and a
// namespace enforcing per-topic sizes would refuse the forward, so erpendpoint never got it and the Resolver never
// recorded it. The emulator reports a topic's size as set but enforces only its namespace-wide limit (docs/emulator.md).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Topic } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { agentAs, publishRecordOf } from './testing/agentRoutes.ts';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { AgentRequestError } from '../../packages/sdk/src/agentClient.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

/** An endpoint whose topic takes what the Manager topic takes. */
const LARGE_EP = 'billingendpoint';
/** InvoiceIssued's one consumer in the demo catalog. */
const CONSUMER = 'erpendpoint';
const SECRET = 'publish-topic-size-test-session-secret-0123456789';
const stack = useConsoleStack({
  database: 'publishforwardsize',
  emulator: { maxMessageSizeBytes: 1024 * 1024 },
  env: oidcTestEnv(SECRET, { roles: { 'Invoice.Publish': `Agent:${LARGE_EP}` }, groups: {} }),
  // Before the console opens its context (the route's first getContext), as a Premium namespace's topics are set up.
  prepare: async (s) => {
    // The Resolver topic too: every event's copy is forwarded to it, and its size holds publishes as well.
    for (const topic of [Topic.Manager, Topic.Resolver, LARGE_EP]) await s.serviceBus.admin.updateTopic({ ...(await s.serviceBus.admin.getTopic(topic)), maxMessageSizeInKilobytes: 1024 });
    assert.equal((await s.serviceBus.admin.getTopic(CONSUMER)).maxMessageSizeInKilobytes, 256, "the emulator's per-topic default");
  },
});

describe("an agent's publish is held to its consumers' topics", () => {
  test('a 300 KB InvoiceIssued from billingendpoint (1024 KB) whose consumer erpendpoint takes 256 KB: 413 naming 256 KB, once; nothing claimed or sent', async () => {
    const { client, seen } = agentAs(SECRET, { kind: 'user', id: 'oid-billing', name: 'billing@test', roles: ['Invoice.Publish'], groups: [] });
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const invoice = { invoiceId: 'INV-forward', orderId: 'ORD-forward', amount: 1, currency: 'EUR', note: 'x'.repeat(300_000) };
    const err = await client.publish({ endpointId: LARGE_EP, eventTypeId: 'InvoiceIssued', payload: invoice }).then(
      (answer) => assert.fail(`sent: ${JSON.stringify(answer)}`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AgentRequestError, String(err));
    assert.equal(err.status, 413);
    assert.match(err.message, /256 KB message limit/);
    assert.equal(seen.requests, 1, 'a 413 is not retried');
    assert.equal(await publishRecordOf(stack.store.database, LARGE_EP, 'InvoiceIssued', invoice), undefined, 'no publish record claimed');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
  });
});
