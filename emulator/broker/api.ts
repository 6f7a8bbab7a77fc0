// The broker's contract: what the AMQP data plane (emulator/amqp) and the ATOM admin plane (emulator/admin)
// may ask of the broker core (emulator/broker). The broker knows nothing of frames, links or XML; the planes
// know nothing of locks, sessions or forwarding. Times are epoch milliseconds unless a name says otherwise.
//
// Changes to this file must stay additive while several people work against it: add optional members or
// new methods, do not rename or remove.

import type { Message as AmqpMessage } from 'rhea';

// ---------------------------------------------------------------------------------------------------------
// Errors. Every failure the planes must translate carries one of these codes; the planes map them to AMQP
// conditions (see amqpConditionFor in emulator/amqp) and HTTP statuses (see emulator/admin).
// ---------------------------------------------------------------------------------------------------------

export type BrokerErrorCode =
  | 'EntityNotFound' // amqp:not-found / HTTP 404
  | 'EntityAlreadyExists' // HTTP 409
  | 'SendDisabled' // com.microsoft:entity-disabled ("Messaging entity ... is currently disabled")
  | 'ReceiveDisabled' // com.microsoft:entity-disabled
  | 'MessageLockLost' // com.microsoft:message-lock-lost
  | 'SessionLockLost' // com.microsoft:session-lock-lost
  | 'SessionCannotBeLocked' // com.microsoft:session-cannot-be-locked
  | 'NoSessionAvailable' // acceptNextSession timed out: com.microsoft:timeout
  | 'MessageNotFound' // com.microsoft:message-not-found (receive-by-sequence-number, cancel-scheduled)
  | 'MessageSizeExceeded' // com.microsoft:message-size-exceeded / amqp:link:message-size-exceeded
  | 'QuotaExceeded' // amqp:resource-limit-exceeded (memory budget)
  | 'InvalidOperation' // amqp:not-allowed / HTTP 400
  | 'InternalError' // amqp:internal-error / 500: Azure's answer to a request it cannot serve (see its uses)
  | 'BadRequest'; // amqp:invalid-field / HTTP 400 (invalid SQL, invalid names, malformed input)

export class BrokerError extends Error {
  constructor(
    readonly code: BrokerErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'BrokerError';
  }
}

// ---------------------------------------------------------------------------------------------------------
// Entity descriptions (admin plane). Durations are milliseconds; the admin plane converts to ISO 8601.
// ---------------------------------------------------------------------------------------------------------

export type EntityStatus = 'Active' | 'Disabled' | 'SendDisabled' | 'ReceiveDisabled';

export interface TopicDescription {
  name: string;
  status: EntityStatus;
  defaultMessageTimeToLiveMs: number; // "infinite" is represented by MAX_DURATION_MS
  maxSizeInMegabytes: number;
  maxMessageSizeInKilobytes: number;
  requiresDuplicateDetection: boolean;
  duplicateDetectionHistoryTimeWindowMs: number;
  enableBatchedOperations: boolean;
  supportOrdering: boolean;
  enablePartitioning: boolean;
  autoDeleteOnIdleMs: number;
  userMetadata?: string;
}

export interface SubscriptionDescription {
  topicName: string;
  subscriptionName: string;
  status: EntityStatus;
  lockDurationMs: number;
  requiresSession: boolean;
  defaultMessageTimeToLiveMs: number;
  deadLetteringOnMessageExpiration: boolean;
  deadLetteringOnFilterEvaluationExceptions: boolean;
  maxDeliveryCount: number;
  enableBatchedOperations: boolean;
  forwardTo?: string; // a topic or queue name (the admin plane strips any sb://host/ prefix)
  forwardDeadLetteredMessagesTo?: string;
  autoDeleteOnIdleMs: number;
  userMetadata?: string;
}

/** SQL parameters as the admin client sends them (name with its leading '@'). */
export type SqlParameters = Record<string, string | number | boolean | Date | null>;

export type RuleFilter =
  | { kind: 'sql'; sqlExpression: string; parameters?: SqlParameters }
  | { kind: 'true' }
  | { kind: 'false' }
  | {
      kind: 'correlation';
      correlationId?: string;
      messageId?: string;
      to?: string;
      replyTo?: string;
      subject?: string; // "Label" on the wire
      sessionId?: string;
      replyToSessionId?: string;
      contentType?: string;
      applicationProperties?: Record<string, string | number | boolean | Date | null>;
    };

