// The evidence lookup never takes the heartbeat down with it: a store that fails the query (throttled, timed out)
// gives "unknown" (undefined) and a warning, instead of an exception that would end the sweep for every other
// endpoint and fail the Health page; unknown is not "never answered" (null), which would turn a busy endpoint Off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MessageStore } from '../../lib/store/index.ts';
import { lastHandledAt } from './evidence.ts';

/** Only the path lastHandledAt walks; its query fails the way a 429 does. */
const failingStore = {
  database: {
    container: () => ({
      items: {
        query: () => ({
          fetchAll: async () => {
            throw Object.assign(new Error('Request rate is large'), { code: 429 });
          },
        }),
      },
    }),
  },
} as unknown as MessageStore;

test('a failed evidence lookup is unknown and a warning, not an exception and not "never answered"', async () => {
  const warnings: string[] = [];
  assert.equal(await lastHandledAt(failingStore, 'billingendpoint', (m) => warnings.push(m)), undefined);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /billingendpoint.*Request rate is large/);
});
