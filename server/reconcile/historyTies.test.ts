// Reconcile on two history entries stamped the same millisecond (a request and its answer, two answers of one
// message): the store lists history by enqueuedAt alone, so such a pair comes back in whatever order the database
// kept it. The restore's state (stuck.ts previousEntry), the parked finding's deferral (stuck.ts replyTo) and the
// stale evidence (reconcile.ts settlingEvidence) take the newest entry by the history's order
// (server/historyOrder.ts), so each answer is the same whichever order the entries are given in. Pure: entries as
// the store returns them, each case in both orders (before, one of the two orders gave the wrong entry). A full tie
// (one receive batch: the same recordedAt too) says nothing of which came first, so the stale evidence keeps the
// settling response however the message ids sort. The cut-list refusal case answers the store's refusal query (by
// enqueuedAt alone) with the tied notices in the order given, as the database may list them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, WireText } from '@nimbus/sdk/contract';
import type { HistoryEntry, MessageStore, StatusRowSummary } from '../../lib/store/index.ts';
import { previousEntry, stuckFinding } from './stuck.ts';
import { settlingEvidence } from './reconcile.ts';

const T0 = '2026-12-01T09:00:00.000Z';
const T1 = '2026-12-01T09:00:01.000Z';
const T2 = '2026-12-01T09:00:02.000Z';
/** recordedAt: when the Resolver recorded it (ms after T1), the tie's next rule after the answer link. */
const entry = (messageId: string, messageType: string, enqueuedAt: string, parentMessageId: string | null, extra: Partial<HistoryEntry> = {}) =>
  ({
    messageId,
    messageType,
    enqueuedAt,
    recordedAt: T1,
    endpointId: 'crm',
    sessionId: 's',
    parentMessageId,
    from: 'crm',
    deadLetterReason: null,
    deadLetterErrorDescription: null,
    errorText: null,
    ...extra,
  }) as unknown as HistoryEntry;
const recordedAt = (ms: number) => new Date(Date.parse(T1) + ms).toISOString();
const bothOrders = <T>(a: T, b: T): T[][] => [[a, b], [b, a]];

test('previousEntry: of a request and its answer stamped the same millisecond, the answer is the state to restore', () => {
  // Ids that sort the wrong way round, so only the answer link can put the answer last.
  const request = entry('z-request', MessageType.EventRequest, T0, null, { recordedAt: T1 });
  const failed = entry('a-failed', MessageType.ErrorResponse, T0, 'z-request', { recordedAt: T1 });
  // A ContinuationRequest names no parent we keep: the newest state-bearing entry before it.
  const row = { sessionId: 's', lastMessageId: 'cont-1', parentMessageId: null, enqueuedAt: T2 };
  for (const history of bothOrders(request, failed)) assert.equal(previousEntry(row, history)?.messageId, 'a-failed', history.map((h) => h.messageId).join());
});

/** A ContinuationRequest row recorded at T0, Pending long after: stuck unless something answers it. */
const continuation = {
  endpointId: 'crm',
  eventId: 'evt-1',
  sessionId: 's',
  eventTypeId: null,
  status: 'Pending',
  subStatus: null,
  messageType: MessageType.ContinuationRequest,
  lastMessageId: 'cont-1',
  parentMessageId: null,
  from: 'crm',
  enqueuedAt: T0,
  updatedAt: T0,
} as unknown as StatusRowSummary;
/** No store read is needed here: any would throw. */
const noStore = new Proxy({}, { get: (_t, name) => { throw new Error(`unexpected store read: ${String(name)}`); } }) as MessageStore;
const nothingLater = () => Promise.resolve({ items: [], corrupt: [] });

test('stuck, parked: of two deferrals stamped the same millisecond, the one recorded last is named, on a whole list and a cut one', async () => {
  const request = entry('cont-1', MessageType.ContinuationRequest, T0, null);
  const older = entry('z-older', MessageType.DeferralResponse, T1, 'cont-1', { recordedAt: recordedAt(1), errorText: 'blocked by evt-old' });
  const newer = entry('a-newer', MessageType.DeferralResponse, T1, 'cont-1', { recordedAt: recordedAt(2), errorText: 'blocked by evt-new' });
  const o = { now: new Date(Date.parse(T0) + 3_600_000), claimGraceMs: 0, unansweredGraceMs: 0 };
  for (const [first, second] of bothOrders(older, newer)) {
    const order = `${first!.messageId} listed first`;
    const whole = await stuckFinding(noStore, continuation, { entries: [request, first!, second!], cutOff: false, corrupt: 0 }, o, () => Promise.reject(new Error('not read')), nothingLater);
    assert.equal(whole?.kind, 'parked', order);
    assert.match(whole?.why ?? '', /DeferralResponse a-newer: blocked by evt-new/, `whole list, ${order}`);
    // Cut at the cap: the deferrals come from the row's answers query (newest first there), none in the list.
    const cut = await stuckFinding(noStore, continuation, { entries: [request], cutOff: true, corrupt: 0 }, o, () => Promise.resolve({ items: [first!, second!], corrupt: [] }), nothingLater);
    assert.match(cut?.why ?? '', /DeferralResponse a-newer: blocked by evt-new/, `cut list, ${order}`);
  }
});

