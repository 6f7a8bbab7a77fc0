// A terminal write over a status row that no longer parses (docs/store.md, "A terminal write over an unreadable row"):
// the old version's bucket is unknown, so the write counts only the new one and the store then sets the endpoint's
// counters from its rows itself - as a buffering writer's pending flushes expect them, so its window not yet flushed
// is not counted twice. Before, the counters stayed off (`counters: 'failed'`) until an operator ran a recount. On the
// embedded Cosmos server through the real @azure/cosmos client; the row is broken past the store, as damage would be.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID, counterDocSchema, RECOVERED } from './index.ts';
import { countsAsFlushed } from './counters.ts';
import { statusRowId } from './ids.ts';
import { createStore } from './store.ts';
import { msg, startStoreFixture, steppingClock, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

const events = () => f.raw.database(f.database).container(CONTAINERS.events);
const counters = () => f.raw.database(f.database).container(CONTAINERS.counters);

/** Gives the stored row an unknown status, past the store (which never writes one). */
async function breakRow(endpointId: string, eventId: string): Promise<void> {
  const item = events().item(statusRowId(eventId, 's-1'), [endpointId, eventId]);
  const { resource } = await item.read<Record<string, unknown>>();
  assert.ok(resource, 'the row exists');
  await item.replace({ ...resource, status: 'Exploded' });
}

/** The counters as stored now, then what a recount of the rows makes of them (the recount rewrites the document). */
async function storedAndRecounted(endpointId: string) {
  const stored = (await f.store.getCounts(endpointId)).buckets;
  const recounted = (await f.store.recountEndpoint(endpointId)).buckets;
  return { stored, recounted };
}

const request = (endpointId: string, eventId: string) => msg(T.EventRequest, { endpointId, eventId });
const response = (endpointId: string, eventId: string) => msg(T.ResolutionResponse, { endpointId, eventId });

test('countsAsFlushed: the rows as a recount counts them, less the stamps above their writer\'s flushed entry', () => {
  const counts = countsAsFlushed(
    [
      { s: 'Pending' },
      { s: 'Pending', u: 'Handoff' },
      { s: 'Exploded' }, // counted nowhere, as by the recount's queries
      { s: 'Completed', k: [{ o: 'a', s: 3, f: 'Pending', t: 'Completed' }] }, // a's window 3 not flushed yet
      { s: 'Failed', k: [{ o: 'a', s: 2, f: 'Pending', t: 'Failed' }] }, // a's window 2 flushed
      { s: 'Skipped', k: [{ o: 'b', s: 9, f: null, t: 'Skipped' }] }, // b recovered: applied
      { s: 'Deferred', k: [{ o: 'c', s: 1, f: null, t: 'Deferred' }, { o: 'c', s: 'x' }] }, // c never flushed; a broken stamp
    ],
    { a: 2, b: RECOVERED },
  );
  assert.deepEqual(counts, { Pending: 2, Handoff: 1, Deferred: 0, Failed: 1, DeadLettered: 0, Unsupported: 0, Completed: 0, Skipped: 1 });
});

test('a response over an unreadable row: the store recounts the endpoint, and the counters equal a recount', async () => {
  const ep = uniq('unreadable');
  const [a, b] = [randomUUID(), randomUUID()];
  await f.store.writeStatus(request(ep, a));
  await f.store.writeStatus(request(ep, b));
  await breakRow(ep, a);

  const r = await f.store.writeStatus(response(ep, a));
  assert.equal(r.outcome, 'written');
  // Before: stored Pending 2, Completed 1 (the old version's Pending never taken) against a recount's 1 / 1.
  const { stored, recounted } = await storedAndRecounted(ep);
  assert.deepEqual(stored, recounted);
  assert.equal(r.outcome === 'written' && r.counters, 'recounted', 'the old bucket is unknown: recounted, not left for an operator');
  assert.equal(recounted.Pending, 1);
  assert.equal(recounted.Completed, 1);
});

test('a buffering writer (as the Resolver): the recount leaves its window not yet flushed to its flush, which then makes the counts exact', async () => {
  const ep = uniq('unreadable-buffered');
  const writer = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database, now: steppingClock(), counterFlushMs: 60_000, counterOwner: uniq('writer') });
  try {
    const ids = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids.slice(0, 3)) await writer.writeStatus(request(ep, id));
    await writer.flushCounters();
    // Buffered, not flushed: a new request and a response. A recount that counted their rows as they are (and raised
    // the writer's entry) would have them counted again by the flush below.
    await writer.writeStatus(request(ep, ids[3]!));
    await writer.writeStatus(response(ep, ids[1]!));
    await breakRow(ep, ids[0]!);

    const r = await writer.writeStatus(response(ep, ids[0]!));
    const flushedBefore = (await counters().item(COUNTER_DOC_ID, ep).read()).resource?.flushed;
    await writer.flushCounters();

    const { stored, recounted } = await storedAndRecounted(ep);
    assert.deepEqual(stored, recounted);
    assert.equal(recounted.Pending, 2);
    assert.equal(recounted.Completed, 2);
    assert.deepEqual(flushedBefore, { [writer.counterOwner!]: 1 }, 'the writer\'s entry as its own flush left it');
    assert.equal(r.outcome === 'written' && r.counters, 'recounted');
  } finally {
    await writer.close();
  }
});

