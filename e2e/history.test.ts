// History in Chromium (issue 16): real Resolver traffic (the embedded emulator, the embedded Cosmos server with a
// data folder) fills the stored time series; the Monitor chart renders real points, hovering shows their values,
// and clicking the failure bar opens the endpoint's failed events of that minute; the Endpoint page charts
// outcomes and latency; Admin → Alerts makes a channel and a rule that fire, and flags a channel stored with a
// plain-http URL. Then everything restarts (console and Cosmos, from the data folder): GET /api/metrics and
// the Monitor chart still show the same series, because they live in the store, not in the browser.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import type { BrowserContext, Page } from 'playwright-core';
import { pino } from 'pino';
import { launchTestChromium, type TestBrowser } from '../server/testing/chromium.ts';
import { encodeBody, eventBody, MessageType as T, Prop, SELF, Topic } from '@nimbus/sdk/contract';
import { loadCatalog } from '@nimbus/sdk/catalog';
import { createServiceBusClients, type ServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, startEmbeddedCosmos, TimeSeriesStore, type EmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { startEmulator, type RunningEmulator } from '../emulator/index.ts';
import { startResolver, type ResolverHandle, type SettledEvent } from '../resolver-worker/index.ts';
import { ensureConsoleBuilt } from '../server/build.ts';
import { CONSOLE_DIR, startConsole, type RunningConsole } from '../server/console.ts';
import { DEFAULT_CATALOG_PATH } from '../server/config.ts';
import { collectBacklog } from '../server/history/backlog.ts';
import { DemoEndpoint, startDemo } from '../demo/index.ts';
import { startWebhookReceiver } from '../server/alerts/testing.ts';
import { AlertStore } from '../server/alerts/alertStore.ts';
import { gotoHydrated } from '../server/testing/pageWait.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const EP = 'billingendpoint';
const OUTCOME_AND_LATENCY = ['handled', 'failed', 'deadLettered', 'unsupported', 'skipped', 'resubmitted', 'latencyP50', 'latencyP95', 'latencyP99'];

let emulator: RunningEmulator;
let sb: ServiceBusClients;
let dataDir: string;
let cosmos: EmbeddedCosmos;
let store: MessageStore;
let resolver: ResolverHandle;
let consoleApp: RunningConsole;
let chromium: TestBrowser | undefined;
const ALERTS_KEY = randomBytes(32).toString('base64');
let browser: BrowserContext;
const settled: SettledEvent[] = [];

const envOf = () => ({
  NIMBUS_SERVICEBUS_CONNECTION_STRING: emulator.connectionString,
  NIMBUS_COSMOS_ENDPOINT: cosmos.endpoint,
  NIMBUS_COSMOS_KEY: cosmos.key,
  NIMBUS_COSMOS_DATABASE: 'nimbus',
  NIMBUS_CATALOG: DEFAULT_CATALOG_PATH,
  NIMBUS_AUTH: 'off',
  // The console's own alert evaluator (server/history/background.ts), ticking fast for the test.
  NIMBUS_ALERTS_KEY: ALERTS_KEY,
  NIMBUS_ALERTS_TICK_MS: '1000',
});

async function eventually<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** One event through the Resolver as the platform sends it: the request copy, then the endpoint's response. */
async function event(failed: boolean): Promise<void> {
  const sender = sb.client.createSender(Topic.Resolver);
  try {
    const eventId = `hist-${randomUUID().slice(0, 8)}`;
    const sessionId = `s-${randomUUID().slice(0, 8)}`;
    const req = randomUUID();
    const common = { [Prop.EventId]: eventId, [Prop.EventTypeId]: 'OrderPlaced' };
    await sender.sendMessages({
      body: Buffer.from(eventBody('OrderPlaced', { orderId: eventId })),
      messageId: req,
      sessionId,
      applicationProperties: { ...common, [Prop.MessageType]: T.EventRequest, [Prop.To]: EP, [Prop.From]: 'storefrontendpoint', [Prop.ParentMessageId]: SELF },
    });
    const res = randomUUID();
    await sender.sendMessages({
      body: Buffer.from(
        failed ? encodeBody({ EventContent: null, ErrorContent: { ErrorText: 'card declined', ErrorType: 'PaymentError' } }) : encodeBody({}),
      ),
      messageId: res,
      sessionId,
      applicationProperties: {
        ...common,
        [Prop.MessageType]: failed ? T.ErrorResponse : T.ResolutionResponse,
        [Prop.To]: 'Resolver',
        [Prop.From]: EP,
        [Prop.ParentMessageId]: req,
        [Prop.QueueTimeMs]: 120,
        [Prop.ProcessingTimeMs]: 80,
      },
    });
    await eventually(() => (settled.some((s) => s.messageId === res && s.ok) ? true : undefined), `settlement of ${res}`);
  } finally {
    await sender.close();
  }
}

async function startCosmosAndConsole(): Promise<void> {
  cosmos = await startEmbeddedCosmos({ port: 0, dataDir });
  consoleApp = await startConsole({ port: 0, hostname: '127.0.0.1', env: envOf() });
}

before(async () => {
  await ensureConsoleBuilt(CONSOLE_DIR);
  dataDir = mkdtempSync(join(tmpdir(), 'nimbus-history-'));
  emulator = await startEmulator({ port: 0 });
  sb = createServiceBusClients(emulator.connectionString);
  await provisionTopology(sb.admin, deriveTopology(await loadCatalog(DEFAULT_CATALOG_PATH)));
  cosmos = await startEmbeddedCosmos({ port: 0, dataDir });
  store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'nimbus' });
  resolver = startResolver({ client: sb.client, store, concurrency: 4, log: pino({ level: 'silent' }), history: { flushMs: 100 }, onSettled: (e) => settled.push(e) });
  for (let i = 0; i < 6; i++) await event(false);
  for (let i = 0; i < 3; i++) await event(true);
  // The stop flushes the last buckets; the console reads only what is stored.
  await resolver.stop();
  await store.close();
  consoleApp = await startConsole({ port: 0, hostname: '127.0.0.1', env: envOf() });
  chromium = await launchTestChromium();
  browser = chromium.context;
});

