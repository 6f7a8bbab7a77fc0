// Reconcile and a refused command (real store on the embedded Cosmos server). A subscriber refuses a command with
// a CommandRefused notice, which the Resolver records in history and then puts the row back as it was
// (resolver-worker/resolve.ts, restoreAfterRefusal). When that restore is lost, the row stays Pending from the
// refused command: the notice answers its message, but a refusal is no answer, so the row must be listed - kind
// `refused`, saying who refused it and why - and offered the restore the Resolver would have made, not left with no
// finding at all. Likewise when the Resolver recorded the refusal but never the command itself (its copy
// dead-lettered): a claim with a "sent" receipt was taken for "the Resolver is behind" and never listed, and one
// without a receipt was offered a re-send of a command its subscriber refuses. An unrecorded claim its endpoint
// answered is offered no restore (it would undo the answer): it is stale, whatever the answer (a new handoff park
// too), and the stale repair makes the row show it. A resubmission answered only by a deferral (parked behind
// another event's block; the guard keeps the deferral off the row) is listed `parked`, with no repair: a restore
// made a Resubmit send the parked command a second time.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CopyKind, derivedMessageId, MessageType, Topic } from '@nimbus/sdk/contract';
import { ServiceBusClient } from '@azure/service-bus';
import { msg, startStoreFixture, uniq, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import { AuditType, type StatusRow } from '../../lib/store/index.ts';
import { commandMessageId } from '../manager/commands.ts';
import { claimExpectation, Manager } from '../manager/manager.ts';
import { applyStuckRepairs, type RepairTarget } from './stuck.ts';
import { applyReconcile, previewReconcile } from './reconcile.ts';
import { reconcileApplyBody } from './routes.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

const endpointId = 'erpendpoint';
const noGrace = { claimGraceMs: 0, unansweredGraceMs: 0 };
/** A history entry as the Resolver writes it (msg's own time, required here). */
const entry = (m: ReturnType<typeof msg>) => ({ ...m, enqueuedAt: m.enqueuedAt ?? new Date().toISOString() });
const refusal = 'HandoffCompletedRequest refused: event evt is not the pending handoff of session s-1 (the session is not blocked)';

/**
 * A handoff park, the Manager's claim of its completion (recorded by the Resolver), and the subscriber's notice
 * naming it (by default its refusal), recorded in history; the Resolver's restore after a refusal never happened, so
 * the row still shows the command.
 */
async function refusedHandoffCompletion(reason = 'CommandRefused', description = refusal, how: { recorded: boolean; receipt: boolean; notice?: boolean } = { recorded: true, receipt: false }) {
  const eventId = uniq('refused');
  const park = entry(msg(MessageType.PendingHandoffResponse, { endpointId, eventId, from: endpointId, handoffReason: 'Ledger import queued', externalJobId: 'JOB-9', expectedBy: new Date(Date.now() + 3_600_000).toISOString() }));
  const parked = await f.store.recordOutcome({ history: park, status: park });
  assert.equal(parked.status.outcome, 'written');
  const row = (await f.store.getStatusRow(endpointId, eventId, 's-1'))!;
  const commandId = commandMessageId(MessageType.HandoffCompletedRequest, row, row.lastMessageId);
  const command = { endpointId, eventId, sessionId: row.sessionId, messageId: commandId, messageType: MessageType.HandoffCompletedRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: new Date().toISOString() };
  const claimed = await f.store.writeStatus(command, claimExpectation(row));
  assert.ok(claimed.outcome === 'written');
  if (how.recorded) await f.store.recordHistory(command);
  // The Manager's "sent" receipt: an audit under the command's MessageId (server/manager/manager.ts).
  if (how.receipt) await f.store.recordAudit({ id: commandId, eventId, endpointId, eventTypeId: row.eventTypeId, type: AuditType.CompleteHandoff, auditor: 'operator', comment: 'sent' });
  const notice = entry(msg(MessageType.ErrorResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, to: 'Resolver', deadLetterReason: reason, deadLetterErrorDescription: description }));
  if (how.notice !== false) await f.store.recordHistory(notice);
  return { eventId, park, commandId, notice, claimed: claimed.row };
}

