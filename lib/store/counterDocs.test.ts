// The two reads of every endpoint's counters (MessageStore.getAllCounts for the Resolver's recount, readiness and
// the heartbeat backlog; MessageStore.listCounterDocs for the console's overview), on the embedded Cosmos server
// behind a recording fault proxy: each is one query of the counters container, they judge the same documents the
// same way (a document that no longer parses is named by its endpoint only when that is an endpoint id), and a
// throttled query is the store's StoreThrottledError for both (the console's 503 "busy").
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID } from './index.ts';
import { StoreThrottledError } from './errors.ts';
import { msg, startProxiedStoreFixture, uniq, type ProxiedStoreFixture } from './testing/fixtures.ts';

let wire: ProxiedStoreFixture;
let raw: CosmosClient;
const fine = uniq('docs-fine');
const broken = uniq('docs-broken');
// Not an endpoint id (a space and a "!"): a document the store never writes, planted past it.
const notAnId = `not an id! ${randomUUID().slice(0, 8)}`;

before(async () => {
  wire = await startProxiedStoreFixture({ storeVia: 'proxy' });
  raw = new CosmosClient({ endpoint: wire.cosmos.endpoint, key: wire.cosmos.key, connectionPolicy: { enableEndpointDiscovery: false } });
  const eventId = randomUUID();
  await wire.store.writeStatus(msg(T.EventRequest, { endpointId: fine, eventId, sessionId: eventId }));
  const counters = raw.database(wire.database).container(CONTAINERS.counters);
  await counters.items.upsert({ id: COUNTER_DOC_ID, endpointId: broken, counts: 'garbled' });
  await counters.items.upsert({ id: COUNTER_DOC_ID, endpointId: notAnId, counts: 'garbled' });
});
after(async () => {
  raw?.dispose();
  await wire?.close();
});

/** The queries of the counters container `read` sends through the proxy (not the SDK's query-plan requests). */
async function countersQueriesOf<R>(read: () => Promise<R>): Promise<{ value: R; queries: number }> {
  const from = wire.proxy.seen.length;
  const value = await read();
  const queries = wire.proxy.seen.slice(from).filter((r) => r.query && !r.queryPlan && r.path.endsWith(`/colls/${CONTAINERS.counters}/docs`));
  return { value, queries: queries.length };
}

test('each read is one query of the counters container', async () => {
  await wire.store.getAllCounts(); // the client's first query of the container also reads its definition
  assert.equal((await countersQueriesOf(() => wire.store.getAllCounts())).queries, 1, 'getAllCounts');
  assert.equal((await countersQueriesOf(() => wire.store.listCounterDocs())).queries, 1, 'listCounterDocs');
});

test('both reads judge the same documents alike: an unreadable one is named only by a valid endpoint id', async () => {
  const all = await wire.store.getAllCounts();
  const docs = await wire.store.listCounterDocs();

  assert.deepEqual(all.endpoints, docs.counts, 'the same readable counts');
  assert.equal(all.endpoints.find((e) => e.endpointId === fine)?.pending, 1);
  assert.deepEqual(all.unreadable, [broken], 'getAllCounts names the endpoint a recount can rewrite');
  assert.deepEqual(
    docs.unreadable.map((d) => d.endpointId).sort(),
    [broken, undefined],
    'listCounterDocs sees both broken documents, and names none by a value that is no endpoint id',
  );
  assert.equal(docs.touched.has(notAnId), false, 'nor keys its last-write times by one');
  assert.deepEqual(
    all.corrupt.map((c) => c.id),
    [COUNTER_DOC_ID, COUNTER_DOC_ID],
    'getAllCounts still reports every document that does not parse',
  );
  for (const c of all.corrupt) assert.match(c.issues, /^counts: /, 'with where it fails');
  for (const d of docs.unreadable) assert.deepEqual(d.issuePaths, ['counts', 'recountedAt']);
});

test('a throttled counters query is a StoreThrottledError for both reads', async () => {
  for (const [name, read] of [
    ['getAllCounts', () => wire.store.getAllCounts()],
    ['listCounterDocs', () => wire.store.listCounterDocs()],
  ] as const) {
    wire.proxy.inject({ status: 429, retryAfterMs: 20, match: (r) => r.method === 'POST' && r.path.endsWith(`/colls/${CONTAINERS.counters}/docs`) });
    try {
      await assert.rejects(read(), (err: unknown) => err instanceof StoreThrottledError && err.operation === 'counters read', name);
    } finally {
      wire.proxy.clear();
    }
  }
});
