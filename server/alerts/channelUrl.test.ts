// A channel URL stored before https was required (plain http to another machine) is refused when a notice is sent,
// with a reason that says what to do and does not quote the URL; plain http to this machine still sends. A stored
// value that is no http URL at all is refused too, without being called plain http.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { noticeOf, sendNotice } from './channels.ts';
import { hostProblem, OWN_SERVER_REFUSAL } from './channelTarget.ts';
import type { AlertDoc, ChannelDoc } from './model.ts';
import { ALERTS_KEY_ENV, alertsKey, seal } from './secrets.ts';
import { startSmtpReceiver, startWebhookReceiver } from './testing.ts';

const env = { [ALERTS_KEY_ENV]: randomBytes(32).toString('base64') };

/** A stored Slack channel with `url` sealed as the store seals it, whatever the input rules say today. */
const storedSlack = (url: string): ChannelDoc => ({
  id: 'c1',
  kind: 'channel',
  type: 'slack',
  name: 'old-slack',
  settings: {},
  secrets: { url: seal(url, alertsKey(env)) },
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  updatedBy: 'tester',
});

const alert: AlertDoc = {
  id: 'a1',
  kind: 'alert',
  ruleId: 'r1',
  ruleName: 'test',
  ruleType: 'failureRate',
  endpointId: null,
  firedAt: '2026-12-03T10:00:00.000Z',
  recoveredAt: null,
  value: 0,
  threshold: null,
  summary: 'a notice',
  link: '/alerts',
  deliveries: [],
};
const notice = noticeOf(alert, 'fired', 'https://console.example/');

test('a stored plain-http URL to another host is refused at send time, naming what to do', async () => {
  // `.invalid` never resolves: before, the send was attempted and failed only as "TypeError".
  await assert.rejects(
    sendNotice(storedSlack('http://hooks.nimbus.invalid/services/secret-token'), notice, { env }),
    (err: Error) => {
      assert.equal(
        err.message,
        "channel 'old-slack' (slack): the stored URL is plain http to a host other than this machine: enter it again as https",
      );
      return true;
    },
  );
});

test('a stored value that is not an http URL is refused as not https, not called plain http', async () => {
  // Before, every refused URL was reported as "plain http to a host other than this machine".
  for (const url of ['not a url', 'ftp://hooks.nimbus.invalid/x'])
    await assert.rejects(sendNotice(storedSlack(url), notice, { env }), {
      message: "channel 'old-slack' (slack): the stored URL is not an https URL: enter it again as https",
    });
});

test('a stored plain-http URL to this machine still sends', async () => {
  const receiver = await startWebhookReceiver();
  try {
    await sendNotice(storedSlack(`${receiver.url}/slack`), notice, { env });
    assert.equal(receiver.received.length, 1);
  } finally {
    await receiver.close();
  }
});

// The console's own servers on this machine (the embedded Cosmos, the Service Bus emulator, the console) and metadata
// addresses are never a notice's target (channelTarget.ts). A receiver stands in for the embedded server here, so
// "nothing reached it" is observed, not assumed: the console's settings name its port as the Cosmos endpoint's.
const ownServerEnv = (url: string) => ({ ...env, NIMBUS_COSMOS_ENDPOINT: url });
const OWN_SERVER = /a port of the console's own servers on this machine .*: refused, nothing was sent/;

test("a stored URL aimed at a port of the console's own servers is refused at send time, and nothing reaches it", async () => {
  const embedded = await startWebhookReceiver();
  try {
    const port = new URL(embedded.url).port;
    // Before, each of these was sent: the console's own POST landed on its embedded server.
    for (const url of [`${embedded.url}/dbs/nimbus/colls`, `http://localhost:${port}/x`, `https://[::ffff:127.0.0.1]:${port}/x`, `https://0.0.0.0:${port}/x`])
      await assert.rejects(sendNotice(storedSlack(url), notice, { env: ownServerEnv(embedded.url) }), { message: new RegExp(`channel 'old-slack' \\(slack\\): the URL names ${OWN_SERVER.source}`) }, url);
    assert.equal(embedded.received.length, 0);
    // Another loopback port still sends (the local receivers of tests and a developer's machine).
    const other = await startWebhookReceiver();
    try {
      await sendNotice(storedSlack(`${other.url}/slack`), notice, { env: ownServerEnv(embedded.url) });
      assert.equal(other.received.length, 1);
    } finally {
      await other.close();
    }
  } finally {
    await embedded.close();
  }
});

