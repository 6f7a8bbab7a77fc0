// The agent loop's exclude list (heldHandoffs.ts): the handoffs in hand always, the held ones (refused, or left by
// the work) newest first within the console's 100-id limit. Pure logic; the loop itself is tested on the real stack in
// packages/sdk/e2e/agentApi.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HeldHandoffs, LEAVE_HOLD_MS, MAX_EXCLUDE, MAX_REMEMBERED, REFUSAL_HOLD_MS } from './heldHandoffs.ts';

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

test('the handoffs in hand are all excluded, then as many refused ones as fit, the oldest refusals dropped first', () => {
  const refused = new HeldHandoffs();
  for (const id of ids('r', 150)) refused.hold(id, REFUSAL_HOLD_MS);
  const exclude = refused.exclude(ids('h', 4));
  assert.equal(exclude.length, MAX_EXCLUDE);
  assert.deepEqual(exclude.slice(0, 4), ids('h', 4));
  assert.deepEqual(exclude.slice(4), ids('r', 150).slice(150 - 96), 'the 96 newest refusals');
});

test('a refused id in hand again is listed once; refused again it counts as the newest', () => {
  const refused = new HeldHandoffs();
  for (const id of ids('r', MAX_EXCLUDE)) refused.hold(id, REFUSAL_HOLD_MS);
  assert.deepEqual(refused.exclude(['r0']), ['r0', ...ids('r', MAX_EXCLUDE).slice(1)]);
  refused.hold('r0', REFUSAL_HOLD_MS);
  refused.hold('new', REFUSAL_HOLD_MS);
  // Over the limit by one: the oldest refusal (r1, now that r0 was refused again) gives way.
  assert.deepEqual(refused.exclude([]), [...ids('r', MAX_EXCLUDE).slice(2), 'r0', 'new']);
});

test('with the hand full to the limit no refused id is sent, and nothing in hand is dropped', () => {
  const refused = new HeldHandoffs();
  refused.hold('r0', REFUSAL_HOLD_MS);
  assert.deepEqual(refused.exclude(ids('h', MAX_EXCLUDE)), ids('h', MAX_EXCLUDE));
  assert.deepEqual(refused.exclude([]), ['r0']);
});

test('a refusal keeps its handoff out for REFUSAL_HOLD_MS, then it may be handed out (and worked) again', () => {
  let now = 1_000_000;
  const refused = new HeldHandoffs(() => now);
  refused.hold('r0', REFUSAL_HOLD_MS);
  now += 60_000;
  refused.hold('r1', REFUSAL_HOLD_MS);
  assert.deepEqual(refused.exclude([]), ['r0', 'r1']);
  now += REFUSAL_HOLD_MS - 60_000;
  assert.deepEqual(refused.exclude([]), ['r1'], 'r0 was refused REFUSAL_HOLD_MS ago: the event may have a new handoff');
  now += 60_000;
  assert.deepEqual(refused.exclude([]), []);
});

test('a handoff the work left is held for LEAVE_HOLD_MS, a refused one for REFUSAL_HOLD_MS', () => {
  let now = 1_000_000;
  const held = new HeldHandoffs(() => now);
  held.hold('left', LEAVE_HOLD_MS);
  held.hold('refused', REFUSAL_HOLD_MS);
  assert.deepEqual(held.exclude([]), ['left', 'refused']);
  now += LEAVE_HOLD_MS;
  assert.deepEqual(held.exclude([]), ['refused']);
  assert.equal(held.isHeld('left'), false);
  assert.equal(held.isHeld('refused'), true);
});

test('a hold with no room in the exclude is still known as one, up to MAX_REMEMBERED holds', () => {
  const held = new HeldHandoffs();
  for (const id of ids('l', MAX_EXCLUDE + 1)) held.hold(id, LEAVE_HOLD_MS);
  assert.equal(held.exclude([]).includes('l0'), false, 'the oldest gave way in the exclude');
  assert.equal(held.isHeld('l0'), true, 'so the console may hand it out, and the loop knows it is held');
  for (const id of ids('m', MAX_REMEMBERED)) held.hold(id, LEAVE_HOLD_MS);
  assert.equal(held.isHeld('l100'), false, 'past MAX_REMEMBERED the oldest holds are forgotten');
  assert.equal(held.isHeld('m0'), true);
});
