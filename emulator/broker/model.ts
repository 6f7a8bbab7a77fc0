// In-memory model of topics, subscriptions, their sub-queues and sessions. Pure data plus the indexes that
// keep receive O(log n): an availability heap per sub-queue (or per session), a lock-token map per
// subscription, and an insertion-ordered "ready" set of unlocked sessions that have available messages.

import type { EntityTimes, SubscriptionDescription, TopicDescription, WireMessage } from './api.ts';
import { MinHeap } from './heap.ts';
import type { DuplicateHistory } from './duplicates.ts';
import type { CompiledRule } from './rules.ts';

export { QUEUE_STORE } from './api.ts';

export type QueueKind = 'main' | 'deadLetter' | 'transferDeadLetter';

export interface StoredMessage {
  seq: number;
  message: WireMessage;
  size: number;
  enqueuedTime: number;
  deliveryCount: number;
  state: 'active' | 'deferred';
  expiresAt: number; // Infinity when the message never expires
  sessionId?: string;
  deadLetterSource?: string;
  scheduledEnqueueTime?: number;
  /** The journal encoding, kept so that snapshots do not re-encode every message. */
  encoded?: string;
  // Runtime only (never persisted):
  available: boolean;
  lockToken?: string;
  lockedUntil?: number;
  lockEpoch?: number;
  queue: SubQueue;
}

const bySeq = (a: StoredMessage, b: StoredMessage): boolean => a.seq < b.seq;

export class SubQueue {
  readonly messages = new Map<number, StoredMessage>();
  /** Available messages without a session (the whole queue for non-session subscriptions and DLQs). */
  readonly available = new MinHeap<StoredMessage>(bySeq);
  availableCount = 0;
  bytes = 0;
  /** Messages with a finite expiry, so the sweep can skip queues that have none. */
  expiring = 0;
  /** True while messages were inserted in sequence order (main queues); DLQs are sorted on peek. */
  ordered = true;
  private lastSeq = 0;

  constructor(
    readonly kind: QueueKind,
    readonly sub: SubscriptionState,
  ) {}

  noteInsert(seq: number): void {
    if (seq < this.lastSeq) this.ordered = false;
    this.lastSeq = Math.max(this.lastSeq, seq);
  }

  /** An empty queue is trivially in order again. */
  noteEmpty(): void {
    this.ordered = true;
    this.lastSeq = 0;
  }

  /** Messages in sequence order, starting at `from`. */
  inOrder(from: number): StoredMessage[] {
    const out: StoredMessage[] = [];
    for (const m of this.messages.values()) if (m.seq >= from) out.push(m);
    if (!this.ordered) out.sort((a, b) => a.seq - b.seq);
    return out;
  }
}

export class SessionState {
  state: Buffer | null = null;
  readonly available = new MinHeap<StoredMessage>(bySeq);
  availableCount = 0;
  messageCount = 0;
  readonly locked = new Set<StoredMessage>();
  holder: SessionHolder | undefined;
  lockedUntil = 0;
  epoch = 0;
  updatedAt: number;

  constructor(
    readonly id: string,
    now: number,
  ) {
    this.updatedAt = now;
  }
}

/** What the model needs to know of a session receiver. */
export interface SessionHolder {
  closedByBroker(code: 'SessionLockLost' | 'EntityNotFound', message: string): void;
  signal(): void;
}

export interface NonSessionListener {
  readonly kind: QueueKind;
  signal(): void;
  closedByBroker(code: 'EntityNotFound', message: string): void;
}

export interface SessionWaiter {
  done: boolean;
  grant(session: SessionState): void;
  fail(err: Error): void;
}

export class SubscriptionState {
  desc: SubscriptionDescription;
  times: EntityTimes;
  readonly rules = new Map<string, CompiledRule>();
  readonly main: SubQueue;
  readonly deadLetter: SubQueue;
  readonly transferDeadLetter: SubQueue;
  readonly sessions = new Map<string, SessionState>();
  /** Unlocked sessions with available messages, oldest-waiting first (Map keeps insertion order). */
  readonly ready = new Map<string, SessionState>();
  readonly waiters: SessionWaiter[] = [];
  readonly listeners = new Set<NonSessionListener>();
  readonly locks = new Map<string, StoredMessage>();
  deleted = false;

  constructor(
    readonly topic: TopicState,
    desc: SubscriptionDescription,
    times: EntityTimes,
  ) {
    this.desc = desc;
    this.times = times;
    this.main = new SubQueue('main', this);
    this.deadLetter = new SubQueue('deadLetter', this);
    this.transferDeadLetter = new SubQueue('transferDeadLetter', this);
  }

  queue(kind: QueueKind): SubQueue {
    return kind === 'main' ? this.main : kind === 'deadLetter' ? this.deadLetter : this.transferDeadLetter;
  }

  get path(): string {
    if (this.topic.isQueue) return this.topic.desc.name;
    return `${this.topic.desc.name}/Subscriptions/${this.desc.subscriptionName}`;
  }
}

export interface ScheduledItem {
  seq: number;
  message: WireMessage;
  size: number;
  at: number;
  encoded?: string;
}

export class TopicState {
  desc: TopicDescription;
  times: EntityTimes;
  readonly subs = new Map<string, SubscriptionState>();
  readonly scheduled = new Map<number, ScheduledItem>();
  /** The topic's sequence counter: one number per routed message, shared by its subscriptions' copies. */
  seq = 0;
  scheduledBytes = 0;
  deleted = false;
  /** MessageIds accepted within the duplicate detection window (entities with RequiresDuplicateDetection). */
  duplicates: DuplicateHistory | undefined;

  constructor(
    desc: TopicDescription,
    times: EntityTimes,
    /** A queue: its messages live in its single subscription, QUEUE_STORE. */
    readonly isQueue = false,
  ) {
    this.desc = desc;
    this.times = times;
  }
}