test('two writes over unreadable rows of one endpoint at once: both recounted, the counts exact', async () => {
  const ep = uniq('unreadable-two');
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  for (const id of ids) await f.store.writeStatus(request(ep, id));
  await breakRow(ep, ids[0]!);
  await breakRow(ep, ids[1]!);

  const results = await Promise.all([f.store.writeStatus(response(ep, ids[0]!)), f.store.writeStatus(response(ep, ids[1]!))]);
  const { stored, recounted } = await storedAndRecounted(ep);
  assert.deepEqual(stored, recounted);
  assert.deepEqual(results.map((r) => r.outcome === 'written' && r.counters), ['recounted', 'recounted']);
  assert.equal(recounted.Pending, 1);
  assert.equal(recounted.Completed, 2);
});

test('when the counters document does not parse either, the write says counters failed and leaves the document to npm run recount', async () => {
  const ep = uniq('unreadable-doc');
  const id = randomUUID();
  await f.store.writeStatus(request(ep, id));
  await breakRow(ep, id);
  const { resource } = await counters().item(COUNTER_DOC_ID, ep).read<Record<string, unknown>>();
  await counters().item(COUNTER_DOC_ID, ep).replace({ ...resource, flushed: { someone: 'garbled' } });

  const r = await f.store.writeStatus(response(ep, id));
  assert.equal(r.outcome === 'written' && r.counters, 'failed');
  const after = await counters().item(COUNTER_DOC_ID, ep).read();
  assert.equal(counterDocSchema.safeParse(after.resource).success, false, 'left as it was, for the operator\'s recount');
  assert.equal((await f.store.recountEndpoint(ep)).completed, 1);
});

// The unreadable row may carry a buffering writer's stamp whose window is not flushed yet: the stamps are read from
// the raw row, not its parsed version, so the write over it carries them (as over a readable row) and the recount
// takes that window off, which the writer's flush then adds. Before, the write dropped them: stored Pending 2 against
// a recount's 1 after the flush, while the write answered `counters: 'recounted'`.
for (const by of ['the console (immediate counters)', 'the buffering writer itself'] as const) {
  test(`a write by ${by} over an unreadable row whose writer's stamp is not flushed yet: the counts equal a recount after the flush`, async () => {
    const ep = uniq('unreadable-stamped');
    const writer = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database, now: steppingClock(), counterFlushMs: 60_000, counterOwner: uniq('writer') });
    try {
      const [a, b] = [randomUUID(), randomUUID()];
      await writer.writeStatus(request(ep, b));
      await writer.flushCounters();
      await writer.writeStatus(request(ep, a)); // buffered: the row stamped with the writer's open window, null -> Pending
      const { resource } = await events().item(statusRowId(a, 's-1'), [ep, a]).read<Record<string, unknown>>();
      assert.ok(Array.isArray(resource?.counted) && resource.counted.length === 1, 'the row carries the writer\'s stamp');
      await breakRow(ep, a);

      const r = await (by === 'the buffering writer itself' ? writer : f.store).writeStatus(response(ep, a));
      assert.equal(r.outcome === 'written' && r.counters, 'recounted');
      await writer.flushCounters();
      const { stored, recounted } = await storedAndRecounted(ep);
      assert.deepEqual(stored, recounted);
      assert.equal(recounted.Pending, 1);
      assert.equal(recounted.Completed, 1);
    } finally {
      await writer.close();
    }
  });
}
