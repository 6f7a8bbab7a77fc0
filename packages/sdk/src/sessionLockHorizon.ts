// Until when a session may be worked on: the subscriber host takes no more messages, waits no longer for one and
// holds a session no longer than this. @azure/service-bus renews a session lock only until
// maxAutoLockRenewalDurationInMs after the accept; the lock then runs out within one lock duration. A session kept
// past that (a steady backlog keeps every receive full) lost its lock mid-batch: the delivery in hand failed to
// settle and the batch came back, a delivery of the budget spent by each message for nothing.
import { DEFAULT_LOCK_MS, isSaneLockMs, MAX_SANE_LOCK_MS, MIN_SANE_LOCK_MS } from './deliveryBudget.ts';

/** What the horizon reads from a session receiver. */
export interface SessionLockView {
  readonly isClosed: boolean;
  readonly sessionLockedUntilUtc?: Date | undefined;
}

/**
 * How long before the lock can lapse work on a session stops, at most: room for the delivery in hand to settle and
 * the session to be released while the lock holds. Never more than a tenth of the renewal horizon, or of the lock.
 */
export const HORIZON_MARGIN_MS = 5_000;

export interface SessionLockHorizon {
  /**
   * Until when (epoch ms) the session may be worked on: a wait in place (a receive, a hold) ends by then. The
   * renewal horizon less its margin, or with renewal off the lock's end less its margin; 0 once the session is lost.
   */
  end(): number;
  /**
   * Whether work of `ms` begun now (the next batch, as long as the last one) ends by `end()`, and the lock has not
   * run out from under the renewals (a renewal that failed leaves the lock's own expiry, less its margin).
   */
  fits(ms: number): boolean;
  /**
   * `end()`, or sooner the lock's current expiry less its margin (0 once the session is lost): for a caller that
   * bounds its waits by one number read afresh before each (the Resolver), so a renewal that failed cuts them.
   */
  endWithinLock(): number;
  /**
   * Until when (epoch ms) the lock as it stands may still hold the session at the broker: for a caller that lets the
   * session go and must tell its own lingering lock (a close that failed silently) from another receiver's. The
   * lock's current expiry, but never more than one lock (as first granted) from `now`: a lock taken or renewed by
   * now runs out within one. When the first lock said nothing in local time (a skewed clock, or no expiry read), one
   * default lock (DEFAULT_LOCK_MS, the duration the SDK provisions) from `now`: an expiry read as already past, or
   * as far ahead, is then no measure of the lock.
   *
   * Required: a horizon is made only by sessionLockHorizon() (the SDK takes none from a caller, who only reads one),
   * so there is no outside implementation to stay compatible with, and one path, not a silent default, decides it.
   */
  lockHeldUntil(now?: number): number;
}

/**
 * The session's horizon, read afresh on each call. The client renews until `renewalMs` after the accept
 * (`acceptedAt`, taken a little after it, so the margin also covers that gap); the lock then runs out within one
 * lock duration. Each bound has its own margin, at most a tenth of its span: a lock of 5 s or less with a margin of
 * 5 s would stop every session before its first receive. The lock's current expiry is checked, never waited for:
 * the client renews it when min(half, 10 s) of it is left, so a tenth of the lock as first granted is reached only
 * when a renewal failed. With renewal off (0) the lock's expiry is the only bound ("accept + 0" would release every
 * session before its first receive).
 */
export function sessionLockHorizon(
  receiver: SessionLockView,
  acceptedAt: number,
  renewalMs: number,
  onSkewedLock?: (skew: SkewedLock) => void,
): SessionLockHorizon {
  const lockedUntil = () => {
    const t = receiver.sessionLockedUntilUtc?.getTime();
    return t !== undefined && Number.isFinite(t) ? t : Infinity;
  };
  // A first lock under 1 s is no lock a broker grants: the local clock is ahead of the broker's by about the lock. Its
  // expiry then says nothing in our time, so it is no bound (as observedLockMs treats it); taken as one, every
  // session would be released right after its accept, and accepted again, without end. Likewise one over 305 s (the
  // local clock behind the broker's by more than 305 s less the lock): taken as one, a lapsed lock would read as held.
  const firstLock = lockedUntil() - acceptedAt;
  const lockKnown = Number.isFinite(firstLock) && isSaneLockMs(firstLock);
  // With renewal off the lock is the only bound: without it the session has no horizon at all, which an operator
  // cannot see from anything else (sessions simply run until their locks lapse), so the caller is told.
  if (renewalMs <= 0 && Number.isFinite(firstLock) && !lockKnown) onSkewedLock?.({ firstLockMs: firstLock });
  const lockMargin = lockKnown ? Math.min(HORIZON_MARGIN_MS, firstLock / 10) : 0;
  const lockEnd = () => (lockKnown ? lockedUntil() - lockMargin : Infinity);
  const renewalEnd = acceptedAt + renewalMs - Math.min(HORIZON_MARGIN_MS, renewalMs / 10);
  const end = () => (receiver.isClosed ? 0 : renewalMs > 0 ? renewalEnd : lockEnd());
  return {
    end,
    endWithinLock: () => Math.min(end(), lockEnd()),
    fits: (ms) => {
      const now = Date.now();
      return now + Math.max(0, ms) < end() && now < lockEnd();
    },
    lockHeldUntil: (now = Date.now()) => (lockKnown ? Math.min(lockedUntil(), now + firstLock) : now + DEFAULT_LOCK_MS),
  };
}

/** A first lock that reads as no lock: its expiry as seen by the local clock, relative to the accept. */
export interface SkewedLock {
  firstLockMs: number;
}

/** What the skew warning needs of a logger (pino's warn). */
export interface SkewWarnLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * The onSkewedLock of one host or processor: warns once, with no payload, that a lock's expiry looks skewed and the
 * sessions have no horizon. Once only: every session accepted under the same skew would say the same thing.
 */
export function warnSkewedLockOnce(log: SkewWarnLog, fields: Record<string, unknown>): (skew: SkewedLock) => void {
  let warned = false;
  return ({ firstLockMs }) => {
    if (warned) return;
    warned = true;
    log.warn(
      {
        ...fields,
        firstLockMs: Math.round(firstLockMs),
        minSaneLockMs: MIN_SANE_LOCK_MS,
        maxSaneLockMs: MAX_SANE_LOCK_MS,
      },
      'session lock renewal is off and the lock expiry reads as under 1 s or over 5 min after the accept: the local ' +
        'clock looks skewed against the broker by about a lock duration or more, so sessions get no lock horizon ' +
        '(they are worked until idle and a lock may lapse mid-batch); check the clock (NTP)',
    );
  };
}

/**
 * How long a receive may wait for the session's next message: at most `idleMs`, and short enough that a batch as
 * long as the last one (`batchMs`), arriving at the end of the wait, is still handled by the horizon. Waiting until
 * the horizon itself, as before, let a batch arriving just before it be handled past it for about that long. 0 when
 * no wait of more than 1 ms is left: the session is released instead.
 */
export function receiveWaitMs(
  horizon: Pick<SessionLockHorizon, 'end'>,
  batchMs: number,
  idleMs: number,
  now: number = Date.now(),
): number {
  const room = horizon.end() - now - Math.max(0, batchMs);
  return room > 1 ? Math.min(idleMs, room) : 0;
}
