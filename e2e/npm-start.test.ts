// The console as an operator meets it: `npm start` (node --import tsx scripts/start.ts) as a child process, with
// its ports on 0 (any free port), its data in a temporary folder and the demo's traffic, driven in Debian's
// Chromium. Nothing is seeded: the events acted on are the ones the demo traffic failed, handed off and parked.
// The demo opens with three failing credit orders (each with a cancellation parked behind it) and slow ledger
// handoffs (NIMBUS_DEMO_OPERATOR_CASES=3). Screenshots of every page go to test-artifacts/npm-start/ (gitignored).
// Ctrl-C (SIGINT) must stop the whole platform: the last test sends it and waits for a clean exit.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { launchTestChromium, type TestBrowser } from '../server/testing/chromium.ts';
import { ledgerJobOutcome } from '../demo/rules.ts';
import type { EventDetailsView, EventListItem } from '../server/queries.ts';
import { reloadPage } from '../server/testing/pageWait.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ARTIFACTS = join(ROOT, 'test-artifacts', 'npm-start');
/** A first run may build the console (`next build`) before it listens: minutes on a busy two-core machine. */
const START_TIMEOUT_MS = 8 * 60_000;
/** The demo's handling, the Resolver and the deferred replay under load: generous, never a pass/fail figure. */
const SETTLE_MS = 180_000;

// The console API's own shapes: a test that copied them would keep passing while the API changed under it.
type ListItem = EventListItem;
type Details = EventDetailsView;

let child: ChildProcess;
let output = '';
let exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
let consoleUrl: string;
/** When the platform said it was running: the demo's heartbeats are timed from here. */
let runningAt = 0;
let dataDir: string;
let chromium: TestBrowser | undefined;
let browser: BrowserContext;
const consoleErrors: string[] = [];

const tail = () => output.split('\n').slice(-40).join('\n');

function waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = output.match(pattern);
      if (m) {
        cleanup();
        resolve(m);
      }
    };
    const onExit = () => {
      cleanup();
      reject(new Error(`npm start exited before ${pattern}:\n${tail()}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${tail()}`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', check);
    child.once('exit', onExit);
    check();
  });
}

