// recountAll (resolver-worker/liveness.ts) on the embedded Cosmos server: an endpoint whose counters document no
// longer parses is recounted with the others, so the document is rewritten from the rows (parseable, right counts)
// rather than skipped because the counts read cannot parse it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType, SELF } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID, counterDocSchema } from '../lib/store/index.ts';
import { startStoreFixture, uniq, type StoreFixture } from '../lib/store/testing/fixtures.ts';
import { recountAll } from './liveness.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

/** One pending row on the endpoint (a received request), through the store: its counters document exists. */
async function pendingRow(endpointId: string): Promise<void> {
  const eventId = randomUUID();
  const message = { endpointId, eventId, sessionId: eventId, messageType: MessageType.EventRequest, parentMessageId: SELF, from: 'shop', to: endpointId, enqueuedAt: new Date().toISOString(), eventTypeId: 'OrderPlaced' };
  await f.store.recordOutcome({ history: { ...message, messageId: randomUUID() }, status: { ...message, messageId: randomUUID() } });
  await f.store.flushCounters();
}

test('recountAll rewrites a counters document that no longer parses, from the rows, along with the readable ones', async () => {
  const broken = uniq('recount-corrupt');
  const fine = uniq('recount-fine');
  await pendingRow(broken);
  await pendingRow(broken);
  await pendingRow(fine);
  const counters = f.raw.database(f.database).container(CONTAINERS.counters);
  // Planted past the store, which never writes such a document: counts that are not numbers.
  await counters.items.upsert({ id: COUNTER_DOC_ID, endpointId: broken, counts: 'garbled' });
  assert.equal((await f.store.getAllCounts()).endpoints.some((e) => e.endpointId === broken), false, 'the counts read cannot parse it');

  assert.equal(await recountAll(f.store), 2);

  const { resource } = await counters.item(COUNTER_DOC_ID, broken).read();
  const parsed = counterDocSchema.safeParse(resource);
  assert.ok(parsed.success, `the document parses again: ${JSON.stringify(resource)}`);
  assert.equal(parsed.data.counts.Pending, 2);
  assert.notEqual(parsed.data.recountedAt, null);
  assert.equal((await f.store.getCounts(broken)).pending, 2);
  assert.equal((await f.store.getCounts(fine)).pending, 1);
});
