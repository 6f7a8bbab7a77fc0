// Review 44-e (fixed: alertStore.ts closeFiring): a rule disabled (or deleted) while firing is never evaluated again, so its state stays `firing` and its
// alert stays open ("firing" in the history) for good; re-enabled during a later incident it sends no "fired"
// notice (the evaluator still thinks it is firing). Real AlertStore on the embedded Cosmos; stand-in sources.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { AlertStore } from './alertStore.ts';
import { unavailableFailureGroups, type AlertSources } from './conditions.ts';
import { evaluateAlerts, type EvaluatorDeps } from './evaluator.ts';
import { ruleInputSchema } from './model.ts';
import { ALERTS_KEY_ENV } from './secrets.ts';
import { startWebhookReceiver } from './testing.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const env = { [ALERTS_KEY_ENV]: randomBytes(32).toString('base64') };
let stack: ConsoleTestStack;
before(async () => {
  stack = await startConsoleTestStack('rv44ealerts');
});
after(async () => {
  await stack?.close();
});

/** Stand-in sources: only the dead-letter backlog (what the rules here watch) says anything. */
const deadLetterSources = (deadLetters: () => number): AlertSources => ({
  failuresPerMinute: async () => ({ previous: 0, current: 0 }),
  deadLetters: async () => deadLetters(),
  blockedSessions: async () => [],
  overdueHandoffs: async () => [],
  heartbeats: async () => ({ enabled: false, endpoints: [] }),
  resolverLastSeen: async () => null,
  failureGroups: unavailableFailureGroups,
});

