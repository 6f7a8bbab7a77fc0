// untilStopped: the race that lets stop() leave a store call unawaited (pure logic, no servers).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STOPPED, untilStopped } from './untilStopped.ts';

test('gives the work its result while not stopped', async () => {
  assert.equal(await untilStopped(Promise.resolve(7), new AbortController().signal), 7);
  await assert.rejects(untilStopped(Promise.reject(new Error('boom')), new AbortController().signal), /boom/);
});

test('gives STOPPED on abort while the work is still running, and at once when already stopped', async () => {
  const stop = new AbortController();
  let finish!: (v: number) => void;
  const work = new Promise<number>((r) => (finish = r));
  const raced = untilStopped(work, stop.signal);
  stop.abort();
  assert.equal(await raced, STOPPED);
  finish(1);
  assert.equal(await untilStopped(new Promise<number>(() => undefined), stop.signal), STOPPED);
});

test('a work that fails after the stop is no unhandled rejection', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    for (const late of [true, false]) {
      const stop = new AbortController();
      if (!late) stop.abort();
      let fail!: (e: Error) => void;
      const raced = untilStopped(new Promise<never>((_, reject) => (fail = reject)), stop.signal);
      stop.abort();
      assert.equal(await raced, STOPPED);
      fail(new Error('late'));
    }
    // Two macrotask turns: where Node reports a rejection nobody handled.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
