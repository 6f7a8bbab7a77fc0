// Search says when a list was cut, and Monitor's chart range lives in the URL. The built console against the
// embedded Service Bus emulator and Cosmos server, with Debian's Chromium, as e2e/console-urlstate.test.ts; the
// extra events are written the way the Resolver records them (server/testing/seed.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Page } from 'playwright-core';
import { MessageType } from '@nimbus/sdk/contract';
import type { RunningConsole } from '../server/console.ts';
import { seedEvent } from '../server/testing/seed.ts';
import { errorsLoading, startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
let consoleApp: RunningConsole;
let browser: BrowserContext;

/** One more than a search list shows. */
const MANY = 26;

before(async () => {
  ui = await startSeededConsole({
    prepare: async ({ stack, base }) => {
      for (let i = 0; i < MANY; i++) {
        await seedEvent(stack.store, base, { endpointId: 'shippingendpoint', eventId: `many-evt-${i}`, sessionId: `many-ses-${i}`, eventTypeId: 'OrderPlaced', payload: { i } }, MessageType.ResolutionResponse);
      }
    },
  });
  ({ app: consoleApp, browser } = ui);
});

after(() => ui?.close());

/**
 * Polls until `read` gives `want` (page.waitForFunction would evaluate a string with eval, which the console's CSP
 * refuses); fails with the last value seen.
 */
async function until<T>(read: () => Promise<T>, want: T, what: string, page: Page, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  let last: T | undefined;
  for (;;) {
    last = await read().catch(() => undefined);
    if (JSON.stringify(last) === JSON.stringify(want)) return;
    if (Date.now() > end) assert.fail(`${what}: wanted ${JSON.stringify(want)}, last saw ${JSON.stringify(last)} at ${page.url()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Act only once React has hydrated (Providers marks <html data-hydrated>): a click before that is lost. */
const hydrated = (page: Page) => page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
const gotoHydrated = async (page: Page, url: string) => {
  await page.goto(url);
  await hydrated(page);
};

describe('search', () => {
  const rows = (page: Page) => page.locator('main table tbody tr').count();

  test('a search with more matches than shown says so; one with fewer does not', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, `${consoleApp.url}/search?q=many-evt`);
    const hint = page.getByTestId('search-truncated');
    await hint.waitFor();
    assert.match((await hint.textContent()) ?? '', /^Showing the first 25 matches by event id — refine the search/);
    assert.equal(await rows(page), 25);

    // many-evt-1 and many-evt-10 … 19: all shown, no hint (the rows and the hint come from the same answer).
    await gotoHydrated(page, `${consoleApp.url}/search?q=many-evt-1`);
    await until(() => rows(page), 11, 'the eleven matches', page);
    assert.equal(await hint.count(), 0);
    await page.close();
  });
});

describe('monitor: the chart range in the URL', () => {
  const pressed = (page: Page) =>
    page.getByTestId('range-picker').evaluate((g) => [...g.querySelectorAll('button[aria-pressed="true"]')].map((b) => b.textContent));
  /** The bucket note under the platform chart: which bucket the API chose for the range. */
  const bucketNote = async (page: Page) => ((await page.getByTestId('monitor-history').locator('p').first().textContent()) ?? '').split(';')[0];
  const range = (page: Page) => new URL(page.url()).searchParams.get('range');

  test('choosing a range writes the URL; a reload keeps it; Back restores the one before', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, `${consoleApp.url}/`);
    await gotoHydrated(page, `${consoleApp.url}/monitor`);
    const picker = page.getByTestId('range-picker');
    await until(() => pressed(page), ['1h'], 'the default range', page);

    await picker.getByRole('button', { name: '24h', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('range') === '24h');
    await until(() => bucketNote(page), 'per 5 min', 'the 24 h range queried', page);
    await picker.getByRole('button', { name: '7d', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('range') === '7d');

    await page.reload();
    await hydrated(page);
    await until(() => pressed(page), ['7d'], 'the range after a reload', page);
    await until(() => bucketNote(page), 'per 1 h', 'the 7 d range queried after a reload', page);

    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/monitor' && u.searchParams.get('range') === '24h');
    await until(() => pressed(page), ['24h'], 'Back: the range before', page);
    await until(() => bucketNote(page), 'per 5 min', 'Back: the 24 h range queried', page);
    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/monitor' && u.search === '');
    await until(() => pressed(page), ['1h'], 'Back: the default range', page);
    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/');
    await page.close();
  });

  test('a custom range is in the URL with both ends and survives a reload; a bad one opens the default', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, `${consoleApp.url}/monitor`);
    const picker = page.getByTestId('range-picker');
    await picker.getByRole('button', { name: 'custom', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('range') === 'custom');
    const local = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    const from = local(Date.now() - 3 * 3_600_000);
    const to = local(Date.now() - 3_600_000);
    await picker.getByLabel('From', { exact: true }).fill(from);
    await picker.getByLabel('To', { exact: true }).fill(to);
    await picker.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL((u) => Date.parse(u.searchParams.get('from') ?? '') === Date.parse(from));
    assert.equal(Date.parse(new URL(page.url()).searchParams.get('to') ?? ''), Date.parse(to));

    await page.reload();
    await hydrated(page);
    await until(() => pressed(page), ['custom'], 'custom after a reload', page);
    await until(() => picker.getByLabel('From', { exact: true }).inputValue(), from, 'the From box after a reload', page);
    assert.equal(await picker.getByLabel('To', { exact: true }).inputValue(), to);

    // Hand-edited links: an unknown range, or a custom one without a usable end, open the default.
    for (const qs of ['range=2w', 'range=custom&from=yesterday&to=2026-12-03T12:00:00Z', 'range=custom&from=2026-12-03T12:00:00Z&to=2026-12-03T10:00:00Z']) {
      await gotoHydrated(page, `${consoleApp.url}/monitor?${qs}`);
      await until(() => pressed(page), ['1h'], `${qs} falls back to 1 h`, page);
      assert.equal(range(page), new URLSearchParams(qs).get('range'), 'the link is left as it was');
    }
    await page.close();
  });

  test('Monitor with a range in the URL renders on the server and hydrates without errors', async () => {
    const errors = await errorsLoading(browser, consoleApp.url, ['/monitor?range=30d', '/monitor?range=custom&from=2026-12-03T10:00:00Z&to=2026-12-03T12:00:00Z', '/monitor?range=bogus', '/search?q=many-evt']);
    assert.deepEqual(errors, []);
  });
});
