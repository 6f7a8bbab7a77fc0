// Search says when a list was cut, and Monitor's chart range lives in the URL. The built console against the
// embedded Service Bus emulator and Cosmos server, with Debian's Chromium, as e2e/console-urlstate.test.ts; the
// extra events are written the way the Resolver records them (server/testing/seed.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Page } from 'playwright-core';
import { MessageType } from '@nimbus/sdk/contract';
import type { RunningConsole } from '../server/console.ts';
import { seedEvent } from '../server/testing/seed.ts';
import { gotoHydrated, hydrated, reloadHydrated, reloadPage, until } from '../server/testing/pageWait.ts';
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
      // Two events outside any session (an empty session id): two, so the search lists them instead of opening one.
      for (const eventId of ['lone-evt-0', 'lone-evt-1']) {
        await seedEvent(stack.store, base, { endpointId: 'shippingendpoint', eventId, sessionId: '', eventTypeId: 'OrderPlaced', payload: {} }, MessageType.ResolutionResponse);
      }
    },
  });
  ({ app: consoleApp, browser } = ui);
});

after(() => ui?.close());

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

  test('an event outside any session shows no session link (not an empty one to `?sessionId=`)', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, `${consoleApp.url}/search?q=lone-evt`);
    await until(() => rows(page), 2, 'the two events without a session', page);
    assert.equal(await page.locator('main table tbody tr td:nth-child(4) a').count(), 0);
    assert.deepEqual(await page.locator('main table tbody tr td:nth-child(4)').allTextContents(), ['', '']);
    await page.close();
  });

  test('the header\'s search box shows the query the page shows: opened directly, after Back and Forward, after a reload; `/` still focuses it', async () => {
    const page = await browser.newPage();
    const box = page.getByRole('search').getByLabel('Search by event id or session id');
    const q = () => new URL(page.url()).searchParams.get('q');
    // Session ids, and a prefix no event id equals: an exact event id would open the event instead of the list.
    await gotoHydrated(page, `${consoleApp.url}/search?q=many-ses-1`);
    await until(() => rows(page), 11, 'the sessions many-ses-1 and many-ses-10 … 19', page);
    assert.equal(await box.inputValue(), 'many-ses-1', 'a search page opened directly (new tab, link) shows its query');

    await box.fill('many-evt');
    await box.press('Enter');
    await page.waitForURL(() => q() === 'many-evt');
    await until(() => rows(page), 25, 'the second search', page);
    assert.equal(await box.inputValue(), 'many-evt');

    await page.goBack();
    await page.waitForURL(() => q() === 'many-ses-1');
    await until(() => rows(page), 11, 'Back: the first search', page);
    await until(() => box.inputValue(), 'many-ses-1', 'Back: the box follows the page', page);
    await page.goForward();
    await page.waitForURL(() => q() === 'many-evt');
    await until(() => rows(page), 25, 'Forward: the second search', page);
    await until(() => box.inputValue(), 'many-evt', 'Forward: the box follows the page', page);

    await reloadHydrated(page);
    await until(() => rows(page), 25, 'the second search after a reload', page);
    assert.equal(await box.inputValue(), 'many-evt', 'after a reload');

    // `/` focuses the box, with the query in it and without typing itself.
    await page.keyboard.press('/');
    assert.equal(await page.evaluate<string>("document.activeElement?.getAttribute('aria-label') ?? ''"), 'Search by event id or session id');
    assert.equal(await box.inputValue(), 'many-evt');
    await page.close();
  });
});