async function api<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await fetch(consoleUrl + path, init);
  // The status first: an error page (HTML) must be reported as the status and text, not as a JSON parse error.
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${path}: ${res.status} ${(await res.text()).slice(0, 500)}`);
  return (await res.json()) as T;
}

const details = (endpointId: string, eventId: string) =>
  api<Details>(`/api/endpoints/${endpointId}/events/${encodeURIComponent(eventId)}`);

/** Polls until `probe` returns a value (not undefined), or fails with what it last saw. */
async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = SETTLE_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function open(path: string): Promise<Page> {
  const page = await browser.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${path}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`${path}: ${e.message}`));
  // SETTLE_MS, not Playwright's default 30 s: the first page after start-up renders while the demo's traffic, the
  // Resolver and the store start on the same two cores, and a CI run at load 13 took longer than 30 s to its load
  // event. This file checks what the pages show, not how fast the first one loads.
  await page.goto(consoleUrl + path, { timeout: SETTLE_MS });
  // Hydrated (components/Providers.tsx): a click between the load event and hydration is lost.
  await page.locator('html[data-hydrated]').waitFor({ state: 'attached', timeout: SETTLE_MS });
  return page;
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
/** Waits for the page to show `status`; on a timeout, says what the store holds for the event instead. */
async function statusOf(page: Page, status: string): Promise<void> {
  try {
    await page
      .getByTestId('event-status')
      .locator(`[data-status="${status}"]`)
      .waitFor({ timeout: SETTLE_MS });
  } catch (error) {
    const [, endpointId, eventId] = /\/endpoints\/([^/]+)\/events\/([^/?]+)/.exec(page.url()) ?? [];
    const d = await api<Details>(
      `/api/endpoints/${endpointId}/events/${eventId}`,
    ).catch(() => undefined);
    throw new Error(
      `${eventId} did not show ${status}: the store has ${d?.event.status ?? '?'}, history ${
        d?.history.map((h) => h.messageType).join(' > ') ?? '?'
      } (${(error as Error).message.split('\n')[0]})`,
    );
  }
}

/** Failed credit orders on billing whose cancellation is parked behind them: the demo's operator cases. */
async function blockedBillingOrders(count: number): Promise<Details[]> {
  return eventually(`${count} failed billing orders with parked siblings`, async () => {
    const list = await api<{ items: ListItem[] }>(
      '/api/endpoints/billingendpoint/events?status=Failed&eventTypeId=OrderPlaced',
    );
    const found: Details[] = [];
    for (const item of list.items) {
      const d = await details('billingendpoint', item.eventId);
      if (d.parkedSiblings.length > 0) found.push(d);
    }
    return found.length >= count
      ? found.sort((a, b) => a.event.sessionId.localeCompare(b.event.sessionId))
      : undefined;
  });
}

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), 'nimbus-npm-start-'));
  const env: NodeJS.ProcessEnv = {};
  // The settings this test does not choose stay unset, as on a fresh machine (NIMBUS_NEXT_DIST_DIR is kept:
  // it only says where this checkout's console build lives).
  for (const [k, v] of Object.entries(process.env))
    if (
      (!k.startsWith('NIMBUS_') || k === 'NIMBUS_NEXT_DIST_DIR' || k === 'NIMBUS_CHROMIUM') &&
      k !== 'PORT' &&
      k !== 'HOSTNAME'
    )
      env[k] = v;
  child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: ROOT,
    env: {
      ...env,
      PORT: '0',
      NIMBUS_EMULATOR_PORT: '0',
      NIMBUS_COSMOS_PORT: '0',
      NIMBUS_DATA_DIR: dataDir,
      NIMBUS_DEMO_OPERATOR_CASES: '3',
      // The test settles two of the slow handoffs itself; the ledger must not finish them first.
      NIMBUS_DEMO_SLOW_HANDOFF_SECONDS: '1800',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
  exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const [, url] = await waitForOutput(/NimBus is running: open (http:\/\/\S+)/, START_TIMEOUT_MS);
  consoleUrl = url!;
  runningAt = Date.now();
  chromium = await launchTestChromium();
  browser = chromium.context;
});

after(async () => {
  await chromium?.close();
  // The platform's own log, kept beside the screenshots: what the demo, the Resolver and the console did.
  writeFileSync(join(ARTIFACTS, 'npm-start.log'), output);
  if (child && child.exitCode === null && child.signalCode === null) {
    // Only when a test failed before the SIGINT test: stop the child we started, by its own pid.
    child.kill('SIGKILL');
    await exit;
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start in Chromium', () => {
  test('the Endpoints and Endpoint pages show the demo traffic', async () => {
    const page = await open('/');
    const billing = page.locator('tr[data-endpoint="billingendpoint"]');
    await billing.getByRole('link', { name: /\d+ failed/ }).waitFor({ timeout: SETTLE_MS });
    assert.ok((await page.locator('tr[data-endpoint]').count()) >= 5, 'every demo endpoint is listed');
    await shot(page, 'endpoints');
    await billing.getByRole('link', { name: 'billingendpoint' }).click();
    await page.waitForURL(/\/endpoints\/billingendpoint$/);
    await page.locator('[data-testid="events-table"] tbody tr').first().waitFor();
    await shot(page, 'endpoint');
    await page.close();
  });

  test('the demo probes heartbeats from the start: Health, Endpoints and Monitor show them live within a minute', async () => {
    // Polled (a positive signal); the minute is the issue's promise, with room for a busy machine on top.
    type Health = { settings: { enabled: boolean; intervalSeconds: number }; endpoints: Array<{ endpointId: string; status: string; included: boolean }> };
    // Every probed endpoint answered (one on an SDK without heartbeats would say Unsupported). The storefront
    // consumes nothing, runs no receiver and starts on the opt-out list: it would only ever show Off.
    const settled = (s: string) => s === 'On' || s === 'Unsupported';
    const health = await eventually(
      'every probed demo endpoint to answer a heartbeat',
      async () => {
        const h = await api<Health>('/api/admin/health');
        const probed = h.endpoints.filter((e) => e.included);
        return probed.length >= 4 && probed.every((e) => settled(e.status)) && probed.some((e) => e.status === 'On') ? h : undefined;
      },
      150_000,
    );
    assert.deepEqual(
      health.endpoints.filter((e) => !e.included).map((e) => e.endpointId),
      ['storefrontendpoint'],
    );
    console.log(`# demo heartbeats: every probed endpoint settled ${((Date.now() - runningAt) / 1000).toFixed(0)} s after start`);
    assert.equal(health.settings.enabled, true);
    assert.equal(health.settings.intervalSeconds, 30);
    const admin = await open('/admin/health');
    await admin.locator('[data-heartbeat-status="On"]').first().waitFor();
    assert.equal(await admin.locator('[data-heartbeat-status="Off"]').count(), 0);
    await admin.close();
    const endpoints = await open('/');
    // "On · busy" is On too: the demo's endpoints are busy on a loaded box, and their probes then wait behind traffic.
    await endpoints.locator('tr[data-endpoint="billingendpoint"] td').filter({ hasText: /^On( · busy)?$/ }).waitFor();
    await endpoints.close();
    const monitor = await open('/monitor');
    await monitor.getByText('heartbeat On').first().waitFor();
    assert.equal(await monitor.getByText('heartbeat Off').count(), 0);
    await monitor.close();
  });

  test('a failed order resubmitted from its page completes, then its parked cancellation', async () => {
    const [blocked] = await blockedBillingOrders(3);
    const { event, parkedSiblings } = blocked!;
    const page = await open(`/endpoints/billingendpoint/events/${event.eventId}`);
    await page.getByTestId('parked-siblings').filter({ hasText: parkedSiblings[0]!.eventId }).waitFor();
    await shot(page, 'event-failed');
    await page.getByRole('button', { name: 'Resubmit', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Resubmit' }).click();
    await statusOf(page, 'Completed');
    await page.getByTestId('audits').filter({ hasText: 'Resubmit' }).waitFor();
    await shot(page, 'event-resubmitted');
    await page.close();

    const done = (await details('billingendpoint', event.eventId)).event;
    for (const sibling of parkedSiblings) {
      const s = await eventually(`parked ${sibling.eventId} to complete`, async () => {
        const d = await details('billingendpoint', sibling.eventId);
        return d.event.status === 'Completed' ? d.event : undefined;
      });
      assert.ok(s.updatedAt >= done.updatedAt, 'the parked sibling completes after the event it waited for');
    }
  });

  test('a failed order skipped from its page', async () => {
    const [, skipped] = await blockedBillingOrders(2);
    const page = await open(`/endpoints/billingendpoint/events/${skipped!.event.eventId}`);
    await page.getByRole('button', { name: 'Skip', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Skip' }).click();
    await statusOf(page, 'Skipped');
    await page.getByTestId('audits').filter({ hasText: 'Skip' }).waitFor();
    await shot(page, 'event-skipped');
    await page.close();
  });

  test('a failed order resubmitted with an edited payload completes with the new payload', async () => {
    const [edited] = await blockedBillingOrders(1);
    const { event } = edited!;
    const page = await open(`/endpoints/billingendpoint/events/${event.eventId}`);
    await page.getByRole('button', { name: 'Resubmit with changes' }).click();
    const editor = page.getByLabel('Edited payload (JSON)');
    await editor.fill('{ "broken": ');
    await page.getByText(/Invalid JSON/).waitFor();
    const payload = { ...(event.payload as Record<string, unknown>), paymentMethod: 'card' };
    await editor.fill(JSON.stringify(payload, null, 2));
    await page.getByText('Valid JSON', { exact: true }).waitFor();
    await shot(page, 'event-edit');
    await page.getByRole('button', { name: 'Resubmit edited payload' }).click();
    await statusOf(page, 'Completed');
    assert.match((await page.getByTestId('payload').textContent()) ?? '', /"paymentMethod": "card"/);
    await page.getByTestId('audits').filter({ hasText: 'ResubmitWithChanges' }).waitFor();
    await page.close();
  });

  test('a handoff completed from its page, another failed through the POST endpoint', async () => {
    // Only the slow ledger jobs stay pending for the test; a quick one may finish between being listed and being
    // settled here (CI saw the POST answer 409 "the event is Completed"). The demo's job id names the invoice.
    const handoffs = await eventually('two pending slow ERP handoffs', async () => {
      const list = await api<{ items: ListItem[] }>('/api/endpoints/erpendpoint/events?status=Handoff');
      const slow: ListItem[] = [];
      for (const item of list.items) {
        const job = (await details('erpendpoint', item.eventId)).event.handoff?.externalJobId ?? '';
        if (job.startsWith('LEDGER-') && ledgerJobOutcome(job.slice('LEDGER-'.length)) === 'slow') slow.push(item);
      }
      return slow.length >= 2 ? slow : undefined;
    });
    const [completing, failing] = handoffs as [ListItem, ListItem];
    const page = await open(`/endpoints/erpendpoint/events/${completing.eventId}`);
    await page.getByTestId('handoff-countdown').waitFor();
    await shot(page, 'event-handoff');
    await page.getByRole('button', { name: 'Complete handoff' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Complete handoff' }).click();
    await statusOf(page, 'Completed');
    await page.close();

    const res = await fetch(
      `${consoleUrl}/api/event/handoff/fail/erpendpoint/${encodeURIComponent(failing.eventId)}/${encodeURIComponent(failing.messageId)}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          errorText: 'Ledger import rejected by the e2e test',
          errorType: 'LedgerRejected',
        }),
      },
    );
    assert.ok(res.ok, `handoff fail answered ${res.status}: ${await res.text()}`);
    const failed = await eventually('the failed handoff to turn Failed', async () => {
      const d = await details('erpendpoint', failing.eventId);
      return d.event.status === 'Failed' ? d : undefined;
    });
    assert.equal(
      failed.event.errorText,
      'Ledger import rejected by the e2e test',
    );
    const failedPage = await open(`/endpoints/erpendpoint/events/${failing.eventId}`);
    await statusOf(failedPage, 'Failed');
    await shot(failedPage, 'event-handoff-failed');
    await failedPage.close();
  });

  test('filters live in the URL and survive a reload', async () => {
    const page = await open('/endpoints/billingendpoint');
    await page.getByRole('button', { name: /^Completed/ }).click();
    await page.waitForURL(/status=Completed/);
    await page.getByLabel('Event type').selectOption('OrderPlaced');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/eventTypeId=OrderPlaced/);
    await reloadPage(page);
    await page.locator('[data-testid="events-table"] tbody tr').first().waitFor();
    assert.equal(await page.getByRole('button', { name: /^Completed/ }).getAttribute('aria-pressed'), 'true');
    // The event-type options arrive with the catalog; the select shows the URL's filter once they are there.
    await page.getByLabel('Event type').locator('option[value="OrderPlaced"]').waitFor({ state: 'attached' });
    assert.equal(await page.getByLabel('Event type').inputValue(), 'OrderPlaced');
    const rows = page.locator('[data-testid="events-table"] tbody tr');
    const statuses = await rows
      .locator('[data-status]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
    assert.ok(
      statuses.length > 0 && statuses.every((s) => s === 'Completed'),
      `only Completed rows: ${statuses.join(',')}`,
    );
    assert.doesNotMatch((await rows.allTextContents()).join('\n'), /OrderCancelled|CustomerRegistered/);
    await shot(page, 'endpoint-filtered');
    await page.close();
  });

  test('Monitor, Flow, search, topology, audit, operations and health pages render with data', async () => {
    const monitor = await open('/monitor');
    await monitor.locator('[data-band]').getByText('billingendpoint').first().waitFor();
    await shot(monitor, 'monitor');
    await monitor.close();

    const flow = await open('/flow');
    await flow.locator('[data-consumer="billingendpoint"]').first().waitFor();
    await shot(flow, 'flow');
    await flow.close();

    const search = await open('/search?q=CUST-2002');
    await search.getByRole('link').filter({ hasText: /./ }).first().waitFor();
    await search.getByText('CUST-2002').first().waitFor();
    await shot(search, 'search');
    await search.close();

    for (const [path, name] of [
      ['/topology/subscriptions', 'topology-subscriptions'],
      ['/audit', 'audit'],
      ['/admin/health', 'admin-health'],
    ] as const) {
      const page = await open(path);
      await page.locator('table tbody tr').first().waitFor();
      await shot(page, name);
      await page.close();
    }
    const reconcile = await open('/operations/reconcile');
    await reconcile.getByRole('heading', { name: /Reconcile/ }).waitFor();
    await shot(reconcile, 'operations-reconcile');
    await reconcile.close();
  });

  test('no page logged a console error', () => {
    assert.deepEqual(consoleErrors, []);
  });

  test('Ctrl-C (SIGINT) stops the whole platform and exits 0', async () => {
    await chromium?.close();
    chromium = undefined;
    child.kill('SIGINT');
    const result = await Promise.race([
      exit,
      new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 60_000).unref()),
    ]);
    assert.notEqual(result, 'timeout', `npm start did not exit within 60 s of SIGINT:\n${tail()}`);
    assert.deepEqual(result, { code: 0, signal: null }, tail());
    assert.match(output, /stopped/);
    await assert.rejects(fetch(`${consoleUrl}/api/health`), 'nothing answers on the console port any more');
  });
});
