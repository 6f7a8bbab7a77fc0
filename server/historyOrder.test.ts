// The tie rule of server/historyOrder.ts on plain entries: the same history gives the same order whatever order the
// store listed it in, and an answer of the same enqueuedAt comes after the message it answers, whenever recorded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { comesAfter, inHistoryOrder } from './historyOrder.ts';

const T0 = '2026-12-01T09:00:00.000Z';
const T1 = '2026-12-01T09:00:00.001Z';
const entry = (messageId: string, enqueuedAt: string, recordedAt: string, parentMessageId: string | null = null) => ({ messageId, enqueuedAt, recordedAt, parentMessageId });
const ids = (entries: ReturnType<typeof entry>[]) => inHistoryOrder(entries).map((h) => h.messageId);

test('enqueuedAt first, then when the Resolver recorded the entry, whatever the listed order', () => {
  const a = entry('m-b', T0, T0);
  const b = entry('m-a', T0, T1);
  const c = entry('m-0', T1, T0);
  assert.deepEqual(ids([c, b, a]), ['m-b', 'm-a', 'm-0']);
  assert.deepEqual(ids([a, c, b]), ['m-b', 'm-a', 'm-0']);
});

test('recorded together: an answer after what it answers, else by message id', () => {
  const request = entry('z-request', T0, T0);
  const answer = entry('a-answer', T0, T0, 'z-request');
  const other = entry('m-other', T0, T0);
  assert.deepEqual(ids([answer, request, other]), ['m-other', 'z-request', 'a-answer']);
  assert.deepEqual(ids([other, request, answer]), ['m-other', 'z-request', 'a-answer']);
  // A message naming itself as its parent is no answer to itself.
  assert.deepEqual(ids([entry('b', T0, T0, 'b'), entry('a', T0, T0, 'a')]), ['a', 'b']);
  // A cycle no real history has still gives one order.
  assert.deepEqual(ids([entry('y', T0, T0, 'x'), entry('x', T0, T0, 'y')]), ['x', 'y']);
});

test('an answer recorded before its request still comes after it: the parent rule before recordedAt', () => {
  const T0_4 = '2026-12-01T09:00:00.004Z';
  const request = entry('z-request', T0, T0_4);
  const answer = entry('a-answer', T0, T0, 'z-request');
  assert.deepEqual(ids([answer, request]), ['z-request', 'a-answer']);
  assert.deepEqual(ids([request, answer]), ['z-request', 'a-answer']);
  // Other entries of that enqueuedAt still go by recordedAt: one recorded between the two keeps its place.
  const other = entry('m-other', T0, T1);
  assert.deepEqual(ids([answer, other, request]), ['m-other', 'z-request', 'a-answer']);
});

test('comesAfter: a later enqueuedAt, else an answer (through answers of its instant), else a strictly later recordedAt; a full tie is neither', () => {
  const request = entry('z-request', T0, T1);
  const answer = entry('a-answer', T0, T0, 'z-request');
  const reply = entry('m-reply', T0, T0, 'a-answer');
  const all = [request, answer, reply];
  // The link beats recordedAt, also two steps down.
  assert.equal(comesAfter(answer, request, all), true);
  assert.equal(comesAfter(request, answer, all), false);
  assert.equal(comesAfter(reply, request, all), true);
  // No link: recordedAt, strictly; a full tie is after in neither direction, whatever the ids.
  const x = entry('x', T0, T0);
  const y = entry('y', T0, T0);
  assert.equal(comesAfter(y, x, [x, y]), false);
  assert.equal(comesAfter(x, y, [x, y]), false);
  assert.equal(comesAfter(request, x, [x, request]), true);
  // Another instant: enqueuedAt alone, and an entry is not after itself.
  assert.equal(comesAfter(entry('b', T1, T0), request, [request]), true);
  assert.equal(comesAfter(x, x, [x]), false);
});
