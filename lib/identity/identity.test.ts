// Microsoft Entra identity without Azure: the selection between keys and identity, and that credential-based
// clients are built and used for real. Cosmos: the embedded server ignores signatures, so a proxy in front of it
// checks that the token, not a key, is on the wire. Service Bus: the SDK's credential path always speaks AMQP over
// TLS and the emulator plain AMQP, so a TLS proxy fronts it; the emulator runs with SAS checks off (it cannot verify
// an Entra JWT: that part is Azure's), so what is proved is the client side: the credential is asked for the
// Service Bus scope, its token goes through $cbs put-token, and messages are sent and received.
// The Cosmos SDK sends a token only over https (its bearer policy refuses http), so the proxy is an https server
// with a certificate made for this run by openssl, and this test process accepts it (NODE_TLS_REJECT_UNAUTHORIZED
// is read by every TLS connection; it is set in this test file's own process only).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { createServer, type Server } from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { AccessToken, TokenCredential } from '@azure/identity';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { NamespaceError, parseNamespace, serviceBusConnectionFromEnv } from '@nimbus/sdk/servicebus';
import { startEmbeddedCosmos, type EmbeddedCosmos } from '../store/cosmos.ts';
import { startEmulator } from '../../emulator/index.ts';
import { connect } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { cosmosKeyProblem } from '@nimbus/sdk/cosmos';
import { createStore } from '../store/store.ts';
import { defaultAzureCredential, LazyDefaultAzureCredential } from '@nimbus/sdk/servicebus';
import { loadConsoleConfig, ConfigError } from '../../server/config.ts';
import { ConfigError as ResolverConfigError, readResolverConfig } from '../../resolver-worker/config.ts';

