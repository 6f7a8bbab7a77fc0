// The sign-in flow's server half against a real OpenID provider over https, driven without a browser: MSAL
// builds the authorize URL, the provider's login page is answered by form posts, and the code comes back to
// completeSignIn. The console's address is https here, so its cookies must be Secure (the Chromium test covers
// plain-http loopback). Cookie flags, returnTo, state and tampering are checked on the real responses.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
// The console is https here, so the sign-in cookie carries the __Host- prefix.
import { beginSignIn, completeSignIn, principalFromIdClaims, safeReturnTo, signOut, SECURE_SIGNIN_COOKIE as SIGNIN_COOKIE } from './flow.ts';
import { getPrincipal } from './authenticate.ts';
// The console is https here, so its session cookie carries the __Host- prefix.
import { SECURE_SESSION_COOKIE as SESSION_COOKIE } from './session.ts';
import { startTestOidcProvider, type TestOidcProvider } from '../testing/oidcProvider.ts';

const CONSOLE = 'https://127.0.0.1:9443';
let idp: TestOidcProvider;
const saved = { ...process.env };

before(async () => {
  idp = await startTestOidcProvider({ redirectUris: [`${CONSOLE}/auth/callback`], postLogoutRedirectUris: [`${CONSOLE}/`] });
  Object.assign(process.env, {
    NIMBUS_AUTH: 'oidc',
    NIMBUS_AUTH_ISSUER: idp.issuer,
    NIMBUS_AUTH_CLIENT_ID: idp.consoleClient.id,
    NIMBUS_AUTH_CLIENT_SECRET: idp.consoleClient.secret,
    NIMBUS_AUTH_REDIRECT_URI: `${CONSOLE}/auth/callback`,
    NIMBUS_AUTH_SESSION_SECRET: 'flow-test-session-secret-0123456789abcdef',
    NIMBUS_AUTH_SESSION_SECONDS: '900',
    NIMBUS_AUTH_CA_FILE: idp.caFile,
  });
});

after(async () => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
  await idp.close();
});

interface Answer {
  status: number;
  location: string | undefined;
  cookies: string[];
  body: string;
}

/** A browser's worth of HTTP against the provider: one cookie jar, the test certificate trusted. */
function providerBrowser() {
  const jar = new Map<string, string>();
  const ca = readFileSync(process.env.NIMBUS_AUTH_CA_FILE!, 'utf8');
  return (url: string, form?: Record<string, string>): Promise<Answer> =>
    new Promise((ok, fail) => {
      const body = form ? new URLSearchParams(form).toString() : undefined;
      const headers: Record<string, string> = { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') };
      if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
      const req = request(url, { method: form ? 'POST' : 'GET', ca, headers }, (res) => {
        const cookies = res.headers['set-cookie'] ?? [];
        for (const c of cookies) {
          const [pair] = c.split(';');
          const eq = pair!.indexOf('=');
          jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          ok({ status: res.statusCode ?? 0, location: res.headers.location, cookies, body: Buffer.concat(chunks).toString('utf8') }),
        );
      });
      req.on('error', fail);
      req.end(body);
    });
}

function cookieValue(setCookies: string[], name: string): string | undefined {
  const c = setCookies.find((s) => s.startsWith(`${name}=`));
  return c?.split(';')[0]!.slice(name.length + 1);
}

/** Signs in at the provider (login page with password) and returns the console callback URL it redirects to. */
async function loginAtProvider(authorizeUrl: string, login: string, password: string): Promise<string | Answer> {
  const go = providerBrowser();
  let url = authorizeUrl;
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(CONSOLE)) return url;
    const a = await go(url);
    if (a.status === 200 && a.body.includes('name="password"')) {
      const action = /action="([^"]+)"/.exec(a.body)![1]!;
      const posted = await go(new URL(action, url).toString(), { login, password });
      if (!posted.location) return posted;
      url = new URL(posted.location, url).toString();
      continue;
    }
    assert.ok(a.location, `hop ${hop}: ${a.status} without a redirect`);
    url = new URL(a.location, url).toString();
  }
  throw new Error('too many redirects');
}

