// sleep: the one wait a signal can cut short (pure logic, no servers). Its timer is observed through the process's
// list of active handles (a ref'd timer is one 'Timeout' there) and its listener through getEventListeners, not by
// measuring how long it took.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { sleep } from './sleep.ts';

/** Ref'd timers of the process: what keeps it alive. */
const refedTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

test('gives true once the time has passed, with or without a signal', async () => {
  assert.equal(await sleep(0), true);
  assert.equal(await sleep(1, new AbortController().signal), true);
});

test('a signal that never aborts holds no listener and no timer once the time has passed', async () => {
  const before = refedTimers();
  const signal = new AbortController().signal;
  const slept = sleep(1, signal);
  assert.equal(listeners(signal), 1, 'one listener while it waits');
  assert.equal(refedTimers(), before + 1, 'one timer while it waits');
  assert.equal(await slept, true);
  assert.equal(listeners(signal), 0, 'the listener removed');
  assert.equal(refedTimers(), before, 'the timer gone');
});

test('an abort ends the wait at once with false, its timer cleared', async () => {
  const before = refedTimers();
  const stop = new AbortController();
  const slept = sleep(60_000, stop.signal);
  assert.equal(refedTimers(), before + 1);
  stop.abort();
  assert.equal(await slept, false);
  assert.equal(refedTimers(), before, 'the timer cleared');
  assert.equal(listeners(stop.signal), 0);
});

test('a signal aborted before the wait: false at once, no timer, no listener', async () => {
  const before = refedTimers();
  const stop = new AbortController();
  stop.abort();
  const slept = sleep(60_000, stop.signal);
  assert.equal(refedTimers(), before, 'no timer set');
  assert.equal(listeners(stop.signal), 0);
  assert.equal(await slept, false);
});

test('Infinity, or more than a timer can hold, sets no timer: only the signal ends the wait', async () => {
  const before = refedTimers();
  const stop = new AbortController();
  const waits = [sleep(Infinity, stop.signal), sleep(2 ** 31, stop.signal)]; // setTimeout would take 2^31 as 1 ms
  assert.equal(refedTimers(), before);
  stop.abort();
  assert.deepEqual(await Promise.all(waits), [false, false]);
});
