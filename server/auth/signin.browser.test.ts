// Sign-in in Chromium: the built console (startConsole, NIMBUS_AUTH=oidc) against the embedded stack and a real
// OpenID provider (oidc-provider over https with a self-signed certificate the console trusts via
// NIMBUS_AUTH_CA_FILE; Chromium is told to accept it through CDP). The user is sent to the provider's login page,
// signs in, sees the console with their name, and signs out; tampered and expired sessions are refused.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { BrowserContext, Page } from 'playwright-core';
import { startConsole, type RunningConsole } from '../console.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';
import { startTestOidcProvider, type TestOidcProvider } from '../testing/oidcProvider.ts';
import { SESSION_COOKIE, sealSession } from './session.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SESSION_SECRET = 'browser-test-session-secret-0123456789abcdef';

let ui: SeededConsole | undefined;
let consoleApp: RunningConsole;
let idp: TestOidcProvider;
let browser: BrowserContext;

before(async () => {
  // The console's port (0 = ephemeral) is known only once it listens, and the provider must know the console's
  // redirect URI: start the console with stand-in provider settings, then point it at the provider (the
  // console reads the sign-in settings again when they change, as they are read per request in this process).
  ui = await startSeededConsole({
    demoData: false,
    env: {
      NIMBUS_AUTH: 'oidc',
      NIMBUS_AUTH_ISSUER: 'https://127.0.0.1:9',
      NIMBUS_AUTH_CLIENT_ID: 'stand-in',
      NIMBUS_AUTH_CLIENT_SECRET: 'stand-in',
      NIMBUS_AUTH_REDIRECT_URI: 'http://127.0.0.1:9/auth/callback',
      NIMBUS_AUTH_SESSION_SECRET: SESSION_SECRET,
      NIMBUS_AUTH_SESSION_SECONDS: '3600',
      NIMBUS_AUTH_CA_FILE: undefined,
    },
  });
  ({ app: consoleApp, browser } = ui);
  idp = await startTestOidcProvider({
    redirectUris: [`${consoleApp.url}/auth/callback`],
    postLogoutRedirectUris: [`${consoleApp.url}/`],
  });
  Object.assign(process.env, {
    NIMBUS_AUTH_ISSUER: idp.issuer,
    NIMBUS_AUTH_CLIENT_ID: idp.consoleClient.id,
    NIMBUS_AUTH_CLIENT_SECRET: idp.consoleClient.secret,
    NIMBUS_AUTH_REDIRECT_URI: `${consoleApp.url}/auth/callback`,
    NIMBUS_AUTH_CA_FILE: idp.caFile,
  });
});

after(async () => {
  await ui?.close();
  await idp?.close();
});

async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  // The provider's certificate is self-signed; the console trusts it by file, the test browser by this switch.
  const cdp = await browser.newCDPSession(page);
  await cdp.send('Security.setIgnoreCertificateErrors', { ignore: true });
  return page;
}

