// The provisioner against the embedded emulator, through the real @azure/service-bus admin client: a full
// provisioning matches the model, a second run changes nothing, every kind of drift is repaired, and the rules
// it writes route NimBus traffic as DESIGN.md §3 says.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RuleProperties, ServiceBusReceivedMessage } from '@azure/service-bus';
import { startEmulator } from '../../../../emulator/index.ts';
import { createServiceBusClients, type ServiceBusClients } from '../servicebus/index.ts';
import { parseCatalog } from '../contract/catalog.ts';
import { MessageType } from '../contract/messageTypes.ts';
import {
  allSubscriptions,
  changeCount,
  deriveTopology,
  forwardTarget,
  provisionTopology,
  ruleDrift,
  type Change,
  type TopologyModel,
} from './index.ts';
import { runProvisionCli, type CliOutput } from './cli.ts';

const catalog = parseCatalog({
  endpoints: [
    { id: 'shop', produces: ['OrderPlaced'] },
    { id: 'billing', produces: ['InvoiceIssued'], consumes: ['OrderPlaced'] },
    { id: 'crm', consumes: ['OrderPlaced', 'InvoiceIssued'] },
  ],
  eventTypes: [{ id: 'OrderPlaced', sessionKey: 'orderId' }, { id: 'InvoiceIssued' }],
});
const model = deriveTopology(catalog);

async function withEmulator(body: (clients: ServiceBusClients, connectionString: string) => Promise<void>): Promise<void> {
  const emulator = await startEmulator({ port: 0 });
  const clients = createServiceBusClients(emulator.connectionString);
  try {
    await body(clients, emulator.connectionString);
  } finally {
    await clients.close();
    await emulator.close();
  }
}

const paths = (changes: Change[]) => changes.map((c) => `${c.kind} ${c.path}`).sort();

/** Reads the broker's topology back and checks it is exactly the model. */
async function assertMatchesModel(clients: ServiceBusClients, wanted: TopologyModel): Promise<void> {
  for (const topic of wanted.topics) {
    const subs: string[] = [];
    for await (const s of clients.admin.listSubscriptions(topic.name)) subs.push(s.subscriptionName.toLowerCase());
    assert.deepEqual(subs.sort(), topic.subscriptions.map((s) => s.name.toLowerCase()).sort(), `subscriptions of ${topic.name}`);
  }
  for (const sub of allSubscriptions(wanted)) {
    const where = `${sub.topic}/${sub.name}`;
    const props = await clients.admin.getSubscription(sub.topic, sub.name);
    assert.equal(props.requiresSession, sub.requiresSession, `${where} session flag`);
    assert.equal(forwardTarget(props.forwardTo), forwardTarget(sub.forwardTo), `${where} forward target`);
    const rules: RuleProperties[] = [];
    for await (const r of clients.admin.listRules(sub.topic, sub.name)) rules.push(r);
    assert.deepEqual(rules.map((r) => r.name).sort(), sub.rules.map((r) => r.name).sort(), `${where} rule names`);
    for (const rule of sub.rules) {
      const current = rules.find((r) => r.name === rule.name)!;
      assert.equal(ruleDrift(current, rule), undefined, `${where}/${rule.name} SQL`);
    }
  }
}

