// A terminal copy that comes back after more than 7 later messages of its row: its id has dropped off the row's
// `appliedMessageIds` (8 kept), so the stale-write guard's rule 7 reads the history's answer instead - an entry that
// names the copy as its parent (the operator's resubmission of a Failed row) proves the row applied it - and refuses
// it, by both store write paths; a first application past the list, which nothing names, still writes. On the
// embedded Cosmos server with the real client.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, ResolutionStatus as S } from '@nimbus/sdk/contract';
import type { HistoryWrite, StatusWrite } from './schemas.ts';
import { MAX_APPLIED_MESSAGE_IDS } from './appliedMessages.ts';
import { msg, startProxiedStoreFixture, startStoreFixture, uniq, type ProxiedStoreFixture, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f.close();
});

/** The message's history entry and status write, as the Resolver records one message (recordOutcome). */
const asHistory = (w: StatusWrite): HistoryWrite => ({ ...w, enqueuedAt: w.enqueuedAt ?? new Date().toISOString() });
const record = (w: StatusWrite) => f.store.recordOutcome({ history: asHistory(w), status: w });

/**
 * A resubmission's series as the SDK sends it: each failed delivery answers with an ErrorResponse and schedules a
 * RetryRequest, both naming that delivery; the last retry succeeds. 2 * failures + 1 messages, none naming `after`.
 */
function series(ep: string, first: string, failures: number): StatusWrite[] {
  const out: StatusWrite[] = [];
  let delivery = first;
  for (let i = 1; i <= failures; i++) {
    out.push(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: delivery, errorType: 'E', errorText: `fail ${i}` }));
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: delivery, retryCount: i });
    out.push(retry);
    delivery = retry.messageId;
  }
  out.push(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: delivery }));
  return out;
}

describe('a terminal copy past the row\'s applied ids', () => {
  test('answered by a later message (a resubmission naming it): refused already-applied by recordOutcome, recordOutcomes and writeStatuses; the row unchanged', async () => {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
    await record(request);
    const failure = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
    await record(failure);
    // The operator resubmits the Failed row: the command names the version it answers, the failure.
    const resubmit = msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', from: 'Manager', to: ep, parentMessageId: failure.messageId });
    await record(resubmit);
    const later = series(ep, resubmit.messageId, 4); // 9 more: 10 messages after the failure
    for (const w of later) assert.equal((await record(w)).status.outcome, 'written');
    const before = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.equal(before.status, S.Completed);
    assert.equal(before.appliedMessageIds?.length, MAX_APPLIED_MESSAGE_IDS);
    assert.ok(!before.appliedMessageIds?.includes(failure.messageId), "the failure's id has dropped off the list");

    // The failure's copy, alone (only its completion was lost): on the code before it was written, Failed for good.
    const single = await record(failure);
    assert.equal(single.history.recorded, false, 'its history entry was there already');
    assert.deepEqual(single.status.outcome === 'ignored' && single.status.reason, 'already-applied');
    // With the last message's copy in one receive (recordOutcomes, the row-group chain).
    const last = later.at(-1)!;
    const lot = await f.store.recordOutcomes([failure, last].map((w) => ({ history: asHistory(w), status: w })));
    assert.deepEqual(lot[0]!.status.outcome === 'ignored' && lot[0]!.status.reason, 'already-applied');
    assert.equal(lot[1]!.status.outcome, 'written', "the last message's own copy is left to rules 1-6 (a terminal write applies)");
    // The bulk write (writeStatuses) hands it to the single path, which asks the history.
    const [bulk] = await f.store.writeStatuses([{ input: failure }]);
    assert.ok(bulk?.ok && bulk.value.outcome === 'ignored');
    assert.equal(bulk.value.reason, 'already-applied');

    const after = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.deepEqual([after.status, after.lastMessageId], [S.Completed, last.messageId]);
    assert.ok(!after.appliedMessageIds?.includes(failure.messageId));
    assert.equal((await f.store.listHistory('e')).items.filter((h) => h.messageId === failure.messageId).length, 1);
  });

  /**
   * A row past its list whose failure's history entry landed while its row write did not (a 429 between the two, then
   * its replacement waits; or a crash, then a redelivery): meanwhile the subscriber's retry series (its retries name
   * the failed delivery, not the failure) and a success.
   */
  async function failureNeverApplied() {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
    await record(request);
    const failure = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
    await f.store.recordHistory(asHistory(failure));
    // An entry that names it but never wrote the row does not count: a Manager-only command that did not come through
    // the Manager (the Resolver records it in history only; anyone could have sent it, naming any message). The
    // Manager's own commands answer the row's last message, so they cannot name a response whose row write never
    // landed.
    await f.store.recordHistory(asHistory(msg(T.SkipRequest, { endpointId: ep, eventId: 'e', from: 'shop', to: ep, parentMessageId: failure.messageId })));
    for (const w of series(ep, request.messageId, 4)) assert.equal((await record(w)).status.outcome, 'written');
    const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.equal(row.status, S.Completed);
    assert.equal(row.appliedMessageIds?.length, MAX_APPLIED_MESSAGE_IDS);
    return { ep, failure };
  }

  test('a first application past the list, which no later entry names, is written (recordOutcome: a throttle replacement, a redelivery whose history landed first)', async () => {
    const { ep, failure } = await failureNeverApplied();
    // The replacement keeps the failure's MessageId; its first application is decided by rules 1-6 as always (a
    // terminal write applies).
    const replacement = await record(failure);
    assert.equal(replacement.history.recorded, false, 'its history entry was there: the store asked the history');
    assert.equal(replacement.status.outcome, 'written');
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Failed);
  });

  test('a first application past the list, which no later entry names, is written (writeStatuses)', async () => {
    const { ep, failure } = await failureNeverApplied();
    const [bulk] = await f.store.writeStatuses([{ input: failure }]);
    assert.ok(bulk?.ok && bulk.value.outcome === 'written');
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Failed);
  });
});

describe('what the history query costs', () => {
  let p: ProxiedStoreFixture;
  before(async () => {
    p = await startProxiedStoreFixture({ storeVia: 'proxy' });
  });
  after(async () => {
    await p.close();
  });
  /** Queries of the history container the store sent since `from` (counted at the wire). */
  const historyQueries = (from: number) => p.proxy.seen.slice(from).filter((r) => r.query && !r.queryPlan && r.path.includes('/colls/history/')).length;

  test('a new response on a long row sends none (its history entry is new); its copy past the list sends one', async () => {
    const ep = uniq('ep');
    const rec = (w: StatusWrite) => p.store.recordOutcome({ history: asHistory(w), status: w });
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
    await rec(request);
    for (const w of series(ep, request.messageId, 4)) await rec(w);
    // A new failure over the full list: its id is not on it, but this call created its history entry.
    const from = p.proxy.seen.length;
    const fresh = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: request.messageId, errorType: 'E', errorText: 'late' });
    assert.equal((await rec(fresh)).status.outcome, 'written');
    assert.equal(historyQueries(from), 0, 'the common path asks nothing');
    // Eight more messages push it off the list; then its copy is asked about (nothing names it: written again).
    for (const w of series(ep, request.messageId, 4).slice(0, 8)) await rec(w);
    const before = p.proxy.seen.length;
    assert.equal((await rec(fresh)).status.outcome, 'written');
    assert.equal(historyQueries(before), 1);
  });
});
