// What a restore writes back (stuck.ts previousEntry): the event's own outcome before the stuck request, never a
// subscriber's notice about another message (a refused command, a replay gap), which the Resolver keeps in
// history only. Pure: history entries as the store returns them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HistoryEntry } from '../../lib/store/index.ts';
import { previousEntry } from './stuck.ts';

const entry = (
  messageId: string,
  messageType: string,
  enqueuedAt: string,
  extra: Partial<HistoryEntry> = {},
) =>
  ({
    messageId,
    messageType,
    enqueuedAt,
    sessionId: 's',
    parentMessageId: null,
    deadLetterReason: null,
    deadLetterErrorDescription: null,
    ...extra,
  }) as unknown as HistoryEntry;

test('a restore goes back to the event outcome, not to a notice recorded after it', () => {
  const failed = entry('err-1', 'ErrorResponse', '2026-12-03T10:00:01Z');
  const refused = entry('notice-1', 'ErrorResponse', '2026-12-03T10:00:02Z', {
    deadLetterReason: 'CommandRefused',
    deadLetterErrorDescription: 'SkipRequest did not come from the Manager',
  });
  const gap = entry('notice-2', 'ErrorResponse', '2026-12-03T10:00:03Z', {
    deadLetterReason: 'ReplayGap',
    deadLetterErrorDescription: 'sequence 7 never came back',
  });
  // A ContinuationRequest names no parent we keep: the newest state-bearing entry before it is the answer.
  const row = {
    sessionId: 's',
    lastMessageId: 'cont-1',
    parentMessageId: null,
    enqueuedAt: '2026-12-03T10:00:04Z',
  };
  assert.equal(previousEntry(row, [failed, refused, gap])?.messageId, 'err-1');
  // Named as the parent, a notice is still not what the row showed.
  assert.equal(
    previousEntry({ ...row, parentMessageId: 'notice-1' }, [failed, refused, gap])?.messageId,
    'err-1',
  );
});
