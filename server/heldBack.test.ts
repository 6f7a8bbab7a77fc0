import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MessageStore } from '../lib/store/index.ts';
import { withHeldBack } from './heldBack.ts';
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
