// Admin → Health in Chromium (the built console on the embedded stack, server/testing/seededConsole.ts): an endpoint
// whose probe is overdue while it answers other messages shows its last status with "Busy — probe queued behind N
// pending messages"; one whose probe is overdue and that answers nothing shows no such note (the sweep turns it
// Off); an answer slower than the timeout is marked "answered late". The Endpoints page's heartbeat cell agrees
// ("On · busy"). The records are written the way the
// scheduler and the Resolver write them, just before the page is opened (the page's clock is the real one).
// An endpoint whose overdue probe's evidence cannot be read (the console's store throttled at the wire, a real 429
// through a fault proxy) says "evidence unknown" beside its heartbeat, on Health, on the Endpoints page and on Monitor
// (where it is Watching, not Healthy).
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { CONTAINERS } from '../../lib/store/index.ts';
import { startFaultProxy, type FaultProxy } from '../../lib/store/testing/faultProxy.ts';
import { CONSOLE_DIR } from '../console.ts';
import { seedEvent } from '../testing/seed.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;

let ui: SeededConsole | undefined;
/** Between the console and Cosmos: passes everything until a test throttles a query (the test's own store is direct). */
let proxy: FaultProxy | undefined;

before(async () => {
  const env: Record<string, string> = {};
  ui = await startSeededConsole({
    dir: DIR,
    demoData: false,
    env,
    prepare: async ({ stack, defer }) => {
      const started = await startFaultProxy(stack.cosmos.endpoint);
      proxy = started;
      defer(() => started.close());
      env.NIMBUS_COSMOS_ENDPOINT = started.endpoint;
    },
  });
});
after(() => ui?.close());

const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString();

describe('Admin → Health: busy and late endpoints', () => {
  test('a busy endpoint keeps its last status with a Busy note, on Health and Endpoints; a silent one has none; a slow answer is marked late', async () => {
    const { store } = ui!.stack;
    // Timeout 60 s (the default): both probes below left 70 s ago.
    for (const endpointId of ['billingendpoint', 'shippingendpoint']) {
      await store.recordHeartbeat({ endpointId, probeId: `${endpointId}-answered`, status: 'On', sentAt: ago(400), answeredAt: ago(399), sdkVersion: '1.0.0' });
      await store.recordHeartbeat({ endpointId, probeId: `${endpointId}-queued`, status: 'Pending', sentAt: ago(70), intervalSeconds: 300 });
    }
    // Billing answers orders (recorded now, after its probe left); two more wait for it.
    const order = (n: number) => ({ endpointId: 'billingendpoint', eventId: `evt-busy-${n}`, sessionId: `ORD-BUSY-${n}`, eventTypeId: 'OrderPlaced', payload: { orderId: `ORD-BUSY-${n}` } });
    await seedEvent(store, Date.now(), order(1), MessageType.ResolutionResponse);
    await seedEvent(store, Date.now(), order(2), null);
    await seedEvent(store, Date.now(), order(3), null);
    // CRM answered its probe 80 s after it left.
    await store.recordHeartbeat({ endpointId: 'crmendpoint', probeId: 'crm-late', status: 'On', sentAt: ago(100), answeredAt: ago(20), sdkVersion: '1.0.0' });

    const page = await ui!.open('/admin/health');
    const billing = page.locator('tr[data-endpoint="billingendpoint"]');
    const busy = billing.locator('[data-heartbeat-busy]');
    await busy.waitFor();
    assert.match((await busy.textContent()) ?? '', /^Busy — probe queued behind 2 pending messages; last answered a message /);
    assert.equal(await billing.locator('[data-heartbeat-status]').getAttribute('data-heartbeat-status'), 'On');
    const shipping = page.locator('tr[data-endpoint="shippingendpoint"]');
    await shipping.locator('[data-heartbeat-status]').waitFor();
    assert.equal(await shipping.locator('[data-heartbeat-busy]').count(), 0, 'no evidence of life: no Busy note');
    await page.locator('tr[data-endpoint="crmendpoint"] [data-heartbeat-late]').getByText('answered late').waitFor();
    assert.equal(await billing.locator('[data-heartbeat-late]').count(), 0, 'a prompt answer is not late');
    await page.close();

    // The Endpoints page reads the same: billing's last status with a busy mark (not its newest probe's Pending),
    // shipping no mark.
    const endpoints = await ui!.open('/');
    // The row appears with its data; the heartbeat cell is its last.
    const billingCell = endpoints.locator('tr[data-endpoint="billingendpoint"] td').last();
    await billingCell.waitFor();
    assert.equal((await billingCell.textContent())?.replace(/\s+/g, ' ').trim(), 'On · busy', 'the last settled status, marked busy');
    assert.equal(await billingCell.getAttribute('data-heartbeat-status'), 'On');
    assert.match((await billingCell.locator('[data-heartbeat-busy]').getAttribute('title')) ?? '', /^Probe queued behind 2 pending messages/);
    const shippingCell = endpoints.locator('tr[data-endpoint="shippingendpoint"] td').last();
    await shippingCell.waitFor();
    assert.notEqual((await shippingCell.textContent())?.trim(), 'Pending', 'a settled status, not the newest probe');
    assert.equal(await shippingCell.locator('[data-heartbeat-busy]').count(), 0);
    await endpoints.close();
    assert.deepEqual(ui!.pageErrors, []);
  });
});

