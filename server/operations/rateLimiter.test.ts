// The operations runner's rate limit (RateLimiter, runner.ts) and a stopping job: a wait for the next slot ends
// when the job's stop signal aborts, also when it had aborted before the wait began (the operator's pause or cancel
// is read between lots, an await during which the lease can be lost). Pure logic: the wait is observed through the
// process's ref'd timers, not by measuring it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { RateLimiter } from './runner.ts';

const refedTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

test('a stop signal that aborted before the wait: the slot is not waited for', async () => {
  const limiter = new RateLimiter(1); // one command a second: the second lot's slot is a second away
  await limiter.take();
  const stop = new AbortController();
  stop.abort();
  const before = refedTimers();
  const taken = limiter.take(stop.signal);
  assert.equal(refedTimers(), before, 'no timer for the slot');
  assert.equal(getEventListeners(stop.signal, 'abort').length, 0);
  await taken;
});

test('an abort during the wait ends it, its timer cleared and its listener gone', async () => {
  const limiter = new RateLimiter(1);
  await limiter.take();
  const stop = new AbortController();
  const before = refedTimers();
  const taken = limiter.take(stop.signal);
  assert.equal(refedTimers(), before + 1, 'waiting for the slot');
  stop.abort();
  await taken;
  assert.equal(refedTimers(), before, 'the timer cleared');
  assert.equal(getEventListeners(stop.signal, 'abort').length, 0);
});
