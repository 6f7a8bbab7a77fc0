// lockRenewalDelayMs: half of a lock that reads as one a broker grants, half of the shortest granted lock otherwise
// (the trigger lock under clock skew; packages/sdk/e2e/replayLock.test.ts has the processor's renewals).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_SANE_LOCK_MS, MIN_SANE_LOCK_MS } from './deliveryBudget.ts';
import { lockRenewalDelayMs, MIN_GRANTED_LOCK_MS } from './lockRenewalDelay.ts';

const now = 1_700_000_000_000;

test('a lock that reads as one a broker grants is renewed at half of what is left', () => {
  assert.equal(lockRenewalDelayMs(now + 30_000, now), 15_000);
  assert.equal(lockRenewalDelayMs(now + MIN_SANE_LOCK_MS, now), MIN_SANE_LOCK_MS / 2);
  assert.equal(lockRenewalDelayMs(now + MAX_SANE_LOCK_MS, now), MAX_SANE_LOCK_MS / 2);
});

test('an expiry read as past or under 1 s (the local clock ahead of the broker) is renewed at half the shortest lock, not at once', () => {
  assert.equal(lockRenewalDelayMs(now - 10 * 60_000, now), MIN_GRANTED_LOCK_MS / 2);
  assert.equal(lockRenewalDelayMs(now, now), MIN_GRANTED_LOCK_MS / 2);
  assert.equal(lockRenewalDelayMs(now + MIN_SANE_LOCK_MS - 1, now), MIN_GRANTED_LOCK_MS / 2);
});

test('an expiry read as over 5 min ahead (the local clock behind the broker) is renewed at half the shortest lock, not at half the reading', () => {
  assert.equal(lockRenewalDelayMs(now + 10 * 60_000, now), MIN_GRANTED_LOCK_MS / 2);
  assert.equal(lockRenewalDelayMs(now + MAX_SANE_LOCK_MS + 1, now), MIN_GRANTED_LOCK_MS / 2);
});

test('never sooner than half the shortest sane lock, whatever the reading', () => {
  for (let left = -700_000; left <= 700_000; left += 250)
    assert.ok(lockRenewalDelayMs(now + left, now) >= MIN_SANE_LOCK_MS / 2, `left ${left} ms`);
});
