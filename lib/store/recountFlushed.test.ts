// A recount writes a `flushed` map that no recovery can apply a counted stamp again from (docs/store.md, "A recount
// and `flushed`"), on the embedded Cosmos server. The recount counts the rows, so each writer stamped on them gets at
// least its highest window there: a sound entry below it is raised (kept as it was, a dead writer's later recovery
// applied those windows a second time), a corrupt entry is repaired to it (copied back as it was, the document never
// parsed again: the endpoint stayed countersUnreadable however often it was recounted). A corrupt entry of a writer
// not on the rows becomes RECOVERED; other sound entries are kept.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID, counterDocSchema, RECOVERED } from './index.ts';
import { createStore, type MessageStore } from './store.ts';
import { msg, startStoreFixture, steppingClock, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

/** A buffering writer (as the Resolver is) named `owner`: its rows carry its stamps. The caller closes it. */
const bufferingStore = (owner: string): Promise<MessageStore> =>
  createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database, now: steppingClock(), counterFlushMs: 60_000, counterOwner: owner });

/** `n` received requests on the endpoint, written by `store` and flushed: Pending rows stamped with its window. */
async function pendingRows(store: MessageStore, endpointId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const eventId = randomUUID();
    await store.writeStatus(msg(T.EventRequest, { endpointId, eventId, sessionId: eventId }));
  }
  await store.flushCounters();
}

const counters = () => f.raw.database(f.database).container(CONTAINERS.counters);

/** Replaces the document's `flushed` past the store (which never writes a corrupt one). */
async function plantFlushed(endpointId: string, flushed: unknown): Promise<void> {
  const { resource } = await counters().item(COUNTER_DOC_ID, endpointId).read<Record<string, unknown>>();
  assert.ok(resource, 'the counters document exists');
  await counters().item(COUNTER_DOC_ID, endpointId).replace({ ...resource, flushed });
}

async function storedDoc(endpointId: string) {
  const { resource } = await counters().item(COUNTER_DOC_ID, endpointId).read();
  const parsed = counterDocSchema.safeParse(resource);
  assert.ok(parsed.success, `the counters document parses: ${JSON.stringify(resource?.flushed)}`);
  return parsed.data;
}

test('a corrupt entry of `flushed` becomes the highest window on the rows, or RECOVERED without one; sound ones are kept; the document parses again', async () => {
  const ep = uniq('flushed-entry');
  const writer = await bufferingStore(uniq('writer'));
  try {
    await pendingRows(writer, ep, 2);
    const owner = writer.counterOwner!;
    await plantFlushed(ep, { [owner]: 'garbled', other: 7, gone: 1.5 });
    await assert.rejects(f.store.getCounts(ep), { name: 'CorruptDocumentError' });
    assert.deepEqual((await f.store.getAllCounts()).unreadable.includes(ep), true, 'a recount candidate');

    assert.equal((await f.store.recountEndpoint(ep)).pending, 2);

    assert.deepEqual((await storedDoc(ep)).flushed, { [owner]: 1, other: 7, gone: RECOVERED }, 'its highest window on the rows');
    assert.equal((await f.store.getCounts(ep)).pending, 2, 'readable again');
    // The writer goes on: its next flush sets its own next window, and counts.
    await pendingRows(writer, ep, 1);
    assert.equal((await f.store.getCounts(ep)).pending, 3);
    assert.equal((await storedDoc(ep)).flushed?.[owner], 2, 'its own next window');
  } finally {
    await writer.close();
  }
});

test('a `flushed` that is not a map: the writers stamped on the rows get their highest window there, so a recovery applies nothing twice', async () => {
  const ep = uniq('flushed-map');
  const writer = await bufferingStore(uniq('writer'));
  const owner = writer.counterOwner!;
  try {
    await pendingRows(writer, ep, 3);
  } finally {
    await writer.close();
  }
  await plantFlushed(ep, 'garbled');
  await assert.rejects(f.store.getCounts(ep), { name: 'CorruptDocumentError' });

  assert.equal((await f.store.recountEndpoint(ep)).pending, 3);

  assert.deepEqual((await storedDoc(ep)).flushed, { [owner]: 1 }, 'its highest window on the rows');
  // The writer's lease lapses (it never stopped cleanly): its stamps are on the rows, and the recount counted them.
  assert.equal(await f.store.recoverCounters(owner), 0, 'no stamp applied again');
  assert.equal((await f.store.getCounts(ep)).pending, 3, 'the counts are still the rows');
});

/**
 * A buffering writer that dies: it shares the fixture's client (so nothing of its own is left to release) and
 * flushes only when told, so what it wrote after its last flush stays unflushed - never closed, as a killed one.
 */
const doomedStore = (owner: string): Promise<MessageStore> =>
  createStore({ client: f.raw, endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database, now: steppingClock(), counterFlushMs: 3_600_000, counterOwner: owner });

test('a sound entry below the stamps on the rows is raised to them: a recovery after the recount applies nothing twice', async () => {
  const ep = uniq('flushed-dead');
  const owner = uniq('dead');
  const dead = await doomedStore(owner);
  await pendingRows(dead, ep, 2); // its window 1, flushed
  const applied = (await storedDoc(ep)).flushed?.[owner];
  assert.ok(applied !== undefined && applied < RECOVERED, 'a sound window of its own');
  // Its next window's rows are written, their deltas never flushed: it is killed.
  for (let i = 0; i < 3; i++) {
    const eventId = randomUUID();
    await dead.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId, sessionId: eventId }));
  }
  // Another entry is corrupt: the endpoint is unreadable, so the Resolver recounts it.
  await plantFlushed(ep, { ...(await storedDoc(ep)).flushed, other: 'garbled' });

  assert.equal((await f.store.recountEndpoint(ep)).pending, 5, 'the rows, the unflushed ones included');
  assert.equal((await storedDoc(ep)).flushed?.[owner], applied + 1, 'raised to the highest window stamped on the rows');
  // Its lease lapses: a survivor recovers it.
  assert.equal(await f.store.recoverCounters(owner), 0, 'no stamp applied again');
  assert.equal((await f.store.getCounts(ep)).pending, 5, 'the counts are still the rows');
});

test('a missing `flushed` stays an empty map, and a sound one is kept as it is', async () => {
  const ep = uniq('flushed-sound');
  await pendingRows(f.store, ep, 1);
  await plantFlushed(ep, undefined);
  await f.store.recountEndpoint(ep);
  assert.deepEqual((await storedDoc(ep)).flushed, {});
  await plantFlushed(ep, { a: 4, b: RECOVERED });
  await f.store.recountEndpoint(ep);
  assert.deepEqual((await storedDoc(ep)).flushed, { a: 4, b: RECOVERED });
});