test('a stored URL naming a link-local or cloud metadata address is refused at send time, on any port', async () => {
  // Before, the console tried to connect (and with a metadata service there, would have posted to it).
  for (const url of ['https://169.254.169.254/latest/meta-data/', 'https://[fd00:ec2::254]/', 'https://[::ffff:169.254.169.254]:8443/', 'https://[fe80::1]/'])
    await assert.rejects(sendNotice(storedSlack(url), notice, { env, timeoutMs: 2000 }), { message: /the URL names a link-local or cloud metadata address .*: refused, nothing was sent/ }, url);
});

test("a name is resolved when the notice is sent and its address checked: an SMTP host resolving to the console's own server is refused", async () => {
  // `localhost` is a name: the address it resolves to now is what is checked, not the name as configured.
  const embedded = await startSmtpReceiver();
  try {
    const channel: ChannelDoc = {
      ...storedSlack('unused'),
      type: 'email',
      name: 'mail',
      settings: { host: 'localhost', port: embedded.port, secure: false, from: 'nimbus@example.test', to: ['oncall@example.test'] },
      secrets: {},
    };
    const embeddedEnv = { ...env, NIMBUS_SERVICEBUS_CONNECTION_STRING: `Endpoint=sb://127.0.0.1:${embedded.port};SharedAccessKeyName=k;SharedAccessKey=v` };
    await assert.rejects(sendNotice(channel, notice, { env: embeddedEnv }), { message: /channel 'mail' \(email\): the target resolves to a port of the console's own servers/ });
    assert.deepEqual([embedded.commands, embedded.mails], [[], []], 'not even a greeting answered');
    // The same channel to a server that is not the console's own still sends.
    await sendNotice(channel, notice, { env });
    assert.equal(embedded.mails.length, 1);
  } finally {
    await embedded.close();
  }
});

test("every spelling of a loopback address is this machine: an e-mail host `0::1` at an own server's port is refused on input and at send", async () => {
  // A text match knew `::1` and the full form only; `0::1`, `::0.0.0.1`, `0:0::1` and the zero-padded form are the
  // same address, and a resolver hands a literal back as written - before, each was accepted and connected to.
  const port = 8081;
  const ownEnv = { ...env, NIMBUS_COSMOS_ENDPOINT: `https://127.0.0.1:${port}/` };
  for (const host of ['0::1', '::0.0.0.1', '0:0::1', '0000:0000:0000:0000:0000:0000:0000:0001', '::ffff:7f00:1', '0::0', '::ffff:0.0.0.0']) {
    assert.equal(hostProblem(host, port, ownEnv), OWN_SERVER_REFUSAL, host);
    const channel: ChannelDoc = {
      ...storedSlack('unused'),
      type: 'email',
      name: 'mail',
      settings: { host, port, secure: false, from: 'nimbus@example.test', to: ['oncall@example.test'] },
      secrets: {},
    };
    await assert.rejects(sendNotice(channel, notice, { env: ownEnv, timeoutMs: 2000 }), { message: /channel 'mail' \(email\): the target resolves to a port of the console's own servers/ }, host);
  }
  // Another port of this machine is still a target (the tests' receivers), and so is another address.
  assert.equal(hostProblem('0::1', port + 1, ownEnv), null);
  assert.equal(hostProblem('::2', port, ownEnv), null);
});

// Platform addresses outside link-local, and GCP's metadata name: before, each was accepted and connected to.
test("Azure's wireserver, Alibaba's and AWS's IPv6 metadata addresses and GCP's metadata name are refused on input and at send", async () => {
  for (const host of ['168.63.129.16', '100.100.100.200', 'fd00:ec2::254', '::ffff:168.63.129.16', 'metadata.google.internal', 'Metadata.Google.Internal.', 'metadata'])
    assert.match(hostProblem(host, 443, env) ?? '', /^a link-local or cloud metadata address/, host);
  for (const url of ['https://168.63.129.16/machine?comp=goalstate', 'https://100.100.100.200/latest/meta-data/', 'https://[::ffff:a83f:8110]/'])
    await assert.rejects(sendNotice(storedSlack(url), notice, { env, timeoutMs: 2000 }), { message: /the URL names a link-local or cloud metadata address .*: refused, nothing was sent/ }, url);
  // Neighbours of those addresses stay targets.
  for (const host of ['168.63.129.17', '100.100.100.201']) assert.equal(hostProblem(host, 443, env), null, host);
});

test('a name is checked by the addresses the resolver gives when sent: a name resolving to a platform address is refused', async () => {
  // The resolver seam stands in for DNS (GCP's resolver answers metadata.google.internal with 169.254.169.254).
  const asked: string[] = [];
  const resolveTo =
    (address: string): NonNullable<Parameters<typeof sendNotice>[2]>['resolve'] =>
    (hostname, _options, callback) => {
      asked.push(hostname);
      callback(null, [{ address, family: address.includes(':') ? 6 : 4 }]);
    };
  for (const address of ['169.254.169.254', '168.63.129.16', '100.100.100.200', 'fd00:ec2::254'])
    await assert.rejects(
      sendNotice(storedSlack('https://hooks.example.test/x'), notice, { env, timeoutMs: 2000, resolve: resolveTo(address) }),
      { message: /the target resolves to a link-local or cloud metadata address .*: refused, nothing was sent/ },
      address,
    );
  assert.deepEqual(asked, ['hooks.example.test', 'hooks.example.test', 'hooks.example.test', 'hooks.example.test']);
  // GCP's name itself is refused before any lookup, for an e-mail host too (input: hostProblem above).
  const mail: ChannelDoc = {
    ...storedSlack('unused'),
    type: 'email',
    name: 'mail',
    settings: { host: 'metadata.google.internal', port: 25, secure: false, from: 'nimbus@example.test', to: ['oncall@example.test'] },
    secrets: {},
  };
  await assert.rejects(sendNotice(mail, notice, { env, timeoutMs: 2000, resolve: resolveTo('203.0.113.9') }), {
    message: /channel 'mail' \(email\): the target names a link-local or cloud metadata address .*: refused, nothing was sent/,
  });
  assert.equal(asked.length, 4, 'the platform name was not resolved');
});

test("the emulator's AMQPS port (5671) is an own server's port whenever the Service Bus endpoint is on this machine", async () => {
  const sbEnv = (host: string) => ({ ...env, NIMBUS_SERVICEBUS_CONNECTION_STRING: `Endpoint=sb://${host}:5672;SharedAccessKeyName=k;SharedAccessKey=v` });
  assert.equal(hostProblem('127.0.0.1', 5671, sbEnv('localhost')), OWN_SERVER_REFUSAL);
  assert.equal(hostProblem('localhost', 5671, sbEnv('127.0.0.1')), OWN_SERVER_REFUSAL);
  // Azure's namespace is not on this machine: a local 5671 is then nobody's own server.
  assert.equal(hostProblem('127.0.0.1', 5671, sbEnv('nimbus.servicebus.windows.net')), null);
  // Before, the console connected (a TLS listener of the emulator there would have taken the admin request).
  await assert.rejects(sendNotice(storedSlack('https://127.0.0.1:5671/$namespaceinfo'), notice, { env: sbEnv('localhost'), timeoutMs: 2000 }), {
    message: new RegExp(`channel 'old-slack' \\(slack\\): the URL names ${OWN_SERVER.source}`),
  });
});

test("the refused AMQPS port is the one the local emulator listens on (NIMBUS_EMULATOR_TLS_PORT), not 5671 always", async () => {
  // An emulator started with `--tls-port 7443` (or by npm start with NIMBUS_EMULATOR_TLS_PORT): before, 5671 alone was
  // refused and a channel aimed at 7443, the emulator's TLS admin plane, was accepted and connected to.
  const sbEnv = (host: string, tlsPort?: string) => ({
    ...env,
    NIMBUS_SERVICEBUS_CONNECTION_STRING: `Endpoint=sb://${host}:6001;SharedAccessKeyName=k;SharedAccessKey=v`,
    ...(tlsPort !== undefined ? { NIMBUS_EMULATOR_TLS_PORT: tlsPort } : {}),
  });
  assert.equal(hostProblem('127.0.0.1', 7443, sbEnv('localhost', '7443')), OWN_SERVER_REFUSAL);
  assert.equal(hostProblem('[::1]', 7443, sbEnv('127.0.0.1', ' 7443 ')), OWN_SERVER_REFUSAL);
  // The plain port (AMQP and the admin plane) is the connection string's, whatever it is.
  assert.equal(hostProblem('127.0.0.1', 6001, sbEnv('localhost', '7443')), OWN_SERVER_REFUSAL);
  // 5671 is nobody's then: the emulator does not listen there.
  assert.equal(hostProblem('127.0.0.1', 5671, sbEnv('localhost', '7443')), null);
  // Unset (or unreadable: the console's configuration refuses that on start), the documented 5671.
  assert.equal(hostProblem('127.0.0.1', 5671, sbEnv('localhost')), OWN_SERVER_REFUSAL);
  assert.equal(hostProblem('127.0.0.1', 5671, sbEnv('localhost', 'x')), OWN_SERVER_REFUSAL);
  // Azure's namespace is not on this machine: the setting then names nobody's own server.
  assert.equal(hostProblem('127.0.0.1', 7443, sbEnv('nimbus.servicebus.windows.net', '7443')), null);
  await assert.rejects(sendNotice(storedSlack('https://127.0.0.1:7443/$namespaceinfo'), notice, { env: sbEnv('localhost', '7443'), timeoutMs: 2000 }), {
    message: new RegExp(`channel 'old-slack' \\(slack\\): the URL names ${OWN_SERVER.source}`),
  });
});
