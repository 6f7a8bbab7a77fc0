// The Endpoint page's history range lives in the URL beside its event filters (`range`, and `rangeFrom`/`rangeTo`
// for a custom one, since `from`/`to` filter the events): choosing a range writes it, a reload keeps it, Back undoes
// a range change and a filter change each as one step, and neither disturbs the other. The built console against
// the embedded Service Bus emulator and Cosmos server with Debian's Chromium, as e2e/console-search-monitor.test.ts;
// one failed outcome is written to the stored time series so the outcomes chart has a failure bar to click.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { TimeSeriesStore } from '../lib/store/index.ts';
import type { RunningConsole } from '../server/console.ts';
import { gotoHydrated, hydrated, reloadPage, until } from '../server/testing/pageWait.ts';
import { errorsLoading, startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
let ui: SeededConsole | undefined;
let consoleApp: RunningConsole;
let browser: BrowserContext;
/** When the stored failure happened (epoch ms). */
let failedAt = 0;

before(async () => {
  ui = await startSeededConsole({
    prepare: async ({ stack, base }) => {
      failedAt = base;
      const series = new TimeSeriesStore(stack.store.database);
      series.add({ endpointId: EP, eventTypeId: 'OrderPlaced', at: new Date(base), count: 'failed' });
      await series.flush();
      await series.close();
    },
  });
  ({ app: consoleApp, browser } = ui);
});

after(() => ui?.close());

const picker = (page: Page) => page.getByTestId('endpoint-history').getByTestId('range-picker');
const rangePressed = (page: Page) => picker(page).evaluate((g) => [...g.querySelectorAll('button[aria-pressed="true"]')].map((b) => b.textContent));
const chipsPressed = (page: Page) =>
  page.locator('[aria-label="Status filter"]').evaluate((g) => [...g.querySelectorAll('button[aria-pressed="true"]')].map((b) => b.firstChild?.textContent));
const shown = (page: Page) =>
  page.locator('[data-testid=events-table] tbody').evaluate((b) => [...b.querySelectorAll('a[href*="/events/"]')].map((a) => a.textContent).sort());
/** The URL's query as [key, value] pairs in order, for exact comparisons. */
const query = (page: Page) => [...new URL(page.url()).searchParams];
/** The span of the next GET /api/metrics for the endpoint: which range the charts asked for. */
const nextMetricsSpan = (page: Page) =>
  page
    .waitForRequest((r) => {
      const u = new URL(r.url());
      return u.pathname === '/api/metrics' && u.searchParams.get('endpointId') === EP;
    })
    .then((r) => {
      const u = new URL(r.url());
      return Number(u.searchParams.get('to')) - Number(u.searchParams.get('from'));
    });
/**
 * Clicks the chart's failure bar: hovers from the right edge leftwards until the legend's failed series shows a
 * count (the bar under the pointer), then clicks there.
 */
async function clickFailureBar(page: Page, chart: Locator): Promise<void> {
  const box = (await chart.locator('.u-over').boundingBox())!;
  const failed = chart.locator('.u-legend .u-series').nth(2).locator('.u-value');
  let x = box.width - 2;
  for (; x > 0; x -= 3) {
    await page.mouse.move(box.x + x, box.y + box.height / 2);
    if (/^[1-9]/.test(((await failed.textContent()) ?? '').trim())) break;
  }
  assert.ok(x > 0, 'the failure bar was found');
  await page.mouse.click(box.x + x, box.y + box.height / 2);
}
const DAY = 86_400_000;
/** A preset's span, give or take the milliseconds fetchMetrics rounds its ends by. */
const about = (span: number, ms: number) => Math.abs(span - ms) <= 2;

describe('endpoint page: the history range in the URL beside the event filters', () => {
  test('a range choice writes the URL and keeps the filters; a reload keeps both; Back undoes one step at a time', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, `${consoleApp.url}/`);
    await gotoHydrated(page, `${consoleApp.url}/endpoints/${EP}?status=Failed`);
    await until(() => rangePressed(page), ['1h'], 'the default range', page);
    await until(() => shown(page), ['evt-failed-1'], 'the Failed filter from the link', page);
    // Typed, not applied: a range change must not throw it away.
    await page.getByLabel('Error text contains').fill('card');

    let span = nextMetricsSpan(page);
    await picker(page).getByRole('button', { name: '24h', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('range') === '24h');
    assert.deepEqual(query(page), [['status', 'Failed'], ['range', '24h']], 'the filter stays in the URL');
    assert.ok(about(await span, DAY), 'the charts ask for 24 h');
    await until(() => rangePressed(page), ['24h'], 'the 24 h button', page);
    assert.deepEqual(await chipsPressed(page), ['Failed']);
    assert.equal(await page.getByLabel('Error text contains').inputValue(), 'card', 'the typed filter is still there');
    await page.getByLabel('Error text contains').fill('');

    // A filter change keeps the range.
    await page.getByRole('button', { name: /^Deferred/ }).click();
    await page.waitForURL((u) => u.searchParams.get('status') === 'Failed,Deferred');
    assert.deepEqual(query(page), [['status', 'Failed,Deferred'], ['range', '24h']]);
    await until(() => shown(page), ['evt-failed-1', 'evt-parked-1'], 'Failed and Deferred', page);
    assert.deepEqual(await rangePressed(page), ['24h'], 'the range stays');

    await picker(page).getByRole('button', { name: '7d', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('range') === '7d');
    assert.deepEqual(query(page), [['status', 'Failed,Deferred'], ['range', '7d']]);

    span = nextMetricsSpan(page);
    await reloadPage(page);
    await hydrated(page);
    assert.ok(about(await span, 7 * DAY), 'after a reload the charts ask for 7 d');
    await until(() => rangePressed(page), ['7d'], 'the range after a reload', page);
    assert.deepEqual(await chipsPressed(page), ['Failed', 'Deferred'], 'the filters after a reload');

    // Back: the range change, then the filter change, then the range change before it, each one step.
    await page.goBack();
    await page.waitForURL((u) => u.searchParams.get('range') === '24h');
    assert.deepEqual(query(page), [['status', 'Failed,Deferred'], ['range', '24h']]);
    await until(() => rangePressed(page), ['24h'], 'Back: the range before', page);
    assert.deepEqual(await chipsPressed(page), ['Failed', 'Deferred'], 'Back over a range change keeps the filters');

    await page.goBack();
    await page.waitForURL((u) => u.searchParams.get('status') === 'Failed');
    assert.deepEqual(query(page), [['status', 'Failed'], ['range', '24h']]);
    await until(() => shown(page), ['evt-failed-1'], 'Back: Failed only', page);
    assert.deepEqual(await rangePressed(page), ['24h'], 'Back over a filter change keeps the range');

    await page.goBack();
    await page.waitForURL((u) => u.searchParams.get('range') === null);
    assert.deepEqual(query(page), [['status', 'Failed']]);
    await until(() => rangePressed(page), ['1h'], 'Back: the default range', page);
    assert.deepEqual(await chipsPressed(page), ['Failed']);

    await page.goBack();
    await page.waitForURL((u) => u.pathname === '/');
    await page.close();
  });

  test('a custom range has its own ends (rangeFrom, rangeTo) beside the events\' from/to; a bad one opens 1 h', async () => {
    const page = await browser.newPage();
    const updatedFrom = '2026-01-01T00:00:00Z';
    await gotoHydrated(page, `${consoleApp.url}/endpoints/${EP}?from=${encodeURIComponent(updatedFrom)}`);
    await picker(page).getByRole('button', { name: 'custom', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('range') === 'custom');
    const local = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    const from = local(Date.now() - 3 * 3_600_000);
    const to = local(Date.now() - 3_600_000);
    await picker(page).getByLabel('From', { exact: true }).fill(from);
    await picker(page).getByLabel('To', { exact: true }).fill(to);
    await picker(page).getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL((u) => Date.parse(u.searchParams.get('rangeFrom') ?? '') === Date.parse(from));
    const sp = new URL(page.url()).searchParams;
    assert.equal(Date.parse(sp.get('rangeTo') ?? ''), Date.parse(to));
    assert.equal(sp.get('from'), updatedFrom, 'the events\' filter is left alone');
    assert.notEqual(await page.getByLabel('Updated from').inputValue(), '', 'the Updated from box still has the filter');

    await reloadPage(page);
    await hydrated(page);
    await until(() => rangePressed(page), ['custom'], 'custom after a reload', page);
    await until(() => picker(page).getByLabel('From', { exact: true }).inputValue(), from, 'the From box after a reload', page);
    assert.equal(await picker(page).getByLabel('To', { exact: true }).inputValue(), to);

    // Hand-edited links: an unknown range, or a custom one without a usable end, open the default; the events'
    // from/to are not the chart's.
    for (const qs of ['range=2w', `range=custom&from=${encodeURIComponent('2026-12-03T10:00:00Z')}&to=${encodeURIComponent('2026-12-03T12:00:00Z')}`, 'range=custom&rangeFrom=yesterday&rangeTo=2026-12-03T12:00:00Z']) {
      await gotoHydrated(page, `${consoleApp.url}/endpoints/${EP}?${qs}`);
      await until(() => rangePressed(page), ['1h'], `${qs} falls back to 1 h`, page);
    }
    await page.close();
  });

  test('a failure bar opens that bucket\'s failed events on the same page and keeps the range', async () => {
    const page = await browser.newPage();
    // A custom range of ten minutes around the failure: one-minute bars, wide enough to hover.
    const ends = { rangeFrom: new Date(failedAt - 5 * 60_000).toISOString(), rangeTo: new Date(failedAt + 5 * 60_000).toISOString() };
    await gotoHydrated(page, `${consoleApp.url}/endpoints/${EP}?${new URLSearchParams({ range: 'custom', ...ends })}`);
    await until(() => rangePressed(page), ['custom'], 'the custom range from the link', page);
    const chart = page.getByTestId('endpoint-outcomes-chart');
    await until(async () => Number(await chart.getAttribute('data-nonzero')) > 0, true, 'the stored failure charted', page);
    await clickFailureBar(page, chart);
    await page.waitForURL((u) => u.searchParams.get('status') === 'Failed,DeadLettered,Unsupported');
    const sp = new URL(page.url()).searchParams;
    assert.deepEqual([sp.get('range'), sp.get('rangeFrom'), sp.get('rangeTo')], ['custom', ends.rangeFrom, ends.rangeTo], 'the range stays');
    const from = Date.parse(sp.get('from') ?? '');
    assert.equal(Date.parse(sp.get('to') ?? '') - from, 60_000, 'the one-minute bucket');
    assert.ok(from <= failedAt && failedAt < from + 60_000, 'the bucket of the failure');
    await until(() => rangePressed(page), ['custom'], 'the range after the click', page);
    await page.close();
  });

  test('the events\' session links keep the range', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, `${consoleApp.url}/endpoints/${EP}?status=Failed&range=7d`);
    await until(() => shown(page), ['evt-failed-1'], 'the Failed filter', page);
    await page.locator('[data-testid=events-table] tbody').getByRole('link', { name: 'ORD-200', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('sessionId') === 'ORD-200');
    assert.deepEqual(query(page), [['sessionId', 'ORD-200'], ['range', '7d']]);
    await until(() => rangePressed(page), ['7d'], 'the range on the session\'s events', page);
    await page.close();
  });

  test('the Endpoint page with a range in the URL renders on the server and hydrates without errors', async () => {
    const errors = await errorsLoading(browser, consoleApp.url, [
      `/endpoints/${EP}?range=30d&status=Failed`,
      `/endpoints/${EP}?range=custom&rangeFrom=2026-12-03T10:00:00Z&rangeTo=2026-12-03T12:00:00Z`,
      `/endpoints/${EP}?range=bogus`,
    ]);
    assert.deepEqual(errors, []);
  });
});

describe('links from Monitor open the Endpoint page on Monitor\'s range', () => {
  /** An endpoint's card in Monitor's Failing band. */
  const card = (page: Page) => page.locator('[data-band="Failing"] a', { hasText: EP });

  test('an endpoint\'s card, with a preset and with a custom range', async () => {
    const page = await browser.newPage();
    await gotoHydrated(page, `${consoleApp.url}/monitor?range=24h`);
    await card(page).click();
    await page.waitForURL((u) => u.pathname === `/endpoints/${EP}`);
    assert.deepEqual(query(page), [['range', '24h']]);
    await until(() => rangePressed(page), ['24h'], 'the 24 h range on the Endpoint page', page);

    const ends = { from: '2026-12-03T10:00:00Z', to: '2026-12-03T12:00:00Z' };
    await gotoHydrated(page, `${consoleApp.url}/monitor?${new URLSearchParams({ range: 'custom', ...ends })}`);
    await card(page).click();
    await page.waitForURL((u) => u.pathname === `/endpoints/${EP}`);
    const sp = new URL(page.url()).searchParams;
    assert.deepEqual([sp.get('range'), Date.parse(sp.get('rangeFrom') ?? ''), Date.parse(sp.get('rangeTo') ?? '')], ['custom', Date.parse(ends.from), Date.parse(ends.to)]);
    await until(() => rangePressed(page), ['custom'], 'the custom range on the Endpoint page', page);
    await page.close();
  });

  test('a failure bar opens that bucket\'s failed events with the range kept', async () => {
    const page = await browser.newPage();
    // Ten minutes around the stored failure: one-minute bars, wide enough to hover. Whole seconds, as the console
    // writes a range's ends (components/isoTime.ts).
    const second = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString();
    const ends = { from: second(failedAt - 5 * 60_000), to: second(failedAt + 5 * 60_000) };
    await gotoHydrated(page, `${consoleApp.url}/monitor?${new URLSearchParams({ range: 'custom', ...ends })}`);
    // The platform chart's click opens the endpoint that failed most in the bucket, read from the small charts.
    const mini = page.locator(`[data-endpoint-chart="${EP}"] [role=img]`);
    await until(async () => Number(await mini.getAttribute('data-nonzero')) > 0, true, 'the endpoint\'s failure charted', page);
    const chart = page.getByTestId('platform-chart');
    await until(async () => Number(await chart.getAttribute('data-nonzero')) > 0, true, 'the platform\'s failure charted', page);
    await clickFailureBar(page, chart);
    await page.waitForURL((u) => u.pathname === `/endpoints/${EP}`);
    const sp = new URL(page.url()).searchParams;
    assert.equal(sp.get('status'), 'Failed,DeadLettered,Unsupported');
    assert.deepEqual([sp.get('range'), Date.parse(sp.get('rangeFrom') ?? ''), Date.parse(sp.get('rangeTo') ?? '')], ['custom', Date.parse(ends.from), Date.parse(ends.to)], 'Monitor\'s range');
    await until(() => rangePressed(page), ['custom'], 'the custom range on the Endpoint page', page);
    await page.close();
  });
});
