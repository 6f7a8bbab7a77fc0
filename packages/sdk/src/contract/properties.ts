// Every application-property name NimBus puts on the wire, and the reserved addresses used in `To`/`From`.
// Routing is done only by subscription rules over these properties (`user.<Name>` in rule SQL), so a typo here
// is a routing bug: always use these constants, never a string literal.

export const Prop = {
  /** Logical destination: an endpoint id, an event type id on a raw publish, or a reserved address. */
  To: 'To',
  /** Sender identity. Absent on a raw publish; stamped by the broker's rule actions otherwise. */
  From: 'From',
  MessageType: 'MessageType',
  /** Logical event id of one consumer's copy; assigned by the forwarder rule (`newid()`). */
  EventId: 'EventId',
  EventTypeId: 'EventTypeId',
  /** MessageId of the chronologically first message of the event (`self` on the first one). */
  OriginatingMessageId: 'OriginatingMessageId',
  /** MessageId of the message this one answers (`self` when it answers nothing). */
  ParentMessageId: 'ParentMessageId',
  /** Original sender (the publishing endpoint, or the inbound From on a response). */
  OriginatingFrom: 'OriginatingFrom',
  /** Scheduled-retry attempt counter; 0 on a publish. */
  RetryCount: 'RetryCount',
  /** On a parked copy (To = Deferred): the session the message was parked from. */
  OriginalSessionId: 'OriginalSessionId',
  /** On a parked copy: its FIFO ordinal within the session's parked set. */
  DeferralSequence: 'DeferralSequence',
  /**
   * On a replayed copy (DESIGN.md §5): the DeferralSequence it was parked with, so the main handler can tell
   * replays from new messages and know when the session's drain is finished.
   */
  ReplaySequence: 'ReplaySequence',
  /**
   * DESIGN.md §5: the exclusive upper bound (a DeferralSequence) of one replay pass, on a ProcessDeferredRequest
   * (where the deferred processor stops) and on each replayed copy (so the main handler knows which copy ends
   * the pass). Messages parked after the trigger wait for the next pass.
   */
  ReplayUntil: 'ReplayUntil',
  /** Fallback session id on a ProcessDeferredRequest whose broker SessionId is missing. */
  SessionId: 'SessionId',
  /** On responses: enqueue → handler start, and handler start → response, in milliseconds. */
  QueueTimeMs: 'QueueTimeMs',
  ProcessingTimeMs: 'ProcessingTimeMs',
  /** On dead-letter notifications to the Resolver; a non-empty description makes the row DeadLettered. */
  DeadLetterReason: 'DeadLetterReason',
  DeadLetterErrorDescription: 'DeadLetterErrorDescription',
  /** On PendingHandoffResponse. ExpectedBy is an absolute UTC ISO-8601 instant. */
  HandoffReason: 'HandoffReason',
  ExternalJobId: 'ExternalJobId',
  ExpectedBy: 'ExpectedBy',
  /**
   * On HandoffCompleted/FailedRequest: the MessageId of the delivery that handed the event off (the handoff token's
   * `messageId`, a PendingHandoffResponse's ParentMessageId). It names the handoff, not only its event: the same
   * event can be handed off again (a resubmission, a retry) while a settlement of the earlier handoff is still on
   * its way, and the subscriber refuses one that names another delivery than the one its session is blocked by.
   * Not ParentMessageId: a Manager command's ParentMessageId is the row version it answers (its claim's lineage).
   */
  HandedOffByMessageId: 'HandedOffByMessageId',
  /** Resolver-only: storage-throttle redelivery counter on a scheduled clone. */
  ThrottleRetryCount: 'ThrottleRetryCount',
  /**
   * Resolver-only: on a scheduled clone, the broker's enqueue time of the message it replaces (ISO-8601 UTC), set
   * once and carried by later clones. The clone's own enqueue time is when its schedule came due, minutes later.
   */
  OriginalEnqueuedTimeUtc: 'OriginalEnqueuedTimeUtc',
  /** W3C trace context propagation. */
  TraceParent: 'traceparent',
  TraceState: 'tracestate',
} as const;
export type PropName = (typeof Prop)[keyof typeof Prop];

export const ALL_PROPERTY_NAMES = Object.values(Prop) as readonly PropName[];

/** Reserved values of `To` (pseudo-addresses routed by rules) and of `From` (stamped by rules). */
export const Address = {
  Resolver: 'Resolver',
  Manager: 'Manager',
  Continuation: 'Continuation',
  Retry: 'Retry',
  Deferred: 'Deferred',
  DeferredProcessor: 'DeferredProcessor',
} as const;
export type Address = (typeof Address)[keyof typeof Address];

/** Lineage sentinel for OriginatingMessageId/ParentMessageId/OriginatingFrom on the first message of a chain. */
export const SELF = 'self';

/** Platform-wide topics (besides one topic per endpoint). */
export const Topic = {
  Resolver: 'Resolver',
  Manager: 'Manager',
} as const;

/** Fixed subscription names on an endpoint topic (the main one is named after the endpoint). */
export const Subscription = {
  Resolver: 'Resolver',
  Continuation: 'Continuation',
  Retry: 'Retry',
  Deferred: 'Deferred',
  DeferredProcessor: 'DeferredProcessor',
  /** The broker's catch-all rule name, created with every subscription. */
  DefaultRule: '$Default',
} as const;

/** Session ids with a fixed meaning. */
export const WellKnownSession = {
  /** Endpoint heartbeat probes and their replies. */
  Heartbeat: 'Heartbeat',
  /** The Resolver's own liveness probe; separate so it never queues behind endpoint heartbeat replies. */
  ResolverHeartbeat: 'Heartbeat-Resolver',
} as const;

/** Fixed texts with a meaning for the Resolver or the console. */
export const WireText = {
  /** ErrorText of the SkipResponse sent for an inbox duplicate. */
  DuplicateDetected: 'DuplicateDetected',
  /** Default ErrorText of a HandoffFailedRequest without one. */
  HandoffFailed: 'Handoff failed.',
  /** ErrorType of the ErrorResponse answering a HandoffFailedRequest. */
  HandoffFailedErrorType: 'HandoffFailedException',
  /** Dead-letter reason the Resolver uses when its storage throttle budget is exhausted. */
  CosmosDbThrottled: 'CosmosDbThrottled',
  /**
   * Dead-letter reason of a command the subscriber refuses (a Manager-only command without From = 'Manager', a
   * handoff completion for an event that is not the session's pending handoff). Its Resolver notification is
   * recorded in the event's history and audit only: the refused command changed nothing, so the row keeps its status.
   */
  CommandRefused: 'CommandRefused',
  /**
   * DeadLetterReason of the subscriber's notice that a replay pass skipped parked sequences that never came back
   * (DESIGN.md §5). Recorded in the event's history and audit only; it is not an outcome of the event.
   */
  ReplayGap: 'ReplayGap',
} as const;

/**
 * A subscriber notice that is not an outcome of its event (a refused command, a skipped replay gap): the Resolver
 * records it in history and as an audit and never lets it change the status row; readers of history that look
 * for an event's outcome (reconcile) must skip it too.
 */
export function isSubscriberNotice(m: { deadLetterReason?: string | null | undefined }): boolean {
  return m.deadLetterReason === WireText.CommandRefused || m.deadLetterReason === WireText.ReplayGap;
}
