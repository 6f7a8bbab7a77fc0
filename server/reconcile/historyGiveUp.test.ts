// readEventHistory's "was the list cut?" when the page past the cap comes back empty with a continuation: the
// store's pager (lib/store/paging.ts, fetchPage) follows empty pages a bounded number of times and then returns an
// empty page that still has one. That proves nothing either way, so the list is not called whole: a check that
// trusts a whole list (entryToRestore's fallback) must not pick a state from it. Pure: a fake store's listHistory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HistoryEntry, MessageStore } from '../../lib/store/index.ts';
import { readEventHistory } from './history.ts';

const entry = (n: number) => ({ messageId: `m-${n}`, endpointId: 'billingendpoint', sessionId: 's', enqueuedAt: `2026-12-01T09:00:0${n}.000Z` }) as unknown as HistoryEntry;

/** A store whose history holds `cap` entries on one page, then answers the page past them as `beyond` says. */
function storeWith(cap: number, beyond: { items: HistoryEntry[]; continuationToken: string | undefined }): MessageStore {
  return {
    listHistory: async (_eventId: string, page: { continuationToken?: string }) =>
      page.continuationToken === undefined
        ? { items: Array.from({ length: cap }, (_, i) => entry(i)), corrupt: [], continuationToken: 'after-cap' }
        : { ...beyond, corrupt: [] },
  } as unknown as MessageStore;
}

test('a page past the cap that the pager gave up on (empty, with a continuation) is no proof the history ends', async () => {
  const read = await readEventHistory(storeWith(3, { items: [], continuationToken: 'still-more' }), 'billingendpoint', 'e', 3);
  assert.equal(read.cutOff, true);
});

test('an empty last page past the cap (no continuation) ends the history; an entry there cuts it', async () => {
  assert.equal((await readEventHistory(storeWith(3, { items: [], continuationToken: undefined }), 'billingendpoint', 'e', 3)).cutOff, false);
  assert.equal((await readEventHistory(storeWith(3, { items: [entry(9)], continuationToken: undefined }), 'billingendpoint', 'e', 3)).cutOff, true);
});