export interface RuleAction {
  sqlExpression: string;
  parameters?: SqlParameters;
}

export interface RuleDescription {
  name: string;
  filter: RuleFilter;
  action?: RuleAction; // absent = EmptyRuleAction
}

/** Timestamps every entity carries for the admin plane. */
export interface EntityTimes {
  createdAt: number;
  updatedAt: number;
  accessedAt: number;
}

export interface MessageCounts {
  activeMessageCount: number;
  deadLetterMessageCount: number;
  scheduledMessageCount: number;
  transferMessageCount: number;
  transferDeadLetterMessageCount: number;
}

export interface TopicRuntime extends EntityTimes {
  name: string;
  sizeInBytes: number;
  subscriptionCount: number;
  scheduledMessageCount: number;
}

export interface SubscriptionRuntime extends EntityTimes, MessageCounts {
  topicName: string;
  subscriptionName: string;
  totalMessageCount: number;
}

/** A queue: a topic's sending side and a subscription's receiving side in one entity (Azure's QueueDescription). */
export interface QueueDescription {
  name: string;
  status: EntityStatus;
  lockDurationMs: number;
  requiresSession: boolean;
  defaultMessageTimeToLiveMs: number;
  deadLetteringOnMessageExpiration: boolean;
  maxDeliveryCount: number;
  enableBatchedOperations: boolean;
  maxSizeInMegabytes: number;
  maxMessageSizeInKilobytes: number;
  requiresDuplicateDetection: boolean;
  duplicateDetectionHistoryTimeWindowMs: number;
  enablePartitioning: boolean;
  autoDeleteOnIdleMs: number;
  forwardTo?: string;
  forwardDeadLetteredMessagesTo?: string;
  userMetadata?: string;
}

export interface QueueRuntime extends EntityTimes, MessageCounts {
  name: string;
  sizeInBytes: number;
  totalMessageCount: number;
}

/** What the admin plane needs. Create/update take partial descriptions; the broker fills defaults. */
export interface BrokerAdmin {
  createTopic(d: Partial<TopicDescription> & { name: string }): TopicDescription & EntityTimes;
  getTopic(name: string): TopicDescription & EntityTimes; // EntityNotFound
  updateTopic(d: Partial<TopicDescription> & { name: string }): TopicDescription & EntityTimes;
  deleteTopic(name: string): void;
  listTopics(): Array<TopicDescription & EntityTimes>; // sorted by name; paging is the plane's job
  getTopicRuntime(name: string): TopicRuntime;

  createSubscription(
    d: Partial<SubscriptionDescription> & { topicName: string; subscriptionName: string },
    defaultRule?: RuleDescription, // absent: a '$Default' rule with a true filter
  ): SubscriptionDescription & EntityTimes;
  getSubscription(topic: string, sub: string): SubscriptionDescription & EntityTimes;
  updateSubscription(
    d: Partial<SubscriptionDescription> & { topicName: string; subscriptionName: string },
  ): SubscriptionDescription & EntityTimes;
  deleteSubscription(topic: string, sub: string): void;
  listSubscriptions(topic: string): Array<SubscriptionDescription & EntityTimes>;
  getSubscriptionRuntime(topic: string, sub: string): SubscriptionRuntime;

  createRule(topic: string, sub: string, rule: RuleDescription): RuleDescription & { createdAt: number }; // BadRequest on invalid SQL
  getRule(topic: string, sub: string, rule: string): RuleDescription & { createdAt: number };
  updateRule(topic: string, sub: string, rule: RuleDescription): RuleDescription & { createdAt: number };
  deleteRule(topic: string, sub: string, rule: string): void;
  listRules(topic: string, sub: string): Array<RuleDescription & { createdAt: number }>;

