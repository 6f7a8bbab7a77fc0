// Whether a session's lock is known lost, for the subscriber host between the deliveries of one batch. A delivery
// begun under a lost lock runs its handler (its effects happen) and then cannot settle: the message comes back to
// whoever takes the session next, and runs again. So the host asks before each delivery, and only signals that do
// not mistake a held lock for a lost one count (a false "lost" would send every batch back after one message).
import { isSaneLockMs } from './deliveryBudget.ts';

/** What the watch reads from a session receiver. */
export interface WatchedSessionReceiver {
  readonly isClosed: boolean;
  readonly sessionLockedUntilUtc?: Date | undefined;
}

/** The error code @azure/service-bus gives a call on a session whose lock the broker no longer holds for us. */
export const SESSION_LOCK_LOST = 'SessionLockLost';

export class SessionLockWatch {
  private readonly receiver: WatchedSessionReceiver;
  /** The lock's expiry is a measure of the lock only when the local clock agreed with the broker's at accept. */
  private readonly expiryReadable: boolean;
  private refused = false;

  constructor(receiver: WatchedSessionReceiver, acceptedAt: number) {
    this.receiver = receiver;
    const first = receiver.sessionLockedUntilUtc?.getTime();
    // The test sessionLockHorizon applies: a first lock under 1 s or over 5 min is the local clock skewed against the
    // broker's, and its expiry read locally would call a held lock lost (or a lost one held).
    this.expiryReadable = first !== undefined && Number.isFinite(first) && isSaneLockMs(first - acceptedAt);
  }

  /** Notes a failed broker call of the session: SessionLockLost (anywhere in its causes) is the broker's own word. */
  noteFailure(error: unknown): void {
    if (hasCode(error, SESSION_LOCK_LOST)) this.refused = true;
  }

  /**
   * Why the lock is known lost, or undefined while it may be held:
   * - `refused`: a call of the session (a settlement, the session state) failed with SessionLockLost;
   * - `closed`: the receiver is closed (the broker detached its link - it does so when the session lock expires - or
   *   the connection dropped, which ends the lock too);
   * - `expired`: the lock's expiry (kept current by the client's renewals) has passed by a clock that agreed with
   *   the broker's at accept: the window before the broker's detach arrives. Under skew this reading is not used.
   */
  lost(now: number = Date.now()): 'refused' | 'closed' | 'expired' | undefined {
    if (this.refused) return 'refused';
    if (this.receiver.isClosed) return 'closed';
    const until = this.receiver.sessionLockedUntilUtc?.getTime();
    if (this.expiryReadable && until !== undefined && until <= now) return 'expired';
    return undefined;
  }
}

function hasCode(error: unknown, code: string): boolean {
  // Bounded: a cause chain is short, but a cyclic one must not hang the delivery loop.
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 8; depth++) {
    if ((e as { code?: unknown }).code === code) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