describe('provisioner on the emulator', () => {
  test('creates the model, and a second run reports zero changes', async () => {
    await withEmulator(async (clients) => {
      const first = await provisionTopology(clients.admin, model);
      assert.equal(first.changed.length, 0);
      assert.equal(first.removed.length, 0);
      assert.deepEqual(
        first.created.filter((c) => c.kind === 'topic').map((c) => c.path),
        ['shop', 'billing', 'crm', 'Resolver', 'Manager'],
      );
      assert.equal(first.created.filter((c) => c.kind === 'subscription').length, allSubscriptions(model).length);
      await assertMatchesModel(clients, model);

      const second = await provisionTopology(clients.admin, model);
      assert.equal(changeCount(second), 0, JSON.stringify(second));
    });
  });

  test('two provisioners racing on an empty namespace both succeed and leave exactly the model', async () => {
    await withEmulator(async (clients) => {
      const [a, b] = await Promise.all([provisionTopology(clients.admin, model), provisionTopology(clients.admin, model)]);
      // Whoever won each create reported it; together they created each topic once.
      const topics = [...a.created, ...b.created].filter((c) => c.kind === 'topic').map((c) => c.path);
      assert.deepEqual(topics.sort(), model.topics.map((t) => t.name).sort());
      await assertMatchesModel(clients, model);
      assert.equal(changeCount(await provisionTopology(clients.admin, model)), 0);
    });
  });

  test('repairs drift: rule SQL, session flag, forward target, stray rules, $Default and stray subscriptions', async () => {
    await withEmulator(async (clients) => {
      const { admin } = clients;
      await provisionTopology(admin, model);

      // Someone edits things by hand.
      await admin.deleteRule('billing', 'Retry', 'Retry');
      await admin.createRule('billing', 'Retry', 'Retry', { sqlExpression: "user.To = 'Retry'" }, { sqlExpression: "SET user.To = 'elsewhere'" });
      await admin.deleteSubscription('billing', 'Deferred');
      await admin.createSubscription('billing', 'Deferred', { requiresSession: false });
      await admin.deleteSubscription('shop', 'Retry');
      await admin.createSubscription('shop', 'Retry', {
        forwardTo: 'Resolver',
        defaultRuleOptions: { name: 'Retry', filter: { sqlExpression: "user.To = 'Retry'" } },
      });
      await admin.createRule('crm', 'crm', '$Default', { sqlExpression: '1=1' });
      await admin.createRule('billing', 'Resolver', 'Extra', { sqlExpression: "user.To = 'x'" });
      await admin.deleteRule('billing', 'Resolver', 'ToEndpoint');
      await admin.createSubscription('shop', 'Stray');

      const plan = await provisionTopology(admin, model, { dryRun: true });
      const repair = await provisionTopology(admin, model);
      assert.deepEqual(paths(plan.changed), paths(repair.changed), 'a dry run plans what the real run does');
      assert.deepEqual(paths(plan.removed), paths(repair.removed));

      assert.deepEqual(paths(repair.changed), ['rule billing/Retry/Retry', 'subscription billing/Deferred', 'subscription shop/Retry']);
      assert.match(repair.changed.find((c) => c.path === 'billing/Deferred')!.reason!, /session flag false → true/);
      assert.match(repair.changed.find((c) => c.path === 'shop/Retry')!.reason!, /forward target resolver → shop/);
      assert.match(repair.changed.find((c) => c.path === 'billing/Retry/Retry')!.reason!, /action 'SET user.To = 'elsewhere''/);
      assert.deepEqual(paths(repair.removed), ['rule billing/Resolver/Extra', 'rule crm/crm/$Default', 'subscription shop/Stray']);
      assert.ok(paths(repair.created).includes('rule billing/Resolver/ToEndpoint'));

      await assertMatchesModel(clients, model);
      assert.equal(changeCount(await provisionTopology(admin, model)), 0);
    });
  });

  test('the provisioned rules route a publish, a response, a retry and a Manager command as designed', async () => {
    await withEmulator(async (clients) => {
      await provisionTopology(clients.admin, model);
      const { client } = clients;
      const session = 'ORD-1';

      // A raw publish: To = the event type, no From.
      const shop = client.createSender('shop');
      await shop.sendMessages({
        body: 'x',
        sessionId: session,
        messageId: 'pub-1',
        applicationProperties: { To: 'OrderPlaced', MessageType: MessageType.EventRequest, EventTypeId: 'OrderPlaced' },
      });
      await shop.close();

      const receiveAll = async (topic: string, sub: string, count: number): Promise<ServiceBusReceivedMessage[]> => {
        const receiver = await client.acceptSession(topic, sub, session);
        const got: ServiceBusReceivedMessage[] = [];
        while (got.length < count) {
          const batch = await receiver.receiveMessages(count - got.length, { maxWaitTimeInMs: 3000 });
          if (batch.length === 0) break;
          for (const m of batch) {
            await receiver.completeMessage(m);
            got.push(m);
          }
        }
        await receiver.close();
        return got;
      };

      for (const consumer of ['billing', 'crm']) {
        const [copy] = await receiveAll(consumer, consumer, 1);
        assert.ok(copy, `${consumer} received the event`);
        assert.equal(copy.applicationProperties?.To, consumer);
        assert.equal(copy.applicationProperties?.From, 'shop');
        assert.equal(typeof copy.applicationProperties?.EventId, 'string');
        assert.ok(String(copy.applicationProperties?.EventId).length > 0);
      }
      // Each consumer topic's Resolver subscription forwarded an audit copy of the request.
      const audits = await receiveAll('Resolver', 'Resolver', 2);
      assert.deepEqual(audits.map((m) => m.applicationProperties?.To).sort(), ['billing', 'crm']);
      const eventIds = audits.map((m) => m.applicationProperties?.EventId);
      assert.notEqual(eventIds[0], eventIds[1], 'each consumer copy has its own EventId');

      // A response from billing reaches the Resolver stamped with From = billing, and does not leak through
      // billing's InvoiceIssued forwarder even if it carried that type.
      const billing = client.createSender('billing');
      await billing.sendMessages({
        body: 'x',
        sessionId: session,
        applicationProperties: { To: 'Resolver', MessageType: MessageType.ResolutionResponse, EventTypeId: 'InvoiceIssued' },
      });
      // A scheduled retry comes back to billing's main subscription as From = Retry.
      await billing.sendMessages({
        body: 'x',
        sessionId: session,
        applicationProperties: { To: 'Retry', MessageType: MessageType.RetryRequest, EventTypeId: 'OrderPlaced' },
      });
      await billing.close();
      // The Resolver gets the response, then the retry's copy: readdressed To = billing, the retry also matches
      // billing's second Resolver rule, which is how the Resolver records a RetryRequest as Pending.
      const [response, retryAudit] = await receiveAll('Resolver', 'Resolver', 2);
      assert.equal(response?.applicationProperties?.MessageType, MessageType.ResolutionResponse);
      assert.equal(response?.applicationProperties?.From, 'billing');
      assert.equal(retryAudit?.applicationProperties?.MessageType, MessageType.RetryRequest);
      assert.equal(retryAudit?.applicationProperties?.From, 'Retry');
      const [retry] = await receiveAll('billing', 'billing', 1);
      assert.equal(retry?.applicationProperties?.To, 'billing');
      assert.equal(retry?.applicationProperties?.From, 'Retry');

      // An operator command through the Manager topic reaches the endpoint stamped From = Manager.
      const manager = client.createSender('Manager');
      await manager.sendMessages({
        body: 'x',
        sessionId: session,
        applicationProperties: { To: 'crm', MessageType: MessageType.SkipRequest, EventId: 'e-1' },
      });
      await manager.close();
      const [command] = await receiveAll('crm', 'crm', 1);
      assert.equal(command?.applicationProperties?.MessageType, MessageType.SkipRequest);
      assert.equal(command?.applicationProperties?.From, 'Manager');
      // ...and its audit copy reaches the Resolver through crm's second Resolver rule.
      const [commandAudit] = await receiveAll('Resolver', 'Resolver', 1);
      assert.equal(commandAudit?.applicationProperties?.MessageType, MessageType.SkipRequest);

      // Nothing leaked: crm got no InvoiceIssued response copy, the producer's own main subscription got nothing.
      assert.equal((await clients.admin.getSubscriptionRuntimeProperties('crm', 'crm')).totalMessageCount, 0);
      assert.equal((await clients.admin.getSubscriptionRuntimeProperties('shop', 'shop')).totalMessageCount, 0);
    });
  });

  test('npm run provision: the demo catalog, then nothing to do', async () => {
    await withEmulator(async (_clients, connectionString) => {
      const lines: string[] = [];
      const out: CliOutput = { log: (l) => lines.push(l), error: (l) => lines.push(`ERR ${l}`) };
      const env = { NIMBUS_SERVICEBUS_CONNECTION_STRING: connectionString };
      const first = await runProvisionCli(['--catalog', 'catalog/demo.json'], env, out);
      assert.equal(first.exitCode, 0, lines.join('\n'));
      assert.ok(lines.some((l) => l.includes('created subscription storefrontendpoint/OrderPlaced-billingendpoint')));
      assert.ok(lines.some((l) => l.includes('created subscription storefrontendpoint/CustomerUpdated')));
      assert.doesNotMatch(lines.join('\n'), /SharedAccessKey=/);
      lines.length = 0;
      const second = await runProvisionCli(['--catalog', 'catalog/demo.json'], env, out);
      assert.equal(second.exitCode, 0);
      assert.ok(lines.some((l) => /^provision: 0 created, 0 changed, 0 removed \(already up to date\)$/.test(l)), lines.join('\n'));
      // Then the rights model, which identity needs what: the console alone sends on Manager.
      const rights = lines.slice(lines.findIndex((l) => l.startsWith('Rights on the bus')));
      assert.ok(rights.some((l) => /^ {2}Send +topic Manager: .*OPERATOR-LEVEL/.test(l)), rights.join('\n'));
      assert.ok(rights.includes('agent:erpendpoint: a handoff agent of erpendpoint (settles its pending handoffs)'));
    });
  });
});
