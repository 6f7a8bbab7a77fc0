// The DESIGN.md §3 topology for one producing endpoint, created through the real admin client, read back the
// same way, and exercised with broker traffic whose effect is observed through the admin client's counts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusAdministrationClient } from '@azure/service-bus';
import { collect, startAdminHarness, type AdminHarness } from './test-harness.ts';

interface RuleSpec {
  name: string;
  filter: string;
  action?: string;
}
interface SubscriptionSpec {
  topic: string;
  name: string;
  sessions: boolean;
  forwardTo?: string;
  /** Absent: keep $Default (accept everything). */
  rules?: RuleSpec[];
}

// Endpoint "Billing" produces "InvoiceIssued", consumed by "Shipping".
const E = 'Billing';
const C = 'Shipping';
const TOPICS = [E, C, 'Resolver', 'Manager'];
const SUBSCRIPTIONS: SubscriptionSpec[] = [
  { topic: E, name: E, sessions: true, rules: [{ name: 'ToEndpoint', filter: `user.To = '${E}'` }] },
  {
    topic: E,
    name: 'Resolver',
    sessions: false,
    forwardTo: 'Resolver',
    rules: [
      { name: 'ToResolver', filter: "user.To = 'Resolver'", action: `SET user.From = '${E}'` },
      { name: 'ToEndpoint', filter: `user.To = '${E}'` },
    ],
  },
  {
    topic: E,
    name: 'Continuation',
    sessions: false,
    forwardTo: E,
    rules: [
      {
        name: 'ToContinuation',
        filter: "user.To = 'Continuation'",
        action: `SET user.To = '${E}'; SET user.From = 'Continuation'`,
      },
    ],
  },
  {
    topic: E,
    name: 'Retry',
    sessions: false,
    forwardTo: E,
    rules: [
      {
        name: 'ToRetry',
        filter: "user.To = 'Retry'",
        action: `SET user.To = '${E}'; SET user.From = 'Retry'`,
      },
    ],
  },
  {
    topic: E,
    name: 'Deferred',
    sessions: true,
    rules: [{ name: 'ToDeferred', filter: "user.To = 'Deferred'" }],
  },
  {
    topic: E,
    name: 'DeferredProcessor',
    sessions: false,
    rules: [{ name: 'ToDeferredProcessor', filter: "user.To = 'DeferredProcessor'" }],
  },
  {
    topic: E,
    name: 'InvoiceIssued',
    sessions: false,
    forwardTo: C,
    rules: [
      {
        name: 'Forward',
        filter:
          "user.EventTypeId = 'InvoiceIssued' AND user.MessageType = 'EventRequest' AND user.From IS NULL",
        action: `SET user.From = '${E}'; SET user.EventId = newid(); SET user.To = '${C}'`,
      },
    ],
  },
  { topic: C, name: C, sessions: true, rules: [{ name: 'ToEndpoint', filter: `user.To = '${C}'` }] },
  { topic: 'Resolver', name: 'Resolver', sessions: true },
  {
    topic: 'Manager',
    name: E,
    sessions: false,
    forwardTo: E,
    rules: [{ name: 'ToEndpoint', filter: `user.To = '${E}'`, action: "SET user.From = 'Manager'" }],
  },
];

async function provision(admin: ServiceBusAdministrationClient): Promise<void> {
  for (const t of TOPICS) await admin.createTopic(t);
  for (const s of SUBSCRIPTIONS) {
    const [first, ...rest] = s.rules ?? [];
    await admin.createSubscription(s.topic, s.name, {
      requiresSession: s.sessions,
      lockDuration: 'PT5S',
      ...(s.forwardTo ? { forwardTo: s.forwardTo } : {}),
      ...(first
        ? {
            defaultRuleOptions: {
              name: first.name,
              filter: { sqlExpression: first.filter },
              ...(first.action ? { action: { sqlExpression: first.action } } : {}),
            },
          }
        : {}),
    });
    for (const r of rest) {
      if (r.action)
        await admin.createRule(
          s.topic,
          s.name,
          r.name,
          { sqlExpression: r.filter },
          { sqlExpression: r.action },
        );
      else await admin.createRule(s.topic, s.name, r.name, { sqlExpression: r.filter });
    }
  }
}

describe('admin plane: the DESIGN §3 topology', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdminHarness();
    await provision(h.admin);
  });
  after(async () => {
    await h.close();
  });

  test('reads back exactly as created: topics, subscriptions, sessions, forwarding, rules and actions', async () => {
    const topics = (await collect(h.admin.listTopics())).map((t) => t.name);
    assert.deepEqual(topics, [...TOPICS].sort());
    for (const topic of TOPICS) {
      const expected = SUBSCRIPTIONS.filter((s) => s.topic === topic);
      const actual = await collect(h.admin.listSubscriptions(topic));
      assert.deepEqual(
        actual.map((s) => s.subscriptionName).sort(),
        expected.map((s) => s.name).sort(),
        topic,
      );
      for (const spec of expected) {
        const sub = actual.find((s) => s.subscriptionName === spec.name);
        assert.ok(sub);
        assert.equal(sub.requiresSession, spec.sessions, `${topic}/${spec.name} sessions`);
        assert.equal(sub.lockDuration, 'PT5S');
        assert.equal(
          sub.forwardTo,
          spec.forwardTo ? `sb://127.0.0.1:${h.port}/${spec.forwardTo}` : undefined,
          `${topic}/${spec.name} forwardTo`,
        );
        const rules = await collect(h.admin.listRules(topic, spec.name));
        const readBack = rules
          .map((r) => ({
            name: r.name,
            filter: (r.filter as { sqlExpression: string }).sqlExpression,
            action: r.action.sqlExpression,
          }))
          .sort((a, b) => a.name.localeCompare(b.name));
        const wanted = (spec.rules ?? [{ name: '$Default', filter: '1=1' }])
          .map((r) => ({ name: r.name, filter: r.filter, action: r.action }))
          .sort((a, b) => a.name.localeCompare(b.name));
        assert.deepEqual(readBack, wanted, `${topic}/${spec.name} rules`);
      }
    }
  });

  test('routes traffic as designed, visible in the runtime counts', async () => {
    const counts = async (topic: string, sub: string): Promise<number> =>
      (await h.admin.getSubscriptionRuntimeProperties(topic, sub)).activeMessageCount;

    // A response for the Resolver is forwarded to the Resolver topic.
    h.broker.send(E, [{ body: 'r', group_id: 'S1', application_properties: { To: 'Resolver' } }]);
    assert.equal(await counts('Resolver', 'Resolver'), 1);

    // A Manager command reaches the endpoint's main subscription and, through the second rule, the Resolver.
    h.broker.send('Manager', [{ body: 'm', group_id: 'S1', application_properties: { To: E } }]);
    assert.equal(await counts(E, E), 1);
    assert.equal(await counts('Resolver', 'Resolver'), 2);

    // A published event goes to its consumer's topic, addressed to the consumer.
    h.broker.send(E, [
      {
        body: 'e',
        group_id: 'S2',
        application_properties: { EventTypeId: 'InvoiceIssued', MessageType: 'EventRequest' },
      },
    ]);
    assert.equal(await counts(C, C), 1);

    // Nothing is parked anywhere else.
    for (const name of ['Continuation', 'Retry', 'Deferred', 'DeferredProcessor']) {
      assert.equal(await counts(E, name), 0, name);
    }
  });
});