test('stuck, refused: of two refusals stamped the same millisecond, the one recorded last is named, on a whole list and a cut one', async () => {
  const request = entry('cont-1', MessageType.ContinuationRequest, T0, null);
  const refusal = (messageId: string, ms: number, why: string) =>
    entry(messageId, MessageType.ErrorResponse, T1, 'cont-1', { recordedAt: recordedAt(ms), deadLetterReason: WireText.CommandRefused, deadLetterErrorDescription: why });
  const older = refusal('z-older', 1, 'refused: old reason');
  const newer = refusal('a-newer', 2, 'refused: new reason');
  const o = { now: new Date(Date.parse(T0) + 3_600_000), claimGraceMs: 0, unansweredGraceMs: 0 };
  for (const [first, second] of bothOrders(older, newer)) {
    const order = `${first!.messageId} listed first`;
    const whole = await stuckFinding(noStore, continuation, { entries: [request, first!, second!], cutOff: false, corrupt: 0 }, o, () => Promise.reject(new Error('not read')), nothingLater);
    assert.equal(whole?.kind, 'refused', order);
    assert.match(whole?.why ?? '', /CommandRefused notice a-newer: refused: new reason/, `whole list, ${order}`);
    // Cut at the cap: the refusals come from their own query, newest first by enqueuedAt alone - a tie as listed.
    // Only that query is answered (as the store would: at most `limit`, newest first); any other read throws.
    const listHistoryRefusals = (_e: string, _ep: string, _s: string, _m: string, limit = 1) => Promise.resolve({ items: [first!, second!].slice(0, limit), corrupt: [] });
    const store = new Proxy({}, { get: (_t, name) => (name === 'listHistoryRefusals' ? listHistoryRefusals : Reflect.get(noStore, name)) }) as MessageStore;
    const cut = await stuckFinding(store, continuation, { entries: [request], cutOff: true, corrupt: 0 }, o, () => Promise.resolve({ items: [], corrupt: [] }), nothingLater);
    assert.equal(cut?.kind, 'refused', `cut list, ${order}`);
    assert.match(cut?.why ?? '', /CommandRefused notice a-newer: refused: new reason/, `cut list, ${order}`);
  }
});

const skipClaim = { lastMessageId: 'skip-1', messageType: MessageType.SkipRequest, parentMessageId: 'fail-0', sessionId: 's', enqueuedAt: T0, status: 'Pending' as const, subStatus: null };

test('stale evidence: a later response answering a request that answers the row, all stamped one millisecond, is the newest outcome', () => {
  // The skip failed; a resubmission of that failure was answered Completed: failure, resubmission, completion, by
  // their links (the ids sort the other way round).
  const failed = entry('z-failed', MessageType.ErrorResponse, T1, 'skip-1');
  const resubmit = entry('m-resubmit', MessageType.ResubmissionRequest, T1, 'z-failed');
  const done = entry('a-done', MessageType.ResolutionResponse, T1, 'm-resubmit');
  for (const history of [[failed, resubmit, done], [done, resubmit, failed]]) {
    const e = settlingEvidence(skipClaim, history);
    assert.deepEqual([e?.messageId, e?.rule, e?.status], ['a-done', 'later-response', 'Completed'], history.map((h) => h.messageId).join());
  }
});

test('stale evidence: a park stamped the same millisecond as the failure it follows, recorded after it, reopens the row', () => {
  const failed = entry('z-failed', MessageType.ErrorResponse, T1, 'skip-1', { recordedAt: recordedAt(1) });
  const park = entry('a-park', MessageType.PendingHandoffResponse, T1, 'skip-1', { recordedAt: recordedAt(2), handoffReason: 'needs approval' });
  for (const history of bothOrders(failed, park)) {
    const e = settlingEvidence(skipClaim, history);
    assert.deepEqual([e?.messageId, e?.rule, e?.status], ['a-park', 'answers-row', 'Pending'], history.map((h) => h.messageId).join());
  }
});

test('stale evidence: a failure and a park of one receive batch (same millisecond, same recordedAt) keep the failure, however their ids sort', () => {
  // The store gives every entry of a batch one recordedAt, so only the message ids order the pair: before, `a-fail`,
  // `b-park` reopened the row (Pending) and `b-fail`, `a-park` did not. Nothing says the park came after: no reopening.
  for (const [failId, parkId] of [['a-fail', 'b-park'], ['b-fail', 'a-park']] as const) {
    const failed = entry(failId, MessageType.ErrorResponse, T1, 'skip-1', { recordedAt: recordedAt(1) });
    const park = entry(parkId, MessageType.PendingHandoffResponse, T1, 'skip-1', { recordedAt: recordedAt(1), handoffReason: 'needs approval' });
    for (const history of bothOrders(failed, park)) {
      const e = settlingEvidence(skipClaim, history);
      assert.deepEqual([e?.messageId, e?.rule, e?.status], [failId, 'answers-row', 'Failed'], history.map((h) => h.messageId).join());
    }
  }
});

test('stale evidence: a park recorded after a later failure reopens it, though parents-first lists the park first', () => {
  // The failure answers a resubmission the Resolver recorded after it (an answer before its request), so the
  // history's order is park, resubmission, failure: before, "after the failure" was a slice of that list and left
  // the park out. Neither answers the other, and the park was recorded later: the Resolver's write of it came after.
  const resubmit = entry('y-resubmit', MessageType.ResubmissionRequest, T1, null, { recordedAt: recordedAt(3) });
  const failed = entry('s-failed', MessageType.ErrorResponse, T1, 'y-resubmit', { recordedAt: recordedAt(1) });
  const park = entry('p-park', MessageType.PendingHandoffResponse, T1, 'skip-1', { recordedAt: recordedAt(2), handoffReason: 'needs approval' });
  for (const history of [[resubmit, failed, park], [park, failed, resubmit]]) {
    const e = settlingEvidence(skipClaim, history);
    assert.deepEqual([e?.messageId, e?.rule, e?.status], ['p-park', 'answers-row', 'Pending'], history.map((h) => h.messageId).join());
  }
});
