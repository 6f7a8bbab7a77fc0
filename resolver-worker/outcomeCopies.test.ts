// Copies that come back. A terminal write (an ErrorResponse) passes the stale-write guard over any row, so when it and
// a later message of its row both come back (a crash before their completions, a lost session lock, a stop leaving
// a write running, completions given up at the broker deadline) the copy is applied again over the later version;
// the later message's copy after it puts the row back, and the outcome must still be counted once, on the row-group
// path (both messages in one receive) and on the single-message path (each alone). When the failure's copy comes
// back alone (only its completion was lost), nothing would put the row back: the guard refuses it (already-applied),
// and past the applied ids, after its own retry series, because the history holds the retry of its delivery
// (superseded-by-retry).
// A claim undone by a restore is no applied message: its command reaching the Resolver afterwards still applies. A
// console command (resubmit, skip) is counted once too, although its row version replaces the Manager's claim of the
// same message id. A console command's copy that comes back after its answer and a later message is refused too;
// its first record - behind messages enqueued before its claim, or after an attempt whose history landed and whose row
// write did not - applies. Real emulator and embedded Cosmos; each phase's Resolver is stopped before the series is read,
// and its stop flushes the series.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, Prop, ResolutionStatus as S } from '@nimbus/sdk/contract';
import { TimeSeriesStore, type OutcomeCount } from '../lib/store/index.ts';
import { claimExpectation, claimWrite } from '../server/manager/manager.ts';
import { deriveId } from '../packages/sdk/src/outbound.ts';
import { ResolverHarness, errorBody, eventually, type WireMessage } from './testHarness.ts';

