// A recount repairs a counters document whose `flushed` map is corrupt (docs/store.md, "A recount and `flushed`"),
// on the embedded Cosmos server: it used to copy the map back as it was, so the document still did not parse (the
// endpoint stayed countersUnreadable however often it was recounted). Sound entries are kept; a corrupt entry, or
// the writers whose stamps the rows carry when the map is not a map at all, become RECOVERED: the recount counted
// the rows, so no stamp on them may be applied again - a recovery of such a writer afterwards changes no count.
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

test('a corrupt entry of `flushed` becomes RECOVERED, sound ones are kept, and the document parses again', async () => {
  const ep = uniq('flushed-entry');
  const writer = await bufferingStore(uniq('writer'));
  try {
    await pendingRows(writer, ep, 2);
    const owner = writer.counterOwner!;
    await plantFlushed(ep, { [owner]: 'garbled', other: 7 });
    await assert.rejects(f.store.getCounts(ep), { name: 'CorruptDocumentError' });
    assert.deepEqual((await f.store.getAllCounts()).unreadable.includes(ep), true, 'a recount candidate');

    assert.equal((await f.store.recountEndpoint(ep)).pending, 2);

    assert.deepEqual((await storedDoc(ep)).flushed, { [owner]: RECOVERED, other: 7 });
    assert.equal((await f.store.getCounts(ep)).pending, 2, 'readable again');
    // The writer goes on: its next flush sets its own window over RECOVERED, and counts.
    await pendingRows(writer, ep, 1);
    assert.equal((await f.store.getCounts(ep)).pending, 3);
    assert.ok(((await storedDoc(ep)).flushed?.[owner] ?? 0) < RECOVERED, 'its own window again');
  } finally {
    await writer.close();
  }
});

test('a `flushed` that is not a map: the writers stamped on the rows become RECOVERED, so a recovery applies nothing twice', async () => {
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

  assert.deepEqual((await storedDoc(ep)).flushed, { [owner]: RECOVERED });
  // The writer's lease lapses (it never stopped cleanly): its stamps are on the rows, and the recount counted them.
  assert.equal(await f.store.recoverCounters(owner), 0, 'no stamp applied again');
  assert.equal((await f.store.getCounts(ep)).pending, 3, 'the counts are still the rows');
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
