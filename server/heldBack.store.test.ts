// "holds back N" read from the embedded Cosmos server the way the Resolver writes parked rows: a DeferralResponse
// whose errorText is the subscriber's "Session S is blocked by E" (no blockedBy field). Only the blocking failure
// of the session says it holds them back; a dead letter in the same session that did not block it says nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedByReason, MessageType as T } from '@nimbus/sdk/contract';
import { msg, startStoreFixture, uniq, type StoreFixture } from '../lib/store/testing/fixtures.ts';
import { endpointEventsPage } from './heldBack.ts';
import { eventListQuerySchema } from './queries.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let f: StoreFixture;
const ep = uniq('heldback');
const session = 'ORD-1';

before(async () => {
  f = await startStoreFixture();
  const put = async (eventId: string, type: T, over: Parameters<typeof msg>[1] extends infer O ? Partial<O> : never = {}) => {
    const r = await f.store.writeStatus(msg(type, { endpointId: ep, eventId, sessionId: session, ...over }));
    assert.equal(r.outcome, 'written');
  };
  // E1: a first-time permanent dead letter, which leaves the session open; E2 failed and blocks it.
  await put('E1', T.ErrorResponse, { deadLetterReason: 'Permanent failure: PermanentFailureError: bad', deadLetterErrorDescription: 'bad', errorText: 'bad' });
  await put('E2', T.ErrorResponse, { errorText: 'timeout' });
  for (const id of ['E3', 'E4', 'E5'])
    await put(id, T.DeferralResponse, { errorText: blockedByReason(session, 'E2'), errorType: 'SessionBlockedException' });
});

after(async () => {
  await f?.close();
});

test('the blocking failure holds back its session\'s parked rows; the non-blocking failure beside it none', async () => {
  // The list as the route (and bench/pageReads.ts) reads it.
  const page = await endpointEventsPage(f.store, ep, eventListQuerySchema.parse({}));
  const byId = new Map(page.items.map((i) => [i.eventId, i]));
  assert.ok(byId.get('E1') && byId.get('E2'), `both failures listed: ${[...byId.keys()].join(', ')}`);
  assert.deepEqual(byId.get('E2')!.holdsBack, { count: 3, atLeast: false });
  assert.equal(byId.get('E1')!.holdsBack?.count ?? 0, 0, `E1 said it holds back ${byId.get('E1')!.holdsBack?.count}`);
});
