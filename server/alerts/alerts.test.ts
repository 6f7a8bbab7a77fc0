// Alerts end to end (issue 16): failures recorded by the real Resolver (embedded emulator + embedded Cosmos) reach
// the stored time series; a failure-rate rule evaluated by two evaluator instances on the same Cosmos (two console
// replicas) sends exactly one "fired" notice to a local webhook receiver, then one "recovered" notice; a second
// burst inside the cool-down sends nothing, one after it fires again. Channel secrets are stored sealed; Teams,
// Slack and e-mail (a tiny SMTP receiver) get their own formats.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { MessageType as T, Prop } from '@nimbus/sdk/contract';
import { LeaseStore, TimeSeriesStore } from '../../lib/store/index.ts';
import { errorBody, eventually, ResolverHarness } from '../../resolver-worker/testHarness.ts';
import { AlertStore } from './alertStore.ts';
import { noticeOf, sendNotice, smtpTransportOptions, type AlertNotice } from './channels.ts';
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

describe('the real sources of the row-based rules', () => {
  test('a Failed row blocks its session and a handoff past its expected-by is overdue, as the Resolver wrote them', async () => {
    const src = deps(new AlertStore(h.store.database, env)).sources;
    const ep = uniq('rows');
    await failures(ep, 1);
    // Blocked since the row was last written: older than T only once T has passed since then.
    const [row] = await src.blockedSessions(new Date(Date.now() + 365 * 86_400_000), ep);
    assert.ok(row, 'the Failed row blocks its session');
    assert.equal(row.endpointId, ep);
    const since = Date.parse(row.since);
    assert.deepEqual(await src.blockedSessions(new Date(since - 1), ep), [], 'not yet older than T');
    assert.deepEqual(await src.blockedSessions(new Date(since + 1), ep), [row]);
    const rule = { ...ruleInputSchema.parse({ name: 'b', type: 'blockedSession', endpointId: ep, durationSeconds: 60 }), id: 'b', kind: 'rule' as const, createdAt: '', updatedAt: '', updatedBy: '' };
    assert.equal((await evaluateRule(rule, src, new Date(since + 30_000), undefined)).status, 'ok');
    const fired = await evaluateRule(rule, src, new Date(since + 61_000), undefined);
    assert.equal(fired.status === 'firing' && fired.link, `/endpoints/${ep}/events/${row.eventId}`);

    const hep = uniq('erp');
    const ev = uniq('e');
    const sessionId = uniq('s');
    const expectedBy = new Date(clock + 5 * 60_000).toISOString();
    const req = await h.send({ type: T.EventRequest, eventId: ev, sessionId, to: hep, from: 'shop' });
    await h.settledOk(req.messageId);
    const pending = await h.send({ type: T.PendingHandoffResponse, eventId: ev, sessionId, from: hep, to: 'Resolver', parentMessageId: req.messageId, props: { [Prop.HandoffReason]: 'ledger import', [Prop.ExpectedBy]: expectedBy } });
    await h.settledOk(pending.messageId);
    assert.deepEqual(await src.overdueHandoffs(new Date(clock), hep), [], 'before its expected-by');
    assert.deepEqual(await src.overdueHandoffs(new Date(clock + 6 * 60_000), hep), [{ endpointId: hep, eventId: ev, expectedBy }]);
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
    // Characters Slack treats as markup, to show they are escaped there and kept as they are elsewhere.
    summary: 'billing: 7 failures in a minute (threshold 2) <!channel> & co',
    link: '/endpoints/billing?status=Failed&from=2026-12-03T09:59:00.000Z',
    deliveries: [],
  };
  const notice = noticeOf(alert, 'fired', 'https://console.example/');

  test('Teams gets the documented incoming-webhook Adaptive Card envelope, exactly', async () => {
    const alerts = new AlertStore(h.store.database, env);
    const teams = await alerts.saveChannel({ type: 'teams', name: 't', url: `${hook.url}/teams/webhookb2/abc` }, 'tester');
    const recovered = noticeOf({ ...alert, recoveredAt: '2026-12-03T10:05:00.000Z' }, 'recovered', 'https://console.example/');
    await sendNotice(teams, notice, { env });
    await sendNotice(teams, recovered, { env });
    const got = hook.received.filter((r) => r.path === '/teams/webhookb2/abc');
    assert.equal(got.length, 2);
    assert.equal(got[0]!.headers['content-type'], 'application/json');
    // "Send Adaptive Cards using an incoming webhook" (Microsoft Teams docs): type "message", the attachments with the
    // adaptive-card content type, contentUrl null, and the card as content.
    const card = (state: string, color: string, facts: Array<{ title: string; value: string }>) => ({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          contentUrl: null,
          content: {
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            type: 'AdaptiveCard',
            version: '1.2',
            body: [
              { type: 'TextBlock', size: 'Medium', weight: 'Bolder', text: `[NimBus] ${state}: billing failing`, wrap: true, color },
              { type: 'TextBlock', text: 'billing: 7 failures in a minute (threshold 2) <!channel> & co', wrap: true },
              { type: 'FactSet', facts },
            ],
            actions: [{ type: 'Action.OpenUrl', title: 'Open in the console', url: 'https://console.example/endpoints/billing?status=Failed&from=2026-12-03T09:59:00.000Z' }],
          },
        },
      ],
    });
    const facts = [
      { title: 'Rule', value: 'billing failing (failureRate)' },
      { title: 'Endpoint', value: 'billing' },
      { title: 'Fired', value: '2026-12-03T10:00:00.000Z' },
    ];
    assert.deepEqual(got[0]!.body, card('FIRING', 'Attention', facts));
    assert.deepEqual(got[1]!.body, card('RECOVERED', 'Good', [...facts, { title: 'Recovered', value: '2026-12-03T10:05:00.000Z' }]));
  });

  test('Slack gets text and blocks as its incoming webhooks document, with &, < and > escaped', async () => {
    const alerts = new AlertStore(h.store.database, env);
    const slack = await alerts.saveChannel({ type: 'slack', name: 's', url: `${hook.url}/slack/services/T0/B0/x` }, 'tester');
    await sendNotice(slack, notice, { env });
    const got = hook.received.filter((r) => r.path === '/slack/services/T0/B0/x');
    assert.equal(got.length, 1);
    assert.equal(got[0]!.headers['content-type'], 'application/json');
    assert.deepEqual(got[0]!.body, {
      text: '[NimBus] FIRING: billing failing: billing: 7 failures in a minute (threshold 2) &lt;!channel&gt; &amp; co',
      blocks: [
        { type: 'section', text: { type: 'mrkdwn', text: '*[NimBus] FIRING: billing failing*\nbilling: 7 failures in a minute (threshold 2) &lt;!channel&gt; &amp; co' } },
        {
          type: 'context',
          elements: [
            {
              type: 'mrkdwn',
              text: 'fired 2026-12-03T10:00:00.000Z · <https://console.example/endpoints/billing?status=Failed&amp;from=2026-12-03T09:59:00.000Z|open in the console>',
            },
          ],
        },
      ],
    });
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
      const m = smtp.mails[0]!;
      assert.equal(m.from, 'nimbus@example.test', 'the envelope sender');
      assert.deepEqual(m.to, ['oncall@example.test'], 'the envelope recipients');
      // AUTH PLAIN: base64 of "\0user\0password" (RFC 4616), with the unsealed password.
      assert.equal(Buffer.from(m.auth!.replace(/^PLAIN\s+/i, ''), 'base64').toString(), '\0nimbus\0smtp-pass');
      const [head, ...rest] = m.data.split('\n\n');
      const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'mi').exec(head!)?.[1];
      assert.equal(header('Subject'), '[NimBus] FIRING: billing failing');
      assert.equal(header('From'), 'nimbus@example.test');
      assert.equal(header('To'), 'oncall@example.test');
      assert.match(header('Content-Type') ?? '', /^text\/plain; charset=utf-8/);
      // The body, decoded from quoted-printable when nodemailer chose it (long lines).
      let body = rest.join('\n\n');
      if (/quoted-printable/i.test(header('Content-Transfer-Encoding') ?? ''))
        body = body.replace(/=\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      assert.equal(
        body.trim(),
        [
          'billing: 7 failures in a minute (threshold 2) <!channel> & co',
          '',
          'Rule: billing failing (failureRate) on billing',
          'Fired: 2026-12-03T10:00:00.000Z',
          '',
          'Open in the console: https://console.example/endpoints/billing?status=Failed&from=2026-12-03T09:59:00.000Z',
        ].join('\n'),
      );
    } finally {
      await smtp.close();
    }
  });

  test('e-mail to a host other than this machine goes only encrypted: a server offering no STARTTLS gets no AUTH, nothing is sent', async (t) => {
    // A real receiver on this machine's own non-loopback address: to the channel it is a remote server that offers
    // no STARTTLS (as one would whose offer a network attacker strips). Before, nodemailer went on in clear and sent
    // AUTH PLAIN - the password in base64 - and the notice.
    const address = Object.values(networkInterfaces())
      .flat()
      .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;
    if (address === undefined) return t.skip('this machine has no non-loopback IPv4 address (smtpTransportOptions is tested below)');
    const smtp = await startSmtpReceiver({ host: address });
    try {
      const alerts = new AlertStore(h.store.database, env);
      const mail = await alerts.saveChannel(
        { type: 'email', name: 'remote mail', host: address, port: smtp.port, secure: false, username: 'nimbus', password: 'smtp-remote-pass', from: 'nimbus@example.test', to: ['oncall@example.test'] },
        'tester',
      );
      await assert.rejects(sendNotice(mail, notice, { env }), (err: Error) => {
        assert.match(err.message, /^channel 'remote mail' \(email\): no TLS with the SMTP server .*nothing was sent$/);
        assert.ok(!err.message.includes('smtp-remote-pass'));
        return true;
      });
      assert.ok(smtp.commands.includes('STARTTLS'), `STARTTLS asked for: ${smtp.commands.join(' ')}`);
      assert.deepEqual(
        smtp.commands.filter((c) => ['AUTH', 'MAIL', 'RCPT', 'DATA'].includes(c)),
        [],
        'no credentials and no mail in clear',
      );
      assert.equal(smtp.mails.length, 0);
    } finally {
      await smtp.close();
    }
  });

  test('the SMTP transport requires TLS to every host but loopback', () => {
    const settings = (host: string, port: number, secure: boolean) => ({ host, port, secure, username: 'u', from: 'a@example.test', to: ['b@example.test'] });
    const remote = smtpTransportOptions(settings('smtp.example.test', 587, false), 'pw', 1000);
    assert.equal(remote.secure, false);
    assert.equal(remote.requireTLS, true, 'STARTTLS required, not merely used when offered');
    const implicit = smtpTransportOptions(settings('smtp.example.test', 465, true), 'pw', 1000);
    assert.equal(implicit.secure, true, 'TLS from the first byte');
    for (const host of ['127.0.0.1', 'localhost', '[::1]', '::1', '127.1.2.3'])
      assert.equal(smtpTransportOptions(settings(host, 25, false), 'pw', 1000).requireTLS, false, `${host}: a local relay may be plain`);
    for (const host of ['192.0.2.2', 'mail.localhost.example', '10.0.0.1', '::ffff:8.8.8.8'])
      assert.equal(smtpTransportOptions(settings(host, 25, false), 'pw', 1000).requireTLS, true, host);
  });

  test('secrets: sealed values decrypt only with the key; a missing key is named', () => {
    const key = alertsKey(env);
    const sealed = seal('https://hooks.example/abc', key);
    assert.ok(!sealed.includes('hooks.example'));
    assert.equal(unseal(sealed, key), 'https://hooks.example/abc');
    assert.throws(() => unseal(sealed, randomBytes(32)), /does not decrypt/);
    // Too short for the IV and tag (damaged in the store): the same error class, never node's TypeError.
    for (const damaged of ['v1:', 'v1:AAAA', sealed.slice(0, 20)])
      assert.throws(() => unseal(damaged, key), (err: Error) => err.name === 'SecretKeyError' && /is damaged/.test(err.message) && !err.message.includes(damaged));
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
      { heartbeats: async () => ({ enabled: true, endpoints: [{ endpointId: 'crm', included: true, lastSeenAt: '2026-12-03T09:55:00.000Z', busy: false }, { endpointId: 'erp', included: true, lastSeenAt: '2026-12-03T09:59:30.000Z', busy: false }, { endpointId: 'wms', included: true, lastSeenAt: '2026-12-03T09:50:00.000Z', busy: true }] }) },
    );
    assert.equal(hb.status, 'firing');
    // wms answered no probe for 10 min but is busy (its probe queued behind a backlog it is answering): not missing.
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

describe('every rule type: fires once, recovers, the cool-down holds, fires again after it', () => {
  // The evaluator's state machine with the real AlertStore (its own database, so the rules of the tests above are
  // not evaluated here) and a local webhook receiver; only the sources are stand-ins whose condition the test
  // switches. The real sources are exercised above (failure rate) and in failureGroupSource.test.ts.
  const t0 = Date.parse('2026-12-03T10:00:00.000Z');
  let at = t0;
  let bad = false;
  let groupSeq = 0;
  const sourceOf = (): AlertSources => ({
    failuresPerMinute: async () => ({ previous: 0, current: bad ? 9 : 0 }),
    deadLetters: async () => (bad ? 12 : 3),
    blockedSessions: async () => (bad ? [{ endpointId: 'crm', eventId: 'e-blocked', sessionId: 's1', since: new Date(at - 3_600_000).toISOString() }] : []),
    overdueHandoffs: async () => (bad ? [{ endpointId: 'erp', eventId: 'e-handoff', expectedBy: new Date(at - 60_000).toISOString() }] : []),
    heartbeats: async () => ({ enabled: true, endpoints: [{ endpointId: 'crm', included: true, lastSeenAt: new Date(bad ? at - 600_000 : at - 5_000).toISOString(), busy: false }] }),
    resolverLastSeen: async () => new Date(bad ? at - 600_000 : at - 5_000).toISOString(),
    failureGroups: {
      available: true,
      // Each time the condition turns bad a group appears that was not there before.
      list: async () => Array.from({ length: groupSeq }, (_, i) => ({ fingerprint: `f${i}`, endpointId: 'crm', count: 1, label: `Error${i}` })),
    },
  });
  // firedFor: whose records the alert's text names (the alert reads show it only to that endpoint's readers).
  const rules: Array<{ type: RuleDoc['type']; extra: Record<string, unknown>; link: string; firedFor: string | null }> = [
    { type: 'failureRate', extra: { endpointId: 'billing', threshold: 5 }, link: '/endpoints/billing?status=Failed,DeadLettered&from=', firedFor: 'billing' },
    { type: 'newFailureGroup', extra: {}, link: '/endpoints/crm?status=Failed', firedFor: 'crm' },
    { type: 'deadLetterBacklog', extra: { threshold: 10 }, link: '/topology/subscriptions', firedFor: null },
    { type: 'blockedSession', extra: { durationSeconds: 600 }, link: '/endpoints/crm/events/e-blocked', firedFor: 'crm' },
    { type: 'pendingHandoff', extra: {}, link: '/endpoints/erp/events/e-handoff', firedFor: 'erp' },
    { type: 'heartbeatMissing', extra: { durationSeconds: 120 }, link: '/admin/health', firedFor: null },
    { type: 'resolverLiveness', extra: { durationSeconds: 120 }, link: '/admin/health', firedFor: null },
  ];

  for (const r of rules) {
    test(r.type, async () => {
      const { database } = await h.store.database.client.databases.createIfNotExists({ id: `alerts-life-${r.type.toLowerCase()}` });
      const alerts = new AlertStore(database, env);
      const channel = await alerts.saveChannel({ type: 'webhook', name: 'life', url: `${hook.url}/life/${r.type}` }, 'tester');
      const rule = await alerts.saveRule(ruleInputSchema.parse({ name: `life ${r.type}`, type: r.type, cooldownSeconds: 900, channelIds: [channel.id], ...r.extra }), 'tester');
      at = t0;
      bad = false;
      groupSeq = 1;
      const d: EvaluatorDeps = { alerts, sources: sourceOf(), consoleUrl: 'http://console.test', now: () => new Date(at), env };
      const tick = async (minutes: number) => {
        at += minutes * 60_000;
        return evaluateAlerts(d);
      };
      const got = () => hook.received.filter((x) => x.path === `/life/${r.type}`).map((x) => x.body as AlertNotice);
      const turnBad = () => {
        bad = true;
        groupSeq++;
      };

      assert.deepEqual(await tick(0), { fired: [], recovered: [], suppressed: [], unavailable: [] }, 'healthy: nothing');
      turnBad();
      assert.deepEqual((await tick(1)).fired, [rule.id]);
      assert.equal((await alerts.getState(rule.id)).state!.lastDetailFor, r.firedFor, 'the detail of the fire names it');
      // (A failure group is new once: the next evaluation after its fire already recovers.)
      if (r.type !== 'newFailureGroup') {
        assert.deepEqual((await tick(0.5)).fired, [], 'still firing: nothing more is sent');
        bad = false;
      }
      assert.deepEqual((await tick(0.5)).recovered, [rule.id]);
      assert.deepEqual(got().map((n) => [n.notice, n.rule.type]), [
        ['fired', r.type],
        ['recovered', r.type],
      ]);
      assert.ok(got()[0]!.link.startsWith(`http://console.test${r.link}`), `${got()[0]!.link} links to ${r.link}`);
      assert.equal(got()[1]!.alertId, got()[0]!.alertId, 'the recovery names the alert it ends');
      assert.ok(got()[1]!.recoveredAt !== null);

      // Inside the cool-down (15 min from the fire): suppressed, nothing sent, and so no recovery notice either.
      turnBad();
      assert.deepEqual((await tick(2)).suppressed, [rule.id]);
      bad = false;
      await tick(0.5);
      assert.equal(got().length, 2, 'the cool-down holds');

      // After it: fires again.
      turnBad();
      assert.deepEqual((await tick(20)).fired, [rule.id]);
      assert.deepEqual(got().map((n) => n.notice), ['fired', 'recovered', 'fired']);
      const history = (await alerts.listAlerts()).filter((x) => x.ruleId === rule.id);
      assert.equal(history.length, 2);
      assert.equal(history.filter((x) => x.recoveredAt !== null).length, 1);
      assert.deepEqual(history.map((x) => x.firedFor), [r.firedFor, r.firedFor], 'each alert records whose records it names');
    });
  }
});
