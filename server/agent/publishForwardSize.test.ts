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
import { deterministicMessageId } from '@nimbus/sdk';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { AgentClient, AgentRequestError } from '../../packages/sdk/src/agentClient.ts';
import { PUBLISH_RECORDS_CONTAINER, publishRecordId, type PublishRecord } from './publishRecords.ts';

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

/** An AgentClient whose requests go to the publish route as `who`; `requests` counts them. */
function agentAs(who: Principal) {
  const cookie = `${SESSION_COOKIE}=${sealSession(who, { secret: SECRET, maxAgeSeconds: 600 })}`;
  const seen = { requests: 0 };
  const routes = (async (input: URL, init: RequestInit) => {
    seen.requests++;
    const request = new Request(`http://127.0.0.1:3000${input.pathname}`, { ...init, headers: { ...(init.headers as Record<string, string>), host: '127.0.0.1:3000', cookie } });
    return (await import('../../app/api/agent/publish/route.ts')).POST(request);
  }) as typeof fetch;
  return { client: new AgentClient({ consoleUrl: 'http://127.0.0.1:3000', fetch: routes, retry: { attempts: 4, initialMs: 10, maxMs: 10 } }), seen };
}

function messagesOnBroker(): number {
  const broker = stack.emulator.broker;
  return broker.listTopics().reduce((n, t) => n + broker.listSubscriptions(t.name).reduce((m, s) => m + broker.getSubscriptionRuntime(t.name, s.subscriptionName).totalMessageCount, 0), 0);
}

async function recordOf(endpointId: string, eventTypeId: string, payload: unknown): Promise<PublishRecord | undefined> {
  const id = publishRecordId(endpointId, deterministicMessageId(eventTypeId, JSON.stringify(payload)));
  const { resource } = await stack.store.database.container(PUBLISH_RECORDS_CONTAINER).item(id, endpointId).read<PublishRecord>();
  return resource;
}

describe("an agent's publish is held to its consumers' topics", () => {
  test('a 300 KB InvoiceIssued from billingendpoint (1024 KB) whose consumer erpendpoint takes 256 KB: 413 naming 256 KB, once; nothing claimed or sent', async () => {
    const { client, seen } = agentAs({ kind: 'user', id: 'oid-billing', name: 'billing@test', roles: ['Invoice.Publish'], groups: [] });
    const onBroker = messagesOnBroker();
    const invoice = { invoiceId: 'INV-forward', orderId: 'ORD-forward', amount: 1, currency: 'EUR', note: 'x'.repeat(300_000) };
    const err = await client.publish({ endpointId: LARGE_EP, eventTypeId: 'InvoiceIssued', payload: invoice }).then(
      (answer) => assert.fail(`sent: ${JSON.stringify(answer)}`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AgentRequestError, String(err));
    assert.equal(err.status, 413);
    assert.match(err.message, /256 KB message limit/);
    assert.equal(seen.requests, 1, 'a 413 is not retried');
    assert.equal(await recordOf(LARGE_EP, 'InvoiceIssued', invoice), undefined, 'no publish record claimed');
    assert.equal(messagesOnBroker(), onBroker, 'nothing sent');
  });
});
