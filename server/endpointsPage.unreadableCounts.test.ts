// The Endpoints, Monitor and Endpoint pages in Chromium (the built console on the embedded stack,
// server/testing/seededConsole.ts): an endpoint whose counter document no longer parses says "counts unreadable" in
// text wherever its counts are shown, so its zeros are not read as a quiet endpoint (Monitor bands it Watching, not
// Healthy); the other endpoints carry no such note.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTAINERS, COUNTER_DOC_ID } from '../lib/store/index.ts';
import { CONSOLE_DIR } from './console.ts';
import { startSeededConsole, type SeededConsole } from './testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({ dir: DIR, demoData: false });
  // Planted past the store, which never writes such a document: counts that are not numbers.
  await ui.stack.store.database.container(CONTAINERS.counters).items.upsert({ id: COUNTER_DOC_ID, endpointId: 'crmendpoint', counts: 'garbled' });
});
after(() => ui?.close());

test('an endpoint with an unreadable counter document is marked "counts unreadable" on the Endpoints page', async () => {
  const page = await ui!.open('/');
  const crm = page.locator('tr[data-endpoint="crmendpoint"] [data-counters-unreadable]');
  await crm.waitFor();
  assert.equal((await crm.textContent())?.trim(), 'counts unreadable: shown as 0');
  await page.locator('tr[data-endpoint="billingendpoint"] td').first().waitFor();
  assert.equal(await page.locator('[data-counters-unreadable]').count(), 1, 'only the unreadable endpoint is marked');
  await page.close();
  assert.deepEqual(ui!.pageErrors, []);
});

test('Monitor puts that endpoint in Watching, not Healthy, with the same note', async () => {
  const page = await ui!.open('/monitor');
  const card = page.locator('a[href^="/endpoints/crmendpoint"]');
  await card.waitFor();
  assert.equal(await page.locator('[data-band]').filter({ has: card }).getAttribute('data-band'), 'Watching');
  assert.equal((await card.locator('[data-counters-unreadable]').textContent())?.trim(), 'counts unreadable: shown as 0');
  assert.equal(await page.locator('[data-counters-unreadable]').count(), 1, 'only the unreadable endpoint is marked');
  await page.close();
  assert.deepEqual(ui!.pageErrors, []);
});

test("the Endpoint page's header says its counts are unreadable; another endpoint's does not", async () => {
  const page = await ui!.open('/endpoints/crmendpoint');
  const note = page.locator('h1 ~ [data-counters-unreadable]');
  await note.waitFor();
  assert.equal((await note.textContent())?.trim(), 'counts unreadable: shown as 0');
  await page.close();

  const other = await ui!.open('/endpoints/billingendpoint');
  await other.locator('[aria-label="Status filter"] button').first().waitFor();
  assert.equal(await other.locator('[data-counters-unreadable]').count(), 0);
  await other.close();
  assert.deepEqual(ui!.pageErrors, []);
});
