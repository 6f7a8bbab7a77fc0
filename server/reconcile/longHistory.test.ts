// Reconcile on a long event (real store on the embedded Cosmos server): the history reconcile reads is capped and
// oldest first, so the newest entries - a claim's command, the answer to it, the state it answered - are not in it.
// Each check about one of them reads the store for it: a recorded command is not offered "resend" (a second copy on
// the wire), an answered one is not offered "restore" (it would undo what the endpoint did), a restore (preview and
// apply) goes back to the state the claim answered, a row whose state to restore is unknown is still listed,
// with why and no repair, and a row whose settling answer is past the cap (its status write lost) is found stale
// and re-settled. A young row is decided by its age alone, without paging the history; a row past the cap costs
// one list read (the cap's pages and one page of one entry past it) and one answers query in the preview (and, its
// command unanswered, one query for the newest refusal), and a restore searches its state once. An answer or a
// refusal past the cap is found behind any number of newer entries naming the command that are no answer. The cap is passed
// small here: the same cut as 2,000 entries, planted with a handful.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { ServiceBusClient } from '@azure/service-bus';
import { at, msg, startStoreFixture, uniq, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import type { StatusRow } from '../../lib/store/index.ts';
import { commandMessageId } from '../manager/commands.ts';
import { claimExpectation, Manager } from '../manager/manager.ts';
import { HISTORY_CAP, readEventHistory } from './history.ts';
import { applyStuckRepairs, stuckFinding } from './stuck.ts';
import { applyReconcile, previewReconcile } from './reconcile.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});


/** The Manager's claim of `row` (a skip of its failure) at `enqueuedAt`, then the command as the Resolver records it. */
async function claimSkipRecorded(row: StatusRow, enqueuedAt: string) {
  const skipId = commandMessageId(MessageType.SkipRequest, row, row.lastMessageId);
  const claim = {
    endpointId: row.endpointId,
    eventId: row.eventId,
    sessionId: row.sessionId,
    messageId: skipId,
    messageType: MessageType.SkipRequest,
    eventTypeId: row.eventTypeId,
    parentMessageId: row.lastMessageId,
    from: Topic.Manager,
    to: row.endpointId,
    enqueuedAt,
  };
  const claimed = await f.store.writeStatus(claim, claimExpectation(row));
  assert.ok(claimed.outcome === 'written');
  await f.store.recordHistory(claim);
  return { skipId, claimed };
}

/** The event's other traffic (another session of the same endpoint) at 1..4 s: enough to fill a cap of 3. */
async function fillCap(endpointId: string, eventId: string) {
  for (let i = 1; i <= 4; i++) await f.store.recordHistory({ ...msg(MessageType.EventRequest, { endpointId, eventId, sessionId: 's-other' }), enqueuedAt: at(i) });
}

/** A failure at 0 s, the cap filled, then a skip of it claimed and recorded at 10 s: the skip's answer comes later. */
async function skipRecordedOnLongEvent() {
  const endpointId = 'billingendpoint';
  const eventId = uniq('long');
  const failure = msg(MessageType.ErrorResponse, { endpointId, eventId, enqueuedAt: at(0), errorText: 'boom' });
  const failed = await f.store.writeStatus(failure);
  assert.ok(failed.outcome === 'written');
  await f.store.recordHistory({ ...failure, enqueuedAt: at(0) });
  await fillCap(endpointId, eventId);
  const { skipId, claimed } = await claimSkipRecorded(failed.row, at(10));
  return { endpointId, eventId, skipId, claimed };
}

test('a claim whose command the Resolver recorded past the history cap is not offered a resend', async () => {
  const { endpointId, eventId, skipId, claimed } = await skipRecordedOnLongEvent();

  const history = await readEventHistory(f.store, endpointId, eventId, 3);
  assert.ok(!history.entries.some((h) => h.messageId === skipId), 'precondition: the command is past the cap');

  const finding = await stuckFinding(f.store, claimed.row, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0 });
  assert.ok(finding, 'a recorded command nobody answered is still stuck');
  assert.equal(finding.kind, 'unanswered', `found as ${finding.kind}: ${finding.why}`);
  assert.ok(!finding.repairs.some((r) => r.action === 'resend'), 'never a second copy of a recorded command');
});

test('a restore past the history cap goes back to the state the claim answered, not an old one', async () => {
  const endpointId = 'billingendpoint';
  const eventId = uniq('long');
  // An old state of the row's session, inside the cap; then other traffic filling it; then the newest failure.
  const old = msg(MessageType.ResolutionResponse, { endpointId, eventId, enqueuedAt: at(0) });
  await f.store.recordHistory({ ...old, enqueuedAt: at(0) });
  await fillCap(endpointId, eventId);
  const failure = msg(MessageType.ErrorResponse, { endpointId, eventId, enqueuedAt: at(5), errorText: 'boom' });
  const failed = await f.store.writeStatus(failure);
  assert.ok(failed.outcome === 'written');
  await f.store.recordHistory({ ...failure, enqueuedAt: at(5) });

  const row = failed.row;
  const { claimed } = await claimSkipRecorded(row, at(10));

  const history = await readEventHistory(f.store, endpointId, eventId, 3);
  assert.ok(history.entries.some((h) => h.messageId === old.messageId), 'precondition: the old state is inside the cap');
  assert.ok(!history.entries.some((h) => h.messageId === failure.messageId), 'precondition: the failure the claim answered is past the cap');

  const finding = await stuckFinding(f.store, claimed.row, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0 });
  assert.ok(finding, 'a recorded command nobody answered is still stuck');
  assert.ok(finding.repairs.some((r) => r.action === 'restore'), `restore offered: ${finding.why}`);
  assert.deepEqual(finding.restoresTo, { status: row.status, messageType: MessageType.ErrorResponse, messageId: failure.messageId });
});

