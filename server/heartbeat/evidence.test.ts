// The evidence lookup never takes the heartbeat down with it: a store that fails the query (throttled, timed out)
// gives "unknown" (undefined) and a warning, instead of an exception that would end the sweep for every other
// endpoint and fail the Health page; unknown is not "never answered" (null), which would turn a busy endpoint Off.
// Nor does unknown last for good: two timeouts past the probe's deadline, the sweep decides Off (overdueVerdict).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MessageStore } from '../../lib/store/index.ts';
import { lastHandledAt, overdueVerdict, UNKNOWN_EVIDENCE_TIMEOUTS } from './evidence.ts';

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

test('an overdue probe with unreadable evidence is undecided up to two timeouts past its deadline, then Off', () => {
  const sent = '2026-01-01T00:00:00.000Z';
  const at = (s: number) => Date.parse(sent) + s * 1000;
  const timeout = 60;
  assert.equal(overdueVerdict(undefined, sent, at(61), timeout), 'undecided');
  assert.equal(overdueVerdict(undefined, sent, at(timeout * (1 + UNKNOWN_EVIDENCE_TIMEOUTS)), timeout), 'undecided');
  assert.equal(overdueVerdict(undefined, sent, at(timeout * (1 + UNKNOWN_EVIDENCE_TIMEOUTS) + 1), timeout), 'offUnknown');
  // Readable evidence decides as before, however late: busy while answering within the timeout, else Off.
  assert.equal(overdueVerdict(new Date(at(1000)).toISOString(), sent, at(1010), timeout), 'busy');
  assert.equal(overdueVerdict(new Date(at(30)).toISOString(), sent, at(100), timeout), 'off');
  assert.equal(overdueVerdict(null, sent, at(61), timeout), 'off');
});
