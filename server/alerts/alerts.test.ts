// Alerts end to end (issue 16): failures recorded by the real Resolver (embedded emulator + embedded Cosmos) reach
// the stored time series; a failure-rate rule evaluated by two evaluator instances on the same Cosmos (two console
// replicas) sends exactly one "fired" notice to a local webhook receiver, then one "recovered" notice; a second
// burst inside the cool-down sends nothing, one after it fires again. Channel secrets are stored sealed; Teams,
// Slack and e-mail (a tiny SMTP receiver) get their own formats.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { LeaseStore, TimeSeriesStore } from '../../lib/store/index.ts';
import { errorBody, eventually, ResolverHarness } from '../../resolver-worker/testHarness.ts';
import { AlertStore } from './alertStore.ts';
import { noticeOf, sendNotice, type AlertNotice } from './channels.ts';
import { evaluateRule, unavailableFailureGroups, type AlertSources, type FailureGroup } from './conditions.ts';
import { evaluateAlerts, startAlertEvaluator, type EvaluatorDeps } from './evaluator.ts';
import { channelView, ruleInputSchema, type AlertDoc, type RuleDoc } from './model.ts';
import { ALERTS_KEY_ENV, seal, unseal, alertsKey } from './secrets.ts';
import { alertSources } from './sources.ts';
import { startSmtpReceiver, startWebhookReceiver, type WebhookReceiver } from './testing.ts';

const env = { [ALERTS_KEY_ENV]: randomBytes(32).toString('base64') };
let h: ResolverHarness;
let hook: WebhookReceiver;
let clock = Date.now();
const now = () => new Date(clock);

