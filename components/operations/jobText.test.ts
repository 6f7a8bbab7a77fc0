// The Jobs drawer's words: counts say "sent" (a command sent is not an event fixed), a confirmed job reads as
// starting, the button counts paused jobs too, and the empty drawer names what it would list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buttonLabel, countParts, EMPTY_TEXT, stateLabel } from './jobText.ts';

test('a resubmit of 16 events whose commands all went out says 16 sent, not 16 done', () => {
  const parts = countParts({ kind: 'resubmit', state: 'completed', total: 16, done: 16, refused: 0, failed: 0 });
  assert.deepEqual(parts, ['16 / 16 processed', '16 sent']);
  assert.ok(!parts.join(' ').includes('done'));
});

test('refusals and send failures are named as such; a replay counts replayed and uncertain', () => {
  assert.deepEqual(countParts({ kind: 'skip', state: 'completed', total: 1200, done: 1000, refused: 150, failed: 50 }), [
    '1,200 / 1,200 processed',
    '1,000 sent',
    '150 refused (state changed)',
    '50 failed to send',
  ]);
  assert.deepEqual(countParts({ kind: 'replay', state: 'completed', total: 5, done: 4, refused: 1, failed: 0 }), ['5 / 5 processed', '4 replayed', '1 uncertain']);
});

test('a confirmed job waiting for the runner reads as starting, not paused', () => {
  assert.equal(stateLabel({ state: 'queued', requested: 'run' }), 'starting');
  assert.equal(stateLabel({ state: 'running', requested: 'pause' }), 'running (pause requested)');
  assert.equal(stateLabel({ state: 'paused', requested: 'pause' }), 'paused');
});

test('the Jobs button counts paused jobs beside running ones', () => {
  assert.equal(buttonLabel([]), 'Jobs');
  assert.equal(buttonLabel([{ state: 'completed' }]), 'Jobs');
  assert.equal(buttonLabel([{ state: 'paused' }]), 'Jobs (1 paused)');
  assert.equal(buttonLabel([{ state: 'running' }, { state: 'queued' }, { state: 'paused' }, { state: 'cancelled' }]), 'Jobs (2 running, 1 paused)');
});

test('the empty drawer says it lists dead-letter replays too', () => {
  assert.match(EMPTY_TEXT, /bulk jobs/);
  assert.match(EMPTY_TEXT, /dead-letter replays/);
});
