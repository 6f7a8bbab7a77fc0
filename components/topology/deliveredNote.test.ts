// The dead-letter list's "delivered N×" tooltip (components/topology/deliveredNote.ts): it says that a replay of
// other dead letters counts too, so an operator does not read a grown count as an endpoint retrying it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deliveredNote } from './deliveredNote.ts';

test('the count, in the right number, and that a replay which left the dead letter counts', () => {
  assert.match(deliveredNote(1), /^1 time received/);
  assert.match(deliveredNote(2), /^2 times received/);
  assert.match(deliveredNote(null), /^An unknown number of times/);
  assert.match(deliveredNote(1), /any replay that looked at it here and left it in the queue/);
});
