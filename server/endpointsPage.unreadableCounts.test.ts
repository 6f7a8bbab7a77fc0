// The Endpoints page in Chromium (the built console on the embedded stack, server/testing/seededConsole.ts): an
// endpoint whose counter document no longer parses says "counts unreadable" under its name, in text, so its zeros
// are not read as a quiet endpoint; the other endpoints carry no such note.
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
});
after(() => ui?.close());

test('an endpoint with an unreadable counter document is marked "counts unreadable" on the Endpoints page', async () => {
  const { store } = ui!.stack;
  // Planted past the store, which never writes such a document: counts that are not numbers.
  await store.database.container(CONTAINERS.counters).items.upsert({ id: COUNTER_DOC_ID, endpointId: 'crmendpoint', counts: 'garbled' });

  const page = await ui!.open('/');
  const crm = page.locator('tr[data-endpoint="crmendpoint"] [data-counters-unreadable]');
  await crm.waitFor();
  assert.equal((await crm.textContent())?.trim(), 'counts unreadable: shown as 0');
  await page.locator('tr[data-endpoint="billingendpoint"] td').first().waitFor();
  assert.equal(await page.locator('[data-counters-unreadable]').count(), 1, 'only the unreadable endpoint is marked');
  await page.close();
  assert.deepEqual(ui!.pageErrors, []);
});
