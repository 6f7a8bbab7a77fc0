// The stored time series' retention with configured sizes (the defaults are tested in
// resolver-worker/outcomeMetrics.test.ts): 5-minute fine buckets rolled into 6-hour ones after one day and kept for
// ten days, against the embedded Cosmos server through the real client. Counts, the latency histogram (so the
// percentiles) and the backlog (as the coarse bucket's maximum) survive the roll-up; older documents are deleted.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CosmosClient, type Database } from '@azure/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { TimeSeriesStore, type Series } from './timeSeries.ts';
import { uniq } from './testing/fixtures.ts';

let cosmos: EmbeddedCosmos;
let client: CosmosClient;
let database: Database;
before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  client = new CosmosClient({ endpoint: cosmos.endpoint, key: cosmos.key, connectionPolicy: { enableEndpointDiscovery: false } });
  database = (await client.databases.createIfNotExists({ id: uniq('series') })).database;
});
after(async () => {
  client.dispose();
  await cosmos.close();
});

const H = 3_600_000;
const D = 24 * H;
const sum = (s: Series[], name: string) => s.find((x) => x.name === name)!.points.reduce((a, [, v]) => a + (v ?? 0), 0);
const nonNull = (s: Series[], name: string) => s.find((x) => x.name === name)!.points.filter(([, v]) => v !== null);

test('configured sizes: fine buckets of 5 min, rolled into 6 h after 1 day, kept 10 days', async () => {
  const now = Date.parse('2026-03-10T12:00:00.000Z');
  const ep = uniq('cfg');
  const store = new TimeSeriesStore(database, {
    flushMs: 60_000,
    now: () => now,
    retention: { fineMs: 5 * 60_000, coarseMs: 6 * H, rollupAfterMs: D, keepMs: 10 * D },
  });
  // Two days ago, within one 6-hour bucket (06:00-12:00): 4 failures with ~200 ms, 4 handled with ~20 ms, spread
  // over several 5-minute buckets; and two backlog samples.
  const old = Date.parse('2026-03-08T07:00:00.000Z');
  for (let i = 0; i < 4; i++) {
    store.add({ endpointId: ep, eventTypeId: 'T', at: new Date(old + i * 7 * 60_000), count: 'failed', latencyMs: 200 });
    store.add({ endpointId: ep, eventTypeId: 'T', at: new Date(old + i * 7 * 60_000), count: 'handled', latencyMs: 20 });
  }
  await store.recordBacklog(new Date(old), [{ topic: ep, active: 3, deadLetter: 1, scheduled: 0 }]);
  await store.recordBacklog(new Date(old + 30 * 60_000), [{ topic: ep, active: 9, deadLetter: 2, scheduled: 1 }]);
  // An hour ago (younger than the roll-up age) and 12 days ago (past the keep age).
  store.add({ endpointId: ep, eventTypeId: 'T', at: new Date(now - H), count: 'handled', latencyMs: 20 });
  store.add({ endpointId: ep, eventTypeId: 'T', at: new Date(now - 12 * D), count: 'handled' });
  await store.flush();

  const c = await store.container();
  const docs = async () =>
    (
      await c.items
        .query<{ res: string; t: number; kind: string }>({ query: 'SELECT c.res, c.t, c.kind FROM c WHERE c.endpointId = @e', parameters: [{ name: '@e', value: ep }] })
        .fetchAll()
    ).resources;
  const fine = (await docs()).filter((d) => d.kind === 'o');
  assert.ok(fine.every((d) => d.res === 'f' && d.t % (5 * 60_000) === 0), 'outcomes land in 5-minute buckets');
  assert.equal(fine.length, 6, '4 old 5-minute buckets, the recent one and the expired one');

  const q = { from: now - 11 * D, to: now, bucketMs: 6 * H, endpointId: ep };
  const before = await store.query(q);
  const result = await store.maintain();
  assert.equal(result.rolledUp, 7, '4 outcome buckets and 2 backlog samples rolled up, the expired bucket dropped');
  const after = await store.query(q);
  for (const name of ['handled', 'failed']) assert.equal(sum(after, name), sum(before, name), `${name} keeps its sum`);
  assert.equal(sum(after, 'handled'), 5, 'the 12-day-old bucket is gone, the others stay');
  assert.equal(sum(after, 'failed'), 4);
  // The histogram is summed, not averaged: p50 of the old bucket sits between the two latencies' bins, p99 in 200's.
  const [old6h] = nonNull(after, 'latencyP99');
  assert.ok(old6h![1]! > 100 && old6h![1]! <= 250, `p99 ${old6h![1]} in the 100-250 ms bin`);
  assert.deepEqual(
    nonNull(after, 'backlogActive').map(([, v]) => v),
    [9],
    'the backlog as the 6-hour maximum',
  );

  const left = await docs();
  assert.deepEqual(
    left.map((d) => `${d.kind}:${d.res}`).sort(),
    ['b:c', 'o:c', 'o:f'],
    'one coarse outcome bucket (06:00), one coarse backlog sample, the recent fine bucket',
  );
  const coarse = left.filter((d) => d.res === 'c');
  assert.ok(coarse.every((d) => d.t === Date.parse('2026-03-08T06:00:00.000Z')), 'aligned to the 6-hour bucket');
});