describe('Admin → Health: unknown evidence', () => {
  test('an overdue probe whose last answer cannot be read says "evidence unknown" beside its heartbeat, in words, on Health, Endpoints and Monitor', async () => {
    const { store } = ui!.stack;
    const endpointId = 'erpendpoint';
    // Every evidence query for erp is throttled (the real client retries the 429s, then gives up); nothing else is.
    const eventsPath = `/colls/${CONTAINERS.events}/docs`;
    proxy!.inject({ status: 429, retryAfterMs: 1, match: (r) => r.query && r.path.endsWith(eventsPath) && (r.partitionKey ?? '').includes(endpointId) });
    const injectedBefore = proxy!.injected;
    // Answered long ago; the newest probe left 70 s ago (timeout 60 s): overdue, within the 2-timeout bound.
    await store.recordHeartbeat({ endpointId, probeId: `${endpointId}-answered`, status: 'On', sentAt: ago(400), answeredAt: ago(399), sdkVersion: '1.0.0' });
    await store.recordHeartbeat({ endpointId, probeId: `${endpointId}-queued`, status: 'Pending', sentAt: ago(70), intervalSeconds: 300 });

    const page = await ui!.open('/admin/health');
    const row = page.locator(`tr[data-endpoint="${endpointId}"]`);
    // The row is rendered from the first answer of /api/admin/health, the one whose lookup the proxy refused.
    await row.locator('[data-heartbeat-status]').waitFor();
    assert.ok(proxy!.injected > injectedBefore, 'the evidence lookup was refused at the wire');
    assert.equal(await row.locator('[data-heartbeat-status]').getAttribute('data-heartbeat-status'), 'On', 'the last settled status stays');
    const note = row.locator('[data-heartbeat-evidence-unknown]');
    assert.equal(await note.count(), 1, 'the unknown evidence is shown');
    assert.equal((await note.textContent())?.trim(), 'Evidence unknown — busy check failed, retrying');
    assert.equal(await row.locator('[data-heartbeat-busy]').count(), 0, 'unknown is not busy');
    // Rows whose evidence is known have no such note.
    const others = page.locator('tr[data-endpoint]:not([data-endpoint="erpendpoint"]) [data-heartbeat-evidence-unknown]');
    assert.equal(await others.count(), 0);
    await page.close();

    // The Endpoints page and Monitor read the same heartbeat (GET /api/endpoints): their operator sees the same
    // words beside the last status, and Monitor does not call the endpoint Healthy on a status nobody could check.
    const endpoints = await ui!.open('/');
    const cell = endpoints.locator(`tr[data-endpoint="${endpointId}"] td`).last();
    await cell.waitFor();
    const monitor = await ui!.open('/monitor');
    const card = monitor.locator('[data-band] a', { hasText: endpointId });
    await card.waitFor();
    const seen = {
      endpointsStatus: await cell.getAttribute('data-heartbeat-status'),
      endpointsNote: (await cell.locator('[data-heartbeat-evidence-unknown]').allTextContents()).map((t) => t.trim()),
      endpointsOthers: await endpoints.locator(`tr[data-endpoint]:not([data-endpoint="${endpointId}"]) [data-heartbeat-evidence-unknown]`).count(),
      monitorBand: await card.locator('xpath=ancestor::*[@data-band][1]').getAttribute('data-band'),
      monitorNote: (await card.locator('[data-heartbeat-evidence-unknown]').allTextContents()).map((t) => t.trim()),
    };
    assert.deepEqual(seen, {
      endpointsStatus: 'On',
      endpointsNote: ['Evidence unknown — busy check failed, retrying'],
      endpointsOthers: 0,
      monitorBand: 'Watching',
      monitorNote: ['Evidence unknown — busy check failed, retrying'],
    });
    await endpoints.close();
    await monitor.close();
    proxy!.clear();
    assert.deepEqual(ui!.pageErrors, []);
  });
});