before(async () => {
  h = await ResolverHarness.start();
  h.resolver({ history: { flushMs: 100 }, now });
  hook = await startWebhookReceiver();
});
after(async () => {
  await hook?.close();
  await h?.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

function deps(alerts: AlertStore): EvaluatorDeps {
  return {
    alerts,
    sources: alertSources({
      database: h.store.database,
      series: new TimeSeriesStore(h.store.database),
      admin: h.clients.admin,
      heartbeats: async () => ({ enabled: false, endpoints: [], resolverLastSeen: null }),
    }),
    consoleUrl: 'http://console.test:3000',
    now,
    env,
  };
}

/** `n` events on `ep` that fail (request, then ErrorResponse), through the Resolver. */
async function failures(ep: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const ev = uniq('e');
    const sessionId = uniq('s');
    const req = await h.send({ type: T.EventRequest, eventId: ev, sessionId, to: ep, from: 'shop' });
    await h.settledOk(req.messageId);
    const res = await h.send({ type: T.ErrorResponse, eventId: ev, sessionId, from: ep, to: 'Resolver', parentMessageId: req.messageId, body: errorBody('boom') });
    await h.settledOk(res.messageId);
  }
}

async function storedFailures(ep: string, atLeast: number): Promise<void> {
  const series = new TimeSeriesStore(h.store.database);
  await eventually(async () => {
    const m = Math.floor(clock / 60_000) * 60_000;
    const s = await series.query({ from: m - 60_000, to: m + 60_000, bucketMs: 60_000, endpointId: ep });
    const n = s.find((x) => x.name === 'failed')!.points.reduce((a, [, v]) => a + (v ?? 0), 0);
    return n >= atLeast ? n : undefined;
  }, `${atLeast} failures stored for ${ep}`);
}

const notices = (ruleId: string) => hook.received.map((r) => r.body as AlertNotice).filter((b) => b.rule?.id === ruleId);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('failure-rate alert through a webhook', () => {
  test('a burst fires one alert across two replicas, recovery follows, the cool-down holds', async () => {
    const alerts = new AlertStore(h.store.database, env);
    const ep = uniq('billing');
    const channel = await alerts.saveChannel({ type: 'webhook', name: 'on-call', url: `${hook.url}/hook`, headers: { Authorization: 'Bearer s3cret' } }, 'tester');
    const rule = await alerts.saveRule(
      ruleInputSchema.parse({ name: 'billing failing', type: 'failureRate', endpointId: ep, threshold: 2, cooldownSeconds: 3600, channelIds: [channel.id] }),
      'tester',
    );

    // Secrets: sealed at rest, shown only as "set".
    const raw = JSON.stringify(await alerts.getChannel(channel.id));
    assert.ok(!raw.includes(hook.url) && !raw.includes('s3cret'), 'neither the URL nor the header value is stored in clear');
    assert.deepEqual(channelView(channel).secrets, { url: { set: true }, headers: { set: true } });

    await failures(ep, 5);
    await storedFailures(ep, 5);

    // Two console replicas: two evaluators with their own lease clients on the same Cosmos.
    const a = startAlertEvaluator({ ...deps(new AlertStore(h.store.database, env)), leases: new LeaseStore(h.store.database), everyMs: 250, owner: 'replica-a' });
    const b = startAlertEvaluator({ ...deps(new AlertStore(h.store.database, env)), leases: new LeaseStore(h.store.database), everyMs: 250, owner: 'replica-b' });
    try {
      await eventually(() => (notices(rule.id).length >= 1 ? true : undefined), 'the fired notice', 20_000);
      await sleep(2000); // many more ticks of both replicas
      assert.equal(notices(rule.id).length, 1, 'exactly one notice for the burst');
      assert.equal([a.holding(), b.holding()].filter(Boolean).length, 1, 'one replica holds the evaluator lease');
      const fired = notices(rule.id)[0]!;
      assert.equal(fired.kind, 'nimbus.alert');
      assert.equal(fired.notice, 'fired');
      assert.ok(fired.value >= 5, `value ${fired.value}`);
      assert.match(fired.link, new RegExp(`^http://console\\.test:3000/endpoints/${ep}\\?status=Failed%2CDeadLettered|^http://console\\.test:3000/endpoints/${ep}\\?status=Failed,DeadLettered`));
      const req = hook.received.find((r) => (r.body as AlertNotice).rule?.id === rule.id)!;
      assert.equal(req.path, '/hook');
      assert.equal(req.headers.authorization, 'Bearer s3cret', 'the sealed header is sent');

      // Three minutes later the window holds no failures: the recovery notice, once.
      clock += 3 * 60_000;
      await eventually(() => (notices(rule.id).length >= 2 ? true : undefined), 'the recovered notice', 20_000);
      await sleep(1500);
      assert.deepEqual(notices(rule.id).map((n) => n.notice), ['fired', 'recovered']);

      // A second burst inside the cool-down: evaluated as firing, suppressed, nothing sent.
      await failures(ep, 4);
      await storedFailures(ep, 4);
      await eventually(async () => ((await alerts.getState(rule.id)).state!.suppressed >= 1 ? true : undefined), 'a suppressed fire', 20_000);
      await sleep(1000);
      assert.equal(notices(rule.id).length, 2, 'the cool-down holds');

      // After the cool-down a burst fires again.
      clock += 2 * 3_600_000;
      await failures(ep, 3);
      await storedFailures(ep, 3);
      await eventually(() => (notices(rule.id).length >= 3 ? true : undefined), 'a fire after the cool-down', 20_000);
      assert.equal(notices(rule.id)[2]!.notice, 'fired');
    } finally {
      await a.stop();
      await b.stop();
    }

    const history = (await alerts.listAlerts()).filter((x) => x.ruleId === rule.id);
    assert.equal(history.length, 2, 'two alerts in the history');
    const first = history.find((x) => x.recoveredAt !== null)!;
    assert.ok(first, 'the first alert recovered');
    assert.ok(first.deliveries.every((d) => d.ok), JSON.stringify(first.deliveries));
    assert.deepEqual(first.deliveries.map((d) => d.notice), ['fired', 'recovered']);
  });

  test('two evaluators racing on one tick without a lease still send once (the state write is a compare-and-swap)', async () => {
    const alerts = new AlertStore(h.store.database, env);
    const ep = uniq('crm');
    const channel = await alerts.saveChannel({ type: 'webhook', name: 'race', url: `${hook.url}/race` }, 'tester');
    const rule = await alerts.saveRule(ruleInputSchema.parse({ name: 'race', type: 'failureRate', endpointId: ep, threshold: 0, channelIds: [channel.id] }), 'tester');
    await failures(ep, 1);
    await storedFailures(ep, 1);
    const da = deps(new AlertStore(h.store.database, env));
    const db = deps(new AlertStore(h.store.database, env));
    const [ra, rb] = await Promise.all([evaluateAlerts(da), evaluateAlerts(db)]);
    assert.equal([...ra.fired, ...rb.fired].filter((id) => id === rule.id).length, 1);
    assert.equal(notices(rule.id).length, 1);
  });

  test('a failing receiver is recorded on the alert, without the URL', async () => {
    const alerts = new AlertStore(h.store.database, env);
    const ep = uniq('down');
    const receiver = await startWebhookReceiver();
    receiver.status = 500;
    try {
      const channel = await alerts.saveChannel({ type: 'slack', name: 'broken', url: `${receiver.url}/secret-path` }, 'tester');
      const rule = await alerts.saveRule(ruleInputSchema.parse({ name: 'down', type: 'failureRate', endpointId: ep, threshold: 0, channelIds: [channel.id] }), 'tester');
      await failures(ep, 1);
      await storedFailures(ep, 1);
      await evaluateAlerts(deps(alerts));
      const alert = (await alerts.listAlerts()).find((x) => x.ruleId === rule.id)!;
      assert.equal(alert.deliveries[0]!.ok, false);
      assert.match(alert.deliveries[0]!.error!, /answered 500/);
      assert.ok(!alert.deliveries[0]!.error!.includes('secret-path'));
      assert.equal(receiver.received.length, 2, 'one retry');
    } finally {
      await receiver.close();
    }
  });
});

describe('channel formats', () => {
  const alert: AlertDoc = {
    id: 'a-1',
    kind: 'alert',
    ruleId: 'r-1',
    ruleName: 'billing failing',
    ruleType: 'failureRate',
    endpointId: 'billing',
    firedAt: '2026-12-03T10:00:00.000Z',
    recoveredAt: null,
    value: 7,
    threshold: 2,
    summary: 'billing: 7 failures in a minute (threshold 2)',
    link: '/endpoints/billing?status=Failed',
    deliveries: [],
  };
  const notice = noticeOf(alert, 'fired', 'https://console.example/');

  test('Teams gets an Adaptive Card, Slack text and blocks, both with the link', async () => {
    const alerts = new AlertStore(h.store.database, env);
    const teams = await alerts.saveChannel({ type: 'teams', name: 't', url: `${hook.url}/teams` }, 'tester');
    const slack = await alerts.saveChannel({ type: 'slack', name: 's', url: `${hook.url}/slack` }, 'tester');
    await sendNotice(teams, notice, { env });
    await sendNotice(slack, notice, { env });
    const t = hook.received.find((r) => r.path === '/teams')!.body as { type: string; attachments: Array<{ contentType: string; content: { actions: Array<{ url: string }> } }> };
    assert.equal(t.type, 'message');
    assert.equal(t.attachments[0]!.contentType, 'application/vnd.microsoft.card.adaptive');
    assert.equal(t.attachments[0]!.content.actions[0]!.url, 'https://console.example/endpoints/billing?status=Failed');
    const s = hook.received.find((r) => r.path === '/slack')!.body as { text: string; blocks: unknown[] };
    assert.match(s.text, /FIRING: billing failing/);
    assert.ok(JSON.stringify(s.blocks).includes('https://console.example/endpoints/billing?status=Failed'));
  });

  test('e-mail goes out through SMTP with the sealed password', async () => {
    const smtp = await startSmtpReceiver();
    try {
      const alerts = new AlertStore(h.store.database, env);
      const mail = await alerts.saveChannel(
        { type: 'email', name: 'mail', host: '127.0.0.1', port: smtp.port, secure: false, username: 'nimbus', password: 'smtp-pass', from: 'nimbus@example.test', to: ['oncall@example.test'] },
        'tester',
      );
      assert.ok(!JSON.stringify(mail).includes('smtp-pass'));
      await sendNotice(mail, notice, { env });
      assert.equal(smtp.mails.length, 1);
      assert.deepEqual(smtp.mails[0]!.to, ['oncall@example.test']);
      assert.match(smtp.mails[0]!.data, /Subject: \[NimBus\] FIRING: billing failing/);
      assert.match(smtp.mails[0]!.data, /https:\/\/console\.example\/endpoints\/billing\?status=Failed/);
      assert.ok(Buffer.from(smtp.mails[0]!.auth!.replace(/^PLAIN\s+/i, ''), 'base64').toString().includes('smtp-pass'), 'authenticated with the unsealed password');
    } finally {
      await smtp.close();
    }
  });

  test('secrets: sealed values decrypt only with the key; a missing key is named', () => {
    const key = alertsKey(env);
    const sealed = seal('https://hooks.example/abc', key);
    assert.ok(!sealed.includes('hooks.example'));
    assert.equal(unseal(sealed, key), 'https://hooks.example/abc');
    assert.throws(() => unseal(sealed, randomBytes(32)), /does not decrypt/);
    assert.throws(() => alertsKey({}), /NIMBUS_ALERTS_KEY is not set/);
  });
});

describe('rule conditions (pure, with stand-in sources)', () => {
  const base: RuleDoc = { ...ruleInputSchema.parse({ name: 'x', type: 'resolverLiveness' }), id: 'r', kind: 'rule', createdAt: '', updatedAt: '', updatedBy: '' };
  const sources = (over: Partial<AlertSources>): AlertSources => ({
    failuresPerMinute: async () => ({ previous: 0, current: 0 }),
    deadLetters: async () => 0,
    blockedSessions: async () => [],
    overdueHandoffs: async () => [],
    heartbeats: async () => ({ enabled: true, endpoints: [] }),
    resolverLastSeen: async () => null,
    failureGroups: unavailableFailureGroups,
    ...over,
  });
  const at = new Date('2026-12-03T10:00:00.000Z');

  test('each rule type fires on its condition and links to the page that shows it', async () => {
    const fire = async (rule: Partial<RuleDoc>, src: Partial<AlertSources>) => evaluateRule({ ...base, ...rule } as RuleDoc, sources(src), at, undefined);
    const dl = await fire({ type: 'deadLetterBacklog', threshold: 10 }, { deadLetters: async () => 11 });
    assert.equal(dl.status, 'firing');
    assert.equal(dl.status === 'firing' && dl.link, '/topology/subscriptions');
    assert.equal((await fire({ type: 'deadLetterBacklog', threshold: 10 }, { deadLetters: async () => 10 })).status, 'ok');
    const blocked = await fire(
      { type: 'blockedSession', durationSeconds: 600 },
      { blockedSessions: async () => [{ endpointId: 'crm', eventId: 'e1', sessionId: 's1', since: '2026-12-03T09:00:00.000Z' }] },
    );
    assert.equal(blocked.status === 'firing' && blocked.link, '/endpoints/crm/events/e1');
    const handoff = await fire({ type: 'pendingHandoff' }, { overdueHandoffs: async () => [{ endpointId: 'erp', eventId: 'e2', expectedBy: '2026-12-03T09:59:00.000Z' }] });
    assert.equal(handoff.status === 'firing' && handoff.link, '/endpoints/erp/events/e2');
    const hb = await fire(
      { type: 'heartbeatMissing', durationSeconds: 120 },
      { heartbeats: async () => ({ enabled: true, endpoints: [{ endpointId: 'crm', included: true, lastSeenAt: '2026-12-03T09:55:00.000Z' }, { endpointId: 'erp', included: true, lastSeenAt: '2026-12-03T09:59:30.000Z' }] }) },
    );
    assert.equal(hb.status, 'firing');
    assert.match(hb.status === 'firing' ? hb.summary : '', /from crm$/);
    assert.equal((await fire({ type: 'heartbeatMissing', durationSeconds: 120 }, { heartbeats: async () => ({ enabled: false, endpoints: [] }) })).status, 'unavailable');
    assert.equal((await fire({ type: 'resolverLiveness', durationSeconds: 120 }, { resolverLastSeen: async () => '2026-12-03T09:59:00.000Z' })).status, 'ok');
    const dead = await fire({ type: 'resolverLiveness', durationSeconds: 120 }, { resolverLastSeen: async () => '2026-12-03T09:50:00.000Z' });
    assert.equal(dead.status === 'firing' && dead.link, '/admin/health');
  });

  test('new failure group: unavailable without groups; with a source, a group that appears later fires once', async () => {
    const rule = { ...base, type: 'newFailureGroup' } as RuleDoc;
    const none = await evaluateRule(rule, sources({}), at, undefined);
    assert.equal(none.status, 'unavailable');
    let groups: FailureGroup[] = [{ fingerprint: 'f1', endpointId: 'crm', count: 3, label: 'TimeoutException' }];
    const src = sources({ failureGroups: { available: true, list: async () => groups } });
    const first = await evaluateRule(rule, src, at, undefined);
    assert.equal(first.status, 'ok', 'what exists when the rule starts is not new');
    groups = [...groups, { fingerprint: 'f2', endpointId: 'crm', count: 1, label: 'NullReferenceException' }];
    const second = await evaluateRule(rule, src, at, first.status === 'ok' ? first.memory : undefined);
    assert.equal(second.status, 'firing');
    assert.match(second.status === 'firing' ? second.summary : '', /NullReferenceException/);
    const third = await evaluateRule(rule, src, at, second.status === 'firing' ? second.memory : undefined);
    assert.equal(third.status, 'ok');
  });
});
