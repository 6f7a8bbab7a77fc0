// handoffMismatch on a reconstructed receipt (pure: rows, receipts and specs as the store returns them). A receipt a
// repeat wrote for a command the Resolver recorded names the repeating operator, not the sender; and a completion
// recorded with a result kept no note, so its null comment is not "sent without a note".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditEntry, HistoryEntry, StatusRow } from '../../lib/store/index.ts';
import { handoffMismatch, resubmitMismatch, storedBeforeClaim } from './repeatConflict.ts';

const row = { updatedAt: '2026-12-05T08:00:00.000Z' } as StatusRow;
const receiptOf = (over: Partial<AuditEntry>): AuditEntry =>
  ({ id: 'cmd-1', eventId: 'e', endpointId: 'crm', eventTypeId: null, type: 'FailHandoff', auditor: 'bob', comment: null, data: null, at: '2026-12-05T08:01:00.000Z', ...over }) as AuditEntry;
const reconstructed = JSON.stringify({ messageId: 'cmd-1', sessionId: 's', answers: 'h-1', reconstructed: true });

test('a reconstructed receipt is named as reconstructed by the repeating operator, not as sent by them', () => {
  const receipt = receiptOf({ comment: 'disk full', data: reconstructed });
  const why = handoffMismatch({ kind: 'handoffFail', messageId: 'h-1', errorText: 'quota exceeded' }, row, receipt, null);
  assert.ok(why);
  assert.match(why, /receipt reconstructed by bob at 2026-12-05T08:01:00.000Z, with a different error text/);
  assert.doesNotMatch(why, /\(by bob/);
});

test("a sender's own receipt still names its sender", () => {
  const receipt = receiptOf({ comment: 'disk full', data: JSON.stringify({ messageId: 'cmd-1', sessionId: 's', answers: 'h-1' }) });
  const why = handoffMismatch({ kind: 'handoffFail', messageId: 'h-1', errorText: 'quota exceeded' }, row, receipt, null);
  assert.match(why ?? '', /already sent \(by bob at /);
});

test('a reconstructed completion without a comment is unknown text: a repeat with a note stays a duplicate', () => {
  const receipt = receiptOf({ type: 'CompleteHandoff', comment: null, data: reconstructed });
  assert.equal(handoffMismatch({ kind: 'handoffComplete', messageId: 'h-1', note: 'paid by wire' }, row, receipt, null), undefined);
});

test('a reconstructed completion with its note is still compared', () => {
  const receipt = receiptOf({ type: 'CompleteHandoff', comment: 'paid by card', data: reconstructed });
  const why = handoffMismatch({ kind: 'handoffComplete', messageId: 'h-1', note: 'paid by wire' }, row, receipt, null);
  assert.match(why ?? '', /receipt reconstructed by bob at .*, with a different note/);
});

// For a caller who may not read the event's audit trail (an Agent-only principal), no other principal is named.
const agentOnly = { auditor: 'ledger-agent', mayReadAudits: false };

test("an agent-only caller is told when the first settlement was sent, not the operator's name", () => {
  const receipt = receiptOf({ comment: 'disk full', data: JSON.stringify({ messageId: 'cmd-1', sessionId: 's', answers: 'h-1' }) });
  const why = handoffMismatch({ kind: 'handoffFail', messageId: 'h-1', errorText: 'quota exceeded' }, row, receipt, null, agentOnly);
  assert.match(why ?? '', /already sent \(by another principal at 2026-12-05T08:01:00.000Z, with a different error text\)/);
  assert.doesNotMatch(why ?? '', /bob/);
  const reconstructedWhy = handoffMismatch({ kind: 'handoffFail', messageId: 'h-1', errorText: 'quota exceeded' }, row, receiptOf({ comment: 'disk full', data: reconstructed }), null, agentOnly);
  assert.match(reconstructedWhy ?? '', /receipt reconstructed by another principal at /);
  assert.doesNotMatch(reconstructedWhy ?? '', /bob/);
});

test("an agent-only caller is not told the completing operator's name from the Resolver's record either", () => {
  const recorded = { messageId: 'cmd-1', endpointId: 'crm', sessionId: 's', recordedAt: '2026-12-05T08:02:00.000Z', payload: { note: 'paid by card', completedBy: 'bob' } } as unknown as HistoryEntry;
  const spec = { kind: 'handoffComplete' as const, messageId: 'h-1', note: 'paid by wire' };
  const why = handoffMismatch(spec, row, null, recorded, agentOnly);
  assert.match(why ?? '', /recorded by the Resolver at 2026-12-05T08:02:00.000Z, completed by another principal, with a different note/);
  assert.doesNotMatch(why ?? '', /bob/);
  assert.match(handoffMismatch(spec, row, null, recorded) ?? '', /completed by bob, with a different note/, 'an operator still learns it');
});

test("an agent-only caller's own earlier settlement is named as its own", () => {
  const receipt = receiptOf({ auditor: 'ledger-agent', comment: 'disk full', data: JSON.stringify({ messageId: 'cmd-1', sessionId: 's', answers: 'h-1' }) });
  assert.match(handoffMismatch({ kind: 'handoffFail', messageId: 'h-1', errorText: 'quota exceeded' }, row, receipt, null, agentOnly) ?? '', /\(by ledger-agent at /);
});

// What a recorded resubmit's claim sent is read from the history before its command (storedBeforeClaim), in the
// history's order (server/historyOrder.ts): the store lists it by enqueuedAt alone, and with the request, its
// failure and the command stamped one millisecond, a list giving the command first left nothing "before" it, so a
// plain claim read as an edit and a plain repeat of it was refused as a conflict.
test('a plain claim stamped the same millisecond as the request and failure before it stays plain, whatever the listed order', () => {
  const T = '2026-12-05T08:00:00.000Z';
  const at = (messageId: string, messageType: string, parentMessageId: string | null, payload?: unknown) =>
    ({ messageId, messageType, parentMessageId, endpointId: 'crm', sessionId: 's', enqueuedAt: T, recordedAt: T, eventTypeId: 'OrderPlaced', payload }) as unknown as HistoryEntry;
  const request = at('z-request', 'EventRequest', null, { a: 1 });
  const failed = at('m-failed', 'ErrorResponse', 'z-request');
  const command = at('a-command', 'ResubmissionRequest', 'm-failed', { a: 1 });
  // Once recorded, a plain claim's row holds the command's payload under the command's own id, as an edit's does.
  const claim = { endpointId: 'crm', sessionId: 's', lastMessageId: 'a-command', requestMessageId: 'a-command', payload: { a: 1 }, eventTypeId: 'OrderPlaced', updatedAt: T } as unknown as StatusRow;
  for (const history of [[request, failed, command], [command, failed, request]]) {
    const order = history.map((h) => h.messageId).join();
    const before = storedBeforeClaim(history, claim);
    assert.deepEqual(before, { payload: { a: 1 }, eventTypeId: 'OrderPlaced' }, order);
    assert.equal(resubmitMismatch({ kind: 'resubmit' }, claim, null, before), undefined, `${order}: a plain repeat of a plain claim is a duplicate`);
  }
});

// A handoff settlement's content is not the event (the Resolver keeps it off the row: resolver-worker/project.ts),
// so what a resubmit's claim replaced is the request before it. Before, a refused completion with a note between
// the handoff and a plain resubmit made the note "what the event held", so the recorded plain claim read as an edit
// and a plain repeat of it was refused as a conflict.
test('a handoff completion between the request and a plain claim is not what the event held before it', () => {
  const at = (messageId: string, messageType: string, ms: number, payload?: unknown) =>
    ({ messageId, messageType, parentMessageId: null, endpointId: 'crm', sessionId: 's', enqueuedAt: new Date(Date.UTC(2026, 11, 5, 8, 0, 0, ms)).toISOString(), recordedAt: new Date(Date.UTC(2026, 11, 5, 8, 0, 0, ms)).toISOString(), eventTypeId: 'OrderPlaced', payload }) as unknown as HistoryEntry;
  const history = [
    at('request', 'EventRequest', 1, { a: 1 }),
    at('park', 'PendingHandoffResponse', 2),
    at('completion', 'HandoffCompletedRequest', 3, { note: 'imported', completedBy: 'alice' }),
    at('command', 'ResubmissionRequest', 4, { a: 1 }),
  ];
  const claim = { endpointId: 'crm', sessionId: 's', lastMessageId: 'command', requestMessageId: 'command', payload: { a: 1 }, eventTypeId: 'OrderPlaced' } as unknown as StatusRow;
  const before = storedBeforeClaim(history, claim);
  assert.deepEqual(before, { payload: { a: 1 }, eventTypeId: 'OrderPlaced' });
  assert.equal(resubmitMismatch({ kind: 'resubmit' }, claim, null, before), undefined);
});
