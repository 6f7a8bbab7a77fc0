// The session horizon's arithmetic over a fake receiver (pure logic; the real client and broker are in
// packages/sdk/e2e/lockHorizon.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_LOCK_MS } from './deliveryBudget.ts';
import {
  HORIZON_MARGIN_MS,
  receiveWaitMs,
  sessionLockHorizon,
  warnSkewedLockOnce,
} from './sessionLockHorizon.ts';
import type { SessionLockHorizon } from './sessionLockHorizon.ts';

function receiver(lockedUntil: number | undefined): { isClosed: boolean; sessionLockedUntilUtc?: Date } {
  return {
    isClosed: false,
    ...(lockedUntil === undefined ? {} : { sessionLockedUntilUtc: new Date(lockedUntil) }),
  };
}

test('renewal on: the end is a margin before the renewal horizon; a batch that would end past it does not fit', () => {
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted + 30_000), accepted, 300_000);
  assert.equal(horizon.end(), accepted + 300_000 - HORIZON_MARGIN_MS);
  assert.ok(horizon.fits(0));
  // Longer than what is left of the lock (the client renews it), shorter than the horizon: it fits.
  assert.ok(horizon.fits(60_000));
  assert.ok(!horizon.fits(300_000));
});

test('a lock shorter than the margin still leaves the session work to do (its margin is a tenth of it)', () => {
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted + 2_000), accepted, 300_000);
  assert.ok(horizon.fits(0));
});

test('a renewal that failed: within a tenth of the lock of its expiry nothing fits any more', () => {
  const accepted = Date.now();
  const r = receiver(accepted + 30_000);
  const horizon = sessionLockHorizon(r, accepted, 300_000);
  r.sessionLockedUntilUtc = new Date(Date.now() + 2_000); // less than 3 s (a tenth of 30 s) left
  assert.ok(!horizon.fits(0));
});

test('a short renewal horizon takes a tenth of itself as the margin', () => {
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted + 60_000), accepted, 5_000);
  assert.equal(horizon.end(), accepted + 4_500);
});

test("renewal off: the lock's own expiry, less a tenth of the lock as first granted, counted with the batch", () => {
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted + 3_000), accepted, 0);
  assert.equal(horizon.end(), accepted + 2_700);
  assert.ok(horizon.fits(0));
  assert.ok(!horizon.fits(3_000));
});

test('a closed receiver (the session is lost): no horizon left', () => {
  const accepted = Date.now();
  const r = receiver(accepted + 30_000);
  const horizon = sessionLockHorizon(r, accepted, 60_000);
  r.isClosed = true;
  assert.equal(horizon.end(), 0);
  assert.ok(!horizon.fits(0));
});

test('a local clock ahead of the broker by about the lock (a first lock under 1 s): the lock is no bound', () => {
  const accepted = Date.now();
  // Renewal on: the renewal horizon alone bounds the session.
  const renewed = sessionLockHorizon(receiver(accepted - 200), accepted, 60_000);
  assert.equal(renewed.end(), accepted + 60_000 - HORIZON_MARGIN_MS);
  assert.ok(renewed.fits(0), 'the session is worked on, not released right after its accept');
  // Renewal off: no bound at all but idleness (as the transient hold, which takes the default lock then).
  const unrenewed = sessionLockHorizon(receiver(accepted + 500), accepted, 0);
  assert.ok(unrenewed.fits(0));
  assert.equal(unrenewed.end(), Infinity);
});

test('a receive waits no longer than leaves room for a batch as long as the last one before the horizon', () => {
  const accepted = 1_000_000;
  const horizon = { end: () => accepted + 10_000 };
  assert.equal(
    receiveWaitMs(horizon, 0, 30_000, accepted),
    10_000,
    'the whole span, with no batch timed yet',
  );
  assert.equal(
    receiveWaitMs(horizon, 3_000, 30_000, accepted),
    7_000,
    'a batch of 3 s arriving at its end still ends by the horizon',
  );
  assert.equal(receiveWaitMs(horizon, 3_000, 2_000, accepted), 2_000, 'never longer than the idle timeout');
  assert.equal(
    receiveWaitMs(horizon, 3_000, 30_000, accepted + 6_999),
    0,
    'at most 1 ms of room: release instead',
  );
  assert.equal(receiveWaitMs(horizon, 3_000, 30_000, accepted + 6_998), 2);
  assert.equal(receiveWaitMs({ end: () => 0 }, 0, 30_000, accepted), 0, 'a session lost');
});

test('endWithinLock: the end, or sooner the current lock expiry less its margin; 0 once closed', () => {
  const accepted = Date.now();
  const r = receiver(accepted + 30_000);
  const horizon = sessionLockHorizon(r, accepted, 300_000);
  // The lock's expiry (less a tenth of 30 s) comes before the renewal horizon's end.
  assert.equal(horizon.endWithinLock(), accepted + 30_000 - 3_000);
  r.sessionLockedUntilUtc = new Date(accepted + 400_000); // renewed past the renewal horizon
  assert.equal(horizon.endWithinLock(), horizon.end());
  r.isClosed = true;
  assert.equal(horizon.endWithinLock(), 0);
});

