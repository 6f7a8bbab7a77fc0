// The Admin → Alerts API through its route handlers (sign-in off: the local Owner), on the embedded stack: a
// channel's secrets never come back (create, list, update), the audit record names which secrets changed but not
// their values, bad input is 400 with the reason, a missing NIMBUS_ALERTS_KEY is named, and a rule must name
// channels that exist. An edit that moves a channel to another server (a webhook URL's origin; an SMTP host, port or
// user name) does not carry the stored header or password there: 400 until it is given again, "Send test" still
// reaching the old receiver meanwhile; the audit names the destination settings changed. Nor does an edit that turns
// an SMTP channel's TLS from the start off keep the password (one that does both names both). Plain http only to loopback, and a channel stored with
// plain http to another host before that rule is flagged in the list (`insecureUrl`). A stored URL damaged in the
// container fails neither the list nor an edit.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { CONSOLE_DIR } from '../console.ts';
import { queryAudit, auditQuerySchema } from '../audit/auditLog.ts';
import { startSmtpReceiver, startWebhookReceiver } from './testing.ts';
import { AlertStore } from './alertStore.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
// One Owner makes every edit of this file, more than the rate limit's burst of 60 mutating calls within a minute
// when the tests run fast (the 61st was a 429); the limit has its own tests (server/auth/authorize.test.ts).
process.env.NIMBUS_RATE_LIMIT_BURST = '1000';
type Handler = (request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response>;

const stack = useConsoleStack({ database: 'alertroutes', env: { NIMBUS_ALERTS_KEY: randomBytes(32).toString('base64') } });
const SECRET_URL = 'https://hooks.example.test/services/T000/B000/very-secret-token';

const route = async (path: string) => (await import(pathToFileURL(join(CONSOLE_DIR, 'app', path, 'route.ts')).href)) as Record<string, Handler>;
const call = async (path: string, method: string, body?: unknown, params: Record<string, string> = {}) => {
  const mod = await route(path.replace(/\{(\w+)\}/g, '[$1]'));
  const res = await mod[method]!(
    new Request('http://127.0.0.1:3000/api/x', {
      method,
      headers: { host: '127.0.0.1:3000', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    { params: Promise.resolve(params) },
  );
  return { status: res.status, text: await res.text() };
};

describe('alerts API', () => {
  test('channel secrets are write-only and kept out of the audit log', async () => {
    const created = await call('api/admin/alerts/channels', 'POST', { type: 'slack', name: 'ops', url: SECRET_URL });
    assert.equal(created.status, 201, created.text);
    assert.ok(!created.text.includes('very-secret-token'));
    const id = (JSON.parse(created.text) as { id: string; secrets: Record<string, unknown> }).id;
    assert.deepEqual((JSON.parse(created.text) as { secrets: unknown }).secrets, { url: { set: true } });

    // An edit without the URL keeps it; the list shows it only as set.
    const renamed = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'slack', name: 'ops-renamed' }, { channelId: id });
    assert.equal(renamed.status, 200, renamed.text);
    const list = await call('api/admin/alerts/rules', 'GET');
    assert.equal(list.status, 200);
    assert.ok(!list.text.includes('very-secret-token') && !list.text.includes('hooks.example.test'));
    const channel = (JSON.parse(list.text) as { channels: Array<{ id: string; name: string; secrets: unknown }> }).channels.find((c) => c.id === id)!;
    assert.equal(channel.name, 'ops-renamed');
    assert.deepEqual(channel.secrets, { url: { set: true } });

    const audit = await queryAudit(stack.store.database, auditQuerySchema.parse({ action: 'alerts.manage', pageSize: 50 }));
    const texts = JSON.stringify(audit.items);
    assert.ok(audit.items.length >= 2, 'both changes audited');
    assert.ok(!texts.includes('very-secret-token'), 'no secret in the audit log');
    assert.match(texts, /"secretsChanged":\["url"\]/);
  });

  test('secrets go in through the API, are stored sealed, never come back, and still reach the receiver', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const hookUrl = `${receiver.url}/hooks/secret-path-1234`;
      const created = await call('api/admin/alerts/channels', 'POST', { type: 'webhook', name: 'pager', url: hookUrl, headers: { Authorization: 'Bearer tok-5678' } });
      assert.equal(created.status, 201, created.text);
      const mail = await call('api/admin/alerts/channels', 'POST', {
        type: 'email',
        name: 'mail',
        host: '127.0.0.1',
        port: 2525,
        secure: false,
        username: 'nimbus',
        password: 'pw-9012',
        from: 'nimbus@example.test',
        to: ['oncall@example.test'],
      });
      assert.equal(mail.status, 201, mail.text);
      const secrets = ['secret-path-1234', 'tok-5678', 'pw-9012'];
      const shows = (text: string) => secrets.filter((x) => text.includes(x));
      assert.deepEqual(shows(created.text + mail.text), [], 'the create answers show no secret');
      const hookId = (JSON.parse(created.text) as { id: string }).id;
      const mailId = (JSON.parse(mail.text) as { id: string }).id;
      assert.deepEqual((JSON.parse(created.text) as { secrets: unknown }).secrets, { url: { set: true }, headers: { set: true } });
      assert.deepEqual((JSON.parse(mail.text) as { secrets: unknown }).secrets, { password: { set: true } });

      // At rest: the documents as Cosmos holds them carry only AES-GCM sealed values.
      const container = stack.store.database.container('alerts');
      for (const id of [hookId, mailId]) {
        const raw = (await container.item(id, 'channel').read<{ secrets: Record<string, string> }>()).resource!;
        assert.deepEqual(shows(JSON.stringify(raw)), [], 'no secret in clear text in the store');
        for (const v of Object.values(raw.secrets)) assert.match(v, /^v1:[A-Za-z0-9+/=]{40,}$/);
      }

      // Read back every way the API offers: the rules list with its channels; an edit's answer.
      const list = await call('api/admin/alerts/rules', 'GET');
      assert.equal(list.status, 200);
      assert.deepEqual(shows(list.text), []);
      assert.ok(!list.text.includes(receiver.url), 'not even the receiver host');
      const edited = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'pager-2' }, { channelId: hookId });
      assert.equal(edited.status, 200, edited.text);
      assert.deepEqual(shows(edited.text), []);

      // The sealed URL and header still work: "Send test" reaches the receiver with both, unsealed.
      const sent = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: hookId });
      assert.equal(sent.status, 200, sent.text);
      assert.deepEqual(JSON.parse(sent.text), { ok: true });
      assert.equal(receiver.received.length, 1);
      assert.equal(receiver.received[0]!.path, '/hooks/secret-path-1234');
      assert.equal(receiver.received[0]!.headers.authorization, 'Bearer tok-5678');
      assert.equal((receiver.received[0]!.body as { notice: string }).notice, 'test');

      const audit = await queryAudit(stack.store.database, auditQuerySchema.parse({ action: 'alerts.manage', pageSize: 100 }));
      assert.deepEqual(shows(JSON.stringify(audit.items)), [], 'no secret in the audit log');
    } finally {
      await receiver.close();
    }
  });

  /** The audit entries of one channel's edits (not its create or "Send test"), newest first: their details. */
  const channelAudits = async (channelId: string) =>
    (await queryAudit(stack.store.database, auditQuerySchema.parse({ action: 'alerts.manage', pageSize: 200 }))).items
      .filter((e) => e.details?.channelId === channelId && 'settingsChanged' in e.details)
      .map((e) => ({ outcome: e.outcome, details: e.details! }));

  test("a webhook whose URL moves to another server does not send its stored headers there: 400 until they are given again", async () => {
    const [first, second] = [await startWebhookReceiver(), await startWebhookReceiver()];
    try {
      const created = await call('api/admin/alerts/channels', 'POST', { type: 'webhook', name: 'moving', url: `${first.url}/hook-a`, headers: { Authorization: 'Bearer tok-SECRET' } });
      assert.equal(created.status, 201, created.text);
      const id = (JSON.parse(created.text) as { id: string }).id;

      // Another origin (the second receiver's port), no headers: before, the sealed Authorization went along.
      const moved = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'moving', url: `${second.url}/hook-b` }, { channelId: id });
      assert.equal(moved.status, 400, moved.text);
      assert.match(moved.text, /names another server .*give its extra headers again, or \{\} for none/);
      const test1 = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: id });
      assert.deepEqual([test1.status, JSON.parse(test1.text)], [200, { ok: true }]);
      assert.deepEqual([first.received.length, second.received.length], [1, 0], 'refused whole: still the first receiver');
      assert.equal(first.received[0]!.headers.authorization, 'Bearer tok-SECRET');

      // The same server, another path: the same receiver, its header kept.
      const samePlace = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'moving', url: `${first.url}/hook-a2` }, { channelId: id });
      assert.equal(samePlace.status, 200, samePlace.text);
      // Moved with the headers given again ({}: none): the second receiver gets the notice and no Authorization.
      const regiven = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'moving', url: `${second.url}/hook-b`, headers: {} }, { channelId: id });
      assert.equal(regiven.status, 200, regiven.text);
      assert.deepEqual((JSON.parse(regiven.text) as { secrets: unknown }).secrets, { url: { set: true } }, '{} removed the headers');
      const test2 = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: id });
      assert.deepEqual([test2.status, JSON.parse(test2.text)], [200, { ok: true }]);
      assert.equal(second.received.length, 1);
      assert.equal(second.received[0]!.path, '/hook-b');
      assert.equal(second.received[0]!.headers.authorization, undefined, 'no header set for the old server');

      // The audit says which edit moved the channel to another server, never the URL.
      const audits = await channelAudits(id);
      assert.deepEqual(
        audits.map((a) => [a.outcome, a.details.urlOriginChanged, a.details.secretsChanged]),
        [
          ['succeeded', true, ['url', 'headers']],
          ['succeeded', false, ['url']],
          ['failed', true, ['url']],
        ],
      );
      const texts = JSON.stringify(audits);
      assert.ok(!texts.includes('tok-SECRET') && !texts.includes('hook-b') && !texts.includes(String(new URL(second.url).port)), texts);
    } finally {
      await first.close();
      await second.close();
    }
  });

  test("an e-mail channel moved to another SMTP server does not log in there with the stored password: 400 until it is given again", async () => {
    const [first, second] = [await startSmtpReceiver(), await startSmtpReceiver()];
    try {
      const mail = { type: 'email', name: 'mail-moving', host: '127.0.0.1', port: first.port, secure: false, username: 'nimbus', from: 'nimbus@example.test', to: ['oncall@example.test'] };
      const created = await call('api/admin/alerts/channels', 'POST', { ...mail, password: 'pw-SECRET' });
      assert.equal(created.status, 201, created.text);
      const id = (JSON.parse(created.text) as { id: string }).id;
      const authOf = (m: { auth: string | null }) => (m.auth === null ? null : Buffer.from(m.auth.replace(/^PLAIN\s+/i, ''), 'base64').toString());

      // What the console's form sends on an edit: every setting, the password field left empty.
      const moved = await call('api/admin/alerts/channels/{channelId}', 'PUT', { ...mail, port: second.port }, { channelId: id });
      assert.equal(moved.status, 400, moved.text);
      assert.match(moved.text, /the SMTP port changed: give the password again/);
      const test1 = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: id });
      assert.deepEqual([test1.status, JSON.parse(test1.text)], [200, { ok: true }]);
      assert.deepEqual([first.mails.length, second.mails.length], [1, 0], 'refused whole: still the first server');
      assert.equal(authOf(first.mails[0]!), '\0nimbus\0pw-SECRET');
      const renamedUser = await call('api/admin/alerts/channels/{channelId}', 'PUT', { ...mail, username: 'other' }, { channelId: id });
      assert.equal(renamedUser.status, 400, renamedUser.text);
      assert.match(renamedUser.text, /the SMTP username changed: give the password again/);

      // Other settings change freely (the recipients); the password stays with its account.
      const recipients = await call('api/admin/alerts/channels/{channelId}', 'PUT', { ...mail, to: ['oncall@example.test', 'second@example.test'] }, { channelId: id });
      assert.equal(recipients.status, 200, recipients.text);
      // Moved with the password given again: the new server gets that one.
      const regiven = await call('api/admin/alerts/channels/{channelId}', 'PUT', { ...mail, port: second.port, password: 'pw-NEW' }, { channelId: id });
      assert.equal(regiven.status, 200, regiven.text);
      // Moved back without a user name: nothing logs in, so the stored password is dropped, not refused.
      const anonymous = await call('api/admin/alerts/channels/{channelId}', 'PUT', { ...mail, username: undefined }, { channelId: id });
      assert.equal(anonymous.status, 200, anonymous.text);
      assert.deepEqual((JSON.parse(anonymous.text) as { secrets: unknown }).secrets, {});
      const test2 = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: id });
      assert.deepEqual([test2.status, JSON.parse(test2.text)], [200, { ok: true }]);
      assert.deepEqual([first.mails.length, authOf(first.mails[1]!)], [2, null], 'no login without a user name');

      // The audit names the destination settings each edit changed, old and new; never a password.
      const audits = await channelAudits(id);
      assert.deepEqual(
        audits.map((a) => [a.outcome, a.details.settingsChanged, a.details.secretsChanged]),
        [
          ['succeeded', { port: { from: second.port, to: first.port }, username: { from: 'nimbus', to: null } }, []],
          ['succeeded', { port: { from: first.port, to: second.port }, to: { from: ['oncall@example.test', 'second@example.test'], to: ['oncall@example.test'] } }, ['password']],
          ['succeeded', { to: { from: ['oncall@example.test'], to: ['oncall@example.test', 'second@example.test'] } }, []],
          ['failed', { username: { from: 'nimbus', to: 'other' } }, []],
          ['failed', { port: { from: first.port, to: second.port } }, []],
        ],
      );
      assert.ok(!JSON.stringify(audits).includes('pw-'), 'no password in the audit log');
    } finally {
      await first.close();
      await second.close();
    }
  });

  test("an e-mail channel whose TLS is weakened does not send the stored password over the weaker connection: 400 until it is given again", async () => {
    const receiver = await startSmtpReceiver();
    try {
      // Stored with TLS from the first byte; the receiver speaks plain SMTP, so only the edits are tried against it.
      const mail = { type: 'email', name: 'mail-tls', host: '127.0.0.1', port: receiver.port, secure: true, username: 'nimbus', from: 'nimbus@example.test', to: ['oncall@example.test'] };
      const created = await call('api/admin/alerts/channels', 'POST', { ...mail, password: 'pw-TLS-SECRET' });
      assert.equal(created.status, 201, created.text);
      const id = (JSON.parse(created.text) as { id: string }).id;
      const stored = async () => (JSON.parse((await call('api/admin/alerts/rules', 'GET')).text) as { channels: Array<{ id: string; settings: { secure?: boolean }; secrets: unknown }> }).channels.find((c) => c.id === id)!;

      // Same server, same account, TLS off (STARTTLS only when offered, which a man in the middle can withhold):
      // before, the 200 kept the password and the next notice logged in with it wherever TLS was stripped.
      const weakened = await call('api/admin/alerts/channels/{channelId}', 'PUT', { ...mail, secure: false }, { channelId: id });
      assert.equal(weakened.status, 400, weakened.text);
      assert.match(weakened.text, /the SMTP TLS setting \(secure\) changed from TLS from the start to STARTTLS when offered: give the password again/);
      // Left out, `secure` is false (the schema's default): the same weakening.
      const { secure: _s, ...omitted } = mail;
      const defaulted = await call('api/admin/alerts/channels/{channelId}', 'PUT', omitted, { channelId: id });
      assert.equal(defaulted.status, 400, defaulted.text);
      assert.deepEqual([(await stored()).settings.secure, (await stored()).secrets], [true, { password: { set: true } }], 'refused whole');

      // Given again with the weaker setting: taken, and the receiver gets that password.
      const regiven = await call('api/admin/alerts/channels/{channelId}', 'PUT', { ...mail, secure: false, password: 'pw-PLAIN' }, { channelId: id });
      assert.equal(regiven.status, 200, regiven.text);
      const sent = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: id });
      assert.deepEqual([sent.status, JSON.parse(sent.text)], [200, { ok: true }]);
      assert.equal(Buffer.from(receiver.mails[0]!.auth!.replace(/^PLAIN\s+/i, ''), 'base64').toString(), '\0nimbus\0pw-PLAIN');
      // Strengthened (TLS from the start): the stored password goes only inside TLS now, so it is kept.
      const strengthened = await call('api/admin/alerts/channels/{channelId}', 'PUT', mail, { channelId: id });
      assert.equal(strengthened.status, 200, strengthened.text);
      assert.deepEqual((JSON.parse(strengthened.text) as { secrets: unknown }).secrets, { password: { set: true } });

      // The audit names the TLS setting each edit changed, old and new; never a password.
      const audits = await channelAudits(id);
      assert.deepEqual(
        audits.map((a) => [a.outcome, a.details.settingsChanged, a.details.secretsChanged]),
        [
          ['succeeded', { secure: { from: false, to: true } }, []],
          ['succeeded', { secure: { from: true, to: false } }, ['password']],
          ['failed', { secure: { from: true, to: false } }, []],
          ['failed', { secure: { from: true, to: false } }, []],
        ],
      );
      assert.ok(!JSON.stringify(audits).includes('pw-'), 'no password in the audit log');
    } finally {
      await receiver.close();
    }
  });

  test('an e-mail edit that moves the account and weakens TLS at once names both reasons in its 400', async () => {
    // No mail is sent here: the edit is refused before anything could be, so no receiver is needed.
    const mail = { type: 'email', name: 'mail-moved-and-weakened', host: '127.0.0.1', port: 2465, secure: true, username: 'nimbus', from: 'nimbus@example.test', to: ['oncall@example.test'] };
    const created = await call('api/admin/alerts/channels', 'POST', { ...mail, password: 'pw-BOTH-SECRET' });
    assert.equal(created.status, 201, created.text);
    const id = (JSON.parse(created.text) as { id: string }).id;
    // Before, only the account was named, though the password given again would also travel without TLS.
    const both = await call('api/admin/alerts/channels/{channelId}', 'PUT', { ...mail, host: 'localhost', username: 'other', secure: false }, { channelId: id });
    assert.equal(both.status, 400, both.text);
    assert.match(
      both.text,
      /the SMTP host, username changed and the SMTP TLS setting \(secure\) changed from TLS from the start to STARTTLS when offered: give the password again/,
    );
    assert.ok(!both.text.includes('pw-'), 'never the password');
  });

  test('a channel URL is https; plain http only to a loopback host', async () => {
    for (const url of ['http://hooks.example.test/x', 'http://10.0.0.5/x', 'http://127.0.0.1.example.test/x']) {
      const r = await call('api/admin/alerts/channels', 'POST', { type: 'webhook', name: 'plain', url });
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.match(r.text, /an https URL \(plain http only to a loopback host/);
    }
    for (const url of ['https://hooks.example.test/x', 'http://127.0.0.1:9/x', 'http://localhost:9/x', 'http://[::1]:9/x']) {
      const r = await call('api/admin/alerts/channels', 'POST', { type: 'slack', name: 'ok', url });
      assert.equal(r.status, 201, `${url}: ${r.text}`);
    }
  });

  test("a channel never targets the console's own servers or a metadata address: 400 naming why; a stored one is refused when sent", async () => {
    // The embedded Cosmos and the Service Bus emulator of this stack: on loopback, trusting loopback callers.
    const cosmos = new URL(stack.env.NIMBUS_COSMOS_ENDPOINT!);
    const busPort = /Endpoint=sb:\/\/[^;]*:(\d+)/.exec(stack.env.NIMBUS_SERVICEBUS_CONNECTION_STRING!)![1]!;
    const own = [`http://127.0.0.1:${cosmos.port}/dbs`, `http://localhost:${cosmos.port}/dbs`, `http://[::1]:${busPort}/$Resources/topics`, `https://0.0.0.0:${busPort}/x`];
    const metadata = ['https://169.254.169.254/latest/meta-data/', 'https://[fd00:ec2::254]/', 'https://[::ffff:169.254.169.254]/'];
    // Before, every one of these was stored (201) and each notice went there.
    for (const [urls, reason] of [[own, /a port of the console's own servers on this machine/], [metadata, /a link-local or cloud metadata address/]] as const)
      for (const url of urls) {
        const r = await call('api/admin/alerts/channels', 'POST', { type: 'webhook', name: 'ssrf', url });
        assert.equal(r.status, 400, `${url}: ${r.text}`);
        assert.match(r.text, reason, url);
      }
    for (const host of ['169.254.169.254', 'fd00:ec2::254']) {
      const r = await call('api/admin/alerts/channels', 'POST', { type: 'email', name: 'ssrf-mail', host, port: 25, from: 'a@example.test', to: ['b@example.test'] });
      assert.equal(r.status, 400, `${host}: ${r.text}`);
      assert.match(r.text, /a link-local or cloud metadata address/);
    }
    const smtpOnCosmos = await call('api/admin/alerts/channels', 'POST', { type: 'email', name: 'ssrf-mail', host: '127.0.0.1', port: Number(cosmos.port), from: 'a@example.test', to: ['b@example.test'] });
    assert.equal(smtpOnCosmos.status, 400, smtpOnCosmos.text);
    // Stored before the rule (through the store, past the route's validation): "send test" refuses it, naming why.
    const stored = await new AlertStore(stack.store.database).saveChannel({ type: 'webhook', name: 'ssrf-stored', url: `${stack.env.NIMBUS_COSMOS_ENDPOINT}/dbs` }, 'test');
    const sent = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: stored.id });
    assert.equal(sent.status, 200, sent.text);
    assert.match((JSON.parse(sent.text) as { error: string }).error, /the URL names a port of the console's own servers on this machine .*: refused, nothing was sent/);
    // The list flags such stored channels with the reason the console shows (never the URL); before, it said nothing
    // of them while every send was refused. An SMTP host at the emulator's port, and a webhook elsewhere, for contrast.
    const emulatorPort = Number(/Endpoint=sb:\/\/[^:;]+:(\d+)/.exec(stack.env.NIMBUS_SERVICEBUS_CONNECTION_STRING!)![1]);
    const storedMail = await new AlertStore(stack.store.database).saveChannel(
      { type: 'email', name: 'ssrf-stored-mail', host: 'localhost', port: emulatorPort, secure: false, from: 'a@example.test', to: ['b@example.test'] },
      'test',
    );
    await new AlertStore(stack.store.database).saveChannel({ type: 'webhook', name: 'ssrf-stored-fine', url: 'https://hooks.example.test/fine' }, 'test');
    const list = await call('api/admin/alerts/rules', 'GET');
    assert.equal(list.status, 200, list.text);
    assert.ok(!list.text.includes('/dbs'), 'the reason, not the URL');
    const flagged = Object.fromEntries(
      (JSON.parse(list.text) as { channels: Array<{ id: string; name: string; insecureUrl?: boolean; insecureReason?: string }> }).channels
        .filter((c) => c.name.startsWith('ssrf-stored'))
        .map((c) => [c.name, [c.insecureUrl ?? false, c.insecureReason ?? null]]),
    );
    const ownReason = "a port of the console's own servers on this machine (the embedded Cosmos, the Service Bus emulator and its AMQPS port, the console): this channel will not send until it is changed.";
    assert.deepEqual(flagged, {
      'ssrf-stored': [true, `Its stored URL names ${ownReason}`],
      'ssrf-stored-mail': [true, `Its SMTP server names ${ownReason}`],
      'ssrf-stored-fine': [false, null],
    });
    assert.ok(storedMail.id);
  });

  test('a channel stored with a plain-http URL to another host is flagged in the list until its URL is https again', async () => {
    // Stored before https was required: through the store, past the route's validation, as such a channel was then.
    const alerts = new AlertStore(stack.store.database);
    const plain = await alerts.saveChannel({ type: 'webhook', name: 'stored-plain', url: 'http://hooks.example.test/plain-secret' }, 'test');
    const https = await call('api/admin/alerts/channels', 'POST', { type: 'webhook', name: 'stored-https', url: 'https://hooks.example.test/x' });
    const loopback = await call('api/admin/alerts/channels', 'POST', { type: 'slack', name: 'stored-loopback', url: 'http://127.0.0.1:9/x' });
    assert.deepEqual([https.status, loopback.status], [201, 201], https.text + loopback.text);
    const listed = async () => {
      const list = await call('api/admin/alerts/rules', 'GET');
      assert.equal(list.status, 200, list.text);
      assert.ok(!list.text.includes('plain-secret') && !list.text.includes('hooks.example.test'), 'the flag, not the URL');
      return Object.fromEntries(
        (JSON.parse(list.text) as { channels: Array<{ name: string; insecureUrl?: boolean }> }).channels.filter((c) => c.name.startsWith('stored-')).map((c) => [c.name, c.insecureUrl ?? false]),
      );
    };
    // Before, the list showed the plain-http channel like any other, though each send of it is refused.
    assert.deepEqual(await listed(), { 'stored-https': false, 'stored-loopback': false, 'stored-plain': true });
    const sent = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: plain.id });
    assert.equal(sent.status, 200, sent.text);
    assert.match((JSON.parse(sent.text) as { error: string }).error, /plain http to a host other than this machine/);

    // Renamed only, it is still refused at send time and still flagged; entered again as https, the flag goes.
    const renamed = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'stored-plain' }, { channelId: plain.id });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal((await listed())['stored-plain'], true);
    const fixed = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'stored-plain', url: 'https://hooks.example.test/plain-secret' }, { channelId: plain.id });
    assert.equal(fixed.status, 200, fixed.text);
    assert.equal((await listed())['stored-plain'], false);
  });

  test('a damaged stored URL fails neither the list nor an edit: not flagged, "send test" says it is damaged, entered again it sends', async () => {
    // Too short for its IV and tag: 'v1:' (no bytes) and 'v1:AAAA' (three), written straight into the container.
    const alerts = new AlertStore(stack.store.database);
    const container = await alerts.container();
    const damaged: Record<string, string> = {};
    for (const [name, value] of [['damaged-empty', 'v1:'], ['damaged-short', 'v1:AAAA']] as const) {
      const saved = await alerts.saveChannel({ type: 'webhook', name, url: 'https://hooks.example.test/damaged' }, 'test');
      await container.items.upsert({ ...saved, secrets: { ...saved.secrets, url: value } });
      damaged[name] = saved.id;
    }
    // Before, node's TypeError from setting up the decipher escaped the list: 500 for every reader.
    const list = await call('api/admin/alerts/rules', 'GET');
    assert.equal(list.status, 200, list.text);
    const flags = (JSON.parse(list.text) as { channels: Array<{ name: string; insecureUrl?: boolean }> }).channels.filter((c) => c.name.startsWith('damaged-'));
    assert.deepEqual(flags.map((c) => [c.name, c.insecureUrl ?? false]), [['damaged-empty', false], ['damaged-short', false]]);

    const sent = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: damaged['damaged-empty']! });
    assert.equal(sent.status, 200, sent.text);
    assert.equal((JSON.parse(sent.text) as { ok: boolean; error: string }).error, "channel 'damaged-empty' (webhook): a stored channel secret is damaged (not a whole sealed value): enter it again");

    // A rename keeps the damaged URL (nothing to read); entering the URL again replaces it.
    const renamed = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'damaged-short' }, { channelId: damaged['damaged-short']! });
    assert.equal(renamed.status, 200, renamed.text);
    const receiver = await startWebhookReceiver();
    try {
      const fixed = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'damaged-short', url: `${receiver.url}/repaired` }, { channelId: damaged['damaged-short']! });
      assert.equal(fixed.status, 200, fixed.text);
      const works = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: damaged['damaged-short']! });
      assert.deepEqual(JSON.parse(works.text), { ok: true });
    } finally {
      await receiver.close();
    }
  });

  test('bad input is 400 with the reason; a rule needs existing channels; the history lists alerts', async () => {
    const noThreshold = await call('api/admin/alerts/rules', 'POST', { name: 'x', type: 'failureRate', endpointId: 'billingendpoint' });
    assert.equal(noThreshold.status, 400);
    assert.match(noThreshold.text, /threshold/);
    const badUrl = await call('api/admin/alerts/channels', 'POST', { type: 'webhook', name: 'x', url: 'ftp://nope' });
    assert.equal(badUrl.status, 400);
    const ghost = await call('api/admin/alerts/rules', 'POST', { name: 'x', type: 'resolverLiveness', channelIds: ['no-such-channel'] });
    assert.equal(ghost.status, 400);
    assert.match(ghost.text, /no alert channel no-such-channel/);
    const ok = await call('api/admin/alerts/rules', 'POST', { name: 'resolver down', type: 'resolverLiveness', durationSeconds: 120 });
    assert.equal(ok.status, 201, ok.text);
    const history = await call('api/alerts/history', 'GET');
    assert.equal(history.status, 200);
    assert.ok(Array.isArray((JSON.parse(history.text) as { alerts: unknown[] }).alerts));
  });

  test("a rule's endpoint is taken exactly as sent: spaces alone, a space around it or too long is a 400 in the exact-id rule's words", async () => {
    // Before, the id was trimmed: spaces alone named no endpoint (or were refused as too short) and " billingendpoint"
    // was stored as billingendpoint.
    const refused: Array<[string, string]> = [
      ['   ', 'an endpoint id of spaces alone names nothing; ids are taken exactly as sent'],
      [' billingendpoint', 'an endpoint id is made of letters, digits, ".", "_" and "-" alone (no spaces): this one names no endpoint'],
      ['billingendpoint ', 'an endpoint id is made of letters, digits, ".", "_" and "-" alone (no spaces): this one names no endpoint'],
      ['x'.repeat(51), 'an endpoint id longer than 50 characters names nothing; no endpoint id is that long'],
      ['', 'an endpoint id is empty'],
    ];
    for (const type of ['failureRate', 'deadLetterBacklog'] as const) {
      for (const [endpointId, words] of refused) {
        const r = await call('api/admin/alerts/rules', 'POST', { name: 'exact', type, endpointId, threshold: 5 });
        assert.equal(r.status, 400, `${type} ${JSON.stringify(endpointId)}: ${r.text}`);
        assert.ok(((JSON.parse(r.text) as { detail?: string }).detail ?? '').includes(words), `${type} ${JSON.stringify(endpointId)}: ${r.text}`);
      }
    }
    const list = await call('api/admin/alerts/rules', 'GET');
    assert.ok(!(JSON.parse(list.text) as { rules: Array<{ name: string }> }).rules.some((r) => r.name === 'exact'), 'none stored');
    // An edit is held to the same rule; null is still "every endpoint" where the rule allows it, and an id as sent.
    const made = await call('api/admin/alerts/rules', 'POST', { name: 'exact ok', type: 'deadLetterBacklog', endpointId: null, threshold: 5 });
    assert.equal(made.status, 201, made.text);
    const { id } = JSON.parse(made.text) as { id: string };
    const edited = await call('api/admin/alerts/rules/{ruleId}', 'PUT', { name: 'exact ok', type: 'deadLetterBacklog', endpointId: '  ', threshold: 5 }, { ruleId: id });
    assert.equal(edited.status, 400, edited.text);
    assert.match(edited.text, /an endpoint id of spaces alone names nothing/);
    const named = await call('api/admin/alerts/rules/{ruleId}', 'PUT', { name: 'exact ok', type: 'deadLetterBacklog', endpointId: 'billingendpoint', threshold: 5 }, { ruleId: id });
    assert.equal(named.status, 200, named.text);
    assert.equal((JSON.parse(named.text) as { endpointId: string }).endpointId, 'billingendpoint');
  });

  test('after a key change the URLs can be entered again; the unreadable headers are asked for with them', async () => {
    const receiver = await startWebhookReceiver();
    const key = process.env.NIMBUS_ALERTS_KEY;
    try {
      const slack = await call('api/admin/alerts/channels', 'POST', { type: 'slack', name: 'rekeyed-slack', url: SECRET_URL });
      const hook = await call('api/admin/alerts/channels', 'POST', { type: 'webhook', name: 'rekeyed-hook', url: `${receiver.url}/h`, headers: { Authorization: 'Bearer old' } });
      assert.deepEqual([slack.status, hook.status], [201, 201], slack.text + hook.text);
      const [slackId, hookId] = [slack.text, hook.text].map((t) => (JSON.parse(t) as { id: string }).id);
      process.env.NIMBUS_ALERTS_KEY = randomBytes(32).toString('base64');

      // Before, reading the stored URL (to compare its server) failed with the new key: 400 "does not decrypt".
      const slackAgain = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'slack', name: 'rekeyed-slack', url: SECRET_URL }, { channelId: slackId! });
      assert.equal(slackAgain.status, 200, slackAgain.text);
      // The old URL is unreadable, so its server counts as changed: the headers, unreadable too, must come with it.
      const urlOnly = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'rekeyed-hook', url: `${receiver.url}/h` }, { channelId: hookId! });
      assert.equal(urlOnly.status, 400, urlOnly.text);
      assert.match(urlOnly.text, /give its extra headers again/);
      const both = await call('api/admin/alerts/channels/{channelId}', 'PUT', { type: 'webhook', name: 'rekeyed-hook', url: `${receiver.url}/h`, headers: { Authorization: 'Bearer new' } }, { channelId: hookId! });
      assert.equal(both.status, 200, both.text);
      const sent = await call('api/admin/alerts/channels/{channelId}/test', 'POST', undefined, { channelId: hookId! });
      assert.deepEqual([sent.status, JSON.parse(sent.text)], [200, { ok: true }]);
      assert.equal(receiver.received[0]!.headers.authorization, 'Bearer new');
    } finally {
      process.env.NIMBUS_ALERTS_KEY = key;
      await receiver.close();
    }
  });

  test('without NIMBUS_ALERTS_KEY a channel with a secret is refused, naming the variable', async () => {
    const key = process.env.NIMBUS_ALERTS_KEY;
    delete process.env.NIMBUS_ALERTS_KEY;
    try {
      const r = await call('api/admin/alerts/channels', 'POST', { type: 'teams', name: 't', url: SECRET_URL });
      assert.equal(r.status, 400);
      assert.match(r.text, /NIMBUS_ALERTS_KEY is not set/);
      assert.ok(!r.text.includes('very-secret-token'));
    } finally {
      process.env.NIMBUS_ALERTS_KEY = key;
    }
  });
});
