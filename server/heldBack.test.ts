import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedByReason } from '@nimbus/sdk/contract';
import type { MessageStore, ParkedRef } from '../lib/store/index.ts';
import { attributeParked, withHeldBack } from './heldBack.ts';
import type { EventListItem } from './queries.ts';

// A store whose count query fails the way a throttled or unreachable Cosmos does. Only the query is faked: the
// behaviour under test is what the list does with that failure, which is pure logic around the read.
function failingStore(): MessageStore {
  const query = () => ({ fetchAll: async () => Promise.reject(Object.assign(new Error('Request rate is large'), { code: 429 })) });
  return { database: { container: () => ({ items: { query } }) } } as unknown as MessageStore;
}

test('a failed parked-count read leaves the list as it is, without counts, instead of failing the page', async () => {
  const row = { eventId: 'e-1', sessionId: 'S-1', status: 'Failed' } as unknown as EventListItem;
  const page = { items: [row], continuationToken: null };
  const out = await withHeldBack(failingStore(), 'billingendpoint', page);
  assert.equal(out.items.length, 1, 'the failure row is still listed');
  assert.equal(out.items[0]!.eventId, 'e-1');
  assert.equal('holdsBack' in out.items[0]!, false, 'no count is invented when it could not be read');
});

// Who a parked row waits on, and whose row says "holds back N" (pure: the attribution of the rows read).
const row = (eventId: string, status: string, subStatus: string | null = null, sessionId = 'S-1') =>
  ({ eventId, sessionId, status, subStatus }) as unknown as EventListItem;
const parkedBehind = (blocker: string, sessionId = 'S-1'): ParkedRef => ({
  sessionId,
  blockedBy: null,
  errorText: blockedByReason(sessionId, blocker),
});

test('only the row the parked rows name holds them back; a failure that does not block its session holds back nothing', () => {
  const items = [row('E1', 'DeadLettered'), row('E2', 'Failed'), row('U1', 'Unsupported')];
  const out = attributeParked(items, [parkedBehind('E2'), parkedBehind('E2'), parkedBehind('E2')], false);
  assert.deepEqual(out[1]!.holdsBack, { count: 3, atLeast: false });
  assert.equal(out[0]!.holdsBack?.count ?? 0, 0, 'the non-blocking dead letter holds back nothing');
  assert.equal(out[2]!.holdsBack?.count ?? 0, 0, 'an Unsupported answer holds back nothing');
});

test('a Pending handoff that blocks its session holds its parked rows back; a plain Pending row gets no count', () => {
  const items = [row('H1', 'Pending', 'Handoff'), row('P1', 'Pending')];
  const out = attributeParked(items, [parkedBehind('H1'), parkedBehind('H1')], false);
  assert.deepEqual(out[0]!.holdsBack, { count: 2, atLeast: false });
  assert.equal('holdsBack' in out[1]!, false);
});

test('blockers are told apart by session, by blockedBy when a row has it, and a row parked behind a replay counts for nobody', () => {
  const items = [row('E2', 'Failed', null, 'S-1'), row('E2', 'Failed', null, 'S-2')];
  const parked: ParkedRef[] = [
    parkedBehind('E2', 'S-1'),
    { sessionId: 'S-2', blockedBy: 'E2', errorText: null },
    { sessionId: 'S-2', blockedBy: null, errorText: 'Session S-2 is replaying parked messages' },
  ];
  const out = attributeParked(items, parked, false);
  assert.equal(out[0]!.holdsBack?.count, 1);
  assert.equal(out[1]!.holdsBack?.count, 1);
});

test('a capped read: a row none of the read rows name gets no count (unknown), not "none parked"; the others are lower bounds', () => {
  const items = [row('E2', 'Failed'), row('E9', 'Failed', null, 'S-9')];
  const out = attributeParked(items, [parkedBehind('E2')], true);
  assert.deepEqual(out[0]!.holdsBack, { count: 1, atLeast: true });
  assert.equal('holdsBack' in out[1]!, false, 'unknown, so no "holds back" line, and no zero that reads as none parked');
});