async function signInAt(page: Page, login: string, password: string): Promise<void> {
  await page.waitForURL((u) => u.origin === idp.issuer && u.pathname.startsWith('/interaction/'));
  await page.getByLabel('User name').fill(login);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

const sessionCookie = async () => (await browser.cookies(consoleApp.url)).find((c) => c.name === SESSION_COOKIE);

describe('sign-in in Chromium (NIMBUS_AUTH=oidc, real provider)', () => {
  test('a page sends the visitor to the login page and back; the header shows who is signed in', async () => {
    const page = await newPage();
    await page.goto(`${consoleApp.url}/monitor`);
    await signInAt(page, 'operator', 'operator-pw');
    await page.waitForURL(`${consoleApp.url}/monitor`);
    await page.getByRole('heading', { name: 'Monitor' }).waitFor();
    assert.equal(await page.getByTestId('signed-in-user').textContent(), 'otto.operator@nimbus.test');
    assert.equal(await page.getByTestId('auth-off-banner').count(), 0);

    const cookie = await sessionCookie();
    assert.ok(cookie, 'session cookie set');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');
    assert.equal(cookie.secure, false, 'plain-http loopback console: not Secure (the https case is in flow.test.ts)');
    assert.equal(await page.evaluate((name) => (globalThis as unknown as { document: { cookie: string } }).document.cookie.includes(name), SESSION_COOKIE), false, 'not readable by scripts');

    // The endpoints page's API calls go through authorization with this session.
    await page.goto(`${consoleApp.url}/`);
    await page.locator('tr[data-endpoint]').first().waitFor();
    await page.close();
  });

  test('a tampered or expired session cookie is refused: back to the login page', async () => {
    const page = await newPage();
    const good = (await sessionCookie())!;
    const raw = Buffer.from(good.value.slice(3), 'base64url');
    raw[raw.length - 3] = raw[raw.length - 3]! ^ 1;
    // Only the console's cookie: with the provider's own session cookie still there, it would sign the user straight
    // back in (single sign-on) instead of showing its login page.
    await browser.clearCookies();
    await browser.addCookies([{ ...good, value: `v1.${raw.toString('base64url')}` }]);
    await page.goto(`${consoleApp.url}/topology`);
    await page.waitForURL((u) => u.origin === idp.issuer);
    const api = await fetch(`${consoleApp.url}/api/endpoints`, { headers: { cookie: `${SESSION_COOKIE}=v1.${raw.toString('base64url')}` } });
    assert.equal(api.status, 401);

    // Sealed with the console's secret and well-formed, but its lifetime ran out a minute ago.
    const expired = sealSession(
      { kind: 'user', id: 'operator', name: 'otto.operator@nimbus.test', roles: ['Operator'], groups: [] },
      { secret: SESSION_SECRET, maxAgeSeconds: 60, now: Date.now() - 120_000 },
    );
    await browser.addCookies([{ ...good, value: expired, expires: Math.floor(Date.now() / 1000) + 3600 }]);
    await page.goto(`${consoleApp.url}/flow`);
    await page.waitForURL((u) => u.origin === idp.issuer);
    const expiredApi = await fetch(`${consoleApp.url}/api/endpoints`, { headers: { cookie: `${SESSION_COOKIE}=${expired}` } });
    assert.equal(expiredApi.status, 401);
    // An open page whose session runs out moves on to sign-in by itself (client-side navigation alone would
    // never render the layout again).
    const short = sealSession(
      { kind: 'user', id: 'operator', name: 'otto.operator@nimbus.test', roles: ['Operator'], groups: [] },
      { secret: SESSION_SECRET, maxAgeSeconds: 3 },
    );
    await browser.addCookies([{ ...good, value: short, expires: Math.floor(Date.now() / 1000) + 3600 }]);
    await page.goto(`${consoleApp.url}/monitor`);
    await page.getByTestId('signed-in-user').waitFor();
    await page.waitForURL((u) => u.origin === idp.issuer);
    // The untouched cookie still works, so it was the tampering and the expiry that were refused.
    const goodApi = await fetch(`${consoleApp.url}/api/endpoints`, { headers: { cookie: `${SESSION_COOKIE}=${good.value}` } });
    assert.equal(goodApi.status, 200);
    await page.close();
  });

  test("signing out ends the console's and the provider's sessions and leads to the login page again", async () => {
    const page = await newPage();
    await browser.clearCookies();
    await page.goto(`${consoleApp.url}/`);
    await signInAt(page, 'reader', 'reader-pw');
    await page.waitForURL(`${consoleApp.url}/`);
    assert.equal(await page.getByTestId('signed-in-user').textContent(), 'rita.reader@nimbus.test');

    await page.getByRole('button', { name: 'Sign out' }).click();
    // oidc-provider asks whether to sign out of it as well.
    await page.waitForURL((u) => u.origin === idp.issuer);
    await page.getByRole('button', { name: /yes/i }).click();
    // Back at the console, signed out: sent on to the provider's login page (its session ended too).
    await page.waitForURL((u) => u.origin === idp.issuer && u.pathname.startsWith('/interaction/'));
    await page.getByLabel('User name').waitFor();
    assert.equal(await sessionCookie(), undefined);
    await page.close();
  });

  test('with NIMBUS_AUTH=off every page says authentication is off, and only loopback addresses are served', async () => {
    process.env.NIMBUS_AUTH = 'off';
    try {
      const page = await newPage();
      await page.goto(`${consoleApp.url}/monitor`);
      await page.getByTestId('auth-off-banner').waitFor();
      assert.match((await page.getByTestId('auth-off-banner').textContent()) ?? '', /Authentication is off/);
      assert.equal(await page.getByTestId('signed-in-user').count(), 0);
      await page.close();
      // DNS rebinding and a relaying proxy, against the real Next.js server: this console was started with sign-in
      // on, so the launcher's own front lets them through and proxy.ts, beside the headers Next.js adds, refuses.
      const port = Number(new URL(consoleApp.url).port);
      assert.equal(await rawStatus(port, { host: `attacker.test:${port}` }, '/monitor'), 421);
      assert.equal(await rawStatus(port, { host: `attacker.test:${port}` }, '/api/endpoints'), 421);
      assert.equal(await rawStatus(port, { host: `127.0.0.1:${port}`, 'x-forwarded-for': '203.0.113.9' }, '/api/endpoints'), 403);
      assert.equal(await rawStatus(port, { host: `localhost:${port}` }, '/api/endpoints'), 200);
      await assert.rejects(
        startConsole({ port: 0, hostname: '0.0.0.0', env: { NIMBUS_AUTH: 'off' } }),
        /would listen on 0\.0\.0\.0 without sign-in \(NIMBUS_AUTH=off\)/,
      );
    } finally {
      process.env.NIMBUS_AUTH = 'oidc';
    }
  });
});

/** The status of a GET sent with exactly these headers (no Host filled in by the client). */
function rawStatus(port: number, headers: Record<string, string>, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, setHost: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}
