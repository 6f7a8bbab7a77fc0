// The event page's rows on the embedded Cosmos store: every session's row of the event is shown, not only the
// sessions the first page of its history names. The row of a session whose history entries are gone (or lie past
// the page, on a long history) was missed while another session's row was found, so `otherRows` was short.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS } from '../lib/store/index.ts';
import { msg, startStoreFixture, type StoreFixture } from '../lib/store/testing/fixtures.ts';
import { eventDetails } from './queries.ts';

const EP = 'billingendpoint';
let f: StoreFixture;
before(async () => {
  f = await startStoreFixture({ now: () => new Date() });
});
after(async () => {
  await f.close();
});

async function failIn(eventId: string, sessionId: string): Promise<void> {
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId, payload: { sessionId } });
  const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorText: 'boom' });
  for (const m of [request, error]) await f.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

/** Deletes every history entry of the event, as if they had expired or were never written. */
async function dropHistory(eventId: string): Promise<void> {
  const history = f.store.database.container(CONTAINERS.history);
  const { resources } = await history.items
    .query<{ id: string }>({ query: 'SELECT c.id FROM c WHERE c.eventId = @e', parameters: [{ name: '@e', value: eventId }] }, { partitionKey: eventId })
    .fetchAll();
  for (const { id } of resources) await history.item(id, eventId).delete();
}

test('the event page lists the row of a session its history no longer names', async () => {
  const eventId = 'evt-two-sessions';
  await failIn(eventId, 'S-unnamed');
  await dropHistory(eventId);
  await failIn(eventId, 'S-named');
  const view = await eventDetails(f.store, EP, eventId);
  const sessions = [view.event.sessionId, ...view.otherRows.map((r) => r.sessionId)].sort();
  assert.deepEqual(sessions, ['S-named', 'S-unnamed'], 'both rows of the event are on its page');
  assert.equal(view.event.sessionId, 'S-named', 'the newest row leads');
});

test('an event known only by rows (no history at all) still has its page', async () => {
  const eventId = 'evt-no-history';
  await failIn(eventId, 'S-1');
  await dropHistory(eventId);
  const view = await eventDetails(f.store, EP, eventId);
  assert.equal(view.event.status, 'Failed');
  assert.deepEqual(view.history, []);
});

/** Runs `read`, noting the session of every parked-siblings query the store answers meanwhile (real queries). */
async function parkedQueriesDuring<T>(read: () => Promise<T>): Promise<{ result: T; sessions: string[] }> {
  const sessions: string[] = [];
  const original = f.store.listParkedSiblings;
  f.store.listParkedSiblings = (args) => {
    sessions.push(args.sessionId);
    return original.call(f.store, args);
  };
  try {
    return { result: await read(), sessions };
  } finally {
    f.store.listParkedSiblings = original;
  }
}

async function parkIn(eventId: string, sessionId: string, blockedBy: string): Promise<void> {
  const m = msg(T.DeferralResponse, { endpointId: EP, eventId, sessionId, blockedBy });
  await f.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

test('an event in three sessions: one parked-siblings query, the leading row\'s session, not one per session', async () => {
  const eventId = 'evt-three-sessions';
  for (const s of ['S3-a', 'S3-b', 'S3-c']) await failIn(eventId, s);
  await parkIn('evt-three-parked', 'S3-c', eventId);
  const { result: view, sessions } = await parkedQueriesDuring(() => eventDetails(f.store, EP, eventId));
  assert.equal(view.event.sessionId, 'S3-c', 'the newest row leads');
  assert.deepEqual(sessions, ['S3-c'], 'the parked siblings of the leading row\'s session only');
  assert.deepEqual(view.parkedSiblings.map((p) => p.eventId), ['evt-three-parked']);
});

test('when the history\'s latest session is not the leading row\'s, the parked list is still the leading row\'s', async () => {
  const eventId = 'evt-guess-wrong';
  await failIn(eventId, 'SG-old');
  await failIn(eventId, 'SG-lead');
  // The leading row's history is gone; an older message of the other session is now the latest the history names.
  await dropHistory(eventId);
  const m = msg(T.EventRequest, { endpointId: EP, eventId, sessionId: 'SG-old' });
  await f.store.recordHistory({ ...m, enqueuedAt: new Date().toISOString() } as never);
  await parkIn('evt-guess-parked', 'SG-lead', eventId);
  const { result: view, sessions } = await parkedQueriesDuring(() => eventDetails(f.store, EP, eventId));
  assert.equal(view.event.sessionId, 'SG-lead');
  assert.deepEqual(view.parkedSiblings.map((p) => p.eventId), ['evt-guess-parked']);
  assert.deepEqual(sessions, ['SG-old', 'SG-lead'], 'the guess, then the leading row\'s session');
});
