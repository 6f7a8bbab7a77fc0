// The store's calls for a bulk operation's lot (writeStatuses, getStatusRows, recordAudits) against the embedded
// Cosmos server through the real client: each item answered as the one-row call would answer it (written, ignored
// with its reason, an input error), a cached version another writer has replaced decided again, the counters moved
// once per endpoint for the lot and right afterwards (the recount agrees), and the lot written in bulk requests -
// counted on the server - rather than one request per row.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { createStore, type MessageStore, type Settled, type StatusWriteResult } from './store.ts';
import { StoreInputError } from './errors.ts';
import { readFailureGroupDocs, rebuildFailureGroups } from './failureGroupAggregates.ts';
import { msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';
import { count, requestsDuring } from './testing/requestCount.ts';

let f: StoreFixture;
let other: MessageStore;
before(async () => {
  f = await startStoreFixture();
  // A second writer on the same database (another process): its writes are not in f.store's row cache.
  other = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database });
});
after(async () => {
  await other?.close();
  await f?.close();
});

/** A Failed event (request, then an error) in session s-1; returns the error's message id. */
async function failed(endpointId: string, eventId: string): Promise<string> {
  const request = msg(T.EventRequest, { endpointId, eventId, payload: { eventId } });
  await f.store.writeStatus(request);
  const error = msg(T.ErrorResponse, { endpointId, eventId, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
  await f.store.writeStatus(error);
  return error.messageId;
}

/** The Manager's claim of a skip on a row whose last message is `answered`. */
const claim = (endpointId: string, eventId: string, answered: string) => ({
  input: msg(T.SkipRequest, { endpointId, eventId, parentMessageId: answered }),
  expect: { lastMessageId: answered, status: 'Failed' as const, claim: true },
});

function outcome(s: Settled<StatusWriteResult> | undefined): string {
  if (!s) return 'missing';
  if (!s.ok) return s.error instanceof StoreInputError ? 'input error' : `error ${String(s.error)}`;
  return s.value.outcome === 'written' ? `written${s.value.created ? ' (created)' : ''}` : `ignored: ${s.value.reason}`;
}

describe('bulk calls for a lot', () => {
  test('writeStatuses: each item answered as writeStatus answers it; counters once per endpoint, right after', async () => {
    const ep = uniq('ep');
    const last = await Promise.all([0, 1, 2, 3, 4].map((i) => failed(ep, `e${i}`)));
    assert.equal((await f.store.getCounts(ep)).failed, 5);
    // Another writer records a retry's error on e2: f.store's cached version of e2 is now stale.
    const e2 = (await other.getStatusRow(ep, 'e2', 's-1'))!;
    const retryError = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e2', parentMessageId: e2.parentMessageId!, errorType: 'E', errorText: 'boom again' });
    assert.equal((await other.writeStatus(retryError)).outcome, 'written');

    const results = await f.store.writeStatuses([
      claim(ep, 'e0', last[0]!),
      claim(ep, 'e1', last[1]!),
      claim(ep, 'e2', retryError.messageId), // decided on the current version, not the stale cached one
      claim(ep, 'e3', 'not-its-last-message'),
      claim(ep, 'e0', last[0]!), // the same row again: decided after the first, which claimed it
      { input: { ...msg(T.SkipRequest, { endpointId: ep, eventId: 'e4' }), messageType: 'NoSuchType' } as never },
      { input: msg(T.EventRequest, { endpointId: ep, eventId: 'e5', payload: { n: 5 } }) },
    ]);
    assert.deepEqual(results.map(outcome), [
      'written',
      'written',
      'written',
      'ignored: precondition-failed',
      'ignored: precondition-failed',
      'input error',
      'written (created)',
    ]);
    const rows = await Promise.all(['e0', 'e1', 'e2', 'e3', 'e4', 'e5'].map((e) => f.store.getStatusRow(ep, e, 's-1')));
    assert.deepEqual(rows.map((r) => r?.status), ['Pending', 'Pending', 'Pending', 'Failed', 'Failed', 'Pending']);
    assert.equal(rows[2]!.parentMessageId, retryError.messageId);
    const counts = await f.store.getCounts(ep);
    assert.deepEqual([counts.pending, counts.failed], [4, 2]);
    const recounted = await f.store.recountEndpoint(ep);
    assert.deepEqual([recounted.pending, recounted.failed], [counts.pending, counts.failed], 'the recount agrees');
  });

  test('a lot of 20 claims: the rows read in one bulk request, written in one, one counter patch', async () => {
    const ep = uniq('ep');
    const events = Array.from({ length: 20 }, (_, i) => `b${i}`);
    const last = await Promise.all(events.map((e) => failed(ep, e)));
    // As the runner does it: the rows read in bulk (from another process's writes: nothing cached), then claimed.
    const fresh = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database });
    try {
      const { value: rows, requests: reads } = await requestsDuring(() => fresh.getStatusRows(events.map((eventId) => ({ endpointId: ep, eventId, sessionId: 's-1' }))));
      assert.deepEqual(rows.map((r) => r?.lastMessageId), last);
      assert.deepEqual(reads, ['POST events bulk']);
      const { value: results, requests } = await requestsDuring(() => fresh.writeStatuses(events.map((e, i) => claim(ep, e, last[i]!))));
      assert.ok(results.every((r) => outcome(r) === 'written'), results.map(outcome).join(', '));
      assert.equal(count(requests, 'POST events bulk'), 1, requests.join(', '));
      assert.equal(count(requests, 'GET events'), 0, 'no single reads: the versions read in bulk were used');
      assert.equal(count(requests, 'PUT events'), 0, 'no single writes');
      assert.equal(count(requests, 'PATCH counters'), 1);
      // The 20 rows leave one failure group: their changes summed into one patch of its aggregate document.
      assert.equal(count(requests, 'PATCH failureGroups'), 1, requests.join(', '));
      assert.deepEqual([(await fresh.getCounts(ep)).pending, (await fresh.getCounts(ep)).failed], [20, 0]);
    } finally {
      await fresh.close();
    }
  });

  test('a lot moving rows of two groups and many event types: a patch per document (split at 10 operations), equal to a recount', async () => {
    const ep = uniq('ep');
    // Group A: 12 rows, each of its own event type (the lot's change to A holds 14 increments: two patches).
    // Group B: 3 rows of one type (one patch). The stored rows are read by a fresh store, as the runner does.
    const a = Array.from({ length: 12 }, (_, i) => `a${i}`);
    const b = ['b0', 'b1', 'b2'];
    const last = new Map<string, string>();
    for (const [eventId, eventTypeId, errorText] of [
      ...a.map((e, i) => [e, `Type${i}`, 'credit limit exceeded'] as const),
      ...b.map((e) => [e, 'OrderPlaced', 'ledger offline'] as const),
    ]) {
      const request = msg(T.EventRequest, { endpointId: ep, eventId, eventTypeId, payload: { eventId } });
      await f.store.writeStatus(request);
      const error = msg(T.ErrorResponse, { endpointId: ep, eventId, eventTypeId, parentMessageId: request.messageId, errorType: 'E', errorText });
      await f.store.writeStatus(error);
      last.set(eventId, error.messageId);
    }
    const groups = await readFailureGroupDocs(f.store.database, ep);
    assert.equal(groups.length, 2);
    assert.deepEqual(groups.map((g) => g.counts.Failed).sort((x, y) => x - y), [3, 12]);
    const fresh = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database });
    try {
      const events = [...a, ...b];
      await fresh.getStatusRows(events.map((eventId) => ({ endpointId: ep, eventId, sessionId: 's-1' })));
      const { value: results, requests } = await requestsDuring(() => fresh.writeStatuses(events.map((e) => claim(ep, e, last.get(e)!))));
      assert.ok(results.every((r) => outcome(r) === 'written'), results.map(outcome).join(', '));
      assert.equal(count(requests, 'PATCH failureGroups'), 3, requests.join(', '));
    } finally {
      await fresh.close();
    }
    const kept = await readFailureGroupDocs(f.store.database, ep);
    assert.deepEqual(kept.map((g) => g.counts.Failed), [0, 0], 'every row left its group');
    assert.ok(kept.every((g) => Object.values(g.types.Failed).every((n) => n === 0) && Object.values(g.hours.Failed).every((n) => n === 0)));
    assert.deepEqual(await rebuildFailureGroups(f.store.database, ep), { groups: 0, rows: 0 }, 'the recount finds no failed rows either');
  });

  test('getStatusRows: in order, null for a row that does not exist', async () => {
    const ep = uniq('ep');
    await failed(ep, 'r1');
    const rows = await f.store.getStatusRows([
      { endpointId: ep, eventId: 'r1', sessionId: 's-1' },
      { endpointId: ep, eventId: 'r1', sessionId: 'other-session' },
      { endpointId: ep, eventId: 'nope', sessionId: 's-1' },
    ]);
    assert.deepEqual(rows.map((r) => (r === null ? null : r?.eventId)), ['r1', null, null]);
  });

  test('recordAudits: written in one bulk request, idempotent by id, a bad entry fails alone', async () => {
    const eventIds = Array.from({ length: 5 }, () => uniq('ev'));
    const entries = eventIds.map((eventId) => ({ id: `receipt-${eventId}`, eventId, endpointId: 'ep', type: 'Skip', auditor: 'tester', comment: 'bulk operation x' }));
    const { value: first, requests } = await requestsDuring(() => f.store.recordAudits([...entries, { eventId: '', type: 'Skip' } as never]));
    assert.deepEqual(first.map((r) => r.ok), [true, true, true, true, true, false]);
    assert.ok(!first[5]!.ok && first[5]!.error instanceof StoreInputError);
    assert.deepEqual(requests, ['POST audits bulk']);
    const again = await f.store.recordAudits(entries.map((e) => ({ ...e, comment: 'a retry' })));
    assert.ok(again.every((r) => r.ok));
    for (const e of entries) {
      const stored = await f.store.getAudit(e.eventId, e.id);
      assert.equal(stored?.comment, 'bulk operation x', 'the first entry is kept');
      assert.equal((await f.store.listAudits(e.eventId)).items.length, 1);
    }
  });
});
