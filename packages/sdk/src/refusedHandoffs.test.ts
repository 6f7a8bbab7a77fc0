// The agent loop's exclude list (refusedHandoffs.ts): the handoffs in hand always, the refused ones newest first
// within the console's 100-id limit. Pure logic; the loop itself is tested on the real stack in
// packages/sdk/e2e/agentApi.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_EXCLUDE, REFUSAL_HOLD_MS, RefusedHandoffs } from './refusedHandoffs.ts';

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

test('the handoffs in hand are all excluded, then as many refused ones as fit, the oldest refusals dropped first', () => {
  const refused = new RefusedHandoffs();
  for (const id of ids('r', 150)) refused.add(id);
  const exclude = refused.exclude(ids('h', 4));
  assert.equal(exclude.length, MAX_EXCLUDE);
  assert.deepEqual(exclude.slice(0, 4), ids('h', 4));
  assert.deepEqual(exclude.slice(4), ids('r', 150).slice(150 - 96), 'the 96 newest refusals');
});

test('a refused id in hand again is listed once; refused again it counts as the newest', () => {
  const refused = new RefusedHandoffs();
  for (const id of ids('r', MAX_EXCLUDE)) refused.add(id);
  assert.deepEqual(refused.exclude(['r0']), ['r0', ...ids('r', MAX_EXCLUDE).slice(1)]);
  refused.add('r0');
  refused.add('new');
  // Over the limit by one: the oldest refusal (r1, now that r0 was refused again) gives way.
  assert.deepEqual(refused.exclude([]), [...ids('r', MAX_EXCLUDE).slice(2), 'r0', 'new']);
});

test('with the hand full to the limit no refused id is sent, and nothing in hand is dropped', () => {
  const refused = new RefusedHandoffs();
  refused.add('r0');
  assert.deepEqual(refused.exclude(ids('h', MAX_EXCLUDE)), ids('h', MAX_EXCLUDE));
  assert.deepEqual(refused.exclude([]), ['r0']);
});

test('a refusal keeps its handoff out for REFUSAL_HOLD_MS, then it may be handed out (and worked) again', () => {
  let now = 1_000_000;
  const refused = new RefusedHandoffs(() => now);
  refused.add('r0');
  now += 60_000;
  refused.add('r1');
  assert.deepEqual(refused.exclude([]), ['r0', 'r1']);
  now += REFUSAL_HOLD_MS - 60_000;
  assert.deepEqual(refused.exclude([]), ['r1'], 'r0 was refused REFUSAL_HOLD_MS ago: the event may have a new handoff');
  now += 60_000;
  assert.deepEqual(refused.exclude([]), []);
});