/** applyStuckRepairs as an operator runs it (no grace). A restore sends nothing: the client is never connected. */
async function repair(row: StatusRow, kind: RepairTarget['kind']) {
  const client = new ServiceBusClient('Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=unused;SharedAccessKey=unused;UseDevelopmentEmulator=true');
  const manager = new Manager({ store: f.store, client });
  try {
    const [result] = await applyStuckRepairs(
      { store: f.store, manager },
      [{ kind, endpointId, eventId: row.eventId, sessionId: row.sessionId, rowMessageId: row.lastMessageId, action: 'restore' }],
      'reconcile-test',
      { now: new Date(), ...noGrace },
    );
    return result!;
  } finally {
    await manager.close();
    await client.close();
  }
}

test('a row Pending from a command the subscriber refused is listed as refused, with who and why, and restored', async () => {
  const { eventId, park, commandId, notice, claimed } = await refusedHandoffCompletion();

  // The fixture's store has its own clock: a minute after the claim by that clock is within the 10 min grace.
  const young = await previewReconcile(f.store, [endpointId], new Date(Date.parse(claimed.updatedAt) + 60_000));
  assert.equal(young.stuck.find((s) => s.eventId === eventId), undefined, 'within the grace the Resolver may still be restoring it');

  const preview = await previewReconcile(f.store, [endpointId], new Date(), noGrace);
  assert.equal(preview.stale.find((s) => s.eventId === eventId), undefined, 'a refusal is nothing to re-apply');
  const found = preview.stuck.filter((s) => s.eventId === eventId);
  assert.deepEqual(
    found.map((s) => [s.kind, s.rowMessageId, s.repairs.map((r) => r.action), s.restoresTo]),
    [['refused', commandId, ['restore'], { status: 'Pending', messageType: 'PendingHandoffResponse', messageId: park.messageId }]],
    `listed once, refused, with the restore: ${found[0]?.why}`,
  );
  const why = found[0]!.why;
  assert.match(why, new RegExp(`HandoffCompletedRequest recorded \\d+ min ago that ${endpointId} refused \\(CommandRefused notice ${notice.messageId}: HandoffCompletedRequest refused: event evt is not the pending handoff`));
  assert.match(why, /restore was lost/);
  assert.match(found[0]!.repairs[0]!.does, /put the row back to Pending \(PendingHandoffResponse/);

  assert.equal((await repair(claimed, 'unanswered')).outcome, 'unchanged', 'a repair for another kind is refused');
  const result = await repair(claimed, 'refused');
  assert.equal(result.outcome, 'repaired', result.reason);
  const row = await f.store.getStatusRow(endpointId, eventId, claimed.sessionId);
  assert.deepEqual([row?.status, row?.subStatus, row?.lastMessageId, row?.externalJobId], ['Pending', 'Handoff', park.messageId, 'JOB-9']);
  const audits = (await f.store.listAudits(eventId)).items.filter((a) => a.type === 'ReconcileStuckCommand');
  assert.equal(audits.length, 1);
  assert.match(audits[0]!.comment ?? '', /refused .*Repair: restored to Pending/);
  assert.equal(JSON.parse(audits[0]!.data ?? '{}').kind, 'refused');

  assert.equal((await repair(claimed, 'refused')).outcome, 'unchanged', 'a second apply changes nothing');
  const again = await previewReconcile(f.store, [endpointId], new Date(), noGrace);
  assert.equal(again.stuck.find((s) => s.eventId === eventId), undefined, 'no finding once restored');
});

test('a refused command that was answered too is not stuck; a replay-gap notice alone is no answer', async () => {
  const answered = await refusedHandoffCompletion();
  // A real answer to the same command (the refusal was of a redelivered copy): the endpoint did answer.
  await f.store.recordHistory(entry(msg(MessageType.ResolutionResponse, { endpointId, eventId: answered.eventId, parentMessageId: answered.commandId, from: endpointId })));
  const preview = await previewReconcile(f.store, [endpointId], new Date(), noGrace);
  const stuck = preview.stuck.find((s) => s.eventId === answered.eventId);
  assert.equal(stuck, undefined, `answered, so not stuck: ${stuck?.kind} (${stuck?.why})`);

  // The same command with only a ReplayGap notice naming it: not a refusal and not an answer, so it is unanswered.
  const { eventId } = await refusedHandoffCompletion('ReplayGap', 'sequences 3-4 skipped');
  const gap = (await previewReconcile(f.store, [endpointId], new Date(), noGrace)).stuck.find((s) => s.eventId === eventId);
  assert.deepEqual([gap?.kind, gap?.repairs.map((r) => r.action)], ['unanswered', ['restore']], gap?.why);
});

test('a refused command the Resolver never recorded is listed refused, receipt or not, and restored; never offered a re-send', async () => {
  for (const receipt of [true, false]) {
    const { eventId, park, commandId, notice, claimed } = await refusedHandoffCompletion('CommandRefused', refusal, { recorded: false, receipt });
    const young = await previewReconcile(f.store, [endpointId], new Date(Date.parse(claimed.updatedAt) + 60_000));
    assert.equal(young.stuck.find((s) => s.eventId === eventId), undefined, `receipt ${receipt}: within the grace the Resolver may still be restoring it`);

    const found = (await previewReconcile(f.store, [endpointId], new Date(), noGrace)).stuck.filter((s) => s.eventId === eventId);
    assert.deepEqual(
      found.map((s) => [s.kind, s.rowMessageId, s.repairs.map((r) => r.action), s.restoresTo]),
      [['refused', commandId, ['restore'], { status: 'Pending', messageType: 'PendingHandoffResponse', messageId: park.messageId }]],
      `receipt ${receipt}: listed once, refused, with the restore: ${found[0]?.kind} (${found[0]?.why})`,
    );
    const why = found[0]!.why;
    assert.match(why, new RegExp(`HandoffCompletedRequest claimed \\d+ min ago that ${endpointId} refused \\(CommandRefused notice ${notice.messageId}:`));
    assert.match(why, /the Resolver never recorded the command itself, only its refusal/);

    const result = await repair(claimed, 'refused');
    assert.equal(result.outcome, 'repaired', result.reason);
    const row = await f.store.getStatusRow(endpointId, eventId, claimed.sessionId);
    assert.deepEqual([row?.status, row?.subStatus, row?.lastMessageId], ['Pending', 'Handoff', park.messageId], `receipt ${receipt}: restored`);
  }
});

test('an unrecorded claim that its endpoint answered is offered no restore (it would undo the answer): it is stale', async () => {
  for (const receipt of [true, false]) {
    const { eventId, commandId } = await refusedHandoffCompletion('CommandRefused', refusal, { recorded: false, receipt });
    // A real answer to the same command (the refusal was of a redelivered copy), its row write lost.
    await f.store.recordHistory(entry(msg(MessageType.PendingHandoffResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, handoffReason: 'again' })));
    const preview = await previewReconcile(f.store, [endpointId], new Date(), noGrace);
    const stuck = preview.stuck.find((s) => s.eventId === eventId);
    assert.equal(stuck, undefined, `receipt ${receipt}: answered, so nothing to restore: ${stuck?.kind} (${stuck?.why})`);
    assert.equal(preview.stale.find((s) => s.eventId === eventId)?.evidence.rule, 'answers-row', `receipt ${receipt}: the row is to show the answer`);
  }
});

