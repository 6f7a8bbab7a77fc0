// The Endpoints, Monitor and Endpoint pages in Chromium (the built console on the embedded stack,
// server/testing/seededConsole.ts): an endpoint whose counter document no longer parses says "counts unreadable" in
// text wherever its counts are shown, so its zeros are not read as a quiet endpoint (Monitor bands it Watching, not
// Healthy); the other endpoints carry no such note. The Endpoint page says which rows of its list could not be read
// (stored documents the schema rejects), which the list cannot show, so the list does not look whole without them.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID } from '../lib/store/index.ts';
import { msg } from '../lib/store/testing/fixtures.ts';
import { plantUnreadableRows } from '../lib/store/testing/unreadableRows.ts';
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

test("the Endpoint page names the rows of its list that could not be read; a list without any says nothing", async () => {
  const { store } = ui!.stack;
  /** A failed event the list can read, on `endpointId`. */
  const failed = async (endpointId: string, eventId: string) => {
    const request = msg(T.EventRequest, { endpointId, eventId, sessionId: `s-${eventId}`, payload: {} });
    await store.writeStatus(request);
    await store.writeStatus(msg(T.ErrorResponse, { endpointId, eventId, sessionId: `s-${eventId}`, parentMessageId: request.messageId, errorType: 'LedgerError', errorText: 'ledger closed' }));
  };
  await failed('erpendpoint', 'erp-readable');
  await plantUnreadableRows(store.database, { endpointId: 'erpendpoint', eventId: 'erp-readable' }, ['erp-unreadable-1', 'erp-unreadable-2']);
  await failed('storefrontendpoint', 'storefront-readable');

  const page = await ui!.open('/endpoints/erpendpoint');
  const note = page.locator('[data-unreadable-rows]');
  await note.waitFor();
  const text = (await note.textContent())?.trim() ?? '';
  const [, ids] = /^2 rows could not be read and are not shown: (.*)$/.exec(text) ?? [];
  assert.deepEqual(ids?.split(', ').sort(), ['erp-unreadable-1', 'erp-unreadable-2'], text);
  assert.equal(await page.locator('[data-testid="events-table"]').getByRole('link', { name: 'erp-readable', exact: true }).count(), 1, 'the row that parses is listed');
  await page.close();

  const other = await ui!.open('/endpoints/storefrontendpoint');
  // The row and any note come in the same answer: once the row is shown, a note would be too.
  await other.locator('[data-testid="events-table"]').getByRole('link', { name: 'storefront-readable', exact: true }).waitFor();
  assert.equal(await other.locator('[data-unreadable-rows]').count(), 0);
  await other.close();
  assert.deepEqual(ui!.pageErrors, []);
});
