// The session horizon's arithmetic over a fake receiver (pure logic; the real client and broker are in
// packages/sdk/e2e/lockHorizon.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HORIZON_MARGIN_MS, sessionLockHorizon } from './sessionLockHorizon.ts';

function receiver(lockedUntil: number | undefined): { isClosed: boolean; sessionLockedUntilUtc?: Date } {
  return {
    isClosed: false,
    ...(lockedUntil === undefined ? {} : { sessionLockedUntilUtc: new Date(lockedUntil) }),
  };
}

test('renewal on: a margin before the renewal horizon while the lock is renewed past it', () => {
  const accepted = Date.now();
  const r = receiver(accepted + 30_000);
  const horizon = sessionLockHorizon(r, accepted, 300_000);
  // A tenth of the 30 s lock before its end, until renewals move it on.
  assert.equal(horizon.at(), accepted + 27_000);
  r.sessionLockedUntilUtc = new Date(accepted + 310_000);
  assert.equal(horizon.at(), accepted + 300_000 - HORIZON_MARGIN_MS);
});

test('a lock shorter than the margin still leaves the session a horizon ahead (the client renews it)', () => {
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted + 2_000), accepted, 300_000);
  assert.equal(horizon.at(), accepted + 1_800);
  assert.ok(horizon.fits(0));
  // A batch longer than what is left of a lock the client renews still fits; one past the renewal horizon does not.
  assert.ok(horizon.fits(60_000));
  assert.ok(!horizon.fits(300_000));
});

test('a short renewal horizon takes a tenth of itself as the margin', () => {
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted + 60_000), accepted, 5_000);
  assert.equal(horizon.at(), accepted + 4_500);
});

test("renewal off: the lock's own expiry, less a tenth of the lock as first granted, counted with the batch", () => {
  const accepted = Date.now();
  const horizon = sessionLockHorizon(receiver(accepted + 3_000), accepted, 0);
  assert.equal(horizon.at(), accepted + 2_700);
  assert.ok(horizon.fits(0));
  assert.ok(!horizon.fits(3_000));
});

test('no lock time known: the renewal horizon alone; a closed receiver: none left', () => {
  const accepted = Date.now();
  const r = receiver(undefined);
  const horizon = sessionLockHorizon(r, accepted, 60_000);
  assert.equal(horizon.at(), accepted + 60_000 - HORIZON_MARGIN_MS);
  r.isClosed = true;
  assert.equal(horizon.at(), 0);
  assert.ok(!horizon.fits(0));
});
