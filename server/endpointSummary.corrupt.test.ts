// An endpoint whose counters document no longer parses, on the embedded Cosmos server: the summary (GET
// /api/endpoints/{E}: the Endpoint and Event pages), the overview (GET /api/endpoints: the Endpoints page) and the
// counts-only list (MCP discover_topology) all answer zero counts marked `countersUnreadable`, not a thrown
// CorruptDocumentError (a 500) nor zeros that look like a quiet endpoint; the overview logs the endpoint and the
// issue paths once per version of the document, never its values.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Catalog } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID } from '../lib/store/index.ts';
import { startStoreFixture, uniq, type StoreFixture } from '../lib/store/testing/fixtures.ts';
import { log, setConsoleLogSink } from './log.ts';
import { endpointSummary, endpointsOverview, endpointsWithCounts } from './queries.ts';

let f: StoreFixture;
const ep = uniq('corrupt-counts');
const healthy = uniq('healthy-counts');
const catalog = {
  endpoints: [ep, healthy].map((id) => ({ id, owner: 'team', description: null, produces: [], consumes: [] })),
} as unknown as Catalog;
const counters = () => f.raw.database(f.database).container(CONTAINERS.counters);
// Planted past the store, which never writes such a document: counts that are not numbers.
const plantCorrupt = (value: string) => counters().items.upsert({ id: COUNTER_DOC_ID, endpointId: ep, counts: value });

before(async () => {
  f = await startStoreFixture();
  await plantCorrupt('garbled');
  await f.store.recountEndpoint(healthy);
});

after(async () => {
  setConsoleLogSink(undefined);
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

test('the overview, the counts-only list and the summary say the counts are unreadable; a readable endpoint has no mark', async () => {
  const overview = await endpointsOverview(f.store, catalog);
  const broken = overview.find((e) => e.endpointId === ep);
  assert.equal(broken?.countersUnreadable, true, JSON.stringify(broken));
  assert.equal(Object.values(broken.counts).every((n) => n === 0), true);
  assert.notEqual(broken.lastActivityAt, null, 'the document exists: its last change is still the last activity');
  const fine = overview.find((e) => e.endpointId === healthy);
  assert.ok(fine);
  assert.equal('countersUnreadable' in fine, false, 'the field is only there when true');
  assert.equal((await endpointsWithCounts(f.store, catalog)).find((e) => e.endpointId === ep)?.countersUnreadable, true);
  assert.equal((await endpointSummary(f.store, catalog, ep)).countersUnreadable, true);
  assert.equal('countersUnreadable' in (await endpointSummary(f.store, catalog, healthy)), false);
});

test('the overview logs an unreadable document once per version: endpoint and issue paths, never the values', async () => {
  const lines: string[] = [];
  const level = log.level;
  log.level = 'warn';
  setConsoleLogSink((record) => lines.push(record));
  try {
    const unreadableLines = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.endpointId === ep && Array.isArray(r.issuePaths));
    await endpointsOverview(f.store, catalog);
    await endpointsOverview(f.store, catalog);
    await endpointsWithCounts(f.store, catalog);
    // The first test's reads may already have logged this version: at most once, then nothing more for it.
    assert.ok(unreadableLines().length <= 1, lines.join(''));
    await plantCorrupt('broken-again');
    await endpointsOverview(f.store, catalog);
    await endpointsOverview(f.store, catalog);
    const logged = unreadableLines();
    assert.equal(logged.length, 1, `one line for the new version: ${lines.join('')}`);
    assert.deepEqual(logged[0]!.issuePaths, ['counts', 'recountedAt']);
    assert.equal(lines.join('').includes('broken-again'), false, 'the value is not logged');
  } finally {
    setConsoleLogSink(undefined);
    log.level = level;
  }
  // Repaired (a recount rewrites it): counts readable again, no mark.
  await f.store.recountEndpoint(ep);
  const repaired = (await endpointsOverview(f.store, catalog)).find((e) => e.endpointId === ep);
  assert.equal(repaired && 'countersUnreadable' in repaired, false);
});