/** The preview's findings about one event: where it is listed, and the stale evidence if it is stale. */
async function listed(eventId: string) {
  const preview = await previewReconcile(f.store, [endpointId], new Date(), noGrace);
  const stale = preview.stale.filter((s) => s.eventId === eventId);
  const stuck = preview.stuck.filter((s) => s.eventId === eventId);
  return { stale, stuck, kinds: [...stale.map((s) => `stale:${s.evidence.rule}`), ...stuck.map((s) => `stuck:${s.kind}`)] };
}

/** applyReconcile (the stale repair) on the one stale row of `eventId`. */
async function reapply(eventId: string) {
  const { stale } = await listed(eventId);
  const targets = stale.map((s) => ({ endpointId: s.endpointId, eventId: s.eventId, sessionId: s.sessionId, rowMessageId: s.rowMessageId }));
  return applyReconcile(f.store, targets, 'reconcile-test');
}

// A claimed or recorded command answered by a non-settling response (a new handoff park) whose row write was lost:
// the row shows the command, the history the answer. It is stale (answers-row) and the repair makes it show the
// answer - never "answered, nothing" (listed nowhere), never a restore of the state before the command.
for (const how of [
  { recorded: false, receipt: false, notice: true, what: 'an unrecorded claim, its copy refused' },
  { recorded: false, receipt: true, notice: false, what: 'an unrecorded claim with its receipt' },
  { recorded: true, receipt: false, notice: false, what: 'a recorded request' },
]) {
  test(`${how.what} answered by a non-settling response is stale and re-applied as that answer`, async () => {
    const { eventId, commandId, claimed } = await refusedHandoffCompletion('CommandRefused', refusal, how);
    const answer = entry(msg(MessageType.PendingHandoffResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, handoffReason: 'again', externalJobId: 'JOB-10', expectedBy: new Date(Date.now() + 7_200_000).toISOString() }));
    await f.store.recordHistory(answer);
    const found = await listed(eventId);
    assert.deepEqual(found.kinds, ['stale:answers-row'], 'the Pending claim row is listed, as stale');
    assert.deepEqual([found.stale[0]!.rowMessageId, found.stale[0]!.evidence.messageId, found.stale[0]!.evidence.status], [commandId, answer.messageId, 'Pending']);

    const applied = await reapply(eventId);
    assert.equal(applied.repaired, 1, JSON.stringify(applied.results));
    const row = await f.store.getStatusRow(endpointId, eventId, claimed.sessionId);
    assert.deepEqual(
      [row?.status, row?.subStatus, row?.messageType, row?.lastMessageId, row?.parentMessageId, row?.handoffReason, row?.externalJobId, row?.expectedBy],
      ['Pending', 'Handoff', 'PendingHandoffResponse', answer.messageId, commandId, 'again', 'JOB-10', answer.expectedBy],
    );
    assert.deepEqual((await listed(eventId)).kinds, [], 'a handoff park again: nothing more to do');
  });
}

