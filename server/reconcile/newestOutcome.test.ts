// Reconcile's stale evidence is the newest outcome the Resolver would have left, whatever the history's cap: a
// newer settling response of either kind wins over an older answer (terminal writes are last-writer-wins), a park
// reopens only what is older than it, and on a history cut at the cap the row's answers past it are read even when
// the list holds a settling one (server/reconcile/reconcile.ts settlingEvidence, staleEvidence).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { at, msg, startStoreFixture, uniq, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import { commandMessageId } from '../manager/commands.ts';
import { claimExpectation } from '../manager/manager.ts';
import { applyReconcile, previewReconcile, settlingEvidence } from './reconcile.ts';
import type { HistoryEntry } from '../../lib/store/index.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
let f: StoreFixture;
before(async () => { f = await startStoreFixture(); });
after(async () => { await f?.close(); });

/**
 * A failed event whose skip claim, written over the Failed row at `claimAt` (seconds), failed a second later (the
 * skip's failure is in history only: its status write lost). What the tests name: the row's keys and the claim's id.
 */
async function failedSkip(claimAt: number) {
  const endpointId = 'billingendpoint';
  const eventId = uniq('skip');
  const failure = msg(MessageType.ErrorResponse, { endpointId, eventId, enqueuedAt: at(0), errorText: 'boom' });
  const failed = await f.store.writeStatus(failure);
  assert.ok(failed.outcome === 'written');
  await f.store.recordHistory({ ...failure, enqueuedAt: at(0) });
  const row = failed.row;
  const skipId = commandMessageId(MessageType.SkipRequest, row, row.lastMessageId);
  const claim = { endpointId, eventId, sessionId: row.sessionId, messageId: skipId, messageType: MessageType.SkipRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: at(claimAt) };
  const claimed = await f.store.writeStatus(claim, claimExpectation(row));
  assert.ok(claimed.outcome === 'written');
  await f.store.recordHistory(claim);
  await f.store.recordHistory({ ...msg(MessageType.ErrorResponse, { endpointId, eventId, parentMessageId: skipId, errorText: 'skip failed' }), enqueuedAt: at(claimAt + 1) });
  return { endpointId, eventId, sessionId: row.sessionId, skipId };
}

/** A failed event whose skip claim failed inside the cap of 3; past the cap, `last` (status write lost). */
async function setup(last: 'park' | 'completed' = 'park') {
  const e = await failedSkip(1);
  const { endpointId, eventId, skipId } = e;
  // Other traffic past the cap.
  for (let i = 3; i <= 6; i++) await f.store.recordHistory({ ...msg(MessageType.EventRequest, { endpointId, eventId, sessionId: 's-other' }), enqueuedAt: at(i) });
  // Then, past the cap: a redelivery of the skip parked it (a new handoff), or the redelivered original completed (a
  // newer settling later response).
  const park =
    last === 'park'
      ? { ...msg(MessageType.PendingHandoffResponse, { endpointId, eventId, parentMessageId: skipId, handoffReason: 'needs approval' }), enqueuedAt: at(12) }
      : { ...msg(MessageType.ResolutionResponse, { endpointId, eventId, parentMessageId: 'redelivered-original' }), enqueuedAt: at(12) };
  await f.store.recordHistory(park);
  return { ...e, park };
}

test('a cut list: the evidence does not depend on the cap (a park past it, after a failure in it)', async () => {
  const e = await setup();
  const ev = async (historyCap: number) => (await previewReconcile(f.store, [e.endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap })).stale.find((s) => s.eventId === e.eventId)?.evidence;
  const whole = await ev(2000);
  const cut = await ev(3);
  assert.deepEqual([cut?.messageId, cut?.status], [whole?.messageId, whole?.status], 'the same row, the same history: the same repair whatever the cap');
});

