// Search's page gathering against a scripted store (pure logic, no Cosmos): the embedded Cosmos server answers a
// cross-partition query in full pages, so a short page that still carries a continuation - which a real,
// partitioned Cosmos account can answer - cannot be provoked through it. server/api.test.ts covers search on the
// real store (rows that no longer parse, a list read over several pages).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MessageStore, Page, StatusRowSummary } from '../lib/store/index.ts';
import { SEARCH_LIMIT, SEARCH_MAX_PAGES, search, searchList } from './queries.ts';

const row = (eventId: string): StatusRowSummary =>
  ({ id: `${eventId}|s`, endpointId: 'ep', eventId, sessionId: `ses-${eventId}`, errorText: null }) as unknown as StatusRowSummary;
const rows = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => row(`${prefix}-${i}`));
const page = <T>(items: T[], continuationToken?: string): Page<T> => ({ items, continuationToken, corrupt: [] });

/** A store whose event-id search answers `pages` in turn (each token names the next page); the session-id search finds nothing. */
function scriptedStore(pages: Page<StatusRowSummary>[]): { store: MessageStore; reads: () => number } {
  let reads = 0;
  const store = {
    searchEvents: async (args: { eventIdPrefix?: string; continuationToken?: string }) => {
      if (!args.eventIdPrefix) return page<StatusRowSummary>([]);
      reads++;
      return pages[args.continuationToken === undefined ? 0 : Number(args.continuationToken)]!;
    },
  } as unknown as MessageStore;
  return { store, reads: () => reads };
}

describe('search reads past short pages', () => {
  test('a short page with a continuation is followed until one more match than shown', async () => {
    const { store, reads } = scriptedStore([page(rows('a', 3), '1'), page([], '2'), page(rows('b', 30), '3'), page(rows('c', 5))]);
    const found = await search(store, 'x');
    assert.equal(found.items.length, SEARCH_LIMIT);
    assert.deepEqual(found.items.slice(0, 4).map((i) => i.eventId), ['a-0', 'a-1', 'a-2', 'b-0']);
    assert.deepEqual(found.truncated, { byEventId: true, bySessionId: false });
    assert.deepEqual(found.scanLimited, { byEventId: false, bySessionId: false }, 'cut at its limit, not at the page cap');
    assert.equal(reads(), 3, 'stops once it holds one more than it shows');
  });

  test('short pages that end without a continuation: everything shown, nothing cut', async () => {
    const { store } = scriptedStore([page(rows('a', 10), '1'), page(rows('b', 10), '2'), page(rows('c', 4))]);
    const found = await search(store, 'x');
    assert.equal(found.items.length, 24);
    assert.deepEqual(found.truncated, { byEventId: false, bySessionId: false });
  });

  test('exactly the limit, then an empty last page: not cut', async () => {
    const { store } = scriptedStore([page(rows('a', SEARCH_LIMIT), '1'), page([])]);
    const found = await search(store, 'x');
    assert.equal(found.items.length, SEARCH_LIMIT);
    assert.deepEqual(found.truncated, { byEventId: false, bySessionId: false });
  });

  test('reads at most SEARCH_MAX_PAGES pages; a continuation left then counts as cut', async () => {
    let reads = 0;
    const endless = async (token: string | undefined) => {
      reads++;
      return page([row(`r-${token ?? 0}`)], String(Number(token ?? 0) + 1));
    };
    const list = await searchList(endless, SEARCH_LIMIT, SEARCH_MAX_PAGES);
    assert.equal(reads, SEARCH_MAX_PAGES);
    assert.equal(list.items.length, SEARCH_MAX_PAGES);
    assert.equal(list.truncated, true);
    assert.equal(list.scanLimited, true, 'it stopped at the page cap, not at its limit');
  });

  test('a list stopped by the page cap says so, with how many it holds: fewer than the limit, and the cap', async () => {
    // Eight short pages, each with a continuation: 8 rows held when the cap is reached, the query not at its end.
    const { store, reads } = scriptedStore(Array.from({ length: SEARCH_MAX_PAGES + 2 }, (_, i) => page([row(`p${i}`)], String(i + 1))));
    const found = await search(store, 'x');
    assert.equal(reads(), SEARCH_MAX_PAGES);
    assert.equal(found.items.length, SEARCH_MAX_PAGES);
    assert.ok(found.items.length < found.limit, 'fewer than the limit shown');
    assert.deepEqual(found.truncated, { byEventId: true, bySessionId: false }, 'still reported cut, as before');
    assert.deepEqual(found.scanLimited, { byEventId: true, bySessionId: false });
    assert.deepEqual(found.shown, { byEventId: SEARCH_MAX_PAGES, bySessionId: 0 });
    assert.equal(found.maxPages, SEARCH_MAX_PAGES);
    assert.equal(found.limit, SEARCH_LIMIT);
  });

  test('a list that passes its limit on the last page it may read is cut by the limit, not by the cap', async () => {
    // Seven pages of 3 rows (21), then an 8th of 5: 26 rows, one more than shown, on the last page the cap allows.
    const pages = Array.from({ length: SEARCH_MAX_PAGES + 2 }, (_, i) => page(rows(`q${i}`, i === SEARCH_MAX_PAGES - 1 ? 5 : 3), String(i + 1)));
    const { store, reads } = scriptedStore(pages);
    const found = await search(store, 'x');
    assert.equal(reads(), SEARCH_MAX_PAGES);
    assert.equal(found.items.length, SEARCH_LIMIT);
    assert.deepEqual(found.truncated, { byEventId: true, bySessionId: false });
    assert.deepEqual(found.scanLimited, { byEventId: false, bySessionId: false });
    assert.deepEqual(found.shown, { byEventId: SEARCH_LIMIT, bySessionId: 0 });
  });

  test('a list that ends within the cap is neither cut nor stopped', async () => {
    const { store } = scriptedStore([page(rows('a', 3), '1'), page(rows('b', 2))]);
    const found = await search(store, 'x');
    assert.deepEqual(found.truncated, { byEventId: false, bySessionId: false });
    assert.deepEqual(found.scanLimited, { byEventId: false, bySessionId: false });
    assert.deepEqual(found.shown, { byEventId: 5, bySessionId: 0 });
  });
});