  // Queues (topics and queues share one name space: EntityAlreadyExists across both).
  createQueue(d: Partial<QueueDescription> & { name: string }): QueueDescription & EntityTimes;
  getQueue(name: string): QueueDescription & EntityTimes;
  updateQueue(d: Partial<QueueDescription> & { name: string }): QueueDescription & EntityTimes;
  deleteQueue(name: string): void;
  listQueues(): Array<QueueDescription & EntityTimes>;
  getQueueRuntime(name: string): QueueRuntime;
  /** Whether a name is a topic, a queue, or nothing. */
  entityKind(name: string): 'topic' | 'queue' | undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Data plane.
// ---------------------------------------------------------------------------------------------------------

/**
 * A message as the AMQP plane decoded it (rhea's representation: `message_id`, `correlation_id`, `subject`,
 * `to`, `reply_to`, `group_id` = session id, `reply_to_group_id`, `content_type`, `content_encoding`,
 * `absolute_expiry_time`, `creation_time`, `ttl`, `application_properties`, `message_annotations`, `body`,
 * and the body section kind). The broker reads and writes only the fields named in the SQL/system-property
 * mapping and the annotations it owns; it passes the rest through untouched, so every field round-trips.
 */
export type WireMessage = AmqpMessage;

/**
 * Where a receiver reads from. A queue is `{ topic: queueName, subscription: QUEUE_STORE }` (its single
 * message store; see QUEUE_STORE).
 */
export interface ReceiveSource {
  topic: string;
  subscription: string;
  subQueue?: 'deadLetter' | 'transferDeadLetter';
}

/** Entity paths as the AMQP plane sees them: `topic`, `topic/Subscriptions/sub[/$DeadLetterQueue|/$Transfer/$DeadLetterQueue]`. */
export type EntityPath = string;

/** One message handed to a receiver, with everything the plane needs to build the delivery. */
export interface Delivered {
  message: WireMessage; // the stored message, properties and body as sent (after rule actions)
  sequenceNumber: number;
  enqueuedTime: number;
  deliveryCount: number; // 0 on the first delivery
  lockToken?: string; // uuid (delivery-tag byte order); absent in receive-and-delete
  lockedUntil?: number;
  state: 'active' | 'deferred' | 'scheduled';
  scheduledEnqueueTime?: number;
  deadLetterSource?: string;
  partitionKey?: string;
  enqueueSequenceNumber?: number;
}

export type ReceiveMode = 'peekLock' | 'receiveAndDelete';

export interface OpenReceiverOptions {
  source: ReceiveSource;
  mode: ReceiveMode;
  /**
   * For session-enabled subscriptions: `{ sessionId: 'x' }` locks that session (SessionCannotBeLocked if
   * another receiver holds it); `{ sessionId: null }` waits up to `timeoutMs` for any unlocked session with
   * available messages (NoSessionAvailable when none comes). Must be absent for non-session subscriptions
   * and present for session ones (InvalidOperation otherwise).
   */
  session?: { sessionId: string | null; timeoutMs: number };
  /** Shown in logs only. */
  name?: string;
}

export interface Receiver {
  readonly sessionId?: string;
  /** Session lock expiry, for session receivers. */
  readonly sessionLockedUntil?: number;
  /**
   * Take up to `max` available messages, locking them (peek-lock) or removing them (receive-and-delete).
   * Never blocks; returns [] when nothing is available.
   */
  take(max: number): Delivered[];
  /** Called (without arguments) whenever messages may have become available for this receiver. */
  onAvailable(listener: () => void): void;
  /** Called once if the broker ends this receiver (session lock expired, entity deleted). */
  onClosedByBroker(listener: (err: BrokerError) => void): void;
  /** Release the receiver: a session receiver releases its session lock. Locked messages stay locked until they expire (as on Azure). */
  close(): void;
}

/** Whether the receiver holding a session lock is the one asking for a session operation. */
export type SessionCaller = (holder: Receiver) => boolean;

export type Disposition =
  | { kind: 'complete' }
  | { kind: 'abandon'; propertiesToModify?: Record<string, unknown> }
  | {
      kind: 'deadLetter';
      reason?: string;
      description?: string;
      propertiesToModify?: Record<string, unknown>;
    }
  | { kind: 'defer'; propertiesToModify?: Record<string, unknown> };

export interface PeekOptions {
  fromSequenceNumber?: number; // inclusive; absent = from the last peeked position (the plane tracks it)
  maxCount: number;
  sessionId?: string;
}

export interface Broker extends BrokerAdmin {
  /** Send to a topic (or queue). Applies subscription rules, actions, forwarding, TTL. Returns the assigned sequence numbers per subscription copy only for logs. */
  send(entity: string, messages: WireMessage[]): void; // EntityNotFound, SendDisabled, MessageSizeExceeded, QuotaExceeded
  schedule(entity: string, messages: WireMessage[], scheduledEnqueueTimes: number[]): number[]; // sequence numbers for cancel
  cancelScheduled(entity: string, sequenceNumbers: number[]): void;