test('a cut list: a newer later response past the cap wins over an older answer in the list, in the preview and on apply', async () => {
  const e = await setup('completed');
  const ev = async (historyCap: number) => (await previewReconcile(f.store, [e.endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0, historyCap })).stale.find((s) => s.eventId === e.eventId)?.evidence;
  const whole = await ev(2000);
  assert.deepEqual([whole?.messageId, whole?.rule, whole?.status], [e.park.messageId, 'later-response', 'Completed'], 'the whole list: the newest outcome');
  const cut = await ev(3);
  assert.deepEqual([cut?.messageId, cut?.status], [whole?.messageId, whole?.status], 'the same repair whatever the cap');
  await applyReconcile(f.store, [{ endpointId: e.endpointId, eventId: e.eventId, sessionId: e.sessionId, rowMessageId: e.skipId }], 'review', { historyCap: 3 });
  const row = await f.store.getStatusRow(e.endpointId, e.eventId, e.sessionId);
  assert.deepEqual([row?.status, row?.lastMessageId], ['Completed', e.park.messageId]);
});

test('a cut list: apply writes the park past the cap, not the older failure in the list', async () => {
  const e = await setup();
  await applyReconcile(f.store, [{ endpointId: e.endpointId, eventId: e.eventId, sessionId: e.sessionId, rowMessageId: e.skipId }], 'review', { historyCap: 3 });
  const row = await f.store.getStatusRow(e.endpointId, e.eventId, e.sessionId);
  assert.deepEqual([row?.status, row?.subStatus], ['Pending', 'Handoff']);
});

test('apply: a newer later response (Completed) wins over an older answer and a park between them', async () => {
  const { endpointId, eventId, sessionId, skipId } = await failedSkip(10);
  await f.store.recordHistory({ ...msg(MessageType.PendingHandoffResponse, { endpointId, eventId, parentMessageId: skipId, handoffReason: 'x' }), enqueuedAt: at(12) });
  const done = { ...msg(MessageType.ResolutionResponse, { endpointId, eventId, parentMessageId: 'redelivered-original' }), enqueuedAt: at(13) };
  await f.store.recordHistory(done);
  const preview = await previewReconcile(f.store, [endpointId], new Date(), { claimGraceMs: 0, unansweredGraceMs: 0 });
  const evidence = preview.stale.find((s) => s.eventId === eventId)?.evidence;
  assert.deepEqual([evidence?.messageId, evidence?.rule, evidence?.status], [done.messageId, 'later-response', 'Completed'], 'the preview offers the newest outcome');
  await applyReconcile(f.store, [{ endpointId, eventId, sessionId, rowMessageId: skipId }], 'review');
  const now = await f.store.getStatusRow(endpointId, eventId, sessionId);
  assert.deepEqual([now?.status, now?.subStatus, now?.lastMessageId], ['Completed', null, done.messageId]);
});

const h = (messageId: string, messageType: string, parentMessageId: string, enqueuedAt: string, deadLetterErrorDescription: string | null = null) =>
  ({ messageId, messageType, parentMessageId, enqueuedAt, sessionId: 's', deadLetterErrorDescription }) as unknown as HistoryEntry;
const claim = { lastMessageId: 'skip-1', messageType: 'SkipRequest' as const, parentMessageId: 'fail-0', sessionId: 's', enqueuedAt: at(10), status: 'Pending' as const, subStatus: null };
const pick = (history: HistoryEntry[]) => { const e = settlingEvidence(claim, history); return e && [e.messageId, e.rule, e.status]; };

test('pure: a newer later response is not overtaken by an older park because an even older failure answered the row', () => {
  const park = h('park', 'PendingHandoffResponse', 'skip-1', at(12));
  const done = h('done', 'ResolutionResponse', 'redelivered-original', at(13));
  // Without the failure: the newest outcome (Completed) wins - as the diff's own unit test says.
  assert.deepEqual(pick([park, done]), ['done', 'later-response', 'Completed']);
  // Add an OLDER failure answering the skip (Resolver order: Failed, park, Completed -> Completed).
  const err = h('err', 'ErrorResponse', 'skip-1', at(11));
  assert.deepEqual(pick([err, park, done]), ['done', 'later-response', 'Completed']);
});

test('pure: a history-only entry is no outcome, however new and whatever its dead-letter description', () => {
  // The deferred processor's trigger, dead-lettered on the way: the Resolver keeps it in history only and never
  // writes the row from it, so it does not override the real, older answer.
  const skipped = h('skipped', 'SkipResponse', 'skip-1', at(11));
  const trigger = h('pdr', 'ProcessDeferredRequest', 'x', at(12), 'gave up');
  assert.deepEqual(pick([skipped, trigger]), ['skipped', 'answers-row', 'Skipped']);
});
