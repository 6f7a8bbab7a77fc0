// Wire names the SDK needs that the shared contract (packages/sdk/src/contract) does not define yet. Kept here, in one place,
// until the contract adopts them.

export const SdkProp = {
  /**
   * On a replayed copy and on a ProcessDeferredRequest: the exclusive upper bound (a DeferralSequence) of the
   * replay pass. On the trigger it tells the deferred processor where to stop (messages parked after the trigger
   * wait for the next pass, so a session that blocks again mid-replay does not ping-pong its parked messages);
   * on a replayed copy it tells the main handler that the copy with sequence ReplayUntil-1 ends the pass, so
   * it can ask for the next one when more messages were parked meanwhile.
   */
  ReplayUntil: 'ReplayUntil',
  /**
   * On the pass-end marker (a ProcessDeferredRequest the deferred processor sends to the endpoint's own session
   * after the replayed copies of one pass): true. Its ReplayUntil is the pass's bound. Every copy of the pass is
   * ahead of it in the session, so a replay cursor still below the bound when it arrives is a gap: parked
   * sequences that will never come back (dead-lettered or expired on the way), skipped with a ReplayGap notice.
   */
  ReplayPassEnd: 'ReplayPassEnd',
  /**
   * On a parked copy made from a replayed copy (parked again because the session blocked, or to keep its place:
   * see SessionState.ReparkedUntil), and carried by its own replayed copy: true. Its sequence no longer reflects
   * its original place, which comes before every message parked for the first time since.
   */
  Reparked: 'Reparked',
  /**
   * On a ProcessDeferredRequest the deferred processor scheduled again because another receiver held the parked
   * session (lockedRecheck.ts): how many times the trigger was scheduled so (a bounded chain).
   */
  LockedRecheck: 'LockedRecheck',
  /** Fallback session id on a ProcessDeferredRequest whose broker SessionId is missing. */
  SessionId: 'SessionId',
} as const;