test('a claimed skip answered by a failure is stale and re-applied as Failed', async () => {
  const eventId = uniq('skipfail');
  const failed = entry(msg(MessageType.ErrorResponse, { endpointId, eventId, from: endpointId, errorText: 'boom' }));
  assert.equal((await f.store.recordOutcome({ history: failed, status: failed })).status.outcome, 'written');
  const row = (await f.store.getStatusRow(endpointId, eventId, 's-1'))!;
  const commandId = commandMessageId(MessageType.SkipRequest, row, row.lastMessageId);
  const command = { endpointId, eventId, sessionId: row.sessionId, messageId: commandId, messageType: MessageType.SkipRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: new Date().toISOString() };
  const claimed = await f.store.writeStatus(command, claimExpectation(row));
  assert.equal(claimed.outcome, 'written');
  const answer = entry(msg(MessageType.ErrorResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, errorText: 'skip handler failed' }));
  await f.store.recordHistory(answer);
  assert.deepEqual((await listed(eventId)).kinds, ['stale:answers-row']);
  assert.equal((await reapply(eventId)).repaired, 1);
  const now = await f.store.getStatusRow(endpointId, eventId, 's-1');
  assert.deepEqual([now?.status, now?.lastMessageId, now?.errorText], ['Failed', answer.messageId, 'skip handler failed']);
});

// A history-only entry naming the command (the deferred processor's trigger, dead-lettered; a Manager-only command
// that did not come from the Manager, which its subscriber refuses) never wrote the row and is no response to the
// command: it is no answer. Before, the stuck check counted any entry naming the row's message but a notice as one,
// so such a row was "answered" and listed nowhere (neither stale nor stuck), Pending for good.
test('a command whose only entries naming it are history-only is not answered: unanswered, refused or a claim, as without them', async () => {
  for (const how of [
    { recorded: true, receipt: false, notice: false, kind: 'unanswered' },
    { recorded: false, receipt: true, notice: true, kind: 'refused' },
    { recorded: false, receipt: false, notice: false, kind: 'claim' },
  ]) {
    const { eventId, park, commandId } = await refusedHandoffCompletion('CommandRefused', refusal, how);
    const trigger = entry(msg(MessageType.ProcessDeferredRequest, { endpointId, eventId, parentMessageId: commandId, from: 'self', to: endpointId, deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'delivered 10 times' }));
    const unauthorised = entry(msg(MessageType.ResubmissionRequest, { endpointId, eventId, parentMessageId: commandId, from: 'shop', to: endpointId, deadLetterErrorDescription: 'replayed by hand' }));
    for (const h of [trigger, unauthorised]) await f.store.recordHistory(h);
    const found = await listed(eventId);
    assert.deepEqual(found.kinds, [`stuck:${how.kind}`], `${how.kind}: ${found.stuck[0]?.why ?? 'listed nowhere'}`);
    assert.deepEqual(
      [found.stuck[0]!.rowMessageId, found.stuck[0]!.repairs.map((r) => r.action), found.stuck[0]!.restoresTo?.messageId],
      [commandId, ['restore'], park.messageId],
      `${how.kind}: restored to the handoff park`,
    );
  }
});

