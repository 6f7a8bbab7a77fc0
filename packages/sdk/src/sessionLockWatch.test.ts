// SessionLockWatch: which signals count as a lost session lock (pure logic; the host's use of it is in
// subscriberHost.test.ts, the broker's detach in e2e/batchLockLost.test.ts).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SessionLockWatch } from './sessionLockWatch.ts';
import { TransientError } from './errors.ts';

const acceptedAt = 1_000_000;

function receiver(lockedUntil: number | undefined) {
  return { isClosed: false, sessionLockedUntilUtc: lockedUntil === undefined ? undefined : new Date(lockedUntil) };
}

describe('SessionLockWatch', () => {
  test('held: an open receiver, a lock not yet expired, no refusal', () => {
    const watch = new SessionLockWatch(receiver(acceptedAt + 30_000), acceptedAt);
    assert.equal(watch.lost(acceptedAt + 29_999), undefined);
  });

  test('refused: SessionLockLost anywhere in the causes of a failed call (the dispatcher wraps it)', () => {
    const watch = new SessionLockWatch(receiver(acceptedAt + 30_000), acceptedAt);
    watch.noteFailure(new Error('not a lock problem'));
    watch.noteFailure(Object.assign(new Error('busy'), { code: 'ServerBusy' }));
    assert.equal(watch.lost(acceptedAt), undefined);
    const brokerError = Object.assign(new Error('The session lock has expired'), { code: 'SessionLockLost' });
    watch.noteFailure(new TransientError("settlement step 'complete' failed", { cause: brokerError }));
    assert.equal(watch.lost(acceptedAt), 'refused');
  });

  test('closed: the receiver reads as closed', () => {
    const r = receiver(acceptedAt + 30_000);
    const watch = new SessionLockWatch(r, acceptedAt);
    r.isClosed = true;
    assert.equal(watch.lost(acceptedAt), 'closed');
  });

  test('expired: by the local clock only when it agreed with the broker at accept', () => {
    const r = receiver(acceptedAt + 30_000);
    const watch = new SessionLockWatch(r, acceptedAt);
    assert.equal(watch.lost(acceptedAt + 30_000), 'expired');
    // Renewed meanwhile: held again.
    r.sessionLockedUntilUtc = new Date(acceptedAt + 60_000);
    assert.equal(watch.lost(acceptedAt + 30_000), undefined);
  });

  test('a skewed clock (the first lock read as past, or as 10 min long) never reads the lock as expired', () => {
    const ahead = new SessionLockWatch(receiver(acceptedAt - 600_000 + 30_000), acceptedAt);
    assert.equal(ahead.lost(acceptedAt + 1), undefined);
    const behind = new SessionLockWatch(receiver(acceptedAt + 600_000), acceptedAt);
    assert.equal(behind.lost(acceptedAt + 700_000), undefined);
    const none = new SessionLockWatch(receiver(undefined), acceptedAt);
    assert.equal(none.lost(acceptedAt + 700_000), undefined);
  });
});
