import { test } from 'node:test';
import assert from 'node:assert/strict';
import { limiter } from './limiter.ts';

/** Runs `count` tasks through `limit`, each held open until released; returns the peak of tasks running at once. */
async function peakOf(limit: ReturnType<typeof limiter>, count: number) {
  let running = 0;
  let peak = 0;
  const started: number[] = [];
  const releases: Array<() => void> = [];
  const all = Array.from({ length: count }, (_, i) =>
    limit(async () => {
      running++;
      peak = Math.max(peak, running);
      started.push(i);
      await new Promise<void>((r) => releases.push(r));
      running--;
      return i;
    }),
  );
  // Release whatever has started until everything has: each release lets a waiting task take the slot.
  while (started.length < count || releases.length > 0) {
    await new Promise((r) => setImmediate(r));
    releases.shift()?.();
  }
  return { peak, started, results: await Promise.all(all) };
}

test('limiter runs at most max at a time, the waiting ones in the order given', async () => {
  const { peak, started, results } = await peakOf(limiter(3), 10);
  assert.equal(peak, 3);
  assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.deepEqual(results, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test('limiter(Infinity) does not bound; a fraction or zero still runs one at a time', async () => {
  assert.equal((await peakOf(limiter(Infinity), 8)).peak, 8);
  assert.equal((await peakOf(limiter(0), 4)).peak, 1);
  assert.equal((await peakOf(limiter(1.7), 4)).peak, 1);
});

test('a failed task hands its slot on and its error to its caller', async () => {
  const limit = limiter(1);
  const failed = limit(() => Promise.reject(new Error('boom')));
  const next = limit(async () => 'ran');
  await assert.rejects(failed, /boom/);
  assert.equal(await next, 'ran');
});