/** A failed event and the Manager's resubmission of it, claimed and recorded by the Resolver. */
async function recordedResubmission(prefix: string) {
  const eventId = uniq(prefix);
  const failed = entry(msg(MessageType.ErrorResponse, { endpointId, eventId, from: endpointId, errorText: 'boom' }));
  assert.equal((await f.store.recordOutcome({ history: failed, status: failed })).status.outcome, 'written');
  const row = (await f.store.getStatusRow(endpointId, eventId, 's-1'))!;
  const commandId = commandMessageId(MessageType.ResubmissionRequest, row, row.lastMessageId);
  const command = { endpointId, eventId, sessionId: row.sessionId, messageId: commandId, messageType: MessageType.ResubmissionRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: new Date().toISOString() };
  const claimed = await f.store.writeStatus(command, claimExpectation(row));
  assert.ok(claimed.outcome === 'written');
  await f.store.recordHistory(command);
  return { eventId, failed, commandId, claimed };
}

// A console Resubmit whose only answer is a deferral: the endpoint parked the command behind another event's block.
// The Resolver records the DeferralResponse in history, but its guarded write refuses a deferral over a command
// (not request stage), so the row keeps reading Pending from the ResubmissionRequest. The deferral is an answer, so
// the row was neither unanswered (stuck) nor stale (nothing the guard lets onto it): listed nowhere, for as long as
// the parked copy waits - for ever if the blocker is never settled or the copy was lost. It is listed `parked`.
test('a resubmission answered only by a deferral is listed parked, with the deferral and its blocker, and offered no repair: a Resubmit then sends nothing', async () => {
  const { eventId, failed, commandId, claimed } = await recordedResubmission('parkedresubmit');
  // The deferral as the Resolver records it: history, then the guarded row write, which refuses it.
  const parkText = 'Session s-1 is blocked by event evt-blocker';
  const deferral = entry(msg(MessageType.DeferralResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, to: 'Resolver', errorText: parkText, errorType: 'SessionBlockedException' }));
  const written = await f.store.recordOutcome({ history: deferral, status: deferral });
  assert.equal(written.status.outcome, 'ignored', 'the guard keeps a deferral off the command\'s row');
  assert.deepEqual([(await f.store.getStatusRow(endpointId, eventId, 's-1'))?.status, (await f.store.getStatusRow(endpointId, eventId, 's-1'))?.messageType], ['Pending', 'ResubmissionRequest']);

  const young = await previewReconcile(f.store, [endpointId], new Date(Date.parse(claimed.row.updatedAt) + 60_000));
  assert.equal(young.stuck.find((s) => s.eventId === eventId), undefined, 'within the grace the parked copy may just be waiting its turn');

  const found = await listed(eventId);
  assert.deepEqual(
    [found.kinds, found.stuck[0]?.rowMessageId, found.stuck[0]?.repairs.map((r) => r.action), found.stuck[0]?.restoresTo],
    [['stuck:parked'], commandId, [], null],
    `listed once, parked, with no repair: ${found.stuck[0]?.why ?? 'listed nowhere'}`,
  );
  const why = found.stuck[0]!.why;
  assert.match(why, new RegExp(`ResubmissionRequest recorded \\d+ min ago that ${endpointId} only parked \\(DeferralResponse ${deferral.messageId}: ${parkText}\\)`));
  assert.match(why, /Settle the blocking event.*No repair is offered: the command is recorded and still parked/);
  // The deferral past the history cap (the list holds the failure and the command only): read by its link, the same.
  const cut = (await previewReconcile(f.store, [endpointId], new Date(), { ...noGrace, historyCap: 2 })).stuck.filter((s) => s.eventId === eventId);
  assert.deepEqual(cut.map((s) => [s.kind, s.why, s.repairs]), [['parked', why, []]]);

  // A POST naming the kind (a page loaded before this rule) is taken by the route's schema and refused per row:
  // before, the restore put the row back to its failure, and the Resubmit below sent the parked command again.
  const asked = reconcileApplyBody.safeParse({ repairs: [{ kind: 'parked', endpointId, eventId, sessionId: 's-1', rowMessageId: commandId, action: 'restore' }] });
  assert.ok(asked.success, asked.error?.message);
  assert.equal((await repair(claimed.row, 'unanswered')).outcome, 'unchanged', 'a repair for another kind is refused');
  const result = await repair(claimed.row, 'parked');
  assert.deepEqual([result.outcome, result.reason?.match(/^a parked command is listed only, never repaired: settle the event that blocks its session/) !== null], ['unchanged', true], result.reason);
  const now = await f.store.getStatusRow(endpointId, eventId, 's-1');
  assert.deepEqual([now?.status, now?.messageType, now?.lastMessageId], ['Pending', 'ResubmissionRequest', commandId], 'the row still shows the parked command');
  assert.deepEqual((await f.store.listAudits(eventId)).items.filter((a) => a.type === 'ReconcileStuckCommand'), []);

  // The operator's Resubmit of the event: the row is still the command's claim, so the Manager's repeat check finds
  // it recorded and answers duplicate. The client never connects, so any send would have failed (503).
  const client = new ServiceBusClient('Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=unused;SharedAccessKey=unused;UseDevelopmentEmulator=true');
  const manager = new Manager({ store: f.store, client });
  try {
    const again = await manager.execute(endpointId, eventId, { kind: 'resubmit' }, 'operator');
    assert.deepEqual([again.outcome, again.messageId], ['duplicate', commandId]);
  } finally {
    await manager.close();
    await client.close();
  }
  // A receipt, if the repeat wrote one, is the reconstructed one of a command recorded, not sent now.
  const receipt = await f.store.getAudit(eventId, commandId);
  assert.ok(receipt === null || JSON.parse(receipt.data ?? '{}').reconstructed === true, receipt?.data ?? '');
  assert.equal((await f.store.getStatusRow(endpointId, eventId, 's-1'))?.lastMessageId, commandId);
  assert.equal(failed.messageId, claimed.row.parentMessageId, 'the failure the command answered, which a restore would have put back');
});

