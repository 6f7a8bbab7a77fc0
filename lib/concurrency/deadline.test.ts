// raceDeadline: the one race of a promise against a time limit and/or a signal (pure logic, no servers). The timer
// is observed through the process's list of active handles (a ref'd timer is one 'Timeout' there), not by waiting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { DEADLINE_PASSED, raceDeadline } from './deadline.ts';

/** Ref'd timers of the process: what keeps it alive. */
const refedTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
const never = <T>() => new Promise<T>(() => undefined);

test('gives the work its result, or its rejection, when it settles first', async () => {
  assert.equal(await raceDeadline(Promise.resolve(7), { ms: 60_000 }), 7);
  assert.equal(await raceDeadline(Promise.resolve(7), { signal: new AbortController().signal }), 7);
  await assert.rejects(raceDeadline(Promise.reject(new Error('boom')), { ms: 60_000 }), /boom/);
});

test('gives DEADLINE_PASSED when the time runs out first', async () => {
  assert.equal(await raceDeadline(never<number>(), { ms: 0 }), DEADLINE_PASSED);
  assert.equal(await raceDeadline(never<number>(), { ms: 5, signal: new AbortController().signal }), DEADLINE_PASSED);
});

test('gives DEADLINE_PASSED on abort while the work runs, and at once when already aborted', async () => {
  const stop = new AbortController();
  const raced = raceDeadline(never<number>(), { signal: stop.signal, ms: 60_000 });
  stop.abort();
  assert.equal(await raced, DEADLINE_PASSED);
  assert.equal(await raceDeadline(never<number>(), { signal: stop.signal }), DEADLINE_PASSED);
});

test('clears its timer and removes its abort listener whichever wins', async () => {
  const before = refedTimers();
  const stop = new AbortController();
  let finish!: (v: number) => void;
  const raced = raceDeadline(new Promise<number>((r) => (finish = r)), { ms: 60_000, signal: stop.signal });
  assert.equal(refedTimers(), before + 1, 'a ref’d timer while the work runs');
  assert.equal(getEventListeners(stop.signal, 'abort').length, 1);
  finish(1);
  assert.equal(await raced, 1);
  assert.equal(refedTimers(), before, 'the timer cleared once the work won');
  assert.equal(getEventListeners(stop.signal, 'abort').length, 0, 'the listener removed');

  const aborted = raceDeadline(never<number>(), { ms: 60_000, signal: stop.signal });
  stop.abort();
  assert.equal(await aborted, DEADLINE_PASSED);
  assert.equal(refedTimers(), before, 'the timer cleared once the signal won');
});

test('unref: its timer does not keep the process alive; no limit, Infinity or a longer wait than a timer holds: no timer', async () => {
  const before = refedTimers();
  let finish!: (v: number) => void;
  const work = new Promise<number>((r) => (finish = r));
  const raced = [
    raceDeadline(work, { ms: 60_000, unref: true }),
    raceDeadline(work, {}),
    raceDeadline(work, { ms: Infinity }),
    raceDeadline(work, { ms: 2 ** 31 }), // setTimeout would take it as 1 ms
  ];
  assert.equal(refedTimers(), before);
  finish(2);
  assert.deepEqual(await Promise.all(raced), [2, 2, 2, 2], 'none of them passed its deadline');
});

test('a work that fails after the limit won is no unhandled rejection', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    for (const limit of ['time', 'abort', 'aborted before'] as const) {
      const stop = new AbortController();
      if (limit === 'aborted before') stop.abort();
      let fail!: (e: Error) => void;
      const raced = raceDeadline(new Promise<never>((_, reject) => (fail = reject)), limit === 'time' ? { ms: 0 } : { signal: stop.signal });
      stop.abort();
      assert.equal(await raced, DEADLINE_PASSED);
      fail(new Error(`late after ${limit}`));
    }
    // Two macrotask turns: where Node reports a rejection nobody handled.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