/** The browser's global with its local storage (evaluated in the page; this file's TypeScript has no DOM types). */
type WithStorage = { localStorage: { setItem(k: string, v: string): void; removeItem(k: string): void } };

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

    await reloadPage(page);
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

    await reloadPage(page);
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

  describe('the custom range\'s boxes in UTC', () => {
    const ends = { from: '2026-12-03T10:00:00Z', to: '2026-12-03T12:00:00Z' };
    const customUrl = () => `${consoleApp.url}/monitor?${new URLSearchParams({ range: 'custom', ...ends })}`;
    /**
     * A page on Monitor's custom range with the viewer's choice set to UTC (kept in local storage, as the header's
     * switch keeps it) and its uncaught errors recorded; the choice is taken back afterwards, so the other tests
     * see the default.
     */
    const openInUtc = async (timezoneId?: string) => {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      if (timezoneId) {
        const cdp = await page.context().newCDPSession(page);
        await cdp.send('Emulation.setTimezoneOverride', { timezoneId });
      }
      await gotoHydrated(page, `${consoleApp.url}/monitor`);
      await page.evaluate(() => (globalThis as unknown as WithStorage).localStorage.setItem('nimbus.timeZone', 'utc'));
      await gotoHydrated(page, customUrl());
      await until(() => page.getByRole('button', { name: 'UTC', exact: true }).getAttribute('aria-pressed'), 'true', 'the header says UTC', page);
      const picker = page.getByTestId('range-picker');
      await until(() => pressed(page), ['custom'], 'the custom range from the link', page);
      const close = async () => {
        await page.evaluate(() => (globalThis as unknown as WithStorage).localStorage.removeItem('nimbus.timeZone')).catch(() => undefined);
        await page.close();
      };
      return { page, errors, picker, from: picker.getByLabel('From', { exact: true }), to: picker.getByLabel('To', { exact: true }), close };
    };

    test('the boxes show the range on the UTC clock and say so', async () => {
      // A zone neither UTC nor whole hours (UTC+5:45): boxes on the local clock would read 15:45.
      const { page, picker, from, to, close } = await openInUtc('Asia/Kathmandu');
      try {
        await until(() => from.inputValue(), '2026-12-03T10:00', 'the From box on the UTC clock', page);
        assert.equal(await to.inputValue(), '2026-12-03T12:00');
        assert.equal(await picker.getByTestId('range-zone').textContent(), 'UTC');
      } finally {
        await close();
      }
    });

    test('custom with a cleared box opens the last hour ending now, without an error', async () => {
      const { page, errors, picker, from, to, close } = await openInUtc();
      try {
        await until(() => from.inputValue(), '2026-12-03T10:00', 'the From box', page);
        await from.fill('');
        const clicked = Math.floor(Date.now() / 1000) * 1000;
        await picker.getByRole('button', { name: 'custom', exact: true }).click();
        // The URL moves, or the click's uncaught error is what the failure reports.
        const outcome = async () => errors[0] ?? (new URL(page.url()).searchParams.get('from') !== ends.from ? 'a new range' : 'the old range');
        await until(outcome, 'a new range', 'the URL after custom', page);
        const sp = new URL(page.url()).searchParams;
        assert.equal(sp.get('range'), 'custom');
        assert.match(sp.get('from') ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, 'an instant written in UTC');
        const [f, t] = [Date.parse(sp.get('from') ?? ''), Date.parse(sp.get('to') ?? '')];
        assert.equal(t - f, 3_600_000, 'one hour');
        assert.ok(t >= clicked && t <= Date.now(), 'ending now');
        // The boxes show the range opened.
        await until(() => from.inputValue(), new Date(f).toISOString().slice(0, 16), 'the From box reset', page);
        assert.equal(await to.inputValue(), new Date(t).toISOString().slice(0, 16));
        await until(() => pressed(page), ['custom'], 'still custom', page);
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });

    test('Apply with a reversed range says why and changes nothing', async () => {
      const { page, errors, picker, from, close } = await openInUtc();
      try {
        await until(() => from.inputValue(), '2026-12-03T10:00', 'the From box', page);
        const before = page.url();
        await from.fill('2026-12-03T13:00');
        await picker.getByRole('button', { name: 'Apply' }).click();
        await picker.getByRole('alert').filter({ hasText: 'From must be before To.' }).waitFor();
        assert.equal(page.url(), before, 'the URL is unchanged');
        assert.deepEqual(await pressed(page), ['custom']);
        // The next edit takes the message away.
        await from.fill('2026-12-03T11:00');
        await picker.getByRole('alert').waitFor({ state: 'detached' });
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });
  });

  test('Monitor with a range in the URL renders on the server and hydrates without errors', async () => {
    const errors = await errorsLoading(browser, consoleApp.url, ['/monitor?range=30d', '/monitor?range=custom&from=2026-12-03T10:00:00Z&to=2026-12-03T12:00:00Z', '/monitor?range=bogus', '/search?q=many-evt']);
    assert.deepEqual(errors, []);
  });
});