let h: ResolverHarness;
before(async () => {
  h = await ResolverHarness.start();
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

/** Completions of `messageId` so far. */
const completions = (messageId: string) => h.settled.filter((s) => s.messageId === messageId && s.ok && s.settlement.kind === 'complete').length;

/** A failure recorded on a row, then the retry policy's RetryRequest answering it (the row back to Pending). */
function failureThenRetry() {
  const ep = uniq('crm');
  const eventId = uniq('e');
  const sessionId = uniq('s');
  const x: WireMessage = { type: T.ErrorResponse, messageId: uniq('x'), eventId, sessionId, from: ep, parentMessageId: uniq('req'), body: errorBody('boom') };
  const y: WireMessage = { type: T.RetryRequest, messageId: uniq('y'), eventId, sessionId, to: ep, from: 'shop', parentMessageId: x.messageId, props: { RetryCount: 1 } };
  return { ep, eventId, sessionId, x, y };
}

/** The count the stored series holds for the endpoint (every bucket of the last hour and the next). */
async function countOf(ep: string, name: OutcomeCount): Promise<number> {
  const now = Date.now();
  const series = await new TimeSeriesStore(h.store.database).query({ from: now - 3_600_000, to: now + 3_600_000, bucketMs: 3_600_000, endpointId: ep });
  return series.find((s) => s.name === name)!.points.reduce((n, [, v]) => n + (v ?? 0), 0);
}
const failedCount = (ep: string) => countOf(ep, 'failed');

/**
 * Sends the messages before a Resolver starts, so one receive takes them all (one row: the row-group path), and
 * stops it once each is completed `times` times in all.
 */
async function inOneReceive(msgs: WireMessage[], times: number): Promise<void> {
  for (const m of msgs) await h.send(m);
  const r = h.resolver({ maxMessagesPerReceive: 50, history: { flushMs: 100 } });
  try {
    for (const m of msgs) await eventually(() => completions(m.messageId!) >= times || undefined, `completion ${times} of ${m.messageId}`);
  } finally {
    await r.stop();
  }
}

/** Sends each message only once the one before is completed, so each is resolved alone (the single-message path). */
async function oneByOne(msgs: WireMessage[], times: number): Promise<void> {
  const r = h.resolver({ history: { flushMs: 100 } });
  try {
    for (const m of msgs) {
      await h.send(m);
      await eventually(() => completions(m.messageId!) >= times || undefined, `completion ${times} of ${m.messageId}`);
    }
  } finally {
    await r.stop();
  }
}

describe('an ErrorResponse and the RetryRequest after it both come back', () => {
  for (const [path, deliver] of [
    ['in one receive (a row group)', inOneReceive],
    ['one by one (single messages)', oneByOne],
  ] as const) {
    test(`${path}: the row ends Pending and the failure is counted once`, async () => {
      const { ep, eventId, sessionId, x, y } = failureThenRetry();
      await deliver([x, y], 1);
      const first = await h.store.getStatusRow(ep, eventId, sessionId);
      assert.equal(first?.status, 'Pending');
      assert.equal(first?.lastMessageId, y.messageId);
      assert.equal(await failedCount(ep), 1, 'the failure counted when it was recorded');

      // The same two message ids again: the copy of the failure is refused (already-applied), the retry's copy is
      // applied again over its own version.
      await deliver([x, y], 2);
      const again = await h.store.getStatusRow(ep, eventId, sessionId);
      assert.equal(again?.status, 'Pending');
      assert.equal(again?.lastMessageId, y.messageId);
      assert.equal(await failedCount(ep), 1, 'the copies add no second failure');
    });
  }
});

describe('the ErrorResponse comes back alone (only its completion was lost)', () => {
  test('the copy is refused as already applied: the row still shows the retry, the failure is counted once', async () => {
    const { ep, eventId, sessionId, x, y } = failureThenRetry();
    await oneByOne([x, y], 1);
    await oneByOne([x], 2);
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    // On the code before, the copy passed the guard (a terminal write) and set the row back to Failed for good.
    assert.equal(row?.status, S.Pending);
    assert.equal(row?.lastMessageId, y.messageId);
    const comments = (await h.store.listAudits(eventId)).items.filter((a) => a.type === 'Comment').map((a) => a.comment);
    assert.deepEqual(comments, [`Ignored stale ErrorResponse ${x.messageId}: the row already holds a later outcome (already-applied).`], 'refused as a stale write is, with its Comment audit');
    const history = (await h.store.listHistory(eventId)).items.filter((e) => e.messageId === x.messageId);
    assert.equal(history.length, 1, "the copy's history entry was there already");
    assert.equal(await failedCount(ep), 1);
  });
});

describe('a claim undone by a restore, then its command reaches the Resolver (a send in doubt)', () => {
  test('the command applies: the row shows it, Pending', async () => {
    const ep = uniq('crm');
    const eventId = uniq('e');
    const sessionId = uniq('s');
    const x: WireMessage = { type: T.ErrorResponse, messageId: uniq('x'), eventId, sessionId, from: ep, parentMessageId: uniq('req'), body: errorBody('boom') };
    await oneByOne([x], 1);
    const failed = (await h.store.getStatusRow(ep, eventId, sessionId))!;
    // The Manager's claim of a skip, then its undo after the send seemed to fail (manager.ts #sendFailed).
    const skipId = uniq('mgr');
    const claim = await h.store.writeStatus(
      { endpointId: ep, eventId, sessionId, messageId: skipId, messageType: T.SkipRequest, parentMessageId: x.messageId, from: 'Manager', to: ep, enqueuedAt: new Date().toISOString() },
      { lastMessageId: x.messageId, status: S.Failed, claim: true },
    );
    assert.equal(claim.outcome, 'written');
    assert.equal((await h.store.restoreStatusRow(failed, { status: S.Pending, lastMessageId: skipId })).outcome, 'written');
    // The send had reached the broker after all: the command comes to the Resolver.
    await oneByOne([{ type: T.SkipRequest, messageId: skipId, eventId, sessionId, to: ep, from: 'Manager', parentMessageId: x.messageId }], 1);
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    assert.equal(row?.status, S.Pending);
    assert.equal(row?.lastMessageId, skipId);
  });
});

/** The retry policy's RetryRequest on the failure a claimed `command` answers too, then that retry's own failure. */
function retryAndItsFailure(command: WireMessage, ep: string, eventId: string, sessionId: string) {
  const retry: WireMessage = { type: T.RetryRequest, messageId: uniq('y'), eventId, sessionId, to: ep, from: 'shop', parentMessageId: command.parentMessageId, props: { RetryCount: 1 } };
  const failedAgain: WireMessage = { type: T.ErrorResponse, messageId: uniq('x2'), eventId, sessionId, from: ep, parentMessageId: retry.messageId, body: errorBody('boom') };
  return { retry, failedAgain };
}

/** An event failed on its row, then the Manager's claim of `kind` on it, as the Manager writes it before the send. */
async function failedThenClaimed(kind: 'resubmit' | 'skip') {
  const { ep, eventId, sessionId, x } = failureThenRetry();
  await oneByOne([x], 1);
  const failed = await h.store.getStatusRow(ep, eventId, sessionId);
  assert.equal(failed?.status, 'Failed');
  // The row Pending under the command's own id (derived from the message it answers).
  const claim = claimWrite({ kind }, failed!, failed!.lastMessageId, failed!.eventTypeId, undefined);
  const claimed = await h.store.writeStatus(claim, claimExpectation(failed!));
  assert.equal(claimed.outcome, 'written');
  // The command as the Manager sends it (the Manager topic's rule stamps From).
  const command: WireMessage = {
    type: kind === 'resubmit' ? T.ResubmissionRequest : T.SkipRequest,
    messageId: claim.messageId,
    eventId,
    sessionId,
    to: ep,
    from: 'Manager',
    parentMessageId: x.messageId,
  };
  return { ep, eventId, sessionId, x, command };
}

describe('a console command whose claim the Manager wrote before sending it', () => {
  test('a resubmit is counted once: when the Resolver records it, not again when its copy comes back', async () => {
    const { ep, eventId, sessionId, command } = await failedThenClaimed('resubmit');
    await oneByOne([command], 1);
    assert.equal((await h.store.getStatusRow(ep, eventId, sessionId))?.lastMessageId, command.messageId);
    assert.equal(await countOf(ep, 'resubmitted'), 1, 'the resubmit counted when the Resolver recorded it (0 before)');

    await oneByOne([command], 2);
    assert.equal(await countOf(ep, 'resubmitted'), 1, 'its copy adds none');
  });

  test("a skip is counted by the subscriber's SkipResponse (the command itself has no count), once", async () => {
    const { ep, eventId, sessionId, command } = await failedThenClaimed('skip');
    await oneByOne([command], 1);
    const response: WireMessage = { type: T.SkipResponse, messageId: uniq('skipped'), eventId, sessionId, from: ep, parentMessageId: command.messageId };
    await oneByOne([response], 1);
    assert.equal((await h.store.getStatusRow(ep, eventId, sessionId))?.status, 'Skipped');
    assert.equal(await countOf(ep, 'skipped'), 1);

    await oneByOne([command, response], 2);
    assert.equal(await countOf(ep, 'skipped'), 1, 'the copies add none');
  });
});

describe("a console command's copy that comes back after its answer and a later message", () => {
  test('is refused as already applied: the row stays Completed, the resubmit is counted once', async () => {
    // Rule 6 let a control request through over anything but its own answer, so the resubmit's copy set the
    // Completed row back to Pending, for good (the answer's copy never comes back to undo it).
    const { ep, eventId, sessionId, command } = await failedThenClaimed('resubmit');
    await oneByOne([command], 1);
    const answer: WireMessage = { type: T.ResolutionResponse, messageId: uniq('r'), eventId, sessionId, from: ep, parentMessageId: command.messageId };
    // A later message of the row (a response whose parent is not the command: rule 2 no longer sees the command).
    const later: WireMessage = { type: T.ResolutionResponse, messageId: uniq('l'), eventId, sessionId, from: ep, parentMessageId: `${command.messageId}~parked~replayed` };
    await oneByOne([answer, later], 1);
    await oneByOne([command], 2);
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    assert.equal(row?.status, S.Completed, 'the copy does not set the row back (Pending before)');
    assert.equal(row?.lastMessageId, later.messageId);
    assert.equal(await countOf(ep, 'resubmitted'), 1, 'the refused copy adds none');
    const comments = (await h.store.listAudits(eventId)).items.filter((a) => a.type === 'Comment').map((a) => a.comment);
    assert.deepEqual(comments, [`Ignored stale ResubmissionRequest ${command.messageId}: the row already holds a later outcome (already-applied).`]);
  });

  for (const [path, deliver] of [
    ['in one receive (a row group)', inOneReceive],
    ['one by one (single messages)', oneByOne],
  ] as const) {
    test(`${path}: recorded for the first time behind messages enqueued before its claim, it applies and is counted`, async () => {
      // A Resolver behind on the session: the retry and its failure, enqueued before the operator's claim, are recorded
      // after it, so the row's last message is no longer the claim's when the command itself arrives.
      const { ep, eventId, sessionId, command } = await failedThenClaimed('resubmit');
      const { retry, failedAgain } = retryAndItsFailure(command, ep, eventId, sessionId);
      await deliver([retry, failedAgain, command], 1);
      const row = await h.store.getStatusRow(ep, eventId, sessionId);
      assert.equal(row?.status, S.Pending);
      assert.equal(row?.lastMessageId, command.messageId);
      assert.equal(await countOf(ep, 'resubmitted'), 1);
    });
  }

  test('the batch of a retry, its failure and the command, redelivered after a lost lock: the row shows the command again', async () => {
    // The retry's copy is applied again over the command (a RetryRequest over Pending passes rules 1-6), the failure's
    // copy is refused (already-applied); the command's copy must then apply and put the row back, as before rule 7
    // asked commands. Refused, the row showed the retry, Reconcile offered the failure as its stale outcome, and a
    // refusal notice for the command found no row version of its own to restore (review).
    const { ep, eventId, sessionId, command } = await failedThenClaimed('resubmit');
    const { retry, failedAgain } = retryAndItsFailure(command, ep, eventId, sessionId);
    await inOneReceive([retry, failedAgain, command], 1);
    await inOneReceive([retry, failedAgain, command], 2);
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    assert.deepEqual([row?.status, row?.messageType, row?.lastMessageId], [S.Pending, T.ResubmissionRequest, command.messageId]);
    assert.equal(await countOf(ep, 'resubmitted'), 1);
  });

  test("recorded after an attempt whose history landed and whose row write did not, behind a later message: it applies", async () => {
    // The case that refused a command's first real application when "recorded before" was asked of its history entry
    // (a throttled write's replacement keeps the MessageId; a redelivery): the row must show the command the
    // subscriber runs, not the failure before it.
    const { ep, eventId, sessionId, command } = await failedThenClaimed('resubmit');
    await h.store.recordHistory({ endpointId: ep, eventId, sessionId, messageId: command.messageId!, messageType: T.ResubmissionRequest, parentMessageId: command.parentMessageId ?? null, from: 'Manager', to: ep, enqueuedAt: new Date().toISOString() });
    const { retry, failedAgain } = retryAndItsFailure(command, ep, eventId, sessionId);
    await oneByOne([retry, failedAgain, command], 1);
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    assert.deepEqual([row?.status, row?.lastMessageId], [S.Pending, command.messageId]);
    const comments = (await h.store.listAudits(eventId)).items.filter((a) => a.type === 'Comment');
    assert.deepEqual(comments, [], 'nothing refused');
  });
});

describe("the retry policy's next series after a resubmit (a RetryRequest id the row applied before)", () => {
  test('its RetryRequest applies: the row shows the retry the subscriber runs, not the failure before it', async () => {
    // Earlier SDK versions derived a retry's MessageId from the event id and the retry count, so retry 1 of a second
    // series had the first series' retry 1's id (the SDK now derives it from the failed delivery, outbound.ts; the
    // id below is the old derivation, as an endpoint on such a version sends it). With the already-applied rule asked
    // of every write it was refused, and the row stayed Failed (review).
    const ep = uniq('crm');
    const eventId = uniq('e');
    const sessionId = uniq('s');
    const x1: WireMessage = { type: T.ErrorResponse, messageId: uniq('x1'), eventId, sessionId, from: ep, parentMessageId: uniq('req'), body: errorBody('boom') };
    const retry1: WireMessage = { type: T.RetryRequest, messageId: deriveId('retry', eventId, 1), eventId, sessionId, to: ep, from: 'shop', parentMessageId: x1.messageId, props: { RetryCount: 1 } };
    const x2: WireMessage = { type: T.ErrorResponse, messageId: uniq('x2'), eventId, sessionId, from: ep, parentMessageId: retry1.messageId, body: errorBody('boom') };
    await oneByOne([x1, retry1, x2], 1);
    const failed = (await h.store.getStatusRow(ep, eventId, sessionId))!;
    const claim = claimWrite({ kind: 'resubmit' }, failed, failed.lastMessageId, failed.eventTypeId, { a: 1 });
    assert.equal((await h.store.writeStatus(claim, claimExpectation(failed))).outcome, 'written');
    const command: WireMessage = { type: T.ResubmissionRequest, messageId: claim.messageId, eventId, sessionId, to: ep, from: 'Manager', parentMessageId: x2.messageId };
    const x3: WireMessage = { type: T.ErrorResponse, messageId: uniq('x3'), eventId, sessionId, from: ep, parentMessageId: command.messageId, body: errorBody('boom') };
    await oneByOne([command, x3], 1);
    await oneByOne([{ ...retry1, parentMessageId: x3.messageId }], 2);
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    assert.equal(row?.status, S.Pending, 'the retry the subscriber is running');
    assert.equal(row?.lastMessageId, retry1.messageId);
  });
});

/**
 * A retry series as the SDK sends it from `first`, the delivery that failed: each failed delivery answers with an
 * ErrorResponse and schedules a RetryRequest, both naming that delivery (not the failure); the last retry succeeds.
 */
function retrySeries(ep: string, eventId: string, sessionId: string, first: string, failures: number): WireMessage[] {
  const out: WireMessage[] = [];
  let delivery = first;
  for (let i = 1; i <= failures; i++) {
    const retry: WireMessage = { type: T.RetryRequest, messageId: uniq(`r${i}`), eventId, sessionId, to: ep, from: 'shop', parentMessageId: delivery, props: { RetryCount: i } };
    out.push({ type: T.ErrorResponse, messageId: uniq(`x${i}`), eventId, sessionId, from: ep, parentMessageId: delivery, body: errorBody('boom') }, retry);
    delivery = retry.messageId!;
  }
  out.push({ type: T.ResolutionResponse, messageId: uniq('ok'), eventId, sessionId, from: ep, parentMessageId: delivery });
  return out;
}

/**
 * A row completed by a retry series of 5 failures from a first delivery (retrySeries): 11 messages, so the first
 * failure `x` has dropped off the row's applied ids (8 kept) and rule 7 no longer refuses its copy first.
 */
async function completedPastFirstFailure() {
  const ep = uniq('crm');
  const eventId = uniq('e');
  const sessionId = uniq('s');
  const all = retrySeries(ep, eventId, sessionId, uniq('req'), 5);
  await oneByOne(all, 1);
  const completed = (await h.store.getStatusRow(ep, eventId, sessionId))!;
  const x = all[0]!;
  assert.equal(completed.status, S.Completed);
  assert.ok(!completed.appliedMessageIds?.includes(x.messageId!), "the failure's id has dropped off the list");
  return { ep, eventId, sessionId, x, completed };
}

describe('the ErrorResponse comes back alone after more than 7 later messages of its row', () => {
  test('answered by a resubmission, then retries and a success: the copy is refused, the row stays Completed', async () => {
    // Its id has dropped off the row's applied ids (8 kept), so rule 7 asks the history: the resubmission names it.
    // On the code before, the copy passed the guard (a terminal write) and turned the Completed row Failed for good.
    const { ep, eventId, sessionId, x, command } = await failedThenClaimed('resubmit');
    // The resubmission's series as the SDK sends it: each failed delivery answers with an ErrorResponse and schedules
    // a RetryRequest, both naming that delivery (not the failure); the fifth delivery succeeds. 10 messages after x.
    const later: WireMessage[] = [command, ...retrySeries(ep, eventId, sessionId, command.messageId!, 4)];
    await oneByOne(later, 1);
    const completed = (await h.store.getStatusRow(ep, eventId, sessionId))!;
    assert.equal(completed.status, S.Completed);
    assert.ok(!completed.appliedMessageIds?.includes(x.messageId!), "the failure's id has dropped off the list");
    const failedBefore = await failedCount(ep);
    assert.equal(failedBefore, 5, 'the failure and the four of the series');

    await oneByOne([x], 2);
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    assert.deepEqual([row?.status, row?.lastMessageId, row?.updatedAt], [S.Completed, completed.lastMessageId, completed.updatedAt]);
    const comments = (await h.store.listAudits(eventId)).items.filter((a) => a.type === 'Comment').map((a) => a.comment);
    assert.deepEqual(comments, [`Ignored stale ErrorResponse ${x.messageId}: the row already holds a later outcome (already-applied).`]);
    assert.equal(await failedCount(ep), failedBefore, 'the copy is not counted');
  });
  test('its own retry series and a success, nothing naming it: the copy is refused (superseded-by-retry), the row stays Completed', async () => {
    // As the SDK sends them: the failure x and its RetryRequest both name the failed delivery, four failed retries
    // (each failure and retry naming that retry's delivery) and a success. Nothing names x, so rule 7's history
    // question finds nothing; rule 8 finds the retry of x's delivery. On the code before, the copy turned the row Failed.
    const { ep, eventId, sessionId, x, completed } = await completedPastFirstFailure();
    const failedBefore = await failedCount(ep);

    // The copy keeps x's enqueue time, as a broker redelivery or the Resolver's throttle replacement does (rule 8
    // counts only a retry enqueued no earlier than the failure): sent again here, the broker would stamp it anew,
    // after its retries, which no real copy is. So it comes as x's replacement, with its first enqueue time.
    const enqueuedAt = (await h.store.listHistory(eventId)).items.find((e) => e.messageId === x.messageId)!.enqueuedAt;
    await oneByOne([{ ...x, props: { ...x.props, [Prop.ThrottleRetryCount]: 1, [Prop.OriginalEnqueuedTimeUtc]: enqueuedAt } }], 2);
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    assert.deepEqual([row?.status, row?.lastMessageId, row?.updatedAt], [S.Completed, completed.lastMessageId, completed.updatedAt]);
    const comments = (await h.store.listAudits(eventId)).items.filter((a) => a.type === 'Comment').map((a) => a.comment);
    assert.deepEqual(comments, [`Ignored stale ErrorResponse ${x.messageId}: the row already holds a later outcome (superseded-by-retry).`]);
    assert.equal(await failedCount(ep), failedBefore, 'the copy is not counted');
  });

  test('a replacement without a readable OriginalEnqueuedTimeUtc is taken as the oldest: refused, the row stays Completed', async () => {
    // An older Resolver's replacement (no property) or one whose value is unreadable: recorded with its own broker
    // time, after its retries. Rule 8 bounded at that time found no retry: on the code before, the row turned Failed.
    // Past the applied ids (as above), so rule 7 does not refuse it first and rule 8 decides.
    const { ep, eventId, sessionId, x, completed } = await completedPastFirstFailure();
    const replacements: Array<Record<string, string | number>> = [
      { [Prop.ThrottleRetryCount]: 1 },
      { [Prop.ThrottleRetryCount]: 2, [Prop.OriginalEnqueuedTimeUtc]: 'yesterday' },
    ];
    for (const [k, props] of replacements.entries()) {
      await oneByOne([{ ...x, props: { ...x.props, ...props } }], k + 2);
      const row = await h.store.getStatusRow(ep, eventId, sessionId);
      assert.deepEqual([row?.status, row?.lastMessageId], [S.Completed, completed.lastMessageId], JSON.stringify(props));
    }
  });
});
