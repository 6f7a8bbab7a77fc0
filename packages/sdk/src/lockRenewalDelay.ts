// When to renew a message lock the SDK holds itself (the deferred processor's trigger): the broker gives the lock's
// expiry in its own clock, and the local clock reads it. Under clock skew that reading is no measure of the lock:
// with the local clock ahead of the broker's by more than a lock it reads as already past (renewing at half of it
// renewed at once, again and again, for the whole pass: a flood of renew calls), and behind by more than a lock
// it reads as far ahead (renewing at half of it let the lock lapse mid-pass). The rule that tells a lock from a
// skewed reading is the session horizon's (isSaneLockMs), so the two cannot disagree on what a lock is.
import { isSaneLockMs } from './deliveryBudget.ts';

/**
 * The shortest lock Service Bus grants (a subscription's LockDuration is 5 s to 5 min). A skewed reading says
 * nothing of the subscription's lock, and the SDK cannot read its settings (that needs Manage rights): renewing at
 * half of the shortest lock keeps any lock.
 */
export const MIN_GRANTED_LOCK_MS = 5_000;

/**
 * How long from `now` to wait before renewing a lock that reads as expiring at `lockedUntil` (epoch ms, as read by
 * the local clock): half of what is left when that is a lock a broker grants, else half of the shortest lock one
 * grants. Never under half of MIN_SANE_LOCK_MS (500 ms), whatever the reading: a reading under it is a skewed one.
 */
export function lockRenewalDelayMs(lockedUntil: number, now: number): number {
  const left = lockedUntil - now;
  return (isSaneLockMs(left) ? left : MIN_GRANTED_LOCK_MS) / 2;
}