test('a claim whose answered state is in no history entry of a capped list is offered no restore', async () => {
  const endpointId = 'billingendpoint';
  const eventId = uniq('long');
  const old = msg(MessageType.ResolutionResponse, { endpointId, eventId, enqueuedAt: at(0) });
  await f.store.recordHistory({ ...old, enqueuedAt: at(0) });
  await fillCap(endpointId, eventId);
  // The failure is the row's state but never recorded: no entry to read by id.
  const failed = await f.store.writeStatus(msg(MessageType.ErrorResponse, { endpointId, eventId, enqueuedAt: at(5), errorText: 'boom' }));
  assert.ok(failed.outcome === 'written');
  const row = failed.row;
  const claimed = await f.store.writeStatus(
    { endpointId, eventId, sessionId: row.sessionId, messageId: commandMessageId(MessageType.SkipRequest, row, row.lastMessageId), messageType: MessageType.SkipRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: at(10) },
    claimExpectation(row),
  );
  assert.ok(claimed.outcome === 'written');

  const history = await readEventHistory(f.store, endpointId, eventId, 3);
  assert.ok(history.entries.some((h) => h.messageId === old.messageId), 'precondition: the old state is inside the cap');

  const finding = await stuckFinding(f.store, claimed.row, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  assert.ok(finding, 'an unsent claim is stuck');
  assert.equal(finding.kind, 'claim');
  assert.deepEqual(finding.repairs.map((r) => r.action), ['resend'], finding.why);
  assert.equal(finding.restoresTo, null);
  assert.match(finding.why, /no restore is offered: the event's history is longer than the 3 entries/);
});

/**
 * applyStuckRepairs restoring `row` as an operator does long after (no grace), with the small cap. A restore sends
 * nothing: the Manager's client is a real one that is never connected.
 */
async function applyRestore(row: StatusRow, kind: 'claim' | 'unanswered' | 'refused', historyCap = 3) {
  const client = new ServiceBusClient('Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=unused;SharedAccessKey=unused;UseDevelopmentEmulator=true');
  const manager = new Manager({ store: f.store, client });
  try {
    const [result] = await applyStuckRepairs(
      { store: f.store, manager },
      [{ kind, endpointId: row.endpointId, eventId: row.eventId, sessionId: row.sessionId, rowMessageId: row.lastMessageId, action: 'restore' }],
      'reconcile-test',
      { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap },
    );
    return result;
  } finally {
    await manager.close();
    await client.close();
  }
}

test('a recorded command answered past the history cap is not offered a restore; another session\'s answer is no answer', async () => {
  const { endpointId, eventId, skipId, claimed } = await skipRecordedOnLongEvent();
  const skipped = (over: { sessionId?: string; endpointId?: string }, s: number) => ({ ...msg(MessageType.SkipResponse, { endpointId, eventId, sessionId: claimed.row.sessionId, parentMessageId: skipId, ...over }), enqueuedAt: at(s) });
  // Answers to the same MessageId elsewhere: another session of this endpoint, another endpoint's row.
  await f.store.recordHistory(skipped({ sessionId: 's-other' }, 11));
  await f.store.recordHistory(skipped({ endpointId: 'shippingendpoint' }, 12));

  const o = { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 };
  const unanswered = await stuckFinding(f.store, claimed.row, await readEventHistory(f.store, endpointId, eventId, 3), o);
  assert.equal(unanswered?.kind, 'unanswered', 'answers on another session or endpoint do not answer this row');

  // The endpoint's own answer, recorded (its status write lost): newest, so past the cap.
  const answer = skipped({}, 13);
  await f.store.recordHistory(answer);
  const history = await readEventHistory(f.store, endpointId, eventId, 3);
  assert.ok(!history.entries.some((h) => h.messageId === answer.messageId), 'precondition: the answer is past the cap');
  const finding = await stuckFinding(f.store, claimed.row, history, o);
  assert.equal(finding, undefined, `an answered command is not stuck, found: ${finding?.kind} ${finding?.repairs.map((r) => r.action).join()} (${finding?.why})`);
});

test('an answer past the history cap that no longer parses still counts as an answer', async () => {
  const { endpointId, eventId, skipId, claimed } = await skipRecordedOnLongEvent();
  // The endpoint's answer as a document the store would never write (a type it does not know).
  await f.raw.database(f.database).container('history').items.create({ id: uniq('answer'), eventId, endpointId, sessionId: claimed.row.sessionId, messageId: uniq('answer'), parentMessageId: skipId, messageType: 'FromTheFuture', enqueuedAt: at(11) });

  const history = await readEventHistory(f.store, endpointId, eventId, 3);
  const finding = await stuckFinding(f.store, claimed.row, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  assert.equal(finding, undefined, `the endpoint did answer; a restore would undo it, found: ${finding?.kind} (${finding?.why})`);
});

/**
 * `run`, with the store's history and receipt reads about `eventId` counted by method (another event's, such as a
 * preview's other rows, are not).
 */
async function readsOf<T>(eventId: string, run: () => Promise<T>): Promise<{ result: T; reads: Record<string, number> }> {
  const reads: Record<string, number> = {};
  const counted = ['listHistory', 'getHistory', 'listHistoryAnswers', 'listHistoryRefusals', 'listHistoryAfter', 'getAudit'] as const;
  const originals = counted.map((name) => [name, f.store[name]] as const);
  for (const [name, original] of originals) {
    Object.assign(f.store, {
      [name]: (...args: unknown[]) => {
        if (args[0] === eventId) reads[name] = (reads[name] ?? 0) + 1;
        return (original as (...a: unknown[]) => unknown).apply(f.store, args);
      },
    });
  }
  try {
    return { result: await run(), reads };
  } finally {
    for (const [name, original] of originals) Object.assign(f.store, { [name]: original });
  }
}

/** A row Pending by a command whose answered state was never recorded, on an event past the cap. */
async function pastCapWithoutAnsweredState(stateType: typeof MessageType.ErrorResponse | typeof MessageType.PendingHandoffResponse) {
  const endpointId = 'billingendpoint';
  const eventId = uniq('long');
  await f.store.recordHistory({ ...msg(MessageType.ResolutionResponse, { endpointId, eventId }), enqueuedAt: at(0) });
  await fillCap(endpointId, eventId);
  const state = msg(stateType, {
    endpointId,
    eventId,
    enqueuedAt: at(5),
    ...(stateType === MessageType.ErrorResponse ? { errorText: 'boom' } : { handoffReason: 'manual review', expectedBy: at(3600) }),
  });
  const written = await f.store.writeStatus(state);
  assert.ok(written.outcome === 'written');
  return written.row;
}

test('a recorded command whose state to restore is unknown past the cap is listed, with why and no repair', async () => {
  const row = await pastCapWithoutAnsweredState(MessageType.ErrorResponse);
  const { claimed } = await claimSkipRecorded(row, at(10));
  const history = await readEventHistory(f.store, row.endpointId, row.eventId, 3);

  const finding = await stuckFinding(f.store, claimed.row, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  assert.ok(finding, 'the operator sees the row and why nothing is offered');
  assert.equal(finding.kind, 'unanswered');
  assert.deepEqual(finding.repairs, []);
  assert.equal(finding.restoresTo, null);
  assert.match(finding.why, /no restore is offered: the event's history is longer than the 3 entries/);
  // Applied anyway (a stale page, a hand-made request): nothing written, and the reason says why.
  const applied = await applyRestore(claimed.row, 'unanswered');
  assert.deepEqual([applied?.outcome, applied?.reason], ['unchanged', "no repair is offered for this row: the state before its command is unknown (the event's history is past the cap Reconcile reads)"]);
  assert.equal((await f.store.getStatusRow(row.endpointId, row.eventId, row.sessionId))?.lastMessageId, claimed.row.lastMessageId);
});

test('a handoff settlement claim whose state to restore is unknown past the cap is listed, with why and no repair', async () => {
  const row = await pastCapWithoutAnsweredState(MessageType.PendingHandoffResponse);
  const failId = commandMessageId(MessageType.HandoffFailedRequest, row, row.lastMessageId);
  const claimed = await f.store.writeStatus(
    { endpointId: row.endpointId, eventId: row.eventId, sessionId: row.sessionId, messageId: failId, messageType: MessageType.HandoffFailedRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: row.endpointId, enqueuedAt: at(10) },
    claimExpectation(row),
  );
  assert.ok(claimed.outcome === 'written');
  const history = await readEventHistory(f.store, row.endpointId, row.eventId, 3);

  // Never re-sent (its text was never stored) and nothing known to restore: still listed.
  const finding = await stuckFinding(f.store, claimed.row, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  assert.ok(finding, 'the operator sees the row and why nothing is offered');
  assert.equal(finding.kind, 'claim');
  assert.deepEqual(finding.repairs, []);
  assert.match(finding.why, /no restore is offered: the event's history is longer than the 3 entries/);
});

test('applying a restore on a long event writes back the state the claim answered, searched once', async () => {
  const endpointId = 'billingendpoint';
  const eventId = uniq('long');
  // An old state of the row's session inside the cap, other traffic filling it, then the failure the claim answered.
  await f.store.recordHistory({ ...msg(MessageType.ResolutionResponse, { endpointId, eventId }), enqueuedAt: at(0) });
  await fillCap(endpointId, eventId);
  const failure = msg(MessageType.ErrorResponse, { endpointId, eventId, enqueuedAt: at(5), errorText: 'boom' });
  const failed = await f.store.writeStatus(failure);
  assert.ok(failed.outcome === 'written');
  await f.store.recordHistory({ ...failure, enqueuedAt: at(5) });
  const { claimed } = await claimSkipRecorded(failed.row, at(10));

  const { result, reads } = await readsOf(eventId, () => applyRestore(claimed.row, 'unanswered'));
  assert.equal(result?.outcome, 'repaired', result?.reason);
  // The re-check's reads: the capped list (its page and the one-entry page past the cap that proves it was cut),
  // the command by id (recorded), the answers once, the newest refusal once (no answer: refused or unanswered), the
  // responses after the command once (none settled the event since), the failure it answered by id - once, the
  // restore writes the entry the re-check found.
  assert.deepEqual(reads, { listHistory: 2, listHistoryAnswers: 1, listHistoryRefusals: 1, listHistoryAfter: 1, getHistory: 2 }, 'store reads about this event');
  const row = await f.store.getStatusRow(endpointId, eventId, claimed.row.sessionId);
  assert.deepEqual([row?.status, row?.messageType, row?.lastMessageId, row?.errorText], [failed.row.status, MessageType.ErrorResponse, failure.messageId, 'boom']);
});

test('a settling answer past the history cap whose status write was lost is found stale, and apply re-settles the row', async () => {
  const { endpointId, eventId, skipId, claimed } = await skipRecordedOnLongEvent();
  // The endpoint's answer, recorded; the status write after it was lost, so the row still shows the skip.
  const answer = { ...msg(MessageType.SkipResponse, { endpointId, eventId, sessionId: claimed.row.sessionId, parentMessageId: skipId }), enqueuedAt: at(11) };
  await f.store.recordHistory(answer);
  const history = await readEventHistory(f.store, endpointId, eventId, 3);
  assert.ok(!history.entries.some((h) => h.messageId === answer.messageId), 'precondition: the answer is past the cap');

  const preview = await previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  const stuck = preview.stuck.find((s) => s.eventId === eventId);
  assert.equal(stuck, undefined, `answered, so not stuck: ${stuck?.why}`);
  const stale = preview.stale.find((s) => s.eventId === eventId);
  assert.deepEqual(
    [stale?.rowMessageId, stale?.evidence.messageId, stale?.evidence.rule, stale?.evidence.status],
    [skipId, answer.messageId, 'answers-row', 'Skipped'],
    'the row is behind its history: the operator is told so',
  );

  const target = { endpointId, eventId, sessionId: claimed.row.sessionId, rowMessageId: skipId };
  const applied = await applyReconcile(f.store, [target], 'reconcile-test', { historyCap: 3 });
  assert.equal(applied.results[0]?.outcome, 'repaired', applied.results[0]?.reason);
  const row = await f.store.getStatusRow(endpointId, eventId, claimed.row.sessionId);
  assert.deepEqual([row?.status, row?.lastMessageId], ['Skipped', answer.messageId]);
});

test('a young Pending control request is decided by its age: no history paging, no store read at all', async () => {
  // The case that reads the most: a recorded skip past the cap whose answered state is in no entry (the command,
  // the answers and the state to restore would each be read).
  const row = await pastCapWithoutAnsweredState(MessageType.ErrorResponse);
  const { claimed } = await claimSkipRecorded(row, at(10));
  const history = await readEventHistory(f.store, row.endpointId, row.eventId, 3);

  // Claimed and recorded a second ago (the store's clock): within both graces (a send in progress, an answer
  // still to come).
  const now = new Date(Date.parse(claimed.row.updatedAt) + 1000);
  const { result: finding, reads } = await readsOf(row.eventId, () => stuckFinding(f.store, claimed.row, history, { now, historyCap: 3 }));
  assert.equal(finding, undefined);
  assert.deepEqual(reads, {}, 'store reads for a row its age already decides');
});

test('the preview of a row past the history cap reads its answers and later responses once and pages its history once', async () => {
  // A recorded skip nobody answered, past the cap, whose answered state is in no entry: every check runs (stale:
  // the answers by their link; stuck: command recorded, answered, state to restore, was the list cut).
  const row = await pastCapWithoutAnsweredState(MessageType.ErrorResponse);
  const { claimed } = await claimSkipRecorded(row, at(10));

  const { result: preview, reads } = await readsOf(row.eventId, () => previewReconcile(f.store, [row.endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 }));
  const stuck = preview.stuck.find((s) => s.eventId === row.eventId);
  assert.deepEqual([stuck?.kind, stuck?.rowMessageId, stuck?.repairs], ['unanswered', claimed.row.lastMessageId, []], stuck?.why);
  // One page of the capped list (cap 3) and the one-entry page past it (an entry there is what makes the list cut),
  // the answers once and the responses after the command once (the stale check's reads serve the stuck check), the
  // newest refusal once (the command has no answer: refused or unanswered), the command and the state before it by id.
  assert.deepEqual(reads, { listHistory: 2, listHistoryAnswers: 1, listHistoryRefusals: 1, listHistoryAfter: 1, getHistory: 2 }, 'store reads about this event');
});

test('a row whose answer past the history cap no longer parses is listed with why, not left with no finding', async () => {
  const { endpointId, eventId, skipId, claimed } = await skipRecordedOnLongEvent();
  const docId = uniq('answer');
  await f.raw.database(f.database).container('history').items.create({ id: docId, eventId, endpointId, sessionId: claimed.row.sessionId, messageId: docId, parentMessageId: skipId, messageType: 'FromTheFuture', enqueuedAt: at(11) });

  const preview = await previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  assert.equal(preview.stale.find((s) => s.eventId === eventId), undefined, 'nothing to re-apply');
  const found = preview.stuck.filter((s) => s.eventId === eventId);
  assert.deepEqual(found.map((s) => [s.kind, s.rowMessageId, s.repairs, s.restoresTo]), [['unreadable', skipId, [], null]], 'listed once, with no repair');
  assert.match(found[0]!.why, new RegExp(`answer to the SkipRequest it shows that no longer parses: ${docId} \\(.*messageType`));
});

test('a Pending event whose only answer no longer parses is listed, on a history under the cap too', async () => {
  const endpointId = 'billingendpoint';
  const eventId = uniq('short');
  const request = { ...msg(MessageType.EventRequest, { endpointId, eventId }), enqueuedAt: at(0) };
  const pending = await f.store.writeStatus(request);
  assert.ok(pending.outcome === 'written' && pending.row.status === 'Pending');
  await f.store.recordHistory(request);
  const docId = uniq('answer');
  await f.raw.database(f.database).container('history').items.create({ id: docId, eventId, endpointId, sessionId: pending.row.sessionId, messageId: docId, parentMessageId: request.messageId, messageType: 'ResolutionResponse', enqueuedAt: 'not a time' });

  const { result: preview, reads } = await readsOf(eventId, () => previewReconcile(f.store, [endpointId], new Date()));
  const found = preview.stuck.filter((s) => s.eventId === eventId);
  assert.deepEqual(found.map((s) => [s.kind, s.rowMessageId]), [['unreadable', request.messageId]], 'the operator sees the row');
  assert.match(found[0]!.why, new RegExp(`answer to the EventRequest it shows that no longer parses: ${docId} \\(`));
  // The list held an entry that does not parse, so the answers were read: once.
  assert.deepEqual(reads, { listHistory: 1, listHistoryAnswers: 1 });
});

/**
 * A skip of failure F recorded at 10 s (with the cap filled between them when `long`), then (unless `settle` is
 * false) a redelivered original answered at 11 s: the response names the original, not the skip. Recorded; the
 * status write after it was lost, so the row still shows the skip.
 */
async function skipSettledLater(long: boolean, settle = true) {
  const endpointId = 'billingendpoint';
  const eventId = uniq(long ? 'long' : 'short');
  const original = { ...msg(MessageType.EventRequest, { endpointId, eventId }), enqueuedAt: at(-1) };
  await f.store.recordHistory(original);
  const failure = { ...msg(MessageType.ErrorResponse, { endpointId, eventId, parentMessageId: original.messageId, errorText: 'boom' }), enqueuedAt: at(0) };
  const failed = await f.store.writeStatus(failure);
  assert.ok(failed.outcome === 'written');
  await f.store.recordHistory(failure);
  if (long) await fillCap(endpointId, eventId);
  const { skipId, claimed } = await claimSkipRecorded(failed.row, at(10));
  const completed = { ...msg(MessageType.ResolutionResponse, { endpointId, eventId, parentMessageId: original.messageId }), enqueuedAt: at(11) };
  if (settle) await f.store.recordHistory(completed);
  return { endpointId, eventId, failure, skipId, claimed, completed };
}

test('a later response past the history cap whose status write was lost is found stale, not offered a restore over it', async () => {
  const { endpointId, eventId, failure, skipId, claimed, completed } = await skipSettledLater(true);
  const history = await readEventHistory(f.store, endpointId, eventId, 3);
  assert.ok(history.cutOff && history.entries.some((h) => h.messageId === failure.messageId), 'precondition: F is inside the cap');
  assert.ok(!history.entries.some((h) => h.messageId === completed.messageId), 'precondition: the response is past the cap');

  const o = { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 };
  const preview = await previewReconcile(f.store, [endpointId], new Date(), o);
  const stuck = preview.stuck.find((s) => s.eventId === eventId);
  assert.equal(stuck, undefined, `settled by a later response, so not stuck: ${stuck?.kind} ${stuck?.repairs.map((r) => r.action).join()} (${stuck?.why})`);
  const stale = preview.stale.find((s) => s.eventId === eventId);
  assert.deepEqual(
    [stale?.rowMessageId, stale?.evidence.messageId, stale?.evidence.rule, stale?.evidence.status],
    [skipId, completed.messageId, 'later-response', 'Completed'],
    'the row is behind its history: the operator is told so',
  );

  // A restore applied anyway (a stale page, a hand-made request) writes nothing: the re-check finds the response.
  const restored = await applyRestore(claimed.row, 'unanswered');
  assert.equal(restored?.outcome, 'unchanged', `a restore would write Failed over a real Completed: ${restored?.status}`);
  assert.equal((await f.store.getStatusRow(endpointId, eventId, claimed.row.sessionId))?.lastMessageId, skipId);

  const applied = await applyReconcile(f.store, [{ endpointId, eventId, sessionId: claimed.row.sessionId, rowMessageId: skipId }], 'reconcile-test', { historyCap: 3 });
  assert.equal(applied.results[0]?.outcome, 'repaired', applied.results[0]?.reason);
  const row = await f.store.getStatusRow(endpointId, eventId, claimed.row.sessionId);
  assert.deepEqual([row?.status, row?.lastMessageId], ['Completed', completed.messageId]);
});

test('a restore applied to a row a later response settled, on a history under the cap, writes nothing', async () => {
  // The same events on a short history: the preview lists the row stale from the list; a restore applied anyway
  // (a stale page, a hand-made request) is re-checked and refused, not written as Failed over the Completed.
  const { endpointId, eventId, skipId, claimed } = await skipSettledLater(false);
  assert.equal((await readEventHistory(f.store, endpointId, eventId)).cutOff, false, 'precondition: whole under the real cap');

  const restored = await applyRestore(claimed.row, 'unanswered', HISTORY_CAP);
  assert.equal(restored?.outcome, 'unchanged', `a restore would write Failed over a real Completed: ${restored?.status}`);
  assert.equal((await f.store.getStatusRow(endpointId, eventId, claimed.row.sessionId))?.lastMessageId, skipId);
});

test('a later response that no longer parses is listed unreadable, not offered a restore over it (past the cap and under it)', async () => {
  // The skip, unanswered; the redelivered original's ResolutionResponse after it is stored but does not parse (no
  // recordedAt): the event may have completed since, so no restore may write the failure back over it. Past the cap
  // the later-responses query finds it; under it the list's unparsable entry is what sends the check to that query.
  for (const long of [true, false]) {
    const cap = long ? 3 : HISTORY_CAP;
    const { endpointId, eventId, skipId, claimed } = await skipSettledLater(long, false);
    const docId = uniq('later');
    await f.raw.database(f.database).container('history').items.create({ id: docId, eventId, endpointId, sessionId: claimed.row.sessionId, messageId: docId, parentMessageId: 'the-original', messageType: 'ResolutionResponse', enqueuedAt: at(11) });

    const preview = await previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: cap });
    assert.equal(preview.stale.find((s) => s.eventId === eventId), undefined, 'nothing to re-apply');
    const found = preview.stuck.filter((s) => s.eventId === eventId);
    assert.deepEqual(found.map((s) => [s.kind, s.rowMessageId, s.repairs.map((r) => r.action)]), [['unreadable', skipId, []]], `long=${long}: listed once, with no repair: ${found[0]?.why}`);
    assert.match(found[0]!.why, new RegExp(`response enqueued after the SkipRequest it shows that no longer parses: ${docId} \\(`));

    const restored = await applyRestore(claimed.row, 'unanswered', cap);
    assert.equal(restored?.outcome, 'unchanged', `long=${long}: a restore would write Failed over what the unreadable response settled: ${restored?.status}`);
    assert.equal((await f.store.getStatusRow(endpointId, eventId, claimed.row.sessionId))?.lastMessageId, skipId);
  }
});

test('a subscriber notice after the skip past the history cap does not settle the event: the restore is offered and applied', async () => {
  // A refusal of another (forged) command on the row's session, recorded after the skip: an ErrorResponse the
  // later-responses query returns, but a notice about that command, not an outcome of the event.
  const { endpointId, eventId, failure, claimed } = await skipSettledLater(true, false);
  const notice = { ...msg(MessageType.ErrorResponse, { endpointId, eventId, sessionId: claimed.row.sessionId, parentMessageId: uniq('forged'), deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'SkipRequest did not come from the Manager' }), enqueuedAt: at(11) };
  await f.store.recordHistory(notice);

  const preview = await previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  assert.equal(preview.stale.find((s) => s.eventId === eventId), undefined, 'a notice is nothing to re-apply');
  const stuck = preview.stuck.find((s) => s.eventId === eventId);
  assert.deepEqual([stuck?.kind, stuck?.repairs.map((r) => r.action), stuck?.restoresTo?.messageId], ['unanswered', ['restore'], failure.messageId], stuck?.why);

  const restored = await applyRestore(claimed.row, 'unanswered');
  assert.equal(restored?.outcome, 'repaired', restored?.reason);
  const row = await f.store.getStatusRow(endpointId, eventId, claimed.row.sessionId);
  assert.deepEqual([row?.status, row?.lastMessageId], ['Failed', failure.messageId]);
});

test('eleven subscriber notices newer than a later response past the history cap do not hide it: the row is found stale', async () => {
  // The later-responses query reads the newest few settling-type entries: notices (ErrorResponses about other,
  // refused commands) must not fill it, or the response that settled the event behind them is never seen.
  const { endpointId, eventId, skipId, claimed, completed } = await skipSettledLater(true);
  for (let i = 0; i < 11; i++) {
    const parentMessageId = uniq('forged');
    await f.store.recordHistory({ ...msg(MessageType.ErrorResponse, { endpointId, eventId, sessionId: claimed.row.sessionId, parentMessageId, deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'SkipRequest is accepted only from Manager' }), enqueuedAt: at(12 + i) });
  }

  const preview = await previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  const stuck = preview.stuck.find((s) => s.eventId === eventId);
  assert.equal(stuck, undefined, `settled by a later response, so not stuck: ${stuck?.kind} ${stuck?.repairs.map((r) => r.action).join()} (${stuck?.why})`);
  const stale = preview.stale.find((s) => s.eventId === eventId);
  assert.deepEqual([stale?.rowMessageId, stale?.evidence.messageId, stale?.evidence.rule], [skipId, completed.messageId, 'later-response']);
});

test('a request dead-lettered after the skip past the history cap settles the event: found stale, no restore over it', async () => {
  // An entry that is not a response type but carries a non-blank DeadLetterErrorDescription made the event
  // DeadLettered (resultingStatus); the later-responses query must find it as the list does. A newer one whose
  // description is blank settles nothing and is no evidence.
  const { endpointId, eventId, skipId, claimed } = await skipSettledLater(true, false);
  const deadLettered = { ...msg(MessageType.EventRequest, { endpointId, eventId, sessionId: claimed.row.sessionId, deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'Delivery 10 of 10 ended transient: boom' }), enqueuedAt: at(11) };
  await f.store.recordHistory(deadLettered);
  await f.store.recordHistory({ ...msg(MessageType.EventRequest, { endpointId, eventId, sessionId: claimed.row.sessionId, deadLetterErrorDescription: '  ' }), enqueuedAt: at(12) });

  const preview = await previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  const stuck = preview.stuck.find((s) => s.eventId === eventId);
  assert.equal(stuck, undefined, `settled by a dead letter, so not stuck: ${stuck?.kind} ${stuck?.repairs.map((r) => r.action).join()} (${stuck?.why})`);
  const stale = preview.stale.find((s) => s.eventId === eventId);
  assert.deepEqual([stale?.rowMessageId, stale?.evidence.messageId, stale?.evidence.rule, stale?.evidence.status], [skipId, deadLettered.messageId, 'later-response', 'DeadLettered']);

  const restored = await applyRestore(claimed.row, 'unanswered');
  assert.equal(restored?.outcome, 'unchanged', `a restore would write Failed over DeadLettered: ${restored?.status}`);
});

test("a claim enqueued by the console's clock before its parent's broker time: the parent is no later response", async () => {
  // Manager claims are stamped with the console's clock, the failure they answer with the broker's: a console 2 s
  // behind gives the claim an enqueuedAt before its parent's. The parent is still not a response after the row's
  // message (re-applying it is a restore in disguise, listed as stale on no evidence): on a short list and past the cap.
  for (const long of [false, true]) {
    const endpointId = 'billingendpoint';
    const eventId = uniq(long ? 'skew-long' : 'skew');
    if (long) await fillCap(endpointId, eventId);
    const failure = { ...msg(MessageType.ErrorResponse, { endpointId, eventId, errorText: 'boom' }), enqueuedAt: at(12) };
    const failed = await f.store.writeStatus(failure);
    assert.ok(failed.outcome === 'written');
    await f.store.recordHistory(failure);
    const { skipId } = await claimSkipRecorded(failed.row, at(10));

    const preview = await previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: long ? 3 : HISTORY_CAP });
    const stale = preview.stale.find((s) => s.eventId === eventId);
    assert.equal(stale, undefined, `long=${long}: listed stale with ${stale?.evidence.rule} ${stale?.evidence.messageId} (the parent ${failure.messageId})`);
    const stuck = preview.stuck.find((s) => s.eventId === eventId);
    assert.deepEqual([stuck?.kind, stuck?.rowMessageId, stuck?.restoresTo?.messageId], ['unanswered', skipId, failure.messageId], `long=${long}: ${stuck?.why}`);
  }
});

test('a non-settling answer past the cap makes the row stale; a settling response after it, past the cap too, wins', async () => {
  const grace = { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 };
  const parked = await skipRecordedOnLongEvent();
  const park = { ...msg(MessageType.PendingHandoffResponse, { endpointId: parked.endpointId, eventId: parked.eventId, parentMessageId: parked.skipId, handoffReason: 'skip needs approval' }), enqueuedAt: at(11) };
  await f.store.recordHistory(park);
  const settled = await skipRecordedOnLongEvent();
  await f.store.recordHistory({ ...msg(MessageType.PendingHandoffResponse, { endpointId: settled.endpointId, eventId: settled.eventId, parentMessageId: settled.skipId }), enqueuedAt: at(11) });
  // A redelivered original answered after the park (it names no message the row shows): the event is Completed.
  const completed = { ...msg(MessageType.ResolutionResponse, { endpointId: settled.endpointId, eventId: settled.eventId, parentMessageId: 'redelivered-original' }), enqueuedAt: at(12) };
  await f.store.recordHistory(completed);

  const preview = await previewReconcile(f.store, [parked.endpointId], new Date(), grace);
  const evidence = (eventId: string) => preview.stale.filter((s) => s.eventId === eventId).map((s) => [s.evidence.messageId, s.evidence.rule, s.evidence.status]);
  assert.deepEqual(evidence(parked.eventId), [[park.messageId, 'answers-row', 'Pending']]);
  assert.deepEqual(evidence(settled.eventId), [[completed.messageId, 'later-response', 'Completed']]);
  assert.ok(!preview.stuck.some((s) => s.eventId === parked.eventId || s.eventId === settled.eventId), 'neither is stuck');

  const targets = [parked, settled].map((e) => ({ endpointId: e.endpointId, eventId: e.eventId, sessionId: e.claimed.row.sessionId, rowMessageId: e.skipId }));
  const applied = await applyReconcile(f.store, targets, 'reconcile-test', grace);
  assert.equal(applied.repaired, 2, JSON.stringify(applied.results));
  const rows = await Promise.all([parked, settled].map((e) => f.store.getStatusRow(e.endpointId, e.eventId, e.claimed.row.sessionId)));
  assert.deepEqual(rows.map((r) => [r?.status, r?.subStatus, r?.lastMessageId]), [['Pending', 'Handoff', park.messageId], ['Completed', null, completed.messageId]]);
});

// The answers query read the 10 newest entries naming the row's message, answers or not: eleven newer entries that
// are none (notices, the deferred processor's trigger, a refused unauthorised command, control requests that did not
// settle) hid the real answer past the cap, so the row was not found stale and was offered a restore over its answer
// (refused, by the newest notice among them). The query now returns answers only (lib/store/answerRule.ts).
/** Eleven entries naming `parent` on the row's session, none an answer, at 12..22 s: the first `refusals` are CommandRefused notices. */
async function noAnswersNaming(e: { endpointId: string; eventId: string; claimed: { row: StatusRow } }, parent: string, refusals: number) {
  const sessionId = e.claimed.row.sessionId;
  const base = { endpointId: e.endpointId, eventId: e.eventId, sessionId, parentMessageId: parent };
  const kinds = [
    () => msg(MessageType.ErrorResponse, { ...base, from: e.endpointId, deadLetterReason: 'ReplayGap', deadLetterErrorDescription: 'sequences 3-4 skipped' }),
    () => msg(MessageType.ProcessDeferredRequest, { ...base, from: 'self', deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'delivered 10 times' }),
    () => msg(MessageType.ResubmissionRequest, { ...base, from: 'shop', deadLetterErrorDescription: 'replayed by hand' }),
    () => msg(MessageType.RetryRequest, { ...base, from: 'Retry' }),
  ];
  const refusal = () => msg(MessageType.ErrorResponse, { ...base, from: e.endpointId, deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'SkipRequest refused: a redelivered copy' });
  const written = [];
  for (let i = 0; i < 11; i++) {
    const h = { ...(i < refusals ? refusal() : kinds[i % kinds.length]!()), enqueuedAt: at(12 + i) };
    await f.store.recordHistory(h);
    written.push(h);
  }
  return written;
}

test('an answer past the cap behind eleven newer entries naming the command that are no answer is found: stale, never restored over', async () => {
  const grace = { claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 };
  const e = await skipRecordedOnLongEvent();
  // The endpoint's answer (a new park, its status write lost), then eleven newer entries naming the skip.
  const park = { ...msg(MessageType.PendingHandoffResponse, { endpointId: e.endpointId, eventId: e.eventId, parentMessageId: e.skipId, from: e.endpointId, handoffReason: 'skip needs approval' }), enqueuedAt: at(11) };
  await f.store.recordHistory(park);
  await noAnswersNaming(e, e.skipId, 4);

  const preview = await previewReconcile(f.store, [e.endpointId], new Date(), grace);
  const stuck = preview.stuck.find((s) => s.eventId === e.eventId);
  assert.equal(stuck, undefined, `answered, so not stuck: ${stuck?.kind} ${stuck?.repairs.map((r) => r.action).join()} (${stuck?.why})`);
  const stale = preview.stale.find((s) => s.eventId === e.eventId);
  assert.deepEqual([stale?.rowMessageId, stale?.evidence.messageId, stale?.evidence.rule, stale?.evidence.status], [e.skipId, park.messageId, 'answers-row', 'Pending']);
  for (const kind of ['refused', 'unanswered'] as const) assert.equal((await applyRestore(e.claimed.row, kind))?.outcome, 'unchanged', `no ${kind} restore over the answer`);

  const applied = await applyReconcile(f.store, [{ endpointId: e.endpointId, eventId: e.eventId, sessionId: e.claimed.row.sessionId, rowMessageId: e.skipId }], 'reconcile-test', grace);
  assert.equal(applied.repaired, 1, JSON.stringify(applied.results));
  const row = await f.store.getStatusRow(e.endpointId, e.eventId, e.claimed.row.sessionId);
  assert.deepEqual([row?.status, row?.subStatus, row?.lastMessageId], ['Pending', 'Handoff', park.messageId]);
});

test('a refusal past the cap behind eleven newer entries naming the command that are no answer is found: listed refused', async () => {
  const e = await skipRecordedOnLongEvent();
  const [refusal] = await noAnswersNaming(e, e.skipId, 1);
  const history = await readEventHistory(f.store, e.endpointId, e.eventId, 3);
  const finding = await stuckFinding(f.store, e.claimed.row, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap: 3 });
  assert.deepEqual([finding?.kind, finding?.repairs.map((r) => r.action)], ['refused', ['restore']], finding?.why);
  assert.match(finding!.why, new RegExp(`CommandRefused notice ${refusal!.messageId}`));
});

test('a whole history read decides the stuck check alone: a refused and an unanswered command cost no answers or refusals query', async () => {
  // Review of the refusals query: every due row with no answer made two history queries more (answers, refusals) even
  // when the list, not cut and all parsed, already held every entry naming its message.
  const endpointId = 'billingendpoint';
  const parked = async () => {
    const eventId = uniq('short');
    const park = { ...msg(MessageType.PendingHandoffResponse, { endpointId, eventId, from: endpointId, handoffReason: 'x', externalJobId: 'J', expectedBy: at(3_600) }), enqueuedAt: at(0) };
    await f.store.recordOutcome({ history: park, status: park });
    const row = (await f.store.getStatusRow(endpointId, eventId, 's-1'))!;
    const commandId = commandMessageId(MessageType.HandoffCompletedRequest, row, row.lastMessageId);
    const command = { endpointId, eventId, sessionId: row.sessionId, messageId: commandId, messageType: MessageType.HandoffCompletedRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: at(1) };
    assert.equal((await f.store.writeStatus(command, claimExpectation(row))).outcome, 'written');
    await f.store.recordHistory(command);
    return { eventId, commandId, sessionId: row.sessionId };
  };
  const refused = await parked();
  await f.store.recordHistory({ ...msg(MessageType.ErrorResponse, { endpointId, eventId: refused.eventId, parentMessageId: refused.commandId, from: endpointId, to: 'Resolver', deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'not blocked' }), sessionId: refused.sessionId, enqueuedAt: at(2) });
  const unanswered = await parked();
  for (const [{ eventId }, kind] of [[refused, 'refused'], [unanswered, 'unanswered']] as const) {
    const { result: preview, reads } = await readsOf(eventId, () => previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0 }));
    assert.deepEqual(preview.stuck.filter((s) => s.eventId === eventId).map((s) => s.kind), [kind]);
    assert.deepEqual(reads, { listHistory: 1 }, `${kind}: the list alone`);
  }
});
