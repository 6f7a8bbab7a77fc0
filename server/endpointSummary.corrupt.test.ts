// An endpoint's summary (GET /api/endpoints/{E}: the Endpoint and Event pages) over a counters document that no
// longer parses, on the embedded Cosmos server: zero counts, as the overview shows that endpoint, not a thrown
// CorruptDocumentError (a 500 for both pages).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Catalog } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID } from '../lib/store/index.ts';
import { startStoreFixture, uniq, type StoreFixture } from '../lib/store/testing/fixtures.ts';
import { endpointSummary, endpointsWithCounts } from './queries.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let f: StoreFixture;
const ep = uniq('corrupt-counts');
const catalog = { endpoints: [{ id: ep, owner: 'team', description: null, produces: [], consumes: [] }] } as unknown as Catalog;

before(async () => {
  f = await startStoreFixture();
  // Planted past the store, which never writes such a document: counts that are not numbers.
  await f.raw.database(f.database).container(CONTAINERS.counters).items.upsert({ id: COUNTER_DOC_ID, endpointId: ep, counts: 'garbled' });
});

after(async () => {
  await f?.close();
});

test('a corrupt counters document: the summary answers zero counts, as the overview does', async () => {
  const overview = (await endpointsWithCounts(f.store, catalog)).find((e) => e.endpointId === ep);
  assert.ok(overview, 'the overview lists the endpoint');
  const summary = await endpointSummary(f.store, catalog, ep);
  assert.deepEqual(summary.counts, overview.counts);
  assert.equal(Object.values(summary.counts).every((n) => n === 0), true, JSON.stringify(summary.counts));
  assert.equal(summary.inCatalog, true);
});
