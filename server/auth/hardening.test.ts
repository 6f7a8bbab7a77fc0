// Hostile input against the built console in Chromium (embedded emulator + Cosmos, real clients, the real
// proxy.ts): markup in event payloads, error texts, dead-letter reasons/descriptions and grant names renders as
// text (no script runs, no element is injected) while the pages still work under the nonce CSP; a cross-origin
// form POST is refused and audited; an oversized body gets 413; every response carries the security headers.
// Revoking a grant on the Access page asks first (who, which role, where; a warning on the caller's own grant) and
// sends one DELETE however often the button is clicked.
// Plus the pure helpers of server/auth/hardening.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { MessageType, Prop } from '@nimbus/sdk/contract';
import { CONSOLE_DIR, type RunningConsole } from '../console.ts';
import { XSS_TEXT } from '../testing/seed.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';
import type { ConsoleTestStack } from '../testing/stack.ts';
import { queryAudit } from '../audit/auditLog.ts';
import { bodyTooLarge, newNonce, pageCsp } from './hardening.ts';
import { SESSION_COOKIE, sealSession } from './session.ts';
import type { Principal } from './principal.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;
const EP = 'billingendpoint';

let ui: SeededConsole | undefined;
let stack: ConsoleTestStack;
let app: RunningConsole;
let browser: BrowserContext;
let evil: Server | undefined;
const pageErrors: string[] = [];
const cspViolations: string[] = [];

