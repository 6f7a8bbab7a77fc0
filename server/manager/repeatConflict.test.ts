// handoffMismatch on a reconstructed receipt (pure: rows, receipts and specs as the store returns them). A receipt a
// repeat wrote for a command the Resolver recorded names the repeating operator, not the sender; and a completion
// recorded with a result kept no note, so its null comment is not "sent without a note".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditEntry, StatusRow } from '../../lib/store/index.ts';
import { handoffMismatch } from './repeatConflict.ts';

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
