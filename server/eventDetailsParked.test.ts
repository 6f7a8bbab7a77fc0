// The event page's parked list on the embedded Cosmos store, seeded as production writes it: a parked row names its
// blocker only in its park reason (the Resolver stores the subscriber's blockedByReason text as errorText and writes
// no blockedBy). Through a proxy that answers as Azure Cosmos DB may (lib/store/testing/boundaryProxy.ts): a page
// as full as asked carries a continuation that leads to nothing.
// - exactly 100 parked is "100", not "100+": the cap is read as "a 101st row exists", not "a continuation came";
// - the list holds the rows parked behind this event, not every parked row of the session;
// - a parked event names its blocker (`blockedBy`, read from its park reason), for the page's "Parked behind" link.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedByReason, MessageType as T } from '@nimbus/sdk/contract';
import { startBoundaryStoreFixture, type BoundaryStoreFixture } from '../lib/store/testing/boundaryProxy.ts';
import { msg, uniq } from '../lib/store/testing/fixtures.ts';
import { eventDetails } from './queries.ts';

const EP = 'billingendpoint';
let f: BoundaryStoreFixture;
before(async () => (f = await startBoundaryStoreFixture()));
after(() => f?.close());

async function write(messages: ReturnType<typeof msg>[]): Promise<void> {
  const w = await f.store.writeStatuses(messages.map((input) => ({ input })));
  assert.ok(w.every((r) => r.ok && r.value.outcome === 'written'), 'every row written');
}

const failed = (eventId: string, sessionId: string) => msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId, errorText: 'boom' });
/** A row parked as production parks it: the reason text, no blockedBy. */
const parkedBehind = (eventId: string, sessionId: string, blocker: string) =>
  msg(T.DeferralResponse, { endpointId: EP, eventId, sessionId, errorText: blockedByReason(sessionId, blocker) });

/** A failed event with `n` rows parked behind it; its id. */
async function blockerWithParked(n: number): Promise<string> {
  const sessionId = uniq('S');
  const blocker = uniq('blocker');
  await write([failed(blocker, sessionId)]);
  await write(Array.from({ length: n }, (_, i) => parkedBehind(`${blocker}-p${i}`, sessionId, blocker)));
  return blocker;
}

test('exactly 100 parked (100): all listed, not capped - the continuation after a full page leads to nothing', async () => {
  const view = await eventDetails(f.store, EP, await blockerWithParked(100));
  assert.equal(view.parkedSiblings.length, 100);
  assert.equal(view.parkedSiblingsCapped, false, 'the panel says 100, not 100+');
});

test('101 parked: the first 100 listed, capped', async () => {
  const view = await eventDetails(f.store, EP, await blockerWithParked(101));
  assert.equal(view.parkedSiblings.length, 100);
  assert.equal(view.parkedSiblingsCapped, true, 'the panel says 100+');
});

test('two blockers in one session: each event lists the row parked behind it, not the other\'s', async () => {
  const sessionId = uniq('S2');
  const [first, second] = [uniq('first'), uniq('second')];
  await write([failed(first, sessionId)]);
  await write([parkedBehind(`${first}-parked`, sessionId, first)]);
  await write([failed(second, sessionId)]);
  await write([parkedBehind(`${second}-parked`, sessionId, second)]);
  const a = await eventDetails(f.store, EP, first);
  assert.deepEqual(a.parkedSiblings.map((p) => p.eventId), [`${first}-parked`]);
  assert.equal(a.parkedSiblings[0]?.blockedBy, first, 'named from its park reason');
  const b = await eventDetails(f.store, EP, second);
  assert.deepEqual(b.parkedSiblings.map((p) => p.eventId), [`${second}-parked`]);
});

test('a parked row whose reason names no blocker is kept in the list, with no blocker named', async () => {
  const sessionId = uniq('S3');
  const blocker = uniq('blocker');
  await write([failed(blocker, sessionId)]);
  await write([
    parkedBehind(`${blocker}-behind`, sessionId, blocker),
    msg(T.DeferralResponse, { endpointId: EP, eventId: `${blocker}-replay`, sessionId, errorText: 'Parked behind a replay in progress' }),
  ]);
  const view = await eventDetails(f.store, EP, blocker);
  assert.deepEqual(view.parkedSiblings.map((p) => [p.eventId, p.blockedBy]), [
    [`${blocker}-behind`, blocker],
    [`${blocker}-replay`, null],
  ]);
});

test('a parked event names its blocker, read from its park reason', async () => {
  const blocker = await blockerWithParked(1);
  const view = await eventDetails(f.store, EP, `${blocker}-p0`);
  assert.equal(view.event.status, 'Deferred');
  assert.equal(view.event.blockedBy, blocker);
});