async function open(path: string): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(`${path}: ${e.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(`${path}: ${m.text()}`);
  });
  await page.goto(app.url + path);
  return page;
}

// The running console reads the sign-in settings per request, so a test can switch it to OIDC sign-in (no
// provider is contacted: a sealed session cookie is all a signed-in browser presents) and back to off.
const SECRET = 'hostile-test-session-secret-0123456789-abcdef';
const AUTH_ENV: Record<string, string> = {
  NIMBUS_AUTH: 'oidc',
  NIMBUS_AUTH_ISSUER: 'https://127.0.0.1:9/issuer',
  NIMBUS_AUTH_CLIENT_ID: 'nimbus-console',
  NIMBUS_AUTH_CLIENT_SECRET: 'not-used-here',
  NIMBUS_AUTH_REDIRECT_URI: 'http://127.0.0.1:3000/auth/callback',
  NIMBUS_AUTH_SESSION_SECRET: SECRET,
};

/** Runs `fn` with sign-in on; the browser holds no cookie before or after. */
async function withSignIn(fn: () => Promise<void>): Promise<void> {
  const saved = Object.fromEntries(Object.keys(AUTH_ENV).map((k) => [k, process.env[k]]));
  Object.assign(process.env, AUTH_ENV);
  try {
    await browser.clearCookies();
    await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await browser.clearCookies();
  }
}

/** The browser signed in as `principal` (inside withSignIn). */
async function signIn(principal: Principal): Promise<void> {
  await browser.clearCookies();
  await browser.addCookies([{ name: SESSION_COOKIE, value: sealSession(principal, { secret: SECRET, maxAgeSeconds: 600 }), url: app.url }]);
}

// The page's globals, typed just enough for the evaluate() callbacks (the Node program has no DOM types).
interface El {
  nonce: string;
  textContent: string | null;
  addEventListener(type: string, listener: () => void): void;
}
interface Browser {
  __xss?: number;
  requestAnimationFrame(callback: () => void): number;
  document: {
    querySelectorAll(selector: string): Iterable<El> & { length: number };
    getElementById(id: string): El | null;
    body: { insertAdjacentHTML(position: string, html: string): void };
  };
}

/** No payload ran (it would set window.__xss) and none of its elements exist in the document. */
async function assertInert(page: Page, where: string): Promise<void> {
  const r = await page.evaluate(() => {
    const w = globalThis as unknown as Browser;
    return {
      xss: w.__xss,
      imgs: w.document.querySelectorAll('img[src="x"], img[onerror]').length,
      // A script of ours holding the payload's text, other than the server's data for the page (Next's flight data,
      // where the prefetched payload travels as an escaped string literal).
      scripts: [...w.document.querySelectorAll('script')].filter((s) => s.textContent?.includes('__xss') && !s.textContent.startsWith('self.__next_f.push(')).length,
      // In that data, markup is escaped (< as \u003c), so nothing in it can close the script or open a tag.
      rawMarkupInData: [...w.document.querySelectorAll('script')].filter((s) => s.textContent?.startsWith('self.__next_f.push(') && /<(script|img|\/script)/i.test(s.textContent)).length,
    };
  });
  assert.deepEqual(r, { xss: undefined, imgs: 0, scripts: 0, rawMarkupInData: 0 }, `${where}: the payload stayed text`);
}

/** Beside the demo rows: markup in every field the pages show, in the store and on the broker. */
async function seedHostileInput(stack: ConsoleTestStack): Promise<void> {
  // An event whose error text, type and dead-letter reason/description are all markup.
  const when = new Date().toISOString();
  const common = {
    endpointId: EP,
    eventId: 'evt-xss-1',
    sessionId: 'XSS-1',
    eventTypeId: 'OrderPlaced',
    originatingMessageId: 'evt-xss-1-req',
    correlationId: 'evt-xss-1-corr',
    enqueuedAt: when,
  };
  await stack.store.recordOutcome({
    history: { ...common, messageId: 'evt-xss-1-req', messageType: MessageType.EventRequest, parentMessageId: 'self', from: 'storefrontendpoint', to: EP, payload: { note: XSS_TEXT } },
    status: { ...common, messageId: 'evt-xss-1-req', messageType: MessageType.EventRequest, parentMessageId: 'self', from: 'storefrontendpoint', to: EP, payload: { note: XSS_TEXT } },
  });
  const response = {
    ...common,
    messageId: 'evt-xss-1-res',
    messageType: MessageType.ErrorResponse,
    parentMessageId: 'evt-xss-1-req',
    from: EP,
    to: 'Resolver',
    errorText: XSS_TEXT,
    errorType: XSS_TEXT.slice(0, 60),
    deadLetterReason: 'Bad<script>window.__xss=3</script>',
    deadLetterErrorDescription: XSS_TEXT,
  };
  await stack.store.recordOutcome({ history: { ...response }, status: { ...response } });
  // A real dead letter on the broker with markup in its reason, description, properties and body.
  const sender = stack.serviceBus.client.createSender(EP);
  await sender.sendMessages({ body: XSS_TEXT, sessionId: 'XSS-DL', messageId: 'xss-dl-1', applicationProperties: { [Prop.To]: EP, note: XSS_TEXT } });
  await sender.close();
  const receiver = await stack.serviceBus.client.acceptSession(EP, EP, 'XSS-DL');
  const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
  assert.ok(m, 'the message reached the endpoint subscription');
  await receiver.deadLetterMessage(m, { deadLetterReason: '<b>x</b><img src=x onerror="window.__xss=4">', deadLetterErrorDescription: XSS_TEXT });
  await receiver.close();
}

before(async () => {
  ui = await startSeededConsole({ database: 'hostile', dir: DIR, prepare: ({ stack }) => seedHostileInput(stack) });
  ({ stack, app, browser } = ui);
});

after(async () => {
  await new Promise<void>((r) => (evil ? evil.close(() => r()) : r()));
  await ui?.close();
});

describe('hostile input in Chromium', () => {
  test('markup in payloads, error texts and dead-letter descriptions renders inert; the pages still run under the CSP', async () => {
    const event = await open(`/endpoints/${EP}/events/evt-xss-1`);
    await event.getByText('window.__xss=1', { exact: false }).first().waitFor();
    const text = await event.locator('main').innerText();
    assert.ok(text.includes('<img src=x onerror="window.__xss=1">'), 'the error text is shown as text, markup included');
    await assertInert(event, 'event page');

    const failed = await open(`/endpoints/${EP}/events/evt-failed-1`);
    await failed.getByTestId('payload').waitFor();
    await assertInert(failed, 'payload');

    const list = await open(`/endpoints/${EP}`);
    await list.getByRole('link', { name: 'evt-xss-1' }).waitFor();
    await assertInert(list, 'event list');

    const dl = await open(`/topology/subscriptions/${EP}/${EP}`);
    await dl.getByText('window.__xss=4', { exact: false }).first().waitFor();
    await assertInert(dl, 'dead letters');

    // Scripts run only by nonce: the client-rendered tables above prove the nonce reached Next's scripts.
    // Every script tag the server sends carries the nonce; chunks the runtime loads later (the payload viewer's, by
    // dynamic import) are trusted through 'strict-dynamic' and carry none, and the policy blocking nothing below
    // shows they ran.
    const served = await (await fetch(`${app.url}/endpoints/${EP}/events/evt-xss-1`)).text();
    const tags = served.match(/<script\b[^>]*>/g) ?? [];
    assert.ok(tags.length > 0, 'the page has scripts');
    assert.deepEqual(tags.filter((t) => !/\snonce="[^"]+"/.test(t)), [], 'every script tag carries the nonce');
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(cspViolations, [], 'nothing of ours is blocked by the policy');
  });

  test('an inline handler without the nonce is blocked by the policy', async () => {
    const page = await open('/audit');
    await page.getByTestId('audit-table').waitFor();
    // What an injection would amount to if markup ever reached the DOM as HTML: the CSP refuses to run it.
    const errored = await page.evaluate(
      () =>
        new Promise<boolean>((resolve) => {
          const d = (globalThis as unknown as Browser).document;
          d.body.insertAdjacentHTML('beforeend', '<img id="probe" src="/no-such-image.png" onerror="window.__xss=5">');
          const img = d.getElementById('probe')!;
          img.addEventListener('error', () => setTimeout(() => resolve(true), 50));
        }),
    );
    assert.equal(errored, true);
    assert.equal(await page.evaluate(() => (globalThis as unknown as Browser).__xss), undefined);
    assert.ok(cspViolations.some((v) => v.startsWith('/audit')), 'the browser reported the refused handler');
    cspViolations.length = 0;
  });

  test('a grant named with markup shows as text on the Access page', async () => {
    const res = await fetch(`${app.url}/api/admin/grants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ subjectKind: 'user', subject: 'oid-x', subjectName: XSS_TEXT, role: 'Reader', endpointId: null }),
    });
    assert.equal(res.status, 201);
    const page = await open('/admin/access');
    await page.getByText('window.__xss=1', { exact: false }).first().waitFor();
    await assertInert(page, 'access page');
    const audit = await open('/audit?action=grants.manage');
    await audit.locator('tr[data-audit-id]').first().waitFor();
    await assertInert(audit, 'audit page');
  });

  test('revoking a grant asks first, naming who, the role and where, and sends one DELETE for a double click', async () => {
    const res = await fetch(`${app.url}/api/admin/grants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ subjectKind: 'user', subject: 'oid-revoke', subjectName: 'Revoke Me', role: 'Operator', endpointId: EP }),
    });
    assert.equal(res.status, 201);
    const { id } = (await res.json()) as { id: string };
    const page = await open('/admin/access');
    await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
    const row = page.locator(`tr[data-grant-id="${id}"]`);
    await row.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this grant?' });
    await dialog.waitFor();
    const what = (await dialog.getByTestId('revoke-what').textContent()) ?? '';
    for (const part of ['Revoke Me', 'oid-revoke', 'Operator', `on endpoint ${EP}`]) assert.ok(what.includes(part), `the confirmation names ${part}: ${what}`);
    assert.equal(await dialog.getByTestId('revoke-own').count(), 0, 'not a grant of the caller (sign-in is off)');

    let deletes = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route(`**/api/admin/grants/${id}`, async (route) => {
      if (route.request().method() !== 'DELETE') return route.continue();
      deletes++;
      await held;
      await route.continue().catch(() => undefined);
    });
    try {
      await dialog.getByRole('button', { name: 'Revoke' }).dblclick();
      const busy = dialog.getByRole('button', { name: 'Working…' });
      await busy.waitFor();
      assert.equal(await busy.isDisabled(), true, 'disabled while the revoke is under way');
      release();
      await dialog.waitFor({ state: 'detached' });
      await row.waitFor({ state: 'detached' });
    } finally {
      release();
    }
    assert.equal(deletes, 1, 'one DELETE');
    assert.equal(await page.locator('main [role=alert]').count(), 0, 'no error shown');
    const left = (await (await fetch(`${app.url}/api/admin/grants`)).json()) as { grants: { id: string }[] };
    assert.ok(!left.grants.some((g) => g.id === id), 'the grant is gone');
    await page.close();
  });

  test('a cross-origin form POST is refused with 403 and audited', async () => {
    // Another site (another origin on this machine) auto-submits a form at the console, as a CSRF page would.
    evil = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<form id=f method=POST action="${app.url}/api/event/skip/${EP}/evt-failed-1" enctype="text/plain"><input name=x value=y></form><script>document.getElementById('f').submit()</script>`,
      );
    });
    await new Promise<void>((r) => evil!.listen(0, '127.0.0.1', () => r()));
    const page = await browser.newPage();
    const answered = page.waitForResponse((r) => r.url().includes('/api/event/skip/'));
    await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
    const res = await answered;
    assert.equal(res.status(), 403);
    assert.match(((await res.json()) as { detail: string }).detail, /cross-site request refused/);
    const log = await queryAudit(stack.store.database, { action: 'skip', outcome: 'denied', eventId: 'evt-failed-1', pageSize: 5 });
    assert.match(log.items[0]?.reason ?? '', /cross-site/);
    const trail = (await stack.store.listAudits('evt-failed-1')).items;
    assert.ok(trail.some((a) => a.type === 'Denied'), "the refused attempt is in the event's trail");
    const row = (await stack.store.getEvent(EP, 'evt-failed-1'))!.rows[0]!;
    assert.equal(row.status, 'Failed', 'nothing was skipped');
  });

  test('an oversized body gets 413 with a message, from the page and from any client', async () => {
    const page = await open('/');
    const fromPage = await page.evaluate(async () => {
      const r = await fetch(`/api/event/resubmit/billingendpoint/evt-failed-1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payload: { blob: 'x'.repeat(2_000_000) } }),
      });
      return { status: r.status, body: (await r.json()) as { error: string; detail: string } };
    });
    assert.equal(fromPage.status, 413);
    assert.match(fromPage.body.detail, /at most 1000000 bytes/);
    const direct = await fetch(`${app.url}/api/operations/reconcile`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(1_500_000) });
    assert.equal(direct.status, 413);
  });

  test('security headers on pages, API answers and static files', async () => {
    const pageRes = await fetch(`${app.url}/`);
    const csp = pageRes.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
    assert.ok(!/script-src[^;]*'unsafe-inline'/.test(csp), 'no unsafe-inline scripts');
    assert.match(csp, /frame-ancestors 'none'/);
    const second = (await fetch(`${app.url}/`)).headers.get('content-security-policy');
    assert.notEqual(second, csp, 'a fresh nonce per request');
    const html = await pageRes.text();
    const asset = /\/_next\/static\/[^"']+\.js/.exec(html)?.[0];
    assert.ok(asset, 'the page links a script chunk');
    for (const [what, res] of [
      ['page', pageRes],
      ['api', await fetch(`${app.url}/api/endpoints`)],
      ['static', await fetch(`${app.url}${asset}`)],
    ] as const) {
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what);
      assert.equal(res.headers.get('referrer-policy'), 'same-origin', what);
      assert.equal(res.headers.get('x-frame-options'), 'DENY', what);
    }
    assert.equal((await fetch(`${app.url}/api/endpoints`)).headers.get('content-security-policy'), "default-src 'none'; frame-ancestors 'none'");
  });
});

describe('role-aware pages', () => {
  async function eventPageAs(principal: Principal): Promise<{ resubmit: number; skip: number }> {
    await signIn(principal);
    const page = await browser.newPage();
    // The caller's permissions come with the page (prefetched with the details, as GET /api/me answers them), so
    // the buttons are decided by the first render: hydrated is enough, no /api/me of the browser's to wait for.
    await page.goto(`${app.url}/endpoints/${EP}/events/evt-failed-1`);
    await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
    await page.getByTestId('event-status').waitFor();
    // Two animation frames after hydration: React has committed what it caused.
    await page.evaluate(() => new Promise<void>((r) => {
      const w = globalThis as unknown as Browser;
      w.requestAnimationFrame(() => w.requestAnimationFrame(() => r()));
    }));
    const counts = {
      resubmit: await page.getByRole('button', { name: 'Resubmit', exact: true }).count(),
      skip: await page.getByRole('button', { name: 'Skip', exact: true }).count(),
    };
    await page.close();
    return counts;
  }

  test('Resubmit and Skip show for an Operator and are hidden for a Reader', () =>
    withSignIn(async () => {
      const operator = await eventPageAs({ kind: 'user', id: 'oid-op', name: 'op@test', roles: ['Operator'], groups: [] });
      assert.deepEqual(operator, { resubmit: 1, skip: 1 });
      const reader = await eventPageAs({ kind: 'user', id: 'oid-rd', name: 'rd@test', roles: ['Reader'], groups: [] });
      assert.deepEqual(reader, { resubmit: 0, skip: 0 });
    }));
});

describe('revoking one\'s own grant', () => {
  test('the confirmation warns when the grant is one the caller holds a role through', async () => {
    // Granted while sign-in is off; the user then signs in with no claim role: the grant alone makes them Owner.
    const post = (body: object) =>
      fetch(`${app.url}/api/admin/grants`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => {
        assert.equal(r.status, 201);
        return ((await r.json()) as { id: string }).id;
      });
    const own = await post({ subjectKind: 'user', subject: 'oid-own', subjectName: 'Own Owner', role: 'Owner', endpointId: null });
    const other = await post({ subjectKind: 'user', subject: 'oid-someone', role: 'Reader', endpointId: null });
    await withSignIn(async () => {
      await signIn({ kind: 'user', id: 'oid-own', name: 'own@test', roles: [], groups: [] });
      const page = await open('/admin/access');
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      await page.getByTestId('me').filter({ hasText: 'own@test' }).waitFor();
      const dialog = page.getByRole('dialog', { name: 'Revoke this grant?' });

      await page.locator(`tr[data-grant-id="${other}"]`).getByRole('button', { name: 'Revoke' }).click();
      await dialog.waitFor();
      assert.equal(await dialog.getByTestId('revoke-own').count(), 0, "someone else's grant: no warning");
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });

      await page.locator(`tr[data-grant-id="${own}"]`).getByRole('button', { name: 'Revoke' }).click();
      await dialog.waitFor();
      assert.match((await dialog.getByTestId('revoke-what').textContent()) ?? '', /Own Owner.*Owner.*site-wide/);
      assert.match((await dialog.getByTestId('revoke-own').textContent()) ?? '', /one of your own grants.*the right to manage grants/);
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      await page.close();
    });
    for (const id of [own, other]) assert.equal((await fetch(`${app.url}/api/admin/grants/${id}`, { method: 'DELETE' })).status, 200);
  });
});

describe('Admin → Health settings', () => {
  const OWNER: Principal = { kind: 'user', id: 'oid-owner', name: 'owner@test', roles: ['Owner'], groups: [] };
  const stored = async () => {
    const res = await fetch(`${app.url}/api/admin/health`, { headers: { cookie: `${SESSION_COOKIE}=${sealSession(OWNER, { secret: SECRET, maxAgeSeconds: 600 })}` } });
    return ((await res.json()) as { settings: { enabled: boolean; intervalSeconds: number; timeoutSeconds: number; version: string } }).settings;
  };
  /** A change another Owner makes meanwhile, through the API, from the settings as they are now. */
  const saveAsAnotherOwner = async (settings: object) => {
    const other: Principal = { kind: 'user', id: 'oid-owner-2', name: 'owner2@test', roles: ['Owner'], groups: [] };
    const res = await fetch(`${app.url}/api/admin/heartbeat/settings`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', cookie: `${SESSION_COOKIE}=${sealSession(other, { secret: SECRET, maxAgeSeconds: 600 })}` },
      body: JSON.stringify({ ...settings, version: (await stored()).version }),
    });
    assert.equal(res.status, 200, await res.text());
  };
  /** Until `read` gives `want`: the page refreshes every 5 s; the bound is only there to end a failing test. */
  async function until<T>(read: () => Promise<T>, want: T, what: string): Promise<void> {
    const end = Date.now() + 60_000;
    for (;;) {
      const got = await read();
      if (got === want) return;
      if (Date.now() > end) assert.fail(`${what}: ${String(got)}, expected ${String(want)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  test('the fields are read-only without the permission to change them', () =>
    withSignIn(async () => {
      await signIn({ kind: 'user', id: 'oid-operator', name: 'operator@test', roles: ['Operator'], groups: [] });
      const asOperator = await open('/admin/health');
      await asOperator.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      // Send now is the Operator's: once it shows, the caller's permissions are in.
      await asOperator.getByRole('button', { name: 'Send now' }).waitFor();
      for (const label of ['Send probes on a schedule', 'Interval (seconds, at least 30)', 'Timeout (seconds, 5 to the interval)'])
        assert.equal(await asOperator.getByLabel(label).isDisabled(), true, `${label} is read-only for an Operator`);
      await asOperator.getByText('Only an Owner can change the schedule.').waitFor();
      assert.equal(await asOperator.getByRole('button', { name: 'Save' }).count(), 0);
      await asOperator.close();
    }));

  test('untouched fields follow the server, and Save sends only what was changed', () =>
    withSignIn(async () => {
      const before = await stored();
      try {
        await signIn(OWNER);
        const page = await open('/admin/health');
        await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
        await page.getByRole('button', { name: 'Save' }).waitFor();
        const enabled = page.getByLabel('Send probes on a schedule');
        const interval = page.getByLabel('Interval (seconds, at least 30)');
        const timeout = page.getByLabel('Timeout (seconds, 5 to the interval)');
        await until(() => interval.inputValue(), String(before.intervalSeconds), 'the interval shown');
        assert.equal(await interval.isDisabled(), false);

        // Untouched, the form follows a change saved elsewhere.
        const newInterval = before.intervalSeconds + 300;
        await saveAsAnotherOwner({ intervalSeconds: newInterval });
        await until(() => interval.inputValue(), String(newInterval), 'the interval after another Owner changed it');

        // This Owner changes the timeout; meanwhile the other one switches the schedule on. The checkbox follows,
        // and Save sends the timeout alone: the other Owner's change stays.
        await timeout.fill('45');
        await saveAsAnotherOwner({ enabled: !before.enabled });
        await until(() => enabled.isChecked(), !before.enabled, 'the schedule switch after another Owner changed it');
        assert.equal(await timeout.inputValue(), '45', 'the field being edited is left alone');
        await page.getByRole('button', { name: 'Save' }).click();
        await page.getByRole('status').filter({ hasText: 'Saved:' }).waitFor();
        const { enabled: e, intervalSeconds: i, timeoutSeconds: t } = await stored();
        assert.deepEqual({ e, i, t }, { e: !before.enabled, i: newInterval, t: 45 });
        await page.close();
      } finally {
        await saveAsAnotherOwner({ enabled: before.enabled, intervalSeconds: before.intervalSeconds, timeoutSeconds: before.timeoutSeconds });
      }
    }));

  test('a save another Owner overtook is refused inside the page with both values; the server value shows, the own edit is re-applied and saved', () =>
    withSignIn(async () => {
      const before = await stored();
      try {
        await signIn(OWNER);
        const page = await open('/admin/health');
        await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
        await page.getByRole('button', { name: 'Save' }).waitFor();
        const interval = page.getByLabel('Interval (seconds, at least 30)');
        const timeout = page.getByLabel('Timeout (seconds, 5 to the interval)');
        await until(() => interval.inputValue(), String(before.intervalSeconds), 'the interval shown');

        // This Owner edits the interval and the timeout; before Save, another Owner saves a different interval.
        const mine = before.intervalSeconds + 600;
        const theirs = before.intervalSeconds + 300;
        await interval.fill(String(mine));
        await timeout.fill('45');
        await saveAsAnotherOwner({ intervalSeconds: theirs });
        await page.getByRole('button', { name: 'Save' }).click();

        // Refused, nothing applied: the page says so inside the form and names both values of the field.
        const conflict = page.getByTestId('heartbeat-settings-conflict');
        await conflict.waitFor();
        const text = (await conflict.textContent()) ?? '';
        assert.match(text, /Not saved: another Owner changed the settings/);
        assert.match(text, new RegExp(`Interval \\(seconds\\): now ${theirs}, yours ${mine}`));
        assert.equal(await conflict.getByRole('button', { name: 'Re-apply my changes' }).isVisible(), true);
        const afterRefusal = await stored();
        assert.deepEqual([afterRefusal.intervalSeconds, afterRefusal.timeoutSeconds], [theirs, before.timeoutSeconds], 'nothing of the refused save was applied');
        // The conflicting field shows the server's value; the edit nobody else touched is still there.
        assert.equal(await interval.inputValue(), String(theirs));
        assert.equal(await timeout.inputValue(), '45');

        // Re-applied and saved again: this time it goes through.
        await conflict.getByRole('button', { name: 'Re-apply my changes' }).click();
        await conflict.waitFor({ state: 'detached' });
        assert.equal(await interval.inputValue(), String(mine));
        await page.getByRole('button', { name: 'Save' }).click();
        await page.getByRole('status').filter({ hasText: 'Saved:' }).waitFor();
        const saved = await stored();
        assert.deepEqual([saved.intervalSeconds, saved.timeoutSeconds], [mine, 45]);
        await page.close();
      } finally {
        await saveAsAnotherOwner({ enabled: before.enabled, intervalSeconds: before.intervalSeconds, timeoutSeconds: before.timeoutSeconds });
      }
    }));
});

describe('hardening helpers', () => {
  test('nonces are fresh and the policy never allows inline or eval scripts in production', () => {
    const a = newNonce();
    assert.notEqual(a, newNonce());
    assert.match(a, /^[A-Za-z0-9+/]{22}==$/);
    const csp = pageCsp(a);
    assert.ok(csp.includes(`'nonce-${a}'`) && !csp.includes('unsafe-eval') && !/script-src[^;]*unsafe-inline/.test(csp));
  });
  test('body limit applies to mutating methods with a declared size over the limit', () => {
    assert.equal(bodyTooLarge('GET', '5000000'), null);
    assert.equal(bodyTooLarge('POST', '1000000'), null);
    assert.match(bodyTooLarge('put', '1000001') ?? '', /1000001 bytes/);
    assert.equal(bodyTooLarge('POST', null), null);
  });
});
