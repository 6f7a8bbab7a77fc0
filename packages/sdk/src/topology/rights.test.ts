// The rights model derived from the topology: who may send where, and above all that nobody but the console can
// send onto a topic whose rules stamp From = 'Manager' (which would let them skip or resubmit any endpoint's events).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCatalog, loadCatalog } from '../contract/catalog.ts';
import { runProvisionCli, type CliOutput } from './cli.ts';
import { deriveTopology } from './derive.ts';
import type { TopologyModel } from './model.ts';
import { azRoleAssignments, azSasPolicies, deriveRights, entityName, formatRights, operatorTopics, sasPolicies, type IdentityRights, type RightsModel } from './rights.ts';

const catalog = () =>
  parseCatalog({
    endpoints: [
      { id: 'shop', produces: ['OrderPlaced'] },
      { id: 'billing', consumes: ['OrderPlaced'] },
    ],
    eventTypes: [{ id: 'OrderPlaced' }],
  });

const identity = (rights: RightsModel, id: string): IdentityRights => {
  const found = rights.identities.find((i) => i.id === id);
  assert.ok(found, `${id} is in the model`);
  return found;
};
const grants = (i: IdentityRights) => i.bus.map((g) => `${g.right} ${entityName(g.entity)}`);

describe('deriveRights', () => {
  const rights = deriveRights(deriveTopology(catalog()));

  test('Manager is the operator-level topic: its subscriptions stamp From = Manager onto every endpoint', () => {
    assert.deepEqual(rights.operatorTopics, [{ topic: 'Manager', endpoints: ['shop', 'billing'] }]);
  });

  test('the console holds Manage on the namespace, and Send on Manager marked operator-level', () => {
    const console = identity(rights, 'console');
    assert.equal(console.bus[0]!.right, 'Manage');
    assert.equal(console.bus[0]!.entity.kind, 'namespace');
    const manager = console.bus.find((g) => g.right === 'Send' && g.entity.kind === 'topic' && g.entity.topic === 'Manager');
    assert.ok(manager?.operatorLevel, 'Send on Manager is flagged operator-level');
    // Heartbeat probes go straight to each endpoint topic.
    assert.ok(grants(console).includes('Send topic shop') && grants(console).includes('Send topic billing'));
  });

  test('an endpoint host sends on its own topic only and listens on the subscriptions it receives from', () => {
    assert.deepEqual(grants(identity(rights, 'host:billing')), [
      'Send topic billing',
      'Listen subscription billing/billing',
      'Listen subscription billing/Deferred',
      'Listen subscription billing/DeferredProcessor',
    ]);
    // The producer too: its forwarder subscriptions are the broker's business, not something it receives from.
    assert.deepEqual(grants(identity(rights, 'host:shop')), [
      'Send topic shop',
      'Listen subscription shop/shop',
      'Listen subscription shop/Deferred',
      'Listen subscription shop/DeferredProcessor',
    ]);
  });

  test('the Resolver listens on its subscription and sends only on its own topic', () => {
    assert.deepEqual(grants(identity(rights, 'resolver')), ['Listen subscription Resolver/Resolver', 'Send topic Resolver']);
  });

  test('handoff agents get nothing on the bus, only the HTTP path', () => {
    const agent = identity(rights, 'agent:shop');
    assert.deepEqual(agent.bus, []);
    assert.match(agent.http ?? '', /POST \/api\/event\/handoff\/\{complete,fail\}\/shop\//);
  });

  test('on the demo catalog, no identity but the console and the provisioner can reach an operator-level right', async () => {
    const demo = deriveRights(deriveTopology(await loadCatalog('catalog/demo.json')));
    const operatorNames = new Set(demo.operatorTopics.map((o) => o.topic));
    assert.deepEqual([...operatorNames], ['Manager']);
    for (const i of demo.identities) {
      if (i.role === 'console' || i.role === 'provisioner') continue;
      for (const g of i.bus) {
        assert.notEqual(g.right, 'Manage', `${i.id} has Manage`);
        if (g.right === 'Send') assert.ok(g.entity.kind === 'topic' && !operatorNames.has(g.entity.topic), `${i.id}: Send ${entityName(g.entity)}`);
      }
    }
    assert.equal(demo.identities.filter((i) => i.role === 'handoff-agent').length, 5);
  });

  test('a topology that would stamp operator authority on an endpoint topic is refused', () => {
    const model: TopologyModel = structuredClone(deriveTopology(catalog()));
    const shop = model.topics.find((t) => t.name === 'shop')!;
    // A careless "shortcut" subscription on the endpoint's own topic that forwards operator commands to billing.
    shop.subscriptions.push({
      topic: 'shop',
      name: 'Shortcut',
      requiresSession: false,
      forwardTo: 'billing',
      purpose: 'test',
      rules: [{ name: 'X', filter: "user.To = 'billing'", action: "SET user.To = 'billing'; SET user.From = 'Manager'" }],
    });
    assert.deepEqual(
      operatorTopics(model).map((o) => o.topic),
      ['shop', 'Manager'],
    );
    assert.throws(() => deriveRights(model), /host:shop would get Send on topic shop, an operator-level right/);
  });
});

describe('formatting', () => {
  const rights = deriveRights(deriveTopology(catalog()));

  test('the printout names each identity, right and entity, and says why Manager is operator-level', () => {
    const text = formatRights(rights).join('\n');
    assert.match(text, /^console: /m);
    assert.match(text, /^ {2}Send +topic Manager: resubmit, skip and handoff settlement.*\[OPERATOR-LEVEL; within Manage on the namespace\]$/m);
    assert.match(text, /^ {2}Send +topics shop, billing: heartbeat probes/m);
    assert.match(text, /^host:billing: /m);
    assert.match(text, /^ {2}Listen +subscription billing\/Deferred: /m);
    assert.match(text, /^agent:billing: [^\n]*\n {2}\(no right on the bus\)\n {2}HTTP +POST/m);
    assert.match(text, /Send on topic Manager is operator-level: .*skip or resubmit.*Only the console's identity may hold it/);
  });

  test('az role assignments: Data Owner for the console, Sender/Receiver scoped to entities, nothing for agents', () => {
    const lines = azRoleAssignments(rights);
    const commands = lines.filter((l) => l.startsWith('az '));
    const forId = (v: string) => commands.filter((c) => c.includes(`"$${v}"`));
    assert.equal(forId('CONSOLE_PRINCIPAL_ID').length, 1, 'implied rights are not assigned twice');
    assert.match(forId('CONSOLE_PRINCIPAL_ID')[0]!, /--role "Azure Service Bus Data Owner" --scope "\$SB_NAMESPACE_ID"$/);
    assert.deepEqual(
      forId('HOST_BILLING_PRINCIPAL_ID').map((c) => / --role "([^"]+)" --scope "([^"]+)"/.exec(c)!.slice(1).join(' @ ')),
      [
        'Azure Service Bus Data Sender @ $SB_NAMESPACE_ID/topics/billing',
        'Azure Service Bus Data Receiver @ $SB_NAMESPACE_ID/topics/billing/subscriptions/billing',
        'Azure Service Bus Data Receiver @ $SB_NAMESPACE_ID/topics/billing/subscriptions/Deferred',
        'Azure Service Bus Data Receiver @ $SB_NAMESPACE_ID/topics/billing/subscriptions/DeferredProcessor',
      ],
    );
    assert.equal(forId('AGENT_BILLING_PRINCIPAL_ID').length, 0);
    assert.ok(lines.includes('# no role on Service Bus: it uses the console HTTP API only'));
    // Nobody but the console and the provisioner is assigned anything on Manager or the namespace.
    for (const c of commands.filter((c) => !/CONSOLE_|PROVISIONER_/.test(c))) {
      assert.doesNotMatch(c, /topics\/Manager"|--scope "\$SB_NAMESPACE_ID"$|Data Owner/, c);
    }
  });
});

describe('shared access policies', () => {
  const rights = deriveRights(deriveTopology(catalog()));

  test('one policy per identity and entity; subscription Listen widens to the topic; agents get none', () => {
    assert.deepEqual(
      sasPolicies(rights).map((p) => `${p.name} ${p.entity.kind === 'namespace' ? 'namespace' : p.entity.topic} ${p.rights.join('+')}`),
      [
        'console namespace Manage+Send+Listen',
        'provisioner namespace Manage+Send+Listen',
        'resolver Resolver Send+Listen',
        'host-shop shop Send+Listen',
        'host-billing billing Send+Listen',
      ],
    );
  });

  test('--format sas prints the az commands', () => {
    const lines = azSasPolicies(rights);
    assert.ok(lines.includes('az servicebus topic authorization-rule create -g "$RG" --namespace-name "$NS" --topic-name billing --name host-billing --rights Send Listen'));
    assert.ok(lines.includes('az servicebus namespace authorization-rule create -g "$RG" --namespace-name "$NS" --name console --rights Manage Send Listen'));
    assert.ok(lines.filter((l) => l.startsWith('az ')).every((l) => !l.includes('agent')));
  });
});

describe('npm run provision -- --rights', () => {
  const capture = (): CliOutput & { lines: string[]; errors: string[] } => {
    const lines: string[] = [];
    const errors: string[] = [];
    return { lines, errors, log: (l) => lines.push(l), error: (l) => errors.push(l) };
  };

  test('prints the rights model without a namespace', async () => {
    const out = capture();
    const result = await runProvisionCli(['--rights', '--catalog', 'catalog/demo.json'], {}, out);
    assert.equal(result.exitCode, 0, out.errors.join('\n'));
    assert.equal(out.lines[0], 'Rights on the bus (derived from the topology; docs/deploy.md maps them to Azure RBAC roles):');
    assert.ok(out.lines.includes('agent:erpendpoint: a handoff agent of erpendpoint (settles its pending handoffs)'));
  });

  test('--format json gives the model as data; --format az the role assignments', async () => {
    const json = capture();
    assert.equal((await runProvisionCli(['--rights', '--format', 'json'], {}, json)).exitCode, 0);
    const parsed = JSON.parse(json.lines.join('\n')) as RightsModel;
    assert.deepEqual(parsed.operatorTopics.map((o) => o.topic), ['Manager']);
    const az = capture();
    assert.equal((await runProvisionCli(['--rights', '--format', 'az'], {}, az)).exitCode, 0);
    assert.ok(az.lines.some((l) => l.startsWith('az role assignment create --assignee-object-id "$HOST_ERPENDPOINT_PRINCIPAL_ID"')));
  });

  test('refuses an unknown format, and --format without --rights', async () => {
    for (const argv of [['--rights', '--format', 'yaml'], ['--format', 'json']]) {
      const out = capture();
      assert.equal((await runProvisionCli(argv, {}, out)).exitCode, 2, argv.join(' '));
      assert.match(out.errors.join('\n'), /--format takes text, json, az, sas and goes with --rights/);
    }
  });

  test('reports a bad catalog', async () => {
    const out = capture();
    assert.equal((await runProvisionCli(['--rights', '--catalog', 'catalog/absent.json'], {}, out)).exitCode, 1);
    assert.match(out.errors.join('\n'), /catalog file not found/);
  });
});
