// The blocker rule of a parked row (parkedBlocker.ts), pure: which event a row waits on. Its query form is held to
// the same answers on the embedded Cosmos server by server/parkedBlocker.readers.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedByReason } from '@nimbus/sdk/contract';
import { blockerOf } from './parkedBlocker.ts';

test('blockedBy, when set, wins over the park reason', () => {
  assert.equal(blockerOf({ sessionId: 'S-1', blockedBy: 'E1', errorText: blockedByReason('S-1', 'E2') }), 'E1');
  assert.equal(blockerOf({ sessionId: 'S-1', blockedBy: 'E1', errorText: null }), 'E1');
});

test('without blockedBy (null or empty), the blocker is read from the park reason of the row\'s own session', () => {
  assert.equal(blockerOf({ sessionId: 'S-1', blockedBy: null, errorText: blockedByReason('S-1', 'E2') }), 'E2');
  assert.equal(blockerOf({ sessionId: 'S-1', blockedBy: '', errorText: blockedByReason('S-1', 'E2') }), 'E2');
  // Ids may hold spaces, even the reason's own words: the known session makes the split.
  assert.equal(blockerOf({ sessionId: 'S 1 is blocked by X', blockedBy: null, errorText: blockedByReason('S 1 is blocked by X', 'E 2') }), 'E 2');
});

test('neither: no blockedBy and a reason that names no blocker is none', () => {
  for (const errorText of [null, '', 'Session S-1 is replaying parked messages', blockedByReason('S-1', ''), blockedByReason('S-2', 'E2')])
    assert.equal(blockerOf({ sessionId: 'S-1', blockedBy: null, errorText }), null, `errorText ${JSON.stringify(errorText)}`);
});