test('endWithinLock with a first lock under 1 s (a clock ahead of the broker): the renewal horizon, not at once', () => {
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted - 55_000), accepted, 300_000);
  assert.equal(horizon.endWithinLock(), horizon.end());
  assert.ok(horizon.endWithinLock() > Date.now());
});

test('renewal off and a lock expiry skewed by about the lock: warned once per host, without a payload', () => {
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const onSkewedLock = warnSkewedLockOnce({ warn: (fields, message) => void warnings.push({ fields, message }) }, {
    endpointId: 'crm',
  });
  const accepted = Date.now();
  // The broker granted 15 s, but the local clock runs about 15 s ahead: the expiry reads as 200 ms after the accept.
  const first = sessionLockHorizon(receiver(accepted + 200), accepted, 0, onSkewedLock);
  assert.equal(first.end(), Infinity, 'still no bound: the skewed expiry says nothing in local time');
  sessionLockHorizon(receiver(accepted - 800), accepted, 0, onSkewedLock);
  assert.equal(warnings.length, 1, 'every later session under the same skew would say the same: once is enough');
  assert.deepEqual(warnings[0]!.fields, {
    endpointId: 'crm',
    firstLockMs: 200,
    minSaneLockMs: 1_000,
    maxSaneLockMs: 305_000,
  });
  assert.match(warnings[0]!.message, /skewed/);
});

test('no skew warning for a sane lock, an unknown expiry, or with renewal on (its horizon bounds the session)', () => {
  let calls = 0;
  const onSkewedLock = () => void calls++;
  const accepted = Date.now();
  sessionLockHorizon(receiver(accepted + 15_000), accepted, 0, onSkewedLock);
  sessionLockHorizon(receiver(undefined), accepted, 0, onSkewedLock);
  sessionLockHorizon(receiver(accepted + 200), accepted, 300_000, onSkewedLock);
  assert.equal(calls, 0);
});

test('a first lock over 305 s (a local clock behind the broker by more than 305 s less the lock) is no bound either, and is warned of', () => {
  let warned = 0;
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted + 10 * 60_000 + 30_000), accepted, 0, () => void warned++);
  assert.equal(horizon.end(), Infinity, 'its expiry says nothing in local time');
  assert.equal(warned, 1);
});

test('lockHeldUntil: the current expiry, never more than one first lock from now; a skewed or unknown one counts as a default lock from now', () => {
  const accepted = Date.now();
  const r = receiver(accepted + 5_000);
  const sane = sessionLockHorizon(r, accepted, 60_000);
  assert.equal(sane.lockHeldUntil(accepted + 1_000), accepted + 5_000, 'the expiry as read');
  r.sessionLockedUntilUtc = new Date(accepted + 600_000); // read as far beyond any renewal taken by now
  assert.equal(sane.lockHeldUntil(accepted + 1_000), accepted + 6_000, 'one first lock from now at most');
  r.sessionLockedUntilUtc = new Date(accepted - 1_000); // run out (a renewal that failed)
  assert.equal(sane.lockHeldUntil(accepted + 1_000), accepted - 1_000, 'a lock run out holds nothing');
  const now = accepted + 2_000;
  // The broker's expiry read 10 min off, either way: no measure of the lock in local time.
  const behind = sessionLockHorizon(receiver(accepted + 605_000), accepted, 60_000);
  assert.equal(behind.lockHeldUntil(now), now + DEFAULT_LOCK_MS, 'read as 10 min ahead: not held for 10 min');
  const ahead = sessionLockHorizon(receiver(accepted - 595_000), accepted, 60_000);
  assert.equal(ahead.lockHeldUntil(now), now + DEFAULT_LOCK_MS, 'read as already past: still held for a lock');
  const unknown = sessionLockHorizon(receiver(undefined), accepted, 60_000);
  assert.equal(unknown.lockHeldUntil(now), now + DEFAULT_LOCK_MS);
});

test('SessionLockHorizon: lockHeldUntil is required, so no horizon leaves the deferred processor to guess it', () => {
  // Checked by tsc (npx tsc -p tsconfig.json): a horizon without lockHeldUntil no longer fits the type. Only
  // sessionLockHorizon() makes one; the SDK takes none from a caller.
  // @ts-expect-error lockHeldUntil is missing
  const partial: SessionLockHorizon = { end: () => Infinity, fits: () => true, endWithinLock: () => Infinity };
  assert.equal(typeof sessionLockHorizon(receiver(undefined), Date.now(), 60_000).lockHeldUntil, 'function');
  assert.equal(partial.end(), Infinity);
});
