// The Search page's note on cut lists (components/searchNotice.ts): it must say what was really shown, and why the
// list stopped, for a list cut at its limit and for one stopped by the page cap with fewer rows than the limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { searchCutNotice } from './searchNotice.ts';

const lists = <T>(byEventId: T, bySessionId: T) => ({ byEventId, bySessionId });
const result = (over: { truncated?: [boolean, boolean]; scanLimited?: [boolean, boolean]; shown?: [number, number] }) => ({
  limit: 25,
  maxPages: 8,
  truncated: lists(...(over.truncated ?? [false, false])),
  scanLimited: lists(...(over.scanLimited ?? [false, false])),
  shown: lists(...(over.shown ?? [0, 0])),
});

test('complete lists: no note', () => {
  assert.equal(searchCutNotice(result({ shown: [11, 0] })), null);
});

test('lists cut at their limit: the first 25, as before', () => {
  assert.equal(
    searchCutNotice(result({ truncated: [true, false], shown: [25, 0] })),
    'Showing the first 25 matches by event id — refine the search to see the others.',
  );
  assert.equal(
    searchCutNotice(result({ truncated: [true, true], shown: [25, 25] })),
    'Showing the first 25 matches by event id and by session id — refine the search to see the others.',
  );
});

test('a list stopped by the page cap says how many it shows and that the search stopped looking', () => {
  assert.equal(
    searchCutNotice(result({ truncated: [true, false], scanLimited: [true, false], shown: [12, 0] })),
    'Showing 12 matches by event id; the search stopped after reading 8 pages — refine it to see any others.',
  );
  assert.equal(
    searchCutNotice(result({ truncated: [false, true], scanLimited: [false, true], shown: [3, 1] })),
    'Showing 1 match by session id; the search stopped after reading 8 pages — refine it to see any others.',
  );
});

test('one list cut at its limit, the other stopped by the cap', () => {
  assert.equal(
    searchCutNotice(result({ truncated: [true, true], scanLimited: [false, true], shown: [25, 7] })),
    'Showing the first 25 matches by event id and 7 matches by session id; the search stopped after reading 8 pages by session id — refine it to see any others.',
  );
});

test('both lists stopped by the cap', () => {
  assert.equal(
    searchCutNotice(result({ truncated: [true, true], scanLimited: [true, true], shown: [12, 3] })),
    'Showing 12 matches by event id and 3 matches by session id; the search stopped after reading 8 pages per list — refine it to see any others.',
  );
});