/** A certificate for 127.0.0.1 made for this run; this test process accepts self-signed certificates. */
function selfSignedCertificate(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'nimbus-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

class FakeCredential implements TokenCredential {
  readonly scopes: string[] = [];
  async getToken(scopes: string | string[]): Promise<AccessToken> {
    this.scopes.push(...(Array.isArray(scopes) ? scopes : [scopes]));
    return { token: 'fake-entra-token', expiresOnTimestamp: Date.now() + 3_600_000 };
  }
}

describe('the Service Bus setting', () => {
  test('a fully qualified namespace is accepted in the forms the portal shows, and normalized', () => {
    assert.equal(parseNamespace('MyBus.servicebus.windows.net'), 'mybus.servicebus.windows.net');
    assert.equal(parseNamespace(' sb://mybus.servicebus.windows.net/ '), 'mybus.servicebus.windows.net');
    assert.equal(parseNamespace('https://mybus.servicebus.windows.net'), 'mybus.servicebus.windows.net');
    assert.equal(parseNamespace('bus.example.internal:5671'), 'bus.example.internal:5671');
  });

  test('what is not a namespace is refused with a sentence that does not echo it', () => {
    const secret = 'Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=a;SharedAccessKey=TOPSECRET';
    assert.throws(() => parseNamespace(secret), (e: unknown) => e instanceof NamespaceError && /looks like a connection string/.test(e.message) && !e.message.includes('TOPSECRET'));
    for (const bad of ['mybus', 'my bus.servicebus.windows.net', 'x.servicebus.windows.net/path', 'x.y:99999', ''])
      assert.throws(() => parseNamespace(bad), NamespaceError, bad);
  });

  test('exactly one of the connection string and the namespace must be set', () => {
    const cs = 'Endpoint=sb://127.0.0.1:5672;SharedAccessKeyName=Root;SharedAccessKey=k;UseDevelopmentEmulator=true';
    const ns = 'mybus.servicebus.windows.net';
    assert.deepEqual(serviceBusConnectionFromEnv({ NIMBUS_SERVICEBUS_CONNECTION_STRING: cs }), { ok: true, connection: cs, kind: 'connectionString' });
    assert.deepEqual(serviceBusConnectionFromEnv({ NIMBUS_SERVICEBUS_NAMESPACE: ns }), { ok: true, connection: { fullyQualifiedNamespace: ns }, kind: 'namespace' });
    const both = serviceBusConnectionFromEnv({ NIMBUS_SERVICEBUS_CONNECTION_STRING: cs, NIMBUS_SERVICEBUS_NAMESPACE: ns });
    assert.ok(!both.ok && /both set/.test(both.problems.join()));
    const neither = serviceBusConnectionFromEnv({ NIMBUS_SERVICEBUS_NAMESPACE: '  ' });
    assert.ok(!neither.ok && /NIMBUS_SERVICEBUS_CONNECTION_STRING or NIMBUS_SERVICEBUS_NAMESPACE is not set/.test(neither.problems.join()));
  });

  test('a namespace builds both clients on the credential; nothing asks for a token or loads @azure/identity yet', async () => {
    const credential = new FakeCredential();
    const clients = createServiceBusClients({ fullyQualifiedNamespace: 'mybus.servicebus.windows.net', credential });
    try {
      assert.equal(clients.client.fullyQualifiedNamespace, 'mybus.servicebus.windows.net');
      assert.equal(clients.isEmulator, false);
      assert.equal(clients.info.authentication, 'tokenCredential');
      assert.equal(clients.info.hostname, 'mybus.servicebus.windows.net');
      assert.equal(clients.info.redacted, 'Endpoint=sb://mybus.servicebus.windows.net/;Authentication=TokenCredential');
      assert.deepEqual(credential.scopes, [], 'no token before the first operation');
    } finally {
      await clients.close();
    }
    // Without a credential of its own the namespace uses the shared DefaultAzureCredential, created lazily.
    const defaults = createServiceBusClients({ fullyQualifiedNamespace: 'mybus.servicebus.windows.net' });
    await defaults.close();
    const shared = defaultAzureCredential();
    assert.ok(shared instanceof LazyDefaultAzureCredential);
    assert.equal(shared.loaded, false, '@azure/identity is imported on the first token request only');
  });
});

describe('configuration of the console and the Resolver', () => {
  const cosmos = { NIMBUS_COSMOS_ENDPOINT: 'https://acct.documents.azure.com:443/' };

  test('namespace and no Cosmos key: both sign in with identity', () => {
    const env = { ...cosmos, NIMBUS_SERVICEBUS_NAMESPACE: 'mybus.servicebus.windows.net' };
    const c = loadConsoleConfig(env);
    assert.deepEqual(c.serviceBusConnection, { fullyQualifiedNamespace: 'mybus.servicebus.windows.net' });
    assert.equal(c.cosmos.key, undefined);
    const r = readResolverConfig(env);
    assert.deepEqual(r.serviceBusConnection, { fullyQualifiedNamespace: 'mybus.servicebus.windows.net' });
    assert.equal(r.cosmos.key, undefined);
  });

  test('contradictory or missing settings are one readable error naming the variables', () => {
    const both = {
      ...cosmos,
      NIMBUS_SERVICEBUS_NAMESPACE: 'mybus.servicebus.windows.net',
      NIMBUS_SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://mybus.servicebus.windows.net/;SharedAccessKeyName=a;SharedAccessKey=SECRET',
    };
    assert.throws(() => loadConsoleConfig(both), (e: unknown) => e instanceof ConfigError && /both set/.test(e.message) && !e.message.includes('SECRET'));
    assert.throws(() => readResolverConfig(both), (e: unknown) => e instanceof ResolverConfigError && /both set/.test(e.message) && !e.message.includes('SECRET'));
    // The embedded server's http:// endpoint without its key is a mistake, not a request for identity.
    const local = { NIMBUS_SERVICEBUS_NAMESPACE: 'mybus.servicebus.windows.net', NIMBUS_COSMOS_ENDPOINT: 'http://127.0.0.1:8081' };
    assert.throws(() => loadConsoleConfig(local), /NIMBUS_COSMOS_KEY: not set, but NIMBUS_COSMOS_ENDPOINT is an http:\/\/ address/);
    assert.throws(() => readResolverConfig(local), /NIMBUS_COSMOS_KEY: not set/);
    assert.equal(cosmosKeyProblem('https://acct.documents.azure.com:443/', undefined), undefined);
    assert.equal(cosmosKeyProblem('http://127.0.0.1:8081', 'key'), undefined);
  });
});

describe('Cosmos with a token credential (embedded server)', () => {
  let cosmos: EmbeddedCosmos;
  let proxy: Server;
  let proxyUrl: string;
  const authorizations: string[] = [];
  let tls: { key: Buffer; cert: Buffer };

  before(async () => {
    cosmos = await startEmbeddedCosmos({ port: 0 });
    const target = new URL(cosmos.endpoint);
    tls = selfSignedCertificate();
    // Records the Authorization header of every request, then passes it on unchanged.
    proxy = createServer(tls, (req, res) => {
      authorizations.push(decodeURIComponent(String(req.headers.authorization ?? '')));
      const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.writeHead(502).end());
      req.pipe(up);
    });
    await new Promise<void>((ok) => proxy.listen(0, '127.0.0.1', ok));
    proxyUrl = `https://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  after(async () => {
    proxy?.closeAllConnections();
    await new Promise<void>((ok) => (proxy ? proxy.close(() => ok()) : ok()));
    await cosmos?.close();
  });

  test('without a key the store signs its requests with the credential token, never a key', async () => {
    const credential = new FakeCredential();
    const store = await createStore({ endpoint: proxyUrl, database: `id-${randomUUID().slice(0, 8)}`, credential });
    try {
      await store.recordHistory({
        endpointId: 'billingendpoint',
        eventId: 'e-identity',
        messageId: 'm-identity',
        messageType: 'EventRequest',
        enqueuedAt: new Date().toISOString(),
      });
      const page = await store.listHistory('e-identity');
      assert.equal(page.items.length, 1);
    } finally {
      await store.close();
    }
    assert.ok(credential.scopes.length > 0, 'the credential was asked for a token');
    assert.ok(credential.scopes.every((s) => s.endsWith('/.default')), credential.scopes.join());
    assert.ok(authorizations.length > 0);
    for (const a of authorizations) assert.equal(a, 'type=aad&ver=1.0&sig=fake-entra-token');
  });
});

describe('Service Bus with a token credential (emulator behind TLS)', () => {
  test('the credential is asked for the Service Bus scope and its token carries a send and a receive', async () => {
    const emulator = await startEmulator({ port: 0, allowAnonymous: true });
    const emulatorPort = Number(/Endpoint=sb:\/\/[^:;/]+:(\d+)/.exec(emulator.connectionString)?.[1]);
    const tls = selfSignedCertificate();
    const front = createTlsServer(tls, (socket) => {
      const upstream = connect(emulatorPort, '127.0.0.1');
      socket.pipe(upstream).pipe(socket);
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((ok) => front.listen(0, '127.0.0.1', ok));
    const setup = createServiceBusClients(emulator.connectionString);
    const credential = new FakeCredential();
    const clients = createServiceBusClients({ fullyQualifiedNamespace: `127.0.0.1:${(front.address() as AddressInfo).port}`, credential });
    try {
      await setup.admin.createTopic('identity');
      await setup.admin.createSubscription('identity', 'reader');
      const sender = clients.client.createSender('identity');
      await sender.sendMessages({ body: 'signed in with a token', messageId: 'm-identity' });
      const receiver = clients.client.createReceiver('identity', 'reader');
      const [got] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
      assert.equal(got?.messageId, 'm-identity');
      await receiver.completeMessage(got!);
      assert.ok(credential.scopes.length > 0);
      assert.ok(credential.scopes.every((s) => s === 'https://servicebus.azure.net//.default'), credential.scopes.join());
    } finally {
      await clients.close();
      await setup.close();
      front.close();
      await emulator.close();
    }
  });
});
