// Until when a session may be worked on: the subscriber host takes no more messages, waits no longer for one and
// holds a session no longer than this. @azure/service-bus renews a session lock only until
// maxAutoLockRenewalDurationInMs after the accept; the lock then runs out within one lock duration. A session kept
// past that (a steady backlog keeps every receive full) lost its lock mid-batch: the delivery in hand failed to
// settle and the batch came back, a delivery of the budget spent by each message for nothing.

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
  /** Until when (epoch ms) the session may be worked on: a wait or a hold in place ends by then. 0: the session is lost. */
  at(): number;
  /**
   * Whether work of `ms` begun now (the next batch, as long as the last one) ends by the horizon. The renewal horizon
   * (or the lock's end with renewal off) is counted with the work's length; a lock the client still renews is not,
   * since it moves on: only a lock whose renewal failed is close enough to stop at.
   */
  fits(ms: number): boolean;
}

/**
 * The session's horizon, read afresh on each call. The client renews until `renewalMs` after the accept
 * (`acceptedAt`, taken a little after it, so the margin also covers that gap); a renewal that failed leaves the
 * lock's own expiry. The horizon is a margin before the earlier of the two, each with its own margin: a lock of 5 s
 * or less with a margin of 5 s would put the horizon before every receive. The client renews a lock when
 * min(half, 10 s) of it is left, so a tenth of the lock as first granted is never reached while renewals work. With
 * renewal off (0) the lock's expiry is the only bound ("accept + 0" would release every session before its first
 * receive). A closed receiver (the session is lost) has no horizon left.
 */
export function sessionLockHorizon(
  receiver: SessionLockView,
  acceptedAt: number,
  renewalMs: number,
): SessionLockHorizon {
  const lockedUntil = () => {
    const t = receiver.sessionLockedUntilUtc?.getTime();
    return t !== undefined && Number.isFinite(t) ? t : Infinity;
  };
  const firstLock = lockedUntil() - acceptedAt;
  const lockMargin = Number.isFinite(firstLock)
    ? Math.min(HORIZON_MARGIN_MS, Math.max(0, firstLock) / 10)
    : 0;
  const lockEnd = () => lockedUntil() - lockMargin;
  const renewalEnd =
    renewalMs > 0 ? acceptedAt + renewalMs - Math.min(HORIZON_MARGIN_MS, renewalMs / 10) : Infinity;
  // What a batch must end before: the renewal horizon, or with renewal off the lock's (unrenewed) end.
  const plannedEnd = () => (renewalMs > 0 ? renewalEnd : lockEnd());
  return {
    at: () => (receiver.isClosed ? 0 : Math.min(renewalEnd, lockEnd())),
    fits: (ms) => {
      const now = Date.now();
      return !receiver.isClosed && now + Math.max(0, ms) < plannedEnd() && now < lockEnd();
    },
  };
}
