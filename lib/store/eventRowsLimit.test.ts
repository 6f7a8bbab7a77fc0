// An event's rows read at the edge of EVENT_ROWS_LIMIT: `truncated` means at least one row was left out. Azure
// Cosmos DB may end a page with a continuation token though nothing follows it (the next page comes back empty);
// the embedded server never does, so a small proxy in front of it (testing/boundaryProxy.ts) answers as Cosmos may:
// every last query page that holds results gets a continuation, and that continuation an empty last page. The read
// asks for one row more than the limit, so at exactly the limit's rows its page is not full and still ends with a
// token: an event with exactly the limit's rows must then still read as whole - the Manager refuses a truncated set
// (409 "too many rows") and would refuse the event.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { EVENT_ROWS_LIMIT } from './store.ts';
import type { MessageStore } from './index.ts';
import { startBoundaryStoreFixture, type BoundaryStoreFixture } from './testing/boundaryProxy.ts';
import { msg, uniq } from './testing/fixtures.ts';

const EP = 'billingendpoint';

let f: BoundaryStoreFixture;
let store: MessageStore;

before(async () => {
  f = await startBoundaryStoreFixture();
  store = f.store;
});
after(async () => {
  await f?.close();
});

/** An event with `n` rows (one Failed row per session). */
async function eventWithRows(n: number): Promise<string> {
  const eventId = uniq('rows');
  const w = await store.writeStatuses(
    Array.from({ length: n }, (_, i) => ({ input: msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: `S-${i}`, errorText: 'boom' }) })),
  );
  assert.ok(w.every((r) => r.ok && r.value.outcome === 'written'));
  return eventId;
}

describe('listEventRowsChecked at the rows limit (a last page may carry a continuation to nothing)', () => {
  test(`exactly ${EVENT_ROWS_LIMIT} rows: all of them, not truncated`, async () => {
    const served = f.proxy.trailingServed();
    const r = await store.listEventRowsChecked(EP, await eventWithRows(EVENT_ROWS_LIMIT));
    assert.equal(r.rows.length, EVENT_ROWS_LIMIT);
    assert.equal(r.corrupt.length, 0);
    assert.equal(r.truncated, false, 'a continuation followed by nothing is not a row left out');
    assert.ok(f.proxy.trailingServed() > served, 'the empty last page was asked for');
  });

  test(`${EVENT_ROWS_LIMIT + 1} rows: the limit's worth, truncated`, async () => {
    const r = await store.listEventRowsChecked(EP, await eventWithRows(EVENT_ROWS_LIMIT + 1));
    assert.equal(r.rows.length, EVENT_ROWS_LIMIT);
    assert.equal(r.truncated, true);
  });

  test('fewer rows: whole', async () => {
    const r = await store.listEventRowsChecked(EP, await eventWithRows(3));
    assert.equal(r.rows.length, 3);
    assert.equal(r.truncated, false);
  });
});
