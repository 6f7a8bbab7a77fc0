// The Resubmit and Skip confirmations' wording on a session's parked events (components/sessionRelease.ts): a count
// with its noun and verb in the right number, and no "event(s)".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parkedFollowText } from './sessionRelease.ts';

test('several parked events: counted, plural', () => {
  assert.equal(parkedFollowText(8), 'its 8 parked events follow');
});

test('one parked event: singular noun and verb', () => {
  assert.equal(parkedFollowText(1), 'its 1 parked event follows');
});

test('none parked: says so instead of "its 0 parked events follow"', () => {
  assert.equal(parkedFollowText(0), 'nothing is parked behind it');
});
