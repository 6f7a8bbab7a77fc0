// The console tests' seed writes what production writes (server/testing/seed.ts), on the embedded Cosmos server:
// a fresh MessageId per message (the history is keyed by it, so a reused id would fold two messages into one entry),
// nothing enqueued after now, and parked rows that name their blocker only in the park reason, as the Resolver
// records them, so a test reads parked rows the way production has to.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { startStoreFixture, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import { endpointEventsPage } from '../heldBack.ts';
import { eventListQuerySchema } from '../queries.ts';
import { seedConsoleData, seedEvent } from './seed.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

const order = { endpointId: 'billingendpoint', sessionId: 'SEED-1', eventTypeId: 'OrderPlaced', payload: { orderId: 'SEED-1' } };

test('every seeded message has its own id, also when one event is seeded again (answered after a resubmit)', async () => {
  const first = await seedEvent(f.store, Date.now() - 60_000, { ...order, eventId: 'seed-again' }, MessageType.ErrorResponse, { errorText: 'declined' });
  const again = await seedEvent(f.store, Date.now(), { ...order, eventId: 'seed-again' }, MessageType.ResolutionResponse);
  assert.notEqual(again.lastMessageId, first.lastMessageId);
  const history = (await f.store.listHistory('seed-again')).items;
  assert.equal(history.length, 4, `two requests and two answers: ${history.map((h) => `${h.messageType} ${h.messageId}`).join(', ')}`);
  assert.equal(new Set(history.map((h) => h.messageId)).size, 4);
});

test('nothing seeded is enqueued after now, however many events a test seeds at Date.now(); each answer follows its request', async () => {
  const seeded = [];
  for (let i = 0; i < 5; i++) seeded.push(await seedEvent(f.store, Date.now(), { ...order, sessionId: `SEED-T${i}`, eventId: `seed-now-${i}` }, MessageType.ResolutionResponse));
  const seededBy = Date.now();
  for (const e of seeded) {
    const history = (await f.store.listHistory(e.eventId)).items;
    assert.equal(history.length, 2);
    for (const h of history) assert.ok(Date.parse(h.enqueuedAt) <= seededBy, `${e.eventId} ${h.messageType} enqueued at ${h.enqueuedAt}, after ${new Date(seededBy).toISOString()}`);
    const [request, answer] = [history.find((h) => h.messageType === MessageType.EventRequest)!, history.find((h) => h.messageType !== MessageType.EventRequest)!];
    assert.ok(request.enqueuedAt < answer.enqueuedAt, `${e.eventId}: request ${request.enqueuedAt}, answer ${answer.enqueuedAt}`);
    assert.equal(answer.parentMessageId, request.messageId);
  }
});

test('the demo rows\' parked event names its blocker only in its park reason, and still counts against it', async () => {
  const demo = await seedConsoleData(f.store, Date.now() - 60_000, '-seedtest');
  const parked = await f.store.getStatusRow(demo.parked.endpointId, demo.parked.eventId, demo.parked.sessionId);
  assert.equal(parked?.status, 'Deferred');
  assert.equal(parked?.blockedBy, null, 'the Resolver writes no blockedBy; neither does the seed');
  assert.equal(parked?.errorText, `Session ${demo.failed.sessionId} is blocked by ${demo.failed.eventId}`);
  const page = await endpointEventsPage(f.store, 'billingendpoint', eventListQuerySchema.parse({ sessionId: demo.failed.sessionId }));
  assert.deepEqual(page.items.find((i) => i.eventId === demo.failed.eventId)?.holdsBack, { count: 1, atLeast: false });
});
