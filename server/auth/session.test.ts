import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SESSION_COOKIE, openSession, sealSession } from './session.ts';
import { ANONYMOUS, type Principal } from './principal.ts';
import { getPrincipal, sessionOf } from './authenticate.ts';
import { loadAuthConfig } from './config.ts';

const secret = 'a-test-session-secret-that-is-long-enough-0123456789';
const alice: Principal = { kind: 'user', id: 'oid-alice', name: 'alice@example.test', roles: ['Operator'], groups: ['g1'] };

describe('session cookie', () => {
  test('seals a principal that opens again with the same secret', () => {
    const value = sealSession(alice, { secret, maxAgeSeconds: 3600 });
    assert.match(value, /^v1\.[A-Za-z0-9_-]+$/);
    assert.ok(!value.includes('alice'), 'the value is encrypted, not merely encoded');
    assert.deepEqual(openSession(value, { secret }), alice);
    assert.equal(SESSION_COOKIE, 'nimbus_session');
  });

  test('an expired session is refused, whatever the browser sent', () => {
    const now = Date.UTC(2026, 0, 1);
    const value = sealSession(alice, { secret, maxAgeSeconds: 60, now });
    assert.deepEqual(openSession(value, { secret, now: now + 59_000 }), alice);
    assert.equal(openSession(value, { secret, now: now + 60_000 }), null);
  });

  test('a tampered value, another secret or garbage is refused', () => {
    const value = sealSession(alice, { secret, maxAgeSeconds: 3600 });
    const raw = Buffer.from(value.slice(3), 'base64url');
    for (const i of [0, 13, raw.length - 1]) {
      const bad = Buffer.from(raw);
      bad[i] = bad[i]! ^ 1;
      assert.equal(openSession(`v1.${bad.toString('base64url')}`, { secret }), null, `byte ${i} flipped`);
    }
    assert.equal(openSession(value, { secret: `${secret}x` }), null);
    for (const junk of ['', 'v1.', 'v2.' + value.slice(3), 'not a cookie', value.slice(0, 20)]) assert.equal(openSession(junk, { secret }), null);
  });
});

describe('sessionOf: the one reader of the cookie, for requests and pages alike', () => {
  const OIDC_ENV = {
    NIMBUS_AUTH: 'oidc',
    NIMBUS_AUTH_ISSUER: 'https://127.0.0.1:9/issuer',
    NIMBUS_AUTH_CLIENT_ID: 'nimbus-console',
    NIMBUS_AUTH_CLIENT_SECRET: 'not-used-here',
    NIMBUS_AUTH_REDIRECT_URI: 'http://127.0.0.1:3000/auth/callback',
    NIMBUS_AUTH_SESSION_SECRET: secret,
  };
  const oidc = loadAuthConfig(OIDC_ENV);

  test('sign-in off: everybody is the anonymous principal, with no session end', () => {
    assert.deepEqual(sessionOf(undefined, { mode: 'off' }), { mode: 'off', principal: ANONYMOUS, expiresAt: null });
  });

  test('sign-in on: the principal and when the session ends, or nobody', () => {
    const now = Date.now();
    const value = sealSession(alice, { secret, maxAgeSeconds: 600, now });
    assert.deepEqual(sessionOf(value, oidc), { mode: 'oidc', principal: alice, expiresAt: Math.floor(now / 1000) + 600 });
    assert.deepEqual(sessionOf(undefined, oidc), { mode: 'oidc', principal: null, expiresAt: null });
    assert.deepEqual(sessionOf(sealSession(alice, { secret: `${secret}x`, maxAgeSeconds: 600 }), oidc).principal, null);
  });

  test('a request reads the same cookie through getPrincipal', async () => {
    const value = sealSession(alice, { secret, maxAgeSeconds: 600 });
    const saved = { ...process.env };
    Object.assign(process.env, OIDC_ENV);
    try {
      const cookie = `other=1; ${SESSION_COOKIE}=${value}`;
      assert.deepEqual(await getPrincipal(new Request('http://127.0.0.1:3000/api/x', { headers: { cookie } })), alice);
      assert.equal(await getPrincipal(new Request('http://127.0.0.1:3000/api/x')), null);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});
