import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthConfigError, DEFAULT_SESSION_SECONDS, isLoopbackHost, loadAuthConfig } from './config.ts';
import { ConfigError, loadConsoleConfig } from '../config.ts';

const secret = 'x'.repeat(32);
const oidc = {
  NIMBUS_AUTH: 'oidc',
  NIMBUS_AUTH_ISSUER: 'https://id.example.test',
  NIMBUS_AUTH_CLIENT_ID: 'console',
  NIMBUS_AUTH_CLIENT_SECRET: 'very-secret-client-secret',
  NIMBUS_AUTH_REDIRECT_URI: 'https://console.example.test/auth/callback',
  NIMBUS_AUTH_SESSION_SECRET: secret,
};
const entra = {
  NIMBUS_AUTH: 'entra',
  NIMBUS_AUTH_TENANT_ID: '72f988bf-86f1-41af-91ab-2d7cd011db47',
  NIMBUS_AUTH_CLIENT_ID: '11111111-2222-3333-4444-555555555555',
  NIMBUS_AUTH_CLIENT_SECRET: 'very-secret-client-secret',
  NIMBUS_AUTH_REDIRECT_URI: 'https://console.example.test/auth/callback',
  NIMBUS_AUTH_SESSION_SECRET: secret,
};

describe('sign-in configuration', () => {
  test('off needs nothing else', () => {
    assert.deepEqual(loadAuthConfig({}), { mode: 'off' });
    assert.deepEqual(loadAuthConfig({ NIMBUS_AUTH: 'off', NIMBUS_AUTH_SESSION_SECRET: 'short' }), { mode: 'off' });
  });

  test('entra: authority and issuer from the tenant, default lifetime and bearer audiences', () => {
    const c = loadAuthConfig(entra);
    assert.ok(c.mode === 'entra');
    assert.equal(c.provider.authority, `https://login.microsoftonline.com/${entra.NIMBUS_AUTH_TENANT_ID}`);
    assert.equal(c.provider.issuer, `https://login.microsoftonline.com/${entra.NIMBUS_AUTH_TENANT_ID}/v2.0`);
    assert.deepEqual(c.provider.bearerAudiences, [entra.NIMBUS_AUTH_CLIENT_ID, `api://${entra.NIMBUS_AUTH_CLIENT_ID}`]);
    assert.equal(c.session.maxAgeSeconds, DEFAULT_SESSION_SECONDS);
  });

  test('oidc: the issuer is the authority; lifetime and audience can be set', () => {
    const c = loadAuthConfig({ ...oidc, NIMBUS_AUTH_SESSION_SECONDS: '3600', NIMBUS_AUTH_BEARER_AUDIENCE: 'api://a, api://b' });
    assert.ok(c.mode === 'oidc');
    assert.equal(c.provider.authority, oidc.NIMBUS_AUTH_ISSUER);
    assert.equal(c.session.maxAgeSeconds, 3600);
    assert.deepEqual(c.provider.bearerAudiences, ['api://a', 'api://b']);
  });

  test('every missing or bad setting is named once, values never echoed', () => {
    assert.throws(
      () => loadAuthConfig({ NIMBUS_AUTH: 'entra', NIMBUS_AUTH_CLIENT_SECRET: 'super-secret-value', NIMBUS_AUTH_SESSION_SECRET: 'tooshort-secret', NIMBUS_AUTH_REDIRECT_URI: 'https://c.test/callback', NIMBUS_AUTH_SESSION_SECONDS: 'soon' }),
      (e: unknown) => {
        assert.ok(e instanceof AuthConfigError);
        for (const name of ['NIMBUS_AUTH_TENANT_ID', 'NIMBUS_AUTH_CLIENT_ID', 'NIMBUS_AUTH_REDIRECT_URI', 'NIMBUS_AUTH_SESSION_SECRET', 'NIMBUS_AUTH_SESSION_SECONDS'])
          assert.match(e.message, new RegExp(`${name}: `));
        assert.doesNotMatch(e.message, /NIMBUS_AUTH_CLIENT_SECRET|super-secret|tooshort/);
        assert.match(e.message, /at least 32 bytes/);
        assert.match(e.message, /must end in \/auth\/callback/);
        return true;
      },
    );
    assert.throws(() => loadAuthConfig({ ...oidc, NIMBUS_AUTH_ISSUER: 'id.example.test' }), /NIMBUS_AUTH_ISSUER: .*must be an https URL/);
    assert.throws(() => loadAuthConfig({ ...oidc, NIMBUS_AUTH_ISSUER: 'http://id.example.test' }), /NIMBUS_AUTH_ISSUER: .*must be an https URL/);
    assert.throws(() => loadAuthConfig({ ...oidc, NIMBUS_AUTH_CA_FILE: '/nonexistent/ca.pem' }), /NIMBUS_AUTH_CA_FILE: .*cannot be read/);
  });

  test("the console's start-up message includes the sign-in problems", () => {
    const base = {
      NIMBUS_SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://127.0.0.1:5672;SharedAccessKeyName=Root;SharedAccessKey=k',
      NIMBUS_COSMOS_ENDPOINT: 'http://127.0.0.1:8081',
      NIMBUS_COSMOS_KEY: 'a2V5',
    };
    assert.equal(loadConsoleConfig({ ...base, ...oidc }).authConfig.mode, 'oidc');
    assert.throws(
      () => loadConsoleConfig({ ...base, NIMBUS_AUTH: 'oidc' }),
      (e: unknown) => e instanceof ConfigError && /NIMBUS_AUTH_ISSUER/.test(e.message) && /NIMBUS_AUTH_SESSION_SECRET/.test(e.message),
    );
    // A bad mode is named once, not twice.
    assert.throws(() => loadConsoleConfig({ ...base, NIMBUS_AUTH: 'maybe' }), (e: unknown) => e instanceof Error && e.message.split('NIMBUS_AUTH:').length === 2);
  });

  test('loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.3.2.1', '::1', '[::1]', 'localhost', 'LOCALHOST']) assert.equal(isLoopbackHost(h), true, h);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', 'example.com', '127.0.0.1.nip.io']) assert.equal(isLoopbackHost(h), false, h);
  });
});
