// The park reason a blocked session's messages carry, written and read back with the same pair (parkReason.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedByReason, parseBlockedByReason } from './index.ts';

test('what blockedByReason writes, parseBlockedByReason reads back, for any ids', () => {
  const cases: Array<[string, string]> = [
    ['ORD-200', 'evt-failed-1'],
    ['ORD 200', 'evt failed 1'],
    ['S is blocked by X', 'E is blocked by F'],
    ['sëssion/ü?#%', '{"id": "naïve\\n\\u0000"}'],
    ['S', '  '],
    ['', 'E1'],
  ];
  for (const [sessionId, eventId] of cases) {
    assert.equal(parseBlockedByReason(blockedByReason(sessionId, eventId), sessionId), eventId, `${sessionId} / ${eventId}`);
  }
});

test('the text as the subscriber has always written it (the Resolver stores it verbatim in existing rows)', () => {
  assert.equal(blockedByReason('ORD-200', 'evt-failed-1'), 'Session ORD-200 is blocked by evt-failed-1');
  assert.equal(blockedByReason('', 'E1'), 'Session  is blocked by E1');
});

test('another session\'s park reason names no blocker for this one, even when one session id starts the other', () => {
  const text = blockedByReason('S-1', 'E2');
  assert.equal(parseBlockedByReason(text, 'S-2'), undefined);
  assert.equal(parseBlockedByReason(text, 'S'), undefined);
  assert.equal(parseBlockedByReason(text, ''), undefined);
  assert.equal(parseBlockedByReason(blockedByReason('S-10', 'E2'), 'S-1'), undefined);
  assert.equal(parseBlockedByReason(blockedByReason('', 'E2'), 'S-1'), undefined);
});

test('texts that are not a blocked-by park reason name no blocker', () => {
  for (const text of [
    null,
    undefined,
    '',
    'Session S-1 is replaying parked messages',
    'Session S-1 is replaying a message parked before this one and parked again since',
    'Session S-1 is blocked by ',
    'session S-1 is blocked by E2',
    ' Session S-1 is blocked by E2',
    'Card declined by the payment provider',
  ]) {
    assert.equal(parseBlockedByReason(text, 'S-1'), undefined, JSON.stringify(text));
  }
});