test('a parked resubmission whose replayed copy was answered is stale, not parked', async () => {
  const { eventId, commandId, claimed } = await recordedResubmission('parkedanswered');
  await f.store.recordHistory(entry(msg(MessageType.DeferralResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, errorText: 'Session s-1 is blocked by event evt-blocker' })));
  // The replayed copy's answer, its row write lost. It names the copy it answers (buildResponse sets ParentMessageId to
  // the inbound id, C~parked~replayed), not the command: it answers another message of the session, enqueued after
  // the command, so the row is stale by `later-response`.
  const replayed = derivedMessageId(derivedMessageId(commandId, CopyKind.Parked), CopyKind.Replayed);
  // Enqueued a second after the command (the release came later), never in the command's millisecond.
  const enqueuedAt = new Date(Date.parse(claimed.row.enqueuedAt!) + 1000).toISOString();
  const answer = entry(msg(MessageType.ResolutionResponse, { endpointId, eventId, parentMessageId: replayed, from: endpointId, enqueuedAt }));
  await f.store.recordHistory(answer);
  const found = await listed(eventId);
  assert.deepEqual([found.kinds, found.stale[0]?.evidence.messageId], [['stale:later-response'], answer.messageId]);
});

test('an edited resubmission refused with its restore lost: the restore puts back the payload last delivered, not the edit', async () => {
  const eventId = uniq('edited');
  const request = entry(msg(MessageType.EventRequest, { endpointId, eventId, to: endpointId, payload: { orderId: 'E-1', total: 10 } }));
  await f.store.recordOutcome({ history: request, status: request });
  const failure = entry(msg(MessageType.ErrorResponse, { endpointId, eventId, from: endpointId, to: 'Resolver', parentMessageId: request.messageId, errorText: 'boom' }));
  await f.store.recordOutcome({ history: failure, status: failure });
  const row = (await f.store.getStatusRow(endpointId, eventId, 's-1'))!;
  const edited = { orderId: 'E-1', total: 12 };
  // The claim as the Manager writes it for an edited resubmission (the edit as the row's payload), and its record.
  const commandId = commandMessageId(MessageType.ResubmissionRequest, row, row.lastMessageId);
  const command = { endpointId, eventId, sessionId: 's-1', messageId: commandId, messageType: MessageType.ResubmissionRequest, eventTypeId: 'OrderPlaced', parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: new Date().toISOString(), payload: edited };
  const claimed = await f.store.writeStatus(command, claimExpectation(row));
  assert.ok(claimed.outcome === 'written');
  await f.store.recordHistory(command);
  await f.store.recordHistory(entry(msg(MessageType.ErrorResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, to: 'Resolver', deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'ResubmissionRequest refused' })));
  const result = await repair(claimed.row, 'refused');
  assert.equal(result.outcome, 'repaired', result.reason);
  const after = await f.store.getStatusRow(endpointId, eventId, 's-1');
  assert.equal(after?.status, 'Failed');
  // Before, the row was put back to Failed with the refused edit as its payload.
  assert.deepEqual([after?.payload, after?.requestMessageId], [{ orderId: 'E-1', total: 10 }, request.messageId]);
});
