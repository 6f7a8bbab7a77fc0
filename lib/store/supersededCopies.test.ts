// A terminal copy that comes back after more than 7 later messages of its row: its id has dropped off the row's
// `appliedMessageIds` (8 kept), so the stale-write guard's rule 7 reads the history's answer instead - an entry that
// names the copy as its parent (the operator's resubmission of a Failed row) proves the row applied it - and refuses
// it, by both store write paths; a first application past the list, which nothing names, still writes. And a failure
// its own retry superseded (rule 8): an ErrorResponse whose failed delivery the history shows a RetryRequest for,
// coming back after the retries and their outcome (a copy, or a replacement whose row write never landed), is
// refused; a final failure, with no retry beside it, is not. On the embedded Cosmos server with the real client.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, ResolutionStatus as S } from '@nimbus/sdk/contract';
import type { HistoryWrite, StatusWrite } from './schemas.ts';
import { MAX_APPLIED_MESSAGE_IDS } from './appliedMessages.ts';
import { at, msg, startProxiedStoreFixture, startStoreFixture, uniq, type ProxiedStoreFixture, type StoreFixture } from './testing/fixtures.ts';

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
   * A row past its list whose final failure's history entry landed while its row write did not (a 429 between the
   * two, then its replacement waits; or a crash, then a redelivery): meanwhile a resubmission of the row, its retry
   * series and a success. No retry names the failed delivery (retries exhausted: the SDK sent none beside it), so
   * rule 8 does not refuse it either.
   */
  async function failureNeverApplied(end: 'success' | 'last retry' = 'success') {
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
    const resubmit = msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', from: 'Manager', to: ep, parentMessageId: request.messageId });
    await record(resubmit);
    const later = series(ep, resubmit.messageId, 4);
    for (const w of end === 'success' ? later : later.slice(0, -1)) assert.equal((await record(w)).status.outcome, 'written');
    const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.equal(row.status, end === 'success' ? S.Completed : S.Pending);
    assert.equal(row.appliedMessageIds?.length, MAX_APPLIED_MESSAGE_IDS);
    return { ep, failure };
  }

  test('a first application past the list, which no later entry names, is written (recordOutcome: a throttle replacement, a redelivery whose history landed first)', async () => {
    // The series still running (its last retry Pending): over its success, enqueued after the failure, rule 9 refuses
    // the late failure (a later answer of another delivery), which is not what this test is about.
    const { ep, failure } = await failureNeverApplied('last retry');
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

describe('a failure its own retry superseded (rule 8)', () => {
  const failureOf = (ep: string, delivery: string) =>
    msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: delivery, errorType: 'E', errorText: 'boom' });
  /** A request recorded, and its failure's history entry alone: its row write "lost" (a 429, then the replacement waits). */
  async function failureNotWritten() {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
    await record(request);
    const failure = failureOf(ep, request.messageId);
    await f.store.recordHistory(asHistory(failure));
    return { ep, request, failure };
  }
  /**
   * Refused superseded-by-retry by recordOutcome and recordOutcomes (beside the last message's copy): a message's
   * record, where rule 8 is asked. A plain writeStatuses records no history and is not asked (its callers are the
   * Manager's claims).
   */
  async function assertRefusedByEveryPath(ep: string, failure: StatusWrite, last: StatusWrite, status: S) {
    const single = await record(failure);
    assert.equal(single.history.recorded, false, 'its history entry was there already');
    assert.deepEqual(single.status.outcome === 'ignored' && single.status.reason, 'superseded-by-retry');
    const lot = await f.store.recordOutcomes([failure, last].map((w) => ({ history: asHistory(w), status: w })));
    assert.deepEqual(lot[0]!.status.outcome === 'ignored' && lot[0]!.status.reason, 'superseded-by-retry');
    const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.deepEqual([row.status, row.lastMessageId], [status, last.messageId]);
  }

  test("the first failure's copy after its retry series and a success (past the applied ids): refused, the row stays Completed", async () => {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
    await record(request);
    // E and its retry Y (both naming the request's delivery), four failed retries and a success: as the SDK sends them.
    const all = series(ep, request.messageId, 5);
    for (const w of all) assert.equal((await record(w)).status.outcome, 'written');
    const failure = all[0]!;
    const before = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.equal(before.status, S.Completed);
    assert.ok(!before.appliedMessageIds?.includes(failure.messageId), "the failure's id has dropped off the list");
    // Its copy (its completion lost): on the code before, written, Failed for good.
    await assertRefusedByEveryPath(ep, failure, all.at(-1)!, S.Completed);
  });

  test("a failure whose row write never landed, after its retry and a success (a throttle replacement): refused, the row stays Completed", async () => {
    const { ep, request, failure } = await failureNotWritten();
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: request.messageId, retryCount: 1 });
    const success = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: retry.messageId });
    for (const w of [retry, success]) assert.equal((await record(w)).status.outcome, 'written');
    // Its replacement keeps its MessageId: on the code before, written, Failed for good.
    await assertRefusedByEveryPath(ep, failure, success, S.Completed);
  });

  test('a retry refused as late (the event skipped meanwhile) still supersedes its failure: the row stays Skipped', async () => {
    const { ep, request, failure } = await failureNotWritten();
    const skip = msg(T.SkipRequest, { endpointId: ep, eventId: 'e', from: 'Manager', to: ep, parentMessageId: request.messageId });
    const skipped = msg(T.SkipResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: skip.messageId });
    for (const w of [skip, skipped]) assert.equal((await record(w)).status.outcome, 'written');
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: request.messageId, retryCount: 1 });
    const late = await record(retry);
    assert.deepEqual(late.status.outcome === 'ignored' && late.status.reason, 'retry-after-settlement');
    await assertRefusedByEveryPath(ep, failure, skipped, S.Skipped);
  });

  test('a final failure (no retry beside it) whose row write never landed is written after another message; so is a failure of another delivery', async () => {
    for (const path of ['recordOutcome', 'writeStatuses'] as const) {
      const { ep, request, failure: final } = await failureNotWritten();
      // A retry of another delivery of the event (a resubmission's) does not name the failed one.
      const resubmit = msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', from: 'Manager', to: ep, parentMessageId: request.messageId });
      await record(resubmit);
      await record(msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: resubmit.messageId, retryCount: 1 }));
      if (path === 'recordOutcome') {
        const single = await record(final);
        assert.equal(single.history.recorded, false);
        assert.equal(single.status.outcome, 'written', 'unchanged: a first application, nothing retried its delivery');
      } else {
        const [bulk] = await f.store.writeStatuses([{ input: final }]);
        assert.ok(bulk?.ok && bulk.value.outcome === 'written', path);
      }
      assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Failed, path);
    }
  });

  test('a failure none of whose history landed, recorded after its retry and a success by a caller that says it may be late (mayBeLate): refused by recordOutcome and recordOutcomes', async () => {
    // The Resolver's throttle replacement of a failure whose history create was throttled: this call creates the
    // entry, so without the flag the store takes it for a first arrival and asks nothing (written, Failed for good).
    for (const path of ['recordOutcome', 'recordOutcomes'] as const) {
      const ep = uniq('ep');
      const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
      const failure = failureOf(ep, request.messageId);
      const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: request.messageId, retryCount: 1 });
      const success = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: retry.messageId });
      for (const w of [request, retry, success]) assert.equal((await record(w)).status.outcome, 'written');
      const late =
        path === 'recordOutcome'
          ? await f.store.recordOutcome({ history: asHistory(failure), status: failure, mayBeLate: true })
          : // Beside a message new to the history, so the batch creates both entries (a copy in it fails the batch).
            (await f.store.recordOutcomes([failure, msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: retry.messageId })].map((w) => ({ history: asHistory(w), status: w, mayBeLate: w === failure }))))[0]!;
      assert.equal(late.history.recorded, true, `${path}: this call created its history entry`);
      assert.deepEqual(late.status.outcome === 'ignored' && late.status.reason, 'superseded-by-retry', path);
      assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Completed, path);
    }
  });

  test('a replacement whose original enqueue time is unknown (recorded with its own, later, time) is refused: taken as the oldest, by recordOutcome and recordOutcomes', async () => {
    // The Resolver records a replacement whose OriginalEnqueuedTimeUtc is missing or unreadable with its own broker
    // time, when its schedule came due: after the retry the SDK sent beside the failure. Rule 8's bound at that time
    // found no retry, and the failure was written over the retry's success: Failed for good (on the code before).
    const { ep, request, failure } = await failureNotWritten();
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: request.messageId, retryCount: 1 });
    const success = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: retry.messageId });
    for (const w of [retry, success]) assert.equal((await record(w)).status.outcome, 'written');
    const replacement: StatusWrite = { ...failure, enqueuedAt: new Date(Date.now() + 60_000).toISOString() };
    const single = await f.store.recordOutcome({ history: asHistory(replacement), status: replacement, originalTimeUnknown: true });
    assert.deepEqual(single.status.outcome === 'ignored' && single.status.reason, 'superseded-by-retry');
    const lot = await f.store.recordOutcomes(
      [replacement, success].map((w) => ({ history: asHistory(w), status: w, originalTimeUnknown: w === replacement })),
    );
    assert.deepEqual(lot[0]!.status.outcome === 'ignored' && lot[0]!.status.reason, 'superseded-by-retry');
    const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.deepEqual([row.status, row.lastMessageId], [S.Completed, success.messageId]);
  });

  test("an older SDK's retry ids repeat from one series to the next: a later series' final failure is not refused by an earlier series' retry", async () => {
    // SDKs before per-delivery retry ids derived a retry's MessageId from the event and its count, so the retry
    // deliveries of two series of one event share ids, and so do the parents of their failures and next retries.
    const ep = uniq('ep');
    const oldRetryId = (n: number) => `retry-${ep}-${n}`;
    const t = (w: StatusWrite, s: number): StatusWrite => ({ ...w, enqueuedAt: at(s) });
    // Series 1: the delivery fails, retry 1 fails and schedules retry 2 (naming retry 1's id), retry 2 succeeds.
    const d1 = t(msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep }), 0);
    const r1 = t(msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, messageId: oldRetryId(1), parentMessageId: d1.messageId, retryCount: 1 }), 2);
    const r2 = t(msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, messageId: oldRetryId(2), parentMessageId: r1.messageId, retryCount: 2 }), 4);
    const ok = t(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: r2.messageId }), 5);
    for (const w of [d1, t(failureOf(ep, d1.messageId), 1), r1, t(failureOf(ep, r1.messageId), 3), r2, ok]) assert.equal((await record(w)).status.outcome, 'written');
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Completed);
    // Series 2: the event delivered again fails; its retry 1 carries retry 1's id again (applied over Failed) and
    // fails with an error the policy does not retry: its failure, naming that id, is the last word.
    const d2 = t(msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep }), 10);
    await record(d2);
    assert.equal((await record(t(failureOf(ep, d2.messageId), 11))).status.outcome, 'written');
    const r1Again = t(msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, messageId: oldRetryId(1), parentMessageId: d2.messageId, retryCount: 1 }), 12);
    assert.equal((await record(r1Again)).status.outcome, 'written');
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Pending);
    // Its history lands, its row write does not (a 429); its replacement (the same enqueue time) is asked rule 8's
    // question and finds series 1's retry 2, which names the same id but was enqueued before it. On the code before,
    // refused superseded-by-retry: the row stayed Pending, the session blocked, nothing to retry it.
    const final = t(failureOf(ep, oldRetryId(1)), 13);
    await f.store.recordHistory(asHistory(final));
    const replacement = await record(final);
    assert.equal(replacement.history.recorded, false, 'its history entry was there: the store asked the history');
    assert.equal(replacement.status.outcome, 'written');
    const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.deepEqual([row.status, row.lastMessageId], [S.Failed, final.messageId]);
  });

  test('the normal order, the failure then its retry, writes both: one by one and in one row group', async () => {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
    await record(request);
    const failure = failureOf(ep, request.messageId);
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: request.messageId, retryCount: 1 });
    assert.equal((await record(failure)).status.outcome, 'written');
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Failed);
    assert.equal((await record(retry)).status.outcome, 'written');
    // The next delivery's failure and retry in one receive: the history of both is written first, the failure's
    // entry by this call (recorded), so it is not asked.
    const failure2 = failureOf(ep, retry.messageId);
    const retry2 = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: retry.messageId, retryCount: 2 });
    const lot = await f.store.recordOutcomes([failure2, retry2].map((w) => ({ history: asHistory(w), status: w })));
    assert.deepEqual(lot.map((r) => r.status.outcome), ['written', 'written']);
    const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.deepEqual([row.status, row.lastMessageId], [S.Pending, retry2.messageId]);
  });
});

