// How the Resubmit / Skip dialogs read a session's parked rows (components/sessionParkedRead.ts): only for a session
// the list route can be asked for exactly, and "more" only when a row beyond the counted ones was seen. The list route
// is faked here by its pages (pure paging logic); its bounds are checked against its own schema. And whether an event
// the session's parked rows name still holds the session, from its own rows only, asked for as the route takes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventListQuerySchema } from '../server/queries.ts';
import {
  blockerStanding,
  BLOCKERS_READ_MAX,
  LIST_PAGE_MAX,
  readBlockerStandings,
  readSessionParked,
  SESSION_PARKED_LIMIT,
  sessionListable,
  type ListPage,
} from './sessionParkedRead.ts';

/** A list route over `total` rows that answers each read with what `shape` says, recording the page sizes asked. */
function fakeList(total: number, shape: (asked: number, from: number) => { take: number; continuation: boolean }) {
  const asked: Array<{ pageSize: number; continuation: string | undefined }> = [];
  const read = async (pageSize: number, continuation: string | undefined): Promise<ListPage<number>> => {
    asked.push({ pageSize, continuation });
    const from = continuation === undefined ? 0 : Number(continuation);
    const { take, continuation: more } = shape(pageSize, from);
    const items = Array.from({ length: Math.max(0, Math.min(take, total - from)) }, (_, i) => from + i);
    return { items, continuation: more ? String(from + items.length) : null };
  };
  return { read, asked };
}

/** Cosmos's usual answer: a full page, with a continuation while rows follow. */
const honest = (total: number) => (asked: number, from: number) => ({ take: asked, continuation: from + asked < total });
/** A full page ends with a continuation even when nothing follows (Azure Cosmos DB may do that). */
const toNothing = (asked: number) => ({ take: asked, continuation: true });

test('exactly 200 parked with a continuation to nothing: all 200 read and no "more" (not "200+")', async () => {
  const list = fakeList(200, (asked, from) => (from >= 200 ? { take: 0, continuation: false } : toNothing(asked)));
  const r = await readSessionParked(list.read);
  assert.equal(r.rows.length, 200);
  assert.equal(r.more, false);
  assert.deepEqual(list.asked.map((a) => a.pageSize), [200, 1], 'a second read, of the one row beyond the page');
});

test('201 parked: the 201st is seen, so "more"; the 200 counted are the first page', async () => {
  const list = fakeList(201, honest(201));
  const r = await readSessionParked(list.read);
  assert.deepEqual(r.rows, Array.from({ length: 200 }, (_, i) => i));
  assert.equal(r.more, true);
});

test('fewer than a page: one read, no "more"', async () => {
  const list = fakeList(5, honest(5));
  const r = await readSessionParked(list.read);
  assert.equal(r.rows.length, 5);
  assert.equal(r.more, false);
  assert.equal(list.asked.length, 1);
});

test('a page answered short with a continuation: read on until the row beyond the limit, asking only for what is missing', async () => {
  const list = fakeList(500, (asked) => ({ take: Math.min(asked, 120), continuation: true }));
  const r = await readSessionParked(list.read);
  assert.equal(r.rows.length, SESSION_PARKED_LIMIT);
  assert.equal(r.more, true);
  assert.deepEqual(list.asked.map((a) => a.pageSize), [200, 81]);
});

test('reads stop at their cap; a continuation left then still says more may be parked', async () => {
  const list = fakeList(500, () => ({ take: 10, continuation: true }));
  const r = await readSessionParked(list.read);
  assert.equal(list.asked.length, 4);
  assert.equal(r.rows.length, 40);
  assert.equal(r.more, true);
});

test("the pages asked for are within the list route's bounds", () => {
  assert.equal(eventListQuerySchema.parse({ pageSize: String(LIST_PAGE_MAX) }).pageSize, LIST_PAGE_MAX);
  assert.equal(eventListQuerySchema.safeParse({ pageSize: String(LIST_PAGE_MAX + 1) }).success, false, 'LIST_PAGE_MAX is the route maximum');
});

test('a session is read only when the list route can be asked for exactly it', () => {
  const listed = (s: string) => {
    const r = eventListQuerySchema.safeParse({ sessionId: s });
    return r.success && r.data.sessionId === s;
  };
  for (const s of ['S-1', 'ORD 42', 'x'.repeat(128), 'S1 ', ' S1', '   ', '\t', '', 'x'.repeat(129), 'S1\u00a0']) {
    assert.equal(sessionListable(s), listed(s), JSON.stringify(s));
  }
  assert.equal(sessionListable('S1 '), true, 'taken exactly by the route, not as "S1"');
  assert.equal(sessionListable(' S1'), true);
  assert.equal(sessionListable('   '), false, 'refused by the route');
});

test("a named blocker's standing: blocking while failed or handed off, settled once completed or skipped, else unknown", () => {
  const row = (status: string, subStatus: string | null = null, eventId = 'Y', sessionId = 'S') => ({ eventId, sessionId, status, subStatus });
  const Y = { eventId: 'Y', sessionId: 'S' };
  assert.equal(blockerStanding([row('Failed')], Y), 'blocking');
  assert.equal(blockerStanding([row('DeadLettered')], Y), 'blocking');
  assert.equal(blockerStanding([row('Pending', 'Handoff')], Y), 'blocking');
  assert.equal(blockerStanding([row('Completed')], Y), 'settled');
  assert.equal(blockerStanding([row('Skipped')], Y), 'settled');
  assert.equal(blockerStanding([row('Pending')], Y), 'unknown', 'a resubmit in flight: not settled yet, not known to fail');
  assert.equal(blockerStanding([], Y), 'unknown', 'no row of it');
  // Rows of another session, or another event ("Y " is not "Y"), say nothing of this one.
  assert.equal(blockerStanding([row('Completed', null, 'Y', 'S '), row('Skipped', null, 'Y ', 'S')], Y), 'unknown');
});

test('the blockers read: the first few, each by its exact id in the session, as the list route takes them', async () => {
  const asked: unknown[] = [];
  const read = async (q: { eventId: string; sessionId: string; pageSize: number }) => {
    const parsed = eventListQuerySchema.parse({ eventId: q.eventId, sessionId: q.sessionId, pageSize: String(q.pageSize) });
    asked.push([parsed.eventId, parsed.sessionId]);
    return { items: [{ eventId: q.eventId, sessionId: q.sessionId, status: q.eventId === 'A' ? 'Skipped' : 'Failed', subStatus: null }], continuation: null };
  };
  assert.deepEqual(await readBlockerStandings(read, 'S ', ['A', 'B', ' C', 'D', 'E']), { A: 'settled', B: 'blocking', ' C': 'blocking' });
  assert.equal(BLOCKERS_READ_MAX, 3);
  assert.deepEqual(asked, [['A', 'S '], ['B', 'S '], [' C', 'S ']], 'an id with spaces is asked for exactly; none beyond the first few');
  asked.length = 0;
  const refused = { ['x'.repeat(129)]: 'unknown', '  ': 'unknown' };
  assert.deepEqual(await readBlockerStandings(read, 'S', Object.keys(refused)), refused, 'an id the route refuses (too long, spaces alone) is not asked for');
  assert.deepEqual(asked, []);
});
