// The settings of `npm start`: defaults per mode (DESIGN.md §7) and one clear message per wrong setting.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStartConfig, type StartConfig } from './start-config.ts';

function ok(env: Record<string, string>): StartConfig {
  const r = parseStartConfig(env);
  assert.ok(r.ok, r.ok ? '' : r.message);
  return r.config;
}
function message(env: Record<string, string>): string {
  const r = parseStartConfig(env);
  assert.ok(!r.ok, 'expected the settings to be refused');
  return r.message;
}

const AZURE_SB =
  'Endpoint=sb://shop.servicebus.windows.net/;SharedAccessKeyName=app;SharedAccessKey=c2VjcmV0';

describe('start configuration', () => {
  test('no settings: everything embedded on the documented ports, demo on, auth off, loopback console', () => {
    const c = ok({});
    assert.deepEqual(c.serviceBus, { kind: 'embedded', port: 5672, dataDir: '.nimbus' });
    assert.deepEqual(c.cosmos, { kind: 'embedded', port: 8081, dataDir: '.nimbus' });
    assert.deepEqual(c.console, { enabled: true, port: 3000, hostname: '127.0.0.1', dev: false });
    assert.equal(ok({ NIMBUS_CONSOLE_DEV: '1' }).console.dev, true);
    assert.equal(c.catalogPath, 'catalog/demo.json');
    assert.equal(c.database, 'nimbus');
    assert.equal(c.auth, 'off');
    assert.deepEqual(c.demo, {
      enabled: true,
      ratePerSecond: 2,
      seed: 42,
      operatorCases: 1,
      slowHandoffMs: 90_000,
    });
  });

  test('NIMBUS_EMULATOR_KEY: the namespace key other tools connect with; a bad one is refused without echoing it', () => {
    const key = 'bG9jYWwtZGV2ZWxvcG1lbnQta2V5';
    const c = ok({ NIMBUS_EMULATOR_KEY: key });
    assert.equal(c.serviceBus.kind === 'embedded' && c.serviceBus.key, key);
    assert.equal(ok({}).serviceBus.kind === 'embedded' && 'key' in ok({}).serviceBus, false, 'absent: random per start');
    const bad = message({ NIMBUS_EMULATOR_KEY: 'short key!' });
    assert.match(bad, /NIMBUS_EMULATOR_KEY/);
    assert.doesNotMatch(bad, /short key!/);
  });

  test('NIMBUS_EMULATOR_TLS_PORT: an AMQPS listener for the emulator, on a port of its own', () => {
    const c = ok({ NIMBUS_EMULATOR_TLS_PORT: '7443' });
    assert.equal(c.serviceBus.kind === 'embedded' && c.serviceBus.tlsPort, 7443);
    const any = ok({ NIMBUS_EMULATOR_TLS_PORT: '0' }).serviceBus;
    assert.equal(any.kind === 'embedded' && any.tlsPort, 0, '0: any free port (the console is told the real one)');
    assert.equal('tlsPort' in ok({}).serviceBus, false, 'unset: no AMQPS listener');
    assert.match(message({ NIMBUS_EMULATOR_TLS_PORT: 'tls' }), /NIMBUS_EMULATOR_TLS_PORT must be a port number/);
    assert.match(message({ NIMBUS_EMULATOR_TLS_PORT: '5672' }), /NIMBUS_EMULATOR_TLS_PORT and NIMBUS_EMULATOR_PORT are both 5672/);
    assert.match(message({ NIMBUS_EMULATOR_TLS_PORT: '8081' }), /NIMBUS_EMULATOR_TLS_PORT and NIMBUS_COSMOS_PORT are both 8081/);
    assert.match(message({ NIMBUS_EMULATOR_TLS_PORT: '3000' }), /NIMBUS_EMULATOR_TLS_PORT and PORT are both 3000/);
  });

  test('connection settings: external services, no embedded server, demo off by default', () => {
    const c = ok({
      NIMBUS_SERVICEBUS_CONNECTION_STRING: AZURE_SB,
      NIMBUS_COSMOS_ENDPOINT: 'https://acct.documents.azure.com:443/',
      NIMBUS_COSMOS_KEY: 'k==',
    });
    assert.equal(c.serviceBus.kind, 'external');
    assert.equal(c.serviceBus.kind === 'external' && c.serviceBus.host, 'shop.servicebus.windows.net');
    assert.equal(c.cosmos.kind, 'external');
    assert.equal(c.demo.enabled, false);
    assert.equal(ok({ NIMBUS_SERVICEBUS_CONNECTION_STRING: AZURE_SB, NIMBUS_DEMO: '1' }).demo.enabled, true);
  });

  test('NIMBUS_CONSOLE=0 runs the platform without the console', () => {
    assert.equal(ok({ NIMBUS_CONSOLE: '0' }).console.enabled, false);
    assert.match(message({ NIMBUS_CONSOLE: 'no-thanks' }), /^NIMBUS_CONSOLE must be 1 or 0/);
  });

  test('blank values count as unset', () => {
    assert.equal(ok({ NIMBUS_SERVICEBUS_CONNECTION_STRING: '  ', PORT: '' }).serviceBus.kind, 'embedded');
  });

  test('wrong settings give one message naming the variable, never a secret', () => {
    assert.match(message({ PORT: '80a' }), /^PORT must be a port number/);
    assert.match(message({ NIMBUS_COSMOS_PORT: '65536' }), /^NIMBUS_COSMOS_PORT must be a port number/);
    assert.match(message({ NIMBUS_DEMO: 'maybe' }), /^NIMBUS_DEMO must be 1 or 0/);
    assert.match(message({ NIMBUS_DEMO_RATE: '-1' }), /^NIMBUS_DEMO_RATE must be between 0 and 50/);
    assert.match(message({ NIMBUS_AUTH: 'basic' }), /^NIMBUS_AUTH must be entra, oidc or off/);
    assert.match(message({ NIMBUS_COSMOS_KEY: 'k' }), /^NIMBUS_COSMOS_ENDPOINT is not set/);
    assert.match(
      message({ NIMBUS_COSMOS_ENDPOINT: 'acct.documents.azure.com', NIMBUS_COSMOS_KEY: 'k' }),
      /^NIMBUS_COSMOS_ENDPOINT must be an http\(s\) URL/,
    );
    const sb = message({
      NIMBUS_SERVICEBUS_CONNECTION_STRING: 'SharedAccessKeyName=app;SharedAccessKey=hunter2',
    });
    assert.match(sb, /^NIMBUS_SERVICEBUS_CONNECTION_STRING: /);
    assert.doesNotMatch(sb, /hunter2/);
  });

  test('ports that would collide are refused', () => {
    assert.match(message({ NIMBUS_EMULATOR_PORT: '9000', NIMBUS_COSMOS_PORT: '9000' }), /both 9000/);
    assert.match(message({ PORT: '8081' }), /^PORT and NIMBUS_COSMOS_PORT are both 8081/);
  });

  test('the console stays on loopback while sign-in is off', () => {
    assert.match(message({ HOSTNAME: '0.0.0.0' }), /without sign-in/);
    assert.equal(ok({ HOSTNAME: '0.0.0.0', NIMBUS_AUTH: 'oidc' }).console.hostname, '0.0.0.0');
    // A machine name (Docker exports HOSTNAME as the container id) is not a bind address: ignored, with a note.
    const c = ok({ HOSTNAME: 'a1b2c3d4e5f6' });
    assert.equal(c.console.hostname, '127.0.0.1');
    assert.equal(c.notes.length, 1);
  });
});