after(async () => {
  await chromium?.close();
  await consoleApp?.close();
  await cosmos?.close();
  await sb?.close();
  await emulator?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function metrics(endpointId = EP): Promise<Record<string, number>> {
  const res = await fetch(`${consoleApp.url}/api/metrics?endpointId=${endpointId}&from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as { series: Array<{ name: string; points: Array<[number, number | null]> }> };
  return Object.fromEntries(body.series.map((s) => [s.name, s.points.reduce((a, [, v]) => a + (v ?? 0), 0)]));
}

async function chartPoints(page: Page, testId: string, attribute: 'data-nonzero' | 'data-points' = 'data-nonzero'): Promise<number> {
  return locatorPoints(page.getByTestId(testId), testId, attribute);
}

/** Waits until the chart at `chart` has drawn (a canvas) and counts points (non-null, or non-zero) > 0. */
async function locatorPoints(chart: ReturnType<Page['locator']>, what: string, attribute: 'data-nonzero' | 'data-points' = 'data-nonzero'): Promise<number> {
  await chart.locator('canvas').first().waitFor();
  return eventually(async () => {
    const n = Number(await chart.getAttribute(attribute));
    return n > 0 ? n : undefined;
  }, `real points in ${what}`);
}

describe('history charts', () => {
  test('the Monitor chart renders stored points, hover shows values, a click on the failure bar opens that minute', async () => {
    const totals = await metrics();
    assert.equal(totals.handled, 6);
    assert.equal(totals.failed, 3);
    assert.ok(totals.latencyP50! > 0);

    const page = await browser.newPage();
    await page.goto(`${consoleApp.url}/monitor`);
    assert.ok((await chartPoints(page, 'platform-chart')) >= 1);
    // Hover from the right edge (the current minute) leftwards until the legend shows the failures.
    const chart = page.getByTestId('platform-chart');
    const over = chart.locator('.u-over');
    const box = (await over.boundingBox())!;
    let hovered = '';
    let x = box.width - 2;
    for (; x > 0; x -= 3) {
      await page.mouse.move(box.x + x, box.y + box.height / 2);
      hovered = ((await chart.locator('.u-legend .u-series').nth(2).locator('.u-value').textContent()) ?? '').trim();
      if (/^[1-9]/.test(hovered)) break;
    }
    const shown = Number(hovered);
    assert.ok(shown >= 1 && shown <= 3, `the legend shows the failures of that minute (${hovered})`);
    await page.mouse.click(box.x + x, box.y + box.height / 2);
    await page.waitForURL(new RegExp(`/endpoints/${EP}\\?status=Failed%2CDeadLettered%2CUnsupported&from=`));
    const url = new URL(page.url());
    const from = Date.parse(url.searchParams.get('from')!);
    assert.equal(from % 60_000, 0, 'a minute boundary');
    // The event list of that minute shows the failed events.
    await page.getByRole('link', { name: /^hist-/ }).first().waitFor();
    assert.equal(await page.getByRole('link', { name: /^hist-/ }).count(), shown, 'the failed events of that minute, as many as the chart showed');
    await page.close();
  });

  test('the Endpoint page charts outcomes and latency percentiles', async () => {
    const page = await browser.newPage();
    await page.goto(`${consoleApp.url}/endpoints/${EP}`);
    await chartPoints(page, 'endpoint-outcomes-chart');
    await chartPoints(page, 'endpoint-latency-chart');
    await page.close();
  });

  test('Monitor: a small chart per endpoint; 24 h, 7 d, 30 d and a custom range re-query with their buckets', async () => {
    const page = await browser.newPage();
    await page.goto(`${consoleApp.url}/monitor`);
    const history = page.getByTestId('monitor-history');
    assert.ok((await locatorPoints(page.locator(`[data-endpoint-chart="${EP}"] [data-nonzero]`), `the ${EP} small chart`)) >= 1);
    const handledOf = async () => {
      // The bucket note says which bucket the API chose; the chart keeps the stored points at every size.
      await chartPoints(page, 'platform-chart');
      return history.locator('p').first().textContent();
    };
    for (const [key, note] of [
      ['24h', 'per 5 min'],
      ['7d', 'per 1 h'],
      ['30d', 'per 6 h'],
    ] as const) {
      await history.getByRole('button', { name: key, exact: true }).click();
      await eventually(async () => ((await handledOf())?.startsWith(note) ? true : undefined), `the ${key} range in buckets ${note}`);
    }
    // Custom: the picker offers the last hour; applying it re-queries per minute.
    await history.getByRole('button', { name: 'custom', exact: true }).click();
    await history.getByLabel('From', { exact: true }).fill(new Date(Date.now() - 2 * 3_600_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16));
    await history.getByLabel('To', { exact: true }).fill(new Date(Date.now() + 60_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16));
    await history.getByRole('button', { name: 'Apply' }).click();
    await eventually(async () => ((await handledOf())?.startsWith('per 1 min') ? true : undefined), 'the custom range per minute');
    await page.close();
  });

  test('Admin → Alerts: a channel and a rule made on the page; the console fires to the receiver; Alerts lists it', async () => {
    const hook = await startWebhookReceiver();
    const page = await browser.newPage();
    try {
      // Hydrated first: the next step is a click, which a page not yet hydrated can lose on a loaded machine.
      await gotoHydrated(page, `${consoleApp.url}/admin/alerts`);
      await page.getByRole('button', { name: 'New channel' }).click();
      const cf = page.getByTestId('channel-form');
      await cf.getByLabel('Name', { exact: true }).fill('e2e pager');
      await cf.getByLabel('Webhook URL (secret)').fill(`${hook.url}/e2e-secret-path`);
      await cf.getByRole('button', { name: 'Add channel' }).click();
      const channelRow = page.getByTestId('alert-channels').locator('tr', { hasText: 'e2e pager' });
      await channelRow.waitFor();
      assert.ok(!(await page.content()).includes('e2e-secret-path'), 'the page never shows the secret URL');
      await channelRow.getByRole('button', { name: 'send test' }).click();
      await eventually(() => (hook.received.some((r) => r.path === '/e2e-secret-path' && (r.body as { notice?: string }).notice === 'test') ? true : undefined), 'the test notice');

      await page.getByRole('button', { name: 'New rule' }).click();
      const rf = page.getByTestId('rule-form');
      await rf.getByLabel('Name', { exact: true }).fill('e2e billing failing');
      await rf.getByLabel(/^Endpoint/).fill(EP);
      await rf.getByLabel('Failures per minute above').fill('1');
      await rf.getByLabel(/e2e pager/).check();
      await rf.getByRole('button', { name: 'Add rule' }).click();
      await page.getByTestId('alert-rules').locator('tr', { hasText: 'e2e billing failing' }).waitFor();

      // Failures now, recorded by a Resolver; the console's evaluator (every second here) fires once.
      const failStore = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'nimbus' });
      const failResolver = startResolver({ client: sb.client, store: failStore, concurrency: 4, log: pino({ level: 'silent' }), history: { flushMs: 100 }, onSettled: (e) => settled.push(e) });
      try {
        for (let i = 0; i < 3; i++) await event(true);
      } finally {
        await failResolver.stop();
        await failStore.close();
      }
      const fired = await eventually(
        () => hook.received.find((r) => r.path === '/e2e-secret-path' && (r.body as { notice?: string }).notice === 'fired')?.body as { link: string; rule: { name: string } } | undefined,
        'the fired notice',
        60_000,
      );
      assert.equal(fired.rule.name, 'e2e billing failing');
      assert.ok(fired.link.includes(`/endpoints/${EP}?status=Failed`), fired.link);

      // Hydrated before the link's click below: the row is in the server's HTML, so seeing it says nothing of React.
      await gotoHydrated(page, `${consoleApp.url}/alerts`);
      const alertRow = page.getByTestId('alert-history').locator('tr', { hasText: 'e2e billing failing' });
      await alertRow.waitFor();
      assert.match((await alertRow.textContent()) ?? '', /firing/);
      assert.match((await alertRow.textContent()) ?? '', /fired: delivered/);
      await alertRow.getByRole('link').click();
      await page.waitForURL(new RegExp(`/endpoints/${EP}\\?status=Failed`));
    } finally {
      await page.close();
      await hook.close();
    }
  });

  test('Admin → Alerts: a channel stored with a plain-http URL to another host is flagged until its URL is https', async () => {
    // Stored before https was required: straight into the store, as the route would refuse it now.
    const seedStore = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'nimbus' });
    const page = await browser.newPage();
    try {
      await new AlertStore(seedStore.database, { NIMBUS_ALERTS_KEY: ALERTS_KEY }).saveChannel({ type: 'webhook', name: 'e2e plain http', url: 'http://hooks.example.test/e2e-plain-path' }, 'test');
      // Hydrated before the edit click below, as above.
      await gotoHydrated(page, `${consoleApp.url}/admin/alerts`);
      const row = page.getByTestId('alert-channels').locator('tr', { hasText: 'e2e plain http' });
      const warning = row.getByTestId('channel-insecure-url');
      await warning.waitFor();
      assert.match((await warning.textContent()) ?? '', /neither https nor plain http to this machine: this channel will not send until its URL is entered again as https/);
      assert.equal(await page.getByTestId('channel-insecure-url').count(), 1, 'no other channel is flagged');
      assert.ok(!(await page.content()).includes('e2e-plain-path'), 'the flag, never the URL');

      // Entered again as https on the page: the warning goes.
      await row.getByRole('button', { name: 'edit' }).click();
      const cf = page.getByTestId('channel-form');
      await cf.getByLabel('Webhook URL (secret)').fill('https://hooks.example.test/e2e-plain-path');
      await cf.getByRole('button', { name: 'Save channel' }).click();
      await cf.waitFor({ state: 'detached' });
      await warning.waitFor({ state: 'detached' });
      assert.equal(await row.count(), 1, 'the channel is still listed');
    } finally {
      await page.close();
      await seedStore.close();
    }
  });

  test('after a restart of the console and the store the series are still there, demo traffic included', async () => {
    // The demo's endpoints and storefront on the same broker, recorded by a Resolver into the same store; then a
    // backlog sample, as the console's collector takes one each minute.
    const demoStore = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'nimbus' });
    const demoResolver = startResolver({ client: sb.client, store: demoStore, concurrency: 4, log: pino({ level: 'silent' }), history: { flushMs: 100 } });
    const demo = await startDemo({
      client: sb.client,
      catalog: await loadCatalog(DEFAULT_CATALOG_PATH),
      ratePerSecond: 4,
      eventLimit: 16,
      operatorCases: 0,
      timings: { retryDelayMs: 500, handoffMinMs: 300, handoffMaxMs: 800, sessionIdleTimeoutMs: 500 },
    });
    const demoEndpoints = [DemoEndpoint.billing, DemoEndpoint.shipping, DemoEndpoint.crm, DemoEndpoint.erp];
    try {
      await eventually(
        async () => {
          const handled = await Promise.all(demoEndpoints.filter((e) => e !== EP).map(async (e) => (await metrics(e)).handled ?? 0));
          return demo.published >= 16 && handled.filter((n) => n > 0).length >= 2 ? true : undefined;
        },
        'demo outcomes stored for two endpoints',
        120_000,
      );
    } finally {
      await demo.stop();
      await demoResolver.stop(); // flushes the last buckets
    }
    await collectBacklog(sb.admin, new TimeSeriesStore(demoStore.database), new Date());
    await demoStore.close();

    // The Resolver's series (the backlog samples go on: the console's own collector keeps sampling).
    const recorded = async () =>
      Object.fromEntries(
        await Promise.all(
          demoEndpoints.map(async (e) => {
            const m = await metrics(e);
            return [e, Object.fromEntries(OUTCOME_AND_LATENCY.map((k) => [k, m[k]]))] as const;
          }),
        ),
      );
    const before = await recorded();
    await consoleApp.close();
    await cosmos.close();
    await startCosmosAndConsole();
    assert.deepEqual(await recorded(), before, 'every outcome and latency series of every demo endpoint, as before the restart');
    assert.ok(before[EP]!.handled! > 6, 'the demo added to the hand-made events');
    const raw = (await (await fetch(`${consoleApp.url}/api/metrics?endpointId=${EP}&from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}`)).json()) as {
      series: Array<{ name: string; points: Array<[number, number | null]> }>;
    };
    assert.ok(raw.series.find((x) => x.name === 'backlogActive')!.points.some(([, v]) => v !== null), 'a stored backlog sample of the endpoint topic');

    const page = await browser.newPage();
    await page.goto(`${consoleApp.url}/monitor`);
    assert.ok((await chartPoints(page, 'platform-chart')) >= 1, 'a fresh browser after the restart sees the points');
    assert.ok((await locatorPoints(page.locator(`[data-endpoint-chart="${DemoEndpoint.shipping}"] [data-nonzero]`), 'the shipping small chart')) >= 1);
    // The Endpoint page's backlog chart has the sample (a count, possibly 0: data-points counts non-null points).
    await page.goto(`${consoleApp.url}/endpoints/${EP}`);
    await chartPoints(page, 'endpoint-outcomes-chart');
    assert.ok((await chartPoints(page, 'endpoint-backlog-chart', 'data-points')) >= 1, 'the backlog sample is charted');
    // Flow: each edge's rate from the stored series.
    await page.goto(`${consoleApp.url}/flow`);
    assert.ok((await locatorPoints(page.locator(`[data-edge="OrderPlaced>${EP}"] [data-nonzero]`), 'the OrderPlaced → billing edge')) >= 1);
    assert.match((await page.locator(`[data-edge="OrderPlaced>${EP}"]`).textContent()) ?? '', /[1-9][\d.]*\/min over the period|0\.[1-9]\/min over the period/);
    await page.close();
  });
});