describe('a failure and its retry both throttled: a later answer supersedes the failure (rule 9)', () => {
  /**
   * D delivered (the request), failed: ErrorResponse E and the policy's RetryRequest Y both name D, and both history
   * creates answered 429 (nothing of either stored, the replacements wait 5 s and more). Y's run succeeded: C, naming
   * Y, recorded. The enqueue times are the broker's: D, E, Y, C in that order.
   */
  async function bothThrottledRetrySucceeded() {
    const ep = uniq('ep');
    const t = (w: StatusWrite, s: number): StatusWrite => ({ ...w, enqueuedAt: at(s) });
    const request = t(msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep }), 0);
    const failure = t(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' }), 1);
    const retry = t(msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: request.messageId, retryCount: 1 }), 2);
    const success = t(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: retry.messageId }), 3);
    for (const w of [request, success]) assert.equal((await record(w)).status.outcome, 'written');
    return { ep, failure, retry, success };
  }
  /** The Resolver's replacement of `w` (mayBeLate: its earlier history create failed), by one path. */
  const replacement = async (path: 'recordOutcome' | 'recordOutcomes', w: StatusWrite) =>
    path === 'recordOutcome'
      ? await f.store.recordOutcome({ history: asHistory(w), status: w, mayBeLate: true })
      : (await f.store.recordOutcomes([{ history: asHistory(w), status: w, mayBeLate: true }]))[0]!;
  const reason = (r: Awaited<ReturnType<typeof replacement>>) => (r.status.outcome === 'ignored' ? r.status.reason : `written ${r.status.row.status}`);

  test('the replacements in either order, by recordOutcome and recordOutcomes: both refused, the row stays Completed and counted once', async () => {
    // Review: E's replacement found no RetryRequest naming D (Y never stored), so rule 8 let it turn the Completed row
    // Failed; Y's replacement then met a Failed row naming D, not Y (rule 2), and set it Pending for good (counters
    // Pending 1, Completed 0). Y first: refused already-answered, then E turned the row Failed. Both on the code before.
    for (const path of ['recordOutcome', 'recordOutcomes'] as const) {
      for (const order of ['failure first', 'retry first'] as const) {
        const { ep, failure, retry, success } = await bothThrottledRetrySucceeded();
        const what = `${path}, ${order}`;
        const ws = order === 'failure first' ? [failure, retry] : [retry, failure];
        const answers = new Map<StatusWrite, string>();
        for (const w of ws) answers.set(w, reason(await replacement(path, w)));
        // Retry first: Y's replacement stores Y's history entry (refused, as its answer C is on the row), so E then
        // finds Y and rule 8 refuses it; failure first, nothing of Y is stored yet and rule 9 does.
        assert.equal(answers.get(failure), order === 'failure first' ? 'superseded-by-later-answer' : 'superseded-by-retry', what);
        assert.equal(answers.get(retry), 'already-answered', what);
        const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
        assert.deepEqual([row.status, row.lastMessageId], [S.Completed, success.messageId], what);
        const counts = await f.store.getCounts(ep);
        assert.deepEqual([counts.completed, counts.pending, counts.failed], [1, 0, 0], what);
      }
    }
  });

  test("a late retry whose run was answered is refused although the row moved on since (rule 2's history form), by recordOutcome and recordOutcomes", async () => {
    // After C (naming Y), a resubmission R and its final failure F: the row is Failed, naming R. Y's replacement met a
    // row naming R, not Y (rule 2 reads the row's parent only; rule 5 refuses over Completed and Skipped only), and
    // set it Pending for good: the subscriber ran Y already. On the code before, written Pending.
    for (const path of ['recordOutcome', 'recordOutcomes'] as const) {
      const { ep, retry } = await bothThrottledRetrySucceeded();
      const t = (w: StatusWrite, s: number): StatusWrite => ({ ...w, enqueuedAt: at(s) });
      const resubmit = t(msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', from: 'Manager', to: ep, parentMessageId: retry.messageId }), 4);
      const final = t(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: resubmit.messageId, errorType: 'E', errorText: 'final' }), 5);
      for (const w of [resubmit, final]) assert.equal((await record(w)).status.outcome, 'written', path);
      assert.equal(reason(await replacement(path, retry)), 'already-answered', path);
      const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
      assert.deepEqual([row.status, row.lastMessageId], [S.Failed, final.messageId], path);
    }
  });

  test("a late retry named only by an answer enqueued before it (an older SDK's repeated retry id) is not refused", async () => {
    const ep = uniq('ep');
    const t = (w: StatusWrite, s: number): StatusWrite => ({ ...w, enqueuedAt: at(s) });
    const request = t(msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep }), 0);
    const retryId = `retry-${ep}-1`;
    // Series 1's answer to retry 1 (its id derived from the event), then the row failed; series 2's retry 1 carries
    // the same id, its first record throttled, its replacement late: series 1's answer does not answer it.
    const answered = t(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: retryId, errorType: 'E', errorText: 'series 1' }), 1);
    const failed = t(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: request.messageId, errorType: 'E', errorText: 'series 2' }), 2);
    for (const w of [request, answered, failed]) assert.equal((await record(w)).status.outcome, 'written');
    const retry = t(msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, messageId: retryId, parentMessageId: request.messageId, retryCount: 1 }), 3);
    assert.equal(reason(await replacement('recordOutcome', retry)), 'written Pending');
  });

  test('a late failure over a settled answer to an earlier delivery applies: it is the newer word', async () => {
    // The mirror case, by the spec's order of original enqueue times: the row's version (C0, answering the request)
    // was enqueued before the failure of a later delivery D (a resubmission whose own record was lost), so E applies.
    for (const path of ['recordOutcome', 'recordOutcomes'] as const) {
      const ep = uniq('ep');
      const t = (w: StatusWrite, s: number): StatusWrite => ({ ...w, enqueuedAt: at(s) });
      const request = t(msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep }), 0);
      const done = t(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: request.messageId }), 1);
      for (const w of [request, done]) assert.equal((await record(w)).status.outcome, 'written');
      const failure = t(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: `resubmit-${ep}`, errorType: 'E', errorText: 'boom' }), 5);
      assert.equal(reason(await replacement(path, failure)), 'written Failed', path);
    }
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
    // A final failure of another delivery (no retry names it), so rule 8's question finds nothing either.
    const fresh = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: uniq('final-delivery'), errorType: 'E', errorText: 'late' });
    assert.equal((await rec(fresh)).status.outcome, 'written');
    assert.equal(historyQueries(from), 0, 'the common path asks nothing');
    // Eight more messages push it off the list; then its copy is asked about (nothing names it: written again).
    for (const w of series(ep, request.messageId, 4).slice(0, 8)) await rec(w);
    const before = p.proxy.seen.length;
    assert.equal((await rec(fresh)).status.outcome, 'written');
    assert.equal(historyQueries(before), 1, "rule 7's and rule 8's questions in one query");
  });

  test("a failure's first arrival sends none, alone or in a row group with its retry; its replacement sends one", async () => {
    const ep = uniq('ep');
    const rec = (w: StatusWrite) => p.store.recordOutcome({ history: asHistory(w), status: w });
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
    await rec(request);
    const failure = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: request.messageId, retryCount: 1 });
    let from = p.proxy.seen.length;
    assert.equal((await rec(failure)).status.outcome, 'written');
    assert.equal((await rec(retry)).status.outcome, 'written');
    assert.equal(historyQueries(from), 0, 'one by one');
    const failure2 = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: retry.messageId, errorType: 'E', errorText: 'again' });
    const retry2 = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: retry.messageId, retryCount: 2 });
    from = p.proxy.seen.length;
    const lot = await p.store.recordOutcomes([failure2, retry2].map((w) => ({ history: asHistory(w), status: w })));
    assert.deepEqual(lot.map((r) => r.status.outcome), ['written', 'written']);
    assert.equal(historyQueries(from), 0, 'in one row group');
    // A copy still on the applied ids: rule 7 refuses it, nothing asked.
    from = p.proxy.seen.length;
    const copy = await rec(failure2);
    assert.deepEqual(copy.status.outcome === 'ignored' && copy.status.reason, 'already-applied');
    assert.equal(historyQueries(from), 0, 'rule 7 decides first');
    // A failure whose row write never landed (its history alone), then its retry: its replacement asks once.
    const failure3 = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: retry2.messageId, errorType: 'E', errorText: 'third' });
    await p.store.recordHistory(asHistory(failure3));
    await rec(msg(T.RetryRequest, { endpointId: ep, eventId: 'e', to: ep, parentMessageId: retry2.messageId, retryCount: 3 }));
    from = p.proxy.seen.length;
    const replacement = await rec(failure3);
    assert.deepEqual(replacement.status.outcome === 'ignored' && replacement.status.reason, 'superseded-by-retry');
    assert.equal(historyQueries(from), 1);
  });
});
