// Sign-in and session details an attacker can lean on: a returnTo outside printable ASCII (was a 500), an
// Origin with the right host but the wrong scheme (was accepted), a session cookie without the __Host- prefix on
// an https console (cookie tossing), no HSTS on https, and roles frozen in a long session (now re-read hourly).
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { beginSignIn } from './flow.ts';
import { getPrincipal, sessionFromCookies } from './authenticate.ts';
import { hsts, originProblem } from './hardening.ts';
import { ROLES_MAX_AGE_SECONDS, SECURE_SESSION_COOKIE, SESSION_COOKIE, sealSession } from './session.ts';
import type { Principal } from './principal.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'session-trust-test-secret-0123456789-abcdef';
const saved = { ...process.env };
const alice: Principal = { kind: 'user', id: 'oid-alice', name: 'alice@test', roles: ['Owner'], groups: [] };

function signInOn(redirectUri: string): void {
  Object.assign(process.env, {
    NIMBUS_AUTH: 'oidc',
    NIMBUS_AUTH_ISSUER: 'https://idp.example/issuer',
    NIMBUS_AUTH_CLIENT_ID: 'console',
    NIMBUS_AUTH_CLIENT_SECRET: 'not-used',
    NIMBUS_AUTH_REDIRECT_URI: redirectUri,
    NIMBUS_AUTH_SESSION_SECRET: SECRET,
    NIMBUS_AUTH_SESSION_SECONDS: String(30 * 24 * 3600),
  });
}

afterEach(() => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
});

const withCookie = (cookie: string) => new Request('https://console.example/api/me', { headers: { cookie } });

describe('sign-in and session hardening', () => {
  test('a returnTo outside printable ASCII is percent-encoded, not a 500', async () => {
    process.env.NIMBUS_AUTH = 'off';
    for (const [asked, location] of [
      ['/endpoints/caf%C3%A9', '/endpoints/caf%C3%A9'],
      ['/search?q=%E2%80%A8x%20y', '/search?q=%E2%80%A8x%20y'],
      ['/e/%F0%9F%9A%80', '/e/%F0%9F%9A%80'],
      ['/e/%ED%A0%80', '/e/%EF%BF%BD%EF%BF%BD%EF%BF%BD'], // a lone surrogate's bytes: three U+FFFD
    ]) {
      const res = await beginSignIn(new Request(`http://127.0.0.1:3000/auth/signin?returnTo=${asked}`));
      assert.equal(res.status, 303, asked);
      assert.equal(res.headers.get('location'), location);
    }
  });

  test('the origin check compares scheme and host', () => {
    const post = (origin: string, url = 'https://console.example/api/x', extra: Record<string, string> = {}) =>
      new Request(url, { method: 'POST', headers: { host: new URL(url).host, origin, ...extra } });
    assert.equal(originProblem(post('https://console.example')), null);
    assert.match(originProblem(post('http://console.example')) ?? '', /cross-origin request refused/);
    // Behind a TLS front the console sees http; the front says https.
    assert.equal(originProblem(post('https://console.example', 'http://console.example/api/x', { 'x-forwarded-proto': 'https' })), null);
    assert.match(originProblem(post('http://console.example', 'http://console.example/api/x', { 'x-forwarded-proto': 'https' })) ?? '', /refused/);
    assert.equal(originProblem(post('http://127.0.0.1:3000', 'http://127.0.0.1:3000/api/x')), null);
  });

  test('on https the session cookie is __Host- prefixed, and only that name is read, by requests and pages alike', async () => {
    signInOn('https://console.example/auth/callback');
    const value = sealSession(alice, { secret: SECRET, maxAgeSeconds: 600 });
    assert.deepEqual(await getPrincipal(withCookie(`${SECURE_SESSION_COOKIE}=${value}`)), alice);
    // A cookie without the prefix could have been planted by a sibling subdomain or over plain http.
    assert.equal(await getPrincipal(withCookie(`${SESSION_COOKIE}=${value}`)), null);
    assert.equal(sessionFromCookies(`${SESSION_COOKIE}=${value}`).principal, null);
    assert.deepEqual(sessionFromCookies(`a=1; ${SECURE_SESSION_COOKIE}=${value}`).principal, alice);
    // Plain-http consoles (loopback trials) keep the unprefixed name: __Host- needs Secure.
    signInOn('http://127.0.0.1:3000/auth/callback');
    assert.deepEqual(await getPrincipal(withCookie(`${SESSION_COOKIE}=${value}`)), alice);
  });

  test('HSTS on https answers, never on plain http', async () => {
    assert.equal(hsts(new Request('https://console.example/'), {}), 'max-age=31536000');
    assert.equal(hsts(new Request('http://console.example/', { headers: { 'x-forwarded-proto': 'https' } }), {}), 'max-age=31536000');
    assert.equal(hsts(new Request('http://127.0.0.1:3000/'), { NIMBUS_AUTH: 'off' }), null);
    signInOn('https://console.example/auth/callback');
    // Computed specifiers keep Next's types (and React's empty DOM declarations) out of the Node program.
    const proxyModule = '../../proxy.ts';
    const nextServerModule = 'next/server.js';
    const { proxy } = (await import(proxyModule)) as { proxy: (r: Request) => Response };
    const { NextRequest } = (await import(nextServerModule)) as { NextRequest: new (url: string, init?: RequestInit) => Request };
    const res = proxy(new NextRequest('http://console.example/endpoints', { headers: { host: 'console.example' } }));
    assert.equal(res.headers.get('strict-transport-security'), 'max-age=31536000');
  });

  test('roles from the id token count for an hour at most, however long the session lasts', async () => {
    signInOn('http://127.0.0.1:3000/auth/callback');
    const month = 30 * 24 * 3600;
    const fresh = sealSession(alice, { secret: SECRET, maxAgeSeconds: month, now: Date.now() - 10 * 60_000 });
    const stale = sealSession(alice, { secret: SECRET, maxAgeSeconds: month, now: Date.now() - (ROLES_MAX_AGE_SECONDS + 60) * 1000 });
    assert.deepEqual(await getPrincipal(withCookie(`${SESSION_COOKIE}=${fresh}`)), alice);
    assert.equal(await getPrincipal(withCookie(`${SESSION_COOKIE}=${stale}`)), null, 'an Owner claim read over an hour ago no longer counts');
    // The page shows the session ending when the claims do (then it goes through the provider again).
    const view = sessionFromCookies(`${SESSION_COOKIE}=${fresh}`);
    assert.ok(view.expiresAt !== null && view.expiresAt * 1000 <= Date.now() + 50 * 60_000 + 1000);
  });
});
