// The broker's delivery budget as the SDK spends it on transient outcomes (inbox outage, failed settlement step,
// unreadable session state, lost lock). The specification lets the peek-lock expire (~30 s) before the message
// comes back, and every attempt counts toward the subscription's MaxDeliveryCount. Two rules follow from it:
//  - hold: after a transient outcome the host keeps the session (and so the message) for a lock duration, doubling
//    with each earlier delivery, before giving it back; a 60 s outage then costs a few deliveries, not ten in
//    seconds. The count lives on the message (broker-side), so the back-off is per session and survives a change
//    of worker or instance.
//  - last delivery: on the attempt the budget ends with, the SDK dead-letters the message itself with a reason
//    and notifies the Resolver first, as on every other dead-letter path; left to the broker it would be
//    dead-lettered silently (MaxDeliveryCountExceeded) and its row would stay Pending.

/** The subscription's MaxDeliveryCount as provisioned by packages/sdk/src/topology (its default). */
export const DEFAULT_MAX_DELIVERY_COUNT = 10;
/** What the broker calls the same end; kept so operators see one reason whichever side dead-letters. */
export const DELIVERY_BUDGET_SPENT = 'MaxDeliveryCountExceeded';

/** The 1-based attempt of this delivery. The JS client reports earlier deliveries (0 on the first). */
export function attemptOf(wireDeliveryCount: number | undefined): number {
  return Number.isInteger(wireDeliveryCount) && wireDeliveryCount! > 0 ? wireDeliveryCount! + 1 : 1;
}

/** True when no delivery follows this one: a transient outcome now would let the broker dead-letter silently. */
export function isLastDelivery(wireDeliveryCount: number | undefined, maxDeliveryCount: number): boolean {
  return attemptOf(wireDeliveryCount) >= maxDeliveryCount;
}

/**
 * Where a delivery stands in its budget, as the host's logs name it (counts only, never a payload): the 1-based
 * delivery, the subscription's MaxDeliveryCount, and whether this is the last. A delivery left unsettled is counted
 * when its session is released (or its lock lapses); with deliveries left it comes back, on the last one the broker
 * dead-letters it at the release (MaxDeliveryCountExceeded) - "left for redelivery" would be untrue there.
 */
export interface DeliveryStanding {
  delivery: number;
  maxDeliveryCount: number;
  last: boolean;
}

export function deliveryStanding(wireDeliveryCount: number | undefined, maxDeliveryCount: number): DeliveryStanding {
  return {
    delivery: attemptOf(wireDeliveryCount),
    maxDeliveryCount,
    last: isLastDelivery(wireDeliveryCount, maxDeliveryCount),
  };
}

/** What the broker does with a delivery left unsettled on its last delivery, in the host's log lines. */
export const BROKER_DEAD_LETTERS_AT_RELEASE = `the broker dead-letters it at the release (${DELIVERY_BUDGET_SPENT})`;

export interface TransientHoldOptions {
  /** The first hold. Default: the session's lock duration as observed when it was accepted (else 30 s). */
  initialMs?: number;
  /** The longest hold. Default 5 min (the host's default lock-renewal horizon). */
  maxMs?: number;
}

export const DEFAULT_LOCK_MS = 30_000;
export const DEFAULT_MAX_HOLD_MS = 300_000;

/** How long to keep a session after a transient outcome on a delivery with this wire delivery count. */
export function transientHoldMs(
  wireDeliveryCount: number | undefined,
  lockMs: number,
  options: TransientHoldOptions = {},
): number {
  const initial = options.initialMs ?? lockMs;
  const max = options.maxMs ?? DEFAULT_MAX_HOLD_MS;
  const exponent = Math.min(attemptOf(wireDeliveryCount) - 1, 30);
  return Math.max(0, Math.min(initial * 2 ** exponent, max));
}

/**
 * A lock read as its expiry (the broker's clock) less the local time of its taking is a lock only within these:
 * Service Bus grants 5 s to 5 min. Under 1 s the local clock is ahead of the broker's by about the lock; over 305 s
 * it is behind by more than 305 s less the lock (4 min 35 s for a 30 s lock; a smaller lag is not seen here). Either
 * way the expiry says nothing in local time (sessionLockHorizon.ts). The upper bound has 5 s on top, so that a 5 min
 * lock read by a clock a little behind the broker's is still one.
 */
export const MIN_SANE_LOCK_MS = 1_000;
export const MAX_SANE_LOCK_MS = 305_000;

/** Whether a lock read from its expiry by the local clock is one a broker grants (see MIN_SANE_LOCK_MS). */
export function isSaneLockMs(ms: number): boolean {
  return ms >= MIN_SANE_LOCK_MS && ms <= MAX_SANE_LOCK_MS;
}

/**
 * The lock duration a freshly accepted session shows: its lockedUntil minus now, sane values only (isSaneLockMs);
 * otherwise the Service Bus default. The host cannot read the subscription's settings (that needs Manage rights).
 */
export function observedLockMs(lockedUntil: Date | undefined, now: number): number {
  if (!lockedUntil) return DEFAULT_LOCK_MS;
  const ms = lockedUntil.getTime() - now;
  return isSaneLockMs(ms) ? ms : DEFAULT_LOCK_MS;
}