describe('a rule disabled while firing', () => {
  test('re-enabled during a later incident, it fires again; its earlier alert does not stay open for good', async () => {
    const alerts = new AlertStore(stack.store.database, env);
    let deadLetters = 0;
    let at = Date.parse('2026-12-03T10:00:00.000Z');
    const sources = deadLetterSources(() => deadLetters);
    const deps: EvaluatorDeps = { alerts, sources, consoleUrl: 'http://console.test', now: () => new Date(at), env };
    const input = ruleInputSchema.parse({ name: 'dead letters', type: 'deadLetterBacklog', threshold: 10, cooldownSeconds: 900 });
    const rule = await alerts.saveRule(input, 'tester');

    // Incident 1: fires.
    deadLetters = 50;
    assert.deepEqual((await evaluateAlerts(deps)).fired, [rule.id]);
    // The operator disables the rule (maintenance); incident 1 ends meanwhile; hours pass.
    await alerts.saveRule({ ...input, enabled: false }, 'tester', rule.id);
    deadLetters = 0;
    for (let i = 0; i < 3; i++) {
      at += 3_600_000;
      await evaluateAlerts(deps);
    }
    const first = (await alerts.listAlerts(10)).filter((a) => a.ruleId === rule.id);
    assert.equal(first.length, 1);
    assert.notEqual(first[0]!.recoveredAt, null, 'disabling closed the open alert');
    assert.equal(first[0]!.closedBy, 'ruleDisabled');
    // Incident 2, with the rule enabled again, a day after the first fire (far past the cool-down).
    await alerts.saveRule({ ...input, enabled: true }, 'tester', rule.id);
    at += 20 * 3_600_000;
    deadLetters = 80;
    const tick = await evaluateAlerts(deps);
    assert.deepEqual(tick.fired, [rule.id], 'incident 2 fires (a "fired" notice is sent)');
  });

  test('deleted while firing, its alert does not read "firing" in the history for good', async () => {
    const alerts = new AlertStore(stack.store.database, env);
    let at = Date.parse('2026-12-04T10:00:00.000Z');
    const sources = deadLetterSources(() => 50);
    const deps: EvaluatorDeps = { alerts, sources, consoleUrl: 'http://console.test', now: () => new Date(at), env };
    const rule = await alerts.saveRule(ruleInputSchema.parse({ name: 'dl deleted', type: 'deadLetterBacklog', threshold: 10 }), 'tester');
    assert.deepEqual((await evaluateAlerts(deps)).fired, [rule.id]);
    await alerts.deleteRule(rule.id);
    for (let i = 0; i < 3; i++) {
      at += 3_600_000;
      await evaluateAlerts(deps);
    }
    const left = (await alerts.listAlerts(50)).filter((a) => a.ruleId === rule.id);
    assert.equal(left.length, 1);
    assert.notEqual(left[0]!.recoveredAt, null, 'the alert of a deleted rule is closed (AlertHistoryView shows recoveredAt null as "firing")');
    assert.equal(left[0]!.closedBy, 'ruleDeleted');
    assert.equal((await alerts.getState(rule.id)).state, null, 'no state is left behind');
  });

  for (const change of ['disabled', 'deleted'] as const) {
    test(`${change} while its "fired" notice is being sent, the new alert is closed all the same`, async () => {
      const store = new AlertStore(stack.store.database, env);
      const input = ruleInputSchema.parse({ name: `dl ${change} mid-send`, type: 'deadLetterBacklog', threshold: 10, channelIds: ['nosuchchannel'] });
      const rule = await store.saveRule(input, 'tester');
      let changed = false;
      // The real store; only its channel read (the evaluator's, as it sends the notice) is where the operator acts.
      const alerts = new Proxy(store, {
        get: (target, prop) => {
          const v = Reflect.get(target, prop, target) as unknown;
          if (typeof v !== 'function') return v;
          const real = (v as (...a: unknown[]) => unknown).bind(target);
          if (prop !== 'getChannel') return real;
          return async (...args: unknown[]) => {
            if (!changed) {
              changed = true;
              if (change === 'disabled') await store.saveRule({ ...input, enabled: false }, 'tester', rule.id);
              else await store.deleteRule(rule.id);
            }
            return real(...args);
          };
        },
      });
      const sources = deadLetterSources(() => 50);
      const deps: EvaluatorDeps = { alerts, sources, consoleUrl: 'http://console.test', now: () => new Date('2026-12-06T10:00:00.000Z'), env };
      assert.ok((await evaluateAlerts(deps)).fired.includes(rule.id));
      assert.ok(changed);
      const alert = (await store.listAlerts(100)).find((a) => a.ruleId === rule.id)!;
      assert.notEqual(alert.recoveredAt, null, 'not left "firing"');
      assert.equal(alert.closedBy, change === 'disabled' ? 'ruleDisabled' : 'ruleDeleted');
      assert.equal(alert.deliveries.length, 1, 'the fire\'s delivery record is kept');
      assert.equal((await store.getState(rule.id)).state, null);
    });
  }

  test('disabling sends no "recovered" notice; a rule left firing by a disable before the fix is closed by the next tick', async () => {
    const alerts = new AlertStore(stack.store.database, env);
    const receiver = await startWebhookReceiver();
    try {
      const at = Date.parse('2026-12-05T10:00:00.000Z');
      const sources = deadLetterSources(() => 50);
      const deps: EvaluatorDeps = { alerts, sources, consoleUrl: 'http://console.test', now: () => new Date(at), env };
      const channel = await alerts.saveChannel({ type: 'webhook', name: 'ops', url: `${receiver.url}/hook` }, 'tester');
      const input = ruleInputSchema.parse({ name: 'dl quiet', type: 'deadLetterBacklog', threshold: 10, channelIds: [channel.id] });
      const rule = await alerts.saveRule(input, 'tester');
      // Other tests' rules share the store: only this test's rules are looked at.
      assert.ok((await evaluateAlerts(deps)).fired.includes(rule.id));
      assert.equal(receiver.received.length, 1, 'the "fired" notice');
      await alerts.saveRule({ ...input, enabled: false }, 'tester', rule.id);
      await evaluateAlerts(deps);
      assert.equal(receiver.received.length, 1, 'no "recovered" notice: the operator disabled the rule');
      const closed = (await alerts.listAlerts(50)).find((a) => a.ruleId === rule.id)!;
      assert.deepEqual(closed.deliveries.map((d) => d.notice), ['fired']);

      // As a disable stored it before the fix: the rule document alone, its state still firing and its alert open.
      const legacy = await alerts.saveRule({ ...input, name: 'dl legacy' }, 'tester');
      assert.ok((await evaluateAlerts(deps)).fired.includes(legacy.id));
      const c = await alerts.container();
      await c.items.upsert({ ...(await alerts.getRule(legacy.id))!, enabled: false });
      assert.equal((await alerts.getState(legacy.id)).state?.firing, true);
      await evaluateAlerts(deps);
      const healed = (await alerts.listAlerts(50)).find((a) => a.ruleId === legacy.id)!;
      assert.equal(healed.closedBy, 'ruleDisabled');
      assert.notEqual(healed.recoveredAt, null);
      assert.equal((await alerts.getState(legacy.id)).state, null);
      assert.equal(receiver.received.length, 2, 'only the legacy rule\'s "fired" notice was added');
    } finally {
      await receiver.close();
    }
  });
});
