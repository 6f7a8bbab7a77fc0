// History in Chromium (issue 16): real Resolver traffic (the embedded emulator, the embedded Cosmos server with a
// data folder) fills the stored time series; the Monitor chart renders real points, hovering shows their values,
// and clicking the failure bar opens the endpoint's failed events of that minute; the Endpoint page charts
// outcomes and latency. Then everything restarts (console and Cosmos, from the data folder): GET /api/metrics and
// the Monitor chart still show the same series, because they live in the store, not in the browser.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { BrowserContext, Page } from 'playwright-core';
import { pino } from 'pino';
import { launchTestChromium, type TestBrowser } from '../server/testing/chromium.ts';
import { encodeBody, eventBody, MessageType as T, Prop, SELF, Topic } from '@nimbus/sdk/contract';
import { loadCatalog } from '@nimbus/sdk/catalog';
import { createServiceBusClients, type ServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { startEmulator, type RunningEmulator } from '../emulator/index.ts';
import { startResolver, type ResolverHandle, type SettledEvent } from '../resolver-worker/index.ts';
import { ensureConsoleBuilt } from '../server/build.ts';
import { CONSOLE_DIR, startConsole, type RunningConsole } from '../server/console.ts';
import { DEFAULT_CATALOG_PATH } from '../server/config.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const EP = 'billingendpoint';

let emulator: RunningEmulator;
let sb: ServiceBusClients;
let dataDir: string;
let cosmos: EmbeddedCosmos;
let store: MessageStore;
let resolver: ResolverHandle;
let consoleApp: RunningConsole;
let chromium: TestBrowser | undefined;
let browser: BrowserContext;
const settled: SettledEvent[] = [];

const envOf = () => ({
  NIMBUS_SERVICEBUS_CONNECTION_STRING: emulator.connectionString,
  NIMBUS_COSMOS_ENDPOINT: cosmos.endpoint,
  NIMBUS_COSMOS_KEY: cosmos.key,
  NIMBUS_COSMOS_DATABASE: 'nimbus',
  NIMBUS_CATALOG: DEFAULT_CATALOG_PATH,
  NIMBUS_AUTH: 'off',
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

async function metrics(): Promise<Record<string, number>> {
  const res = await fetch(`${consoleApp.url}/api/metrics?endpointId=${EP}&from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as { series: Array<{ name: string; points: Array<[number, number | null]> }> };
  return Object.fromEntries(body.series.map((s) => [s.name, s.points.reduce((a, [, v]) => a + (v ?? 0), 0)]));
}

async function chartPoints(page: Page, testId: string): Promise<number> {
  const chart = page.getByTestId(testId);
  await chart.locator('canvas').first().waitFor();
  return eventually(async () => {
    const n = Number(await chart.getAttribute('data-nonzero'));
    return n > 0 ? n : undefined;
  }, `real points in ${testId}`);
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

  test('after a restart of the console and the store the series are still there', async () => {
    const before = await metrics();
    await consoleApp.close();
    await cosmos.close();
    await startCosmosAndConsole();
    const afterRestart = await metrics();
    assert.deepEqual(
      { handled: afterRestart.handled, failed: afterRestart.failed, p50: afterRestart.latencyP50 },
      { handled: before.handled, failed: before.failed, p50: before.latencyP50 },
    );
    const page = await browser.newPage();
    await page.goto(`${consoleApp.url}/monitor`);
    assert.ok((await chartPoints(page, 'platform-chart')) >= 1, 'a fresh browser after the restart sees the points');
    await page.close();
  });
});