  openReceiver(opts: OpenReceiverOptions): Promise<Receiver>;

  /**
   * Settle a locked message. `sessionId` is required on a session entity (InternalError without it, as Azure
   * answers an update-disposition that names no session there): the session lock must still be held, with
   * `caller` by a receiver it accepts (a $management update-disposition answers only the session's own
   * receiver, as renewSessionLock does), and the message must be that session's (MessageLockLost otherwise).
   */
  settle(
    source: ReceiveSource,
    lockToken: string,
    disposition: Disposition,
    sessionId?: string,
    caller?: SessionCaller,
  ): void; // MessageLockLost, SessionLockLost
  renewLock(source: ReceiveSource, lockToken: string): number; // new lockedUntil
  /**
   * Session lock renewal and session state: SessionLockLost unless the session's lock is held, and held by a
   * receiver `caller` accepts (as Azure answers these only for the session's own receiver). Without `caller`
   * any holder will do (in-process callers such as the broker's own tests).
   */
  renewSessionLock(source: ReceiveSource, sessionId: string, caller?: SessionCaller): number;
  getSessionState(source: ReceiveSource, sessionId: string, caller?: SessionCaller): Buffer | null;
  setSessionState(
    source: ReceiveSource,
    sessionId: string,
    state: Buffer | null,
    caller?: SessionCaller,
  ): void;
  /** Peek without locking. Includes deferred and (for topics' subscriptions) no scheduled messages. */
  peek(source: ReceiveSource, opts: PeekOptions): Delivered[];
  /**
   * Receive deferred messages by sequence number (locking them in peek-lock mode). MessageNotFound for unknown
   * numbers. On a session entity `sessionId` names the session, whose lock must be held (by a receiver `caller`
   * accepts, when given): SessionLockLost otherwise.
   */
  receiveDeferred(
    source: ReceiveSource,
    sequenceNumbers: number[],
    mode: ReceiveMode,
    sessionId?: string,
    caller?: SessionCaller,
  ): Delivered[];
  /**
   * Deletes up to `maxCount` unlocked messages (active or deferred, in sequence order) enqueued before
   * `beforeEnqueuedTime` (`sessionId`: that session's only); returns how many were deleted.
   */
  deleteMessages(
    source: ReceiveSource,
    maxCount: number,
    beforeEnqueuedTime: number,
    sessionId?: string,
  ): number;
  /** Session ids with messages (or state) on a session-enabled subscription. */
  listSessions(source: ReceiveSource, updatedSince?: number): string[];

  /** Size limit for one message, in bytes (the plane enforces it on transfer and reports MessageSizeExceeded). */
  readonly maxMessageSizeBytes: number;

  /** Flush persistence (if any) and stop timers. */
  close(): Promise<void>;
}

/** The `subscription` of a ReceiveSource that names a queue itself ('$' cannot start a subscription name). */
export const QUEUE_STORE = '$queue';

/** Upper bound used for "infinite" durations (TimeSpan.MaxValue is P10675199DT2H48M5.4775807S). */
export const MAX_DURATION_MS = 922337203685477;

export interface BrokerOptions {
  /** Directory for durable state; absent = memory only. */
  dataDir?: string;
  /** Largest accepted message, bytes. Default 256 KiB, at most 1 MiB. */
  maxMessageSizeBytes?: number;
  /** Total bytes of stored message content before sends answer QuotaExceeded. Default 512 MiB. */
  memoryBudgetBytes?: number;
  /** Injected clock for tests; defaults to Date.now. Timers are driven by the broker's own scheduler. */
  now?: () => number;
  /** Structured logger (pino-compatible subset). Must never be given tokens or bodies. */
  log?: {
    info(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
    debug(obj: object, msg?: string): void;
  };
}