async function signIn(login: string, password: string, returnTo = '/monitor?x=1') {
  const start = await beginSignIn(new Request(`${CONSOLE}/auth/signin?returnTo=${encodeURIComponent(returnTo)}`));
  const txCookie = start.headers.getSetCookie()[0]!;
  const callback = await loginAtProvider(start.headers.get('location')!, login, password);
  return { start, txCookie, callback };
}

describe('sign-in flow (MSAL, OIDC mode, real provider)', () => {
  test('a sign-in transaction under a name a sibling subdomain can set is not read: no login CSRF', async () => {
    // The attacker begins a sign-in here (a sealed transaction of their own) and signs in at the provider with their
    // own account, but keeps the code. A page on a sibling subdomain sets the transaction in the victim's browser as
    // `__Secure-nimbus_signin` with Domain= (the browser allows that for __Secure-, not for __Host-) and sends the
    // victim to the callback with the attacker's code and state: the old name signed the victim in as the attacker.
    const { txCookie, callback } = await signIn('operator', 'operator-pw');
    const transaction = txCookie.split(';')[0]!.slice(txCookie.indexOf('=') + 1);
    const planted = await completeSignIn(new Request(callback as string, { headers: { cookie: `__Secure-nimbus_signin=${transaction}` } }));
    assert.equal(planted.status, 400, 'refused as a sign-in that was not started here');
    assert.ok(!planted.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE}=v`)), 'no session');
  });

  test('signs a user in: session cookie flags, principal from the id token, back to the page asked for', async () => {
    const { start, txCookie, callback } = await signIn('operator', 'operator-pw');
    assert.equal(start.status, 303);
    const authorize = new URL(start.headers.get('location')!);
    assert.equal(authorize.origin, idp.issuer);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(authorize.searchParams.get('state') && authorize.searchParams.get('nonce'));
    assert.match(txCookie, new RegExp(`^${SIGNIN_COOKIE}=v1\\.`));
    assert.equal(SIGNIN_COOKIE, '__Host-nimbus_signin');
    // __Host- is taken by the browser only with Secure, Path=/ and no Domain (a sibling subdomain cannot plant it).
    for (const flag of ['HttpOnly', 'SameSite=Lax', 'Secure', 'Path=/', 'Max-Age=600']) assert.ok(txCookie.split('; ').includes(flag), `${flag} in ${txCookie}`);
    assert.doesNotMatch(txCookie, /Domain=/i);
    assert.equal(typeof callback, 'string');

    const done = await completeSignIn(new Request(callback as string, { headers: { cookie: txCookie.split(';')[0]! } }));
    assert.equal(done.status, 303);
    assert.equal(done.headers.get('location'), '/monitor?x=1');
    const set = done.headers.getSetCookie();
    const session = set.find((c) => c.startsWith(`${SESSION_COOKIE}=`))!;
    for (const flag of ['HttpOnly', 'SameSite=Lax', 'Secure', 'Path=/', 'Max-Age=900']) assert.ok(session.split('; ').includes(flag), `${flag} in ${session}`);
    assert.ok(set.some((c) => c.startsWith(`${SIGNIN_COOKIE}=;`) && c.includes('Max-Age=0') && c.includes('Path=/;')), 'the sign-in cookie is cleared');

    const value = cookieValue(set, SESSION_COOKIE)!;
    const principal = await getPrincipal(new Request(`${CONSOLE}/api/endpoints`, { headers: { cookie: `other=1; ${SESSION_COOKIE}=${value}` } }));
    assert.deepEqual(principal, {
      kind: 'user',
      id: 'operator',
      name: 'otto.operator@nimbus.test',
      roles: ['Operator'],
      groups: ['nimbus-operators'],
    });

    // The same code again (a replayed callback URL) gets nobody in.
    const replay = await completeSignIn(new Request(callback as string, { headers: { cookie: txCookie.split(';')[0]! } }));
    assert.equal(replay.status, 502);
    assert.equal(replay.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE}=v1`)), false);

    // A tampered session cookie is nobody.
    const bytes = Buffer.from(value.slice(3), 'base64url');
    bytes[bytes.length - 5] = bytes[bytes.length - 5]! ^ 1;
    const tampered = `v1.${bytes.toString('base64url')}`;
    assert.equal(await getPrincipal(new Request(`${CONSOLE}/`, { headers: { cookie: `${SESSION_COOKIE}=${tampered}` } })), null);
    assert.equal(await getPrincipal(new Request(`${CONSOLE}/`)), null);
  });

  test('a wrong password stays on the login page; a callback without its sign-in cookie or with another state is refused', async () => {
    const wrong = await signIn('owner', 'not-the-password');
    assert.equal(typeof wrong.callback, 'object');
    assert.equal((wrong.callback as Answer).status, 401);
    assert.match((wrong.callback as Answer).body, /wrong password/);

    const { txCookie, callback } = await signIn('reader', 'reader-pw');
    const noCookie = await completeSignIn(new Request(callback as string));
    assert.equal(noCookie.status, 400);
    assert.match(await noCookie.text(), /Sign in again/);
    const otherState = new URL(callback as string);
    otherState.searchParams.set('state', 'someone-elses-state-value');
    const mismatch = await completeSignIn(new Request(otherState, { headers: { cookie: txCookie.split(';')[0]! } }));
    assert.equal(mismatch.status, 400);
    // The untouched callback still works: nothing above consumed the code.
    const ok = await completeSignIn(new Request(callback as string, { headers: { cookie: txCookie.split(';')[0]! } }));
    assert.equal(ok.status, 303);
  });

  test("sign-out clears the session and goes to the provider's end-session endpoint", async () => {
    const out = await signOut(new Request(`${CONSOLE}/auth/signout`, { method: 'POST' }));
    // A page that moves on by itself (a 303 after a form POST would meet the page CSP's form-action 'self').
    assert.equal(out.status, 200);
    const refresh = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(await out.text());
    assert.ok(refresh);
    const location = new URL(refresh[1]!.replaceAll('&#38;', '&'));
    assert.equal(location.origin, idp.issuer);
    assert.equal(location.searchParams.get('post_logout_redirect_uri'), `${CONSOLE}/`);
    const cleared = out.headers.getSetCookie()[0]!;
    assert.ok(cleared.startsWith(`${SESSION_COOKIE}=;`) && cleared.includes('Max-Age=0') && cleared.includes('Secure'));
  });

  test('sign-out posted by another site is refused and clears nothing', async () => {
    // What a browser sends when a foreign page auto-submits a form at /auth/signout.
    const foreign: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of foreign) {
      const out = await signOut(new Request(`${CONSOLE}/auth/signout`, { method: 'POST', headers }));
      assert.equal(out.status, 403, JSON.stringify(headers));
      assert.deepEqual(out.headers.getSetCookie(), [], 'the session cookie is left alone');
      assert.match(await out.text(), /Sign-out refused/);
    }
    // The console's own button: same origin.
    const own = await signOut(new Request(`${CONSOLE}/auth/signout`, { method: 'POST', headers: { 'sec-fetch-site': 'same-origin', origin: CONSOLE } }));
    assert.equal(own.status, 200);
    assert.ok(own.headers.getSetCookie()[0]!.startsWith(`${SESSION_COOKIE}=;`));
  });

  test('returnTo only ever points into the console', () => {
    assert.equal(safeReturnTo('/endpoints/billing?tab=failed'), '/endpoints/billing?tab=failed');
    for (const bad of ['https://evil.example/', '//evil.example', '/\\evil.example', 'javascript:alert(1)', '/a\nb', '/auth/callback', '', null])
      assert.equal(safeReturnTo(bad), '/', String(bad));
  });
});

describe('sign-in flow (MSAL, Entra mode, against an Entra look-alike)', () => {
  // MSAL's AAD protocol mode (what NIMBUS_AUTH=entra uses) against the test provider mounted where Entra keeps a
  // tenant's metadata ({host}/{tenant}/v2.0), with Entra's tid and oid claims. Microsoft's own service is not
  // reachable from the test machines; this is the closest real exchange.
  const tenant = '5b0c9a41-3f57-4c1e-9d2a-7e3f0c6b1a22';
  let entra: TestOidcProvider;
  let before_: Record<string, string | undefined>;

  before(async () => {
    entra = await startTestOidcProvider({
      redirectUris: [`${CONSOLE}/auth/callback`],
      postLogoutRedirectUris: [`${CONSOLE}/`],
      entraTenantId: tenant,
    });
    before_ = { ...process.env };
    delete process.env.NIMBUS_AUTH_ISSUER;
    Object.assign(process.env, {
      NIMBUS_AUTH: 'entra',
      NIMBUS_AUTH_TENANT_ID: tenant,
      NIMBUS_AUTH_ENTRA_HOST: new URL(entra.issuer).origin,
      NIMBUS_AUTH_CLIENT_ID: entra.consoleClient.id,
      NIMBUS_AUTH_CLIENT_SECRET: entra.consoleClient.secret,
      NIMBUS_AUTH_CA_FILE: entra.caFile,
    });
  });

  after(async () => {
    for (const k of Object.keys(process.env)) if (!(k in before_)) delete process.env[k];
    Object.assign(process.env, before_);
    await entra.close();
  });

  test('signs a user in with oid as the id and the tenant checked', async () => {
    const { start, txCookie, callback } = await signIn('owner', 'owner-pw', '/admin');
    assert.equal(new URL(start.headers.get('location')!).origin + new URL(start.headers.get('location')!).pathname, `${entra.issuer}/auth`);
    const done = await completeSignIn(new Request(callback as string, { headers: { cookie: txCookie.split(';')[0]! } }));
    assert.equal(done.status, 303);
    assert.equal(done.headers.get('location'), '/admin');
    const value = cookieValue(done.headers.getSetCookie(), SESSION_COOKIE)!;
    const principal = await getPrincipal(new Request(`${CONSOLE}/`, { headers: { cookie: `${SESSION_COOKIE}=${value}` } }));
    assert.deepEqual(principal, {
      kind: 'user',
      id: '00000000-0000-4000-8000-000000000003',
      name: 'olga.owner@nimbus.test',
      roles: ['Owner'],
      groups: ['nimbus-owners'],
    });
  });

  test('a bearer token of the tenant resolves to a service principal', async () => {
    process.env.NIMBUS_AUTH_BEARER_AUDIENCE = 'api://nimbus-console';
    try {
      const token = await entra.clientCredentialsToken();
      const p = await getPrincipal(new Request(`${CONSOLE}/api/x`, { headers: { authorization: `Bearer ${token}` } }));
      assert.equal(p?.kind, 'service');
      assert.equal(p?.id, entra.serviceClient.id);
    } finally {
      delete process.env.NIMBUS_AUTH_BEARER_AUDIENCE;
    }
  });
});

test("a user's display name from the id token has control and bidirectional-override characters replaced", () => {
  // Before, "\u202Etset@rotarepo" was sealed into the session as given and shown in trails as "operator@test".
  const who = principalFromIdClaims({ oid: 'oid-1', preferred_username: '\u202Etset@rotarepo', roles: [] });
  assert.equal(who?.name, '\uFFFDtset@rotarepo');
  assert.equal(principalFromIdClaims({ sub: 'sub-1', email: 'a\u0007b@test' })?.name, 'a\uFFFDb@test');
});
