// The state every part of the broker shares: the namespace's entities, the clock, the single timer, the
// journal and the stored-bytes account, plus the parts themselves (delivery, sessions, routing, scheduling,
// duplicate detection).
// The parts reach each other through this object, so their modules import each other's types only and the
// module graph has no cycles.

import { BrokerError } from './api.ts';
import type { BrokerOptions } from './api.ts';
import type { JournalRecord } from './journal-records.ts';
import { QUEUE_STORE } from './model.ts';
import type { StoredMessage, SubscriptionState, TopicState } from './model.ts';
import type { ReceiverHost } from './receiver.ts';
import type { CompiledRule } from './rules.ts';
import { Scheduler } from './scheduler.ts';
import { encodeMessage } from './wire.ts';
import { Delivery } from './delivery.ts';
import { DuplicateDetection } from './duplicates.ts';
import { Sessions } from './sessions.ts';
import { Routing } from './routing.ts';
import { Scheduling } from './scheduling.ts';

export type Log = NonNullable<BrokerOptions['log']>;
export const silentLog: Log = { info() {}, warn() {}, error() {}, debug() {} };

/** Where the broker writes durable records; the in-memory broker uses a sink that does nothing. */
export interface JournalSink {
  readonly enabled: boolean;
  append(record: JournalRecord): void;
  /**
   * Ends one public operation: write what was appended; `durable` forces it to disk before returning. Throws
   * when the disk refuses (full, failing); `snapshot` is the state to rewrite when the journal fell behind.
   */
  commit(durable: boolean, snapshot: () => JournalRecord[]): void;
  /** A failed operation kept its change in memory: the journal must catch up from memory. */
  markBehind(): void;
  close(snapshot: () => JournalRecord[]): Promise<void>;
  /** Called after commits so the journal can compact when it has grown large. */
  maybeCompact(snapshot: () => JournalRecord[]): void;
}

export const nullJournal: JournalSink = {
  enabled: false,
  append() {},
  commit() {},
  markBehind() {},
  async close() {},
  maybeCompact() {},
};

const DEFAULT_MAX_MESSAGE_SIZE = 256 * 1024;
const DEFAULT_MEMORY_BUDGET = 512 * 1024 * 1024;

export class BrokerCore {
  readonly maxMessageSizeBytes: number;
  readonly budget: number;
  readonly now: () => number;
  readonly log: Log;
  /**
   * Every entity of the namespace by name. Topics and queues share one name space on Azure; a queue is a
   * TopicState whose single subscription holds its messages (see model.ts), so forwarding, routing and
   * delivery treat both alike.
   */
  readonly topics = new Map<string, TopicState>();
  readonly scheduler: Scheduler;
  storedBytes = 0;
  closed = false;
  /** Set while loading persisted state: nothing is journaled then. */
  replaying = false;
  /**
   * Persisted messages that could not be decoded at start-up, as they were stored: every snapshot carries
   * them unchanged (until their subscription is deleted), so a decoder problem (a rhea upgrade, say) never
   * erases a message.
   */
  readonly undecodable: Array<{ sub: SubscriptionState; rec: Extract<JournalRecord, { k: 'put' }> }> = [];
  /**
   * The same for scheduled messages: never enqueued, carried by every snapshot until they are cancelled by
   * sequence number or their entity is deleted.
   */
  readonly undecodableScheduled: Array<{ topic: TopicState; rec: Extract<JournalRecord, { k: 'sch' }> }> = [];
  readonly delivery: Delivery;
  readonly sessions: Sessions;
  readonly routing: Routing;
  readonly scheduling: Scheduling;
  readonly duplicates: DuplicateDetection;
  readonly receiverHost: ReceiverHost;

  constructor(
    options: BrokerOptions,
    public journal: JournalSink,
    /** The full state as journal records, for compaction (the broker facade builds it). */
    readonly snapshot: () => JournalRecord[],
  ) {
    this.maxMessageSizeBytes = Math.min(options.maxMessageSizeBytes ?? DEFAULT_MAX_MESSAGE_SIZE, 1024 * 1024);
    this.budget = options.memoryBudgetBytes ?? DEFAULT_MEMORY_BUDGET;
    this.now = options.now ?? Date.now;
    this.log = options.log ?? silentLog;
    this.scheduler = new Scheduler(this.now, (err) =>
      this.log.error({ err: String(err) }, 'broker timer failed'),
    );
    this.delivery = new Delivery(this);
    this.sessions = new Sessions(this);
    this.routing = new Routing(this);
    this.scheduling = new Scheduling(this);
    this.duplicates = new DuplicateDetection(this);
    this.receiverHost = {
      take: (r, max) => this.delivery.take(r, max),
      release: (r) => this.sessions.release(r),
    };
  }

  // Lookups ------------------------------------------------------------------------------------------------

  /** A topic (not a queue). */
  topic(name: string): TopicState {
    const t = this.topics.get(name);
    if (!t || t.isQueue) throw notFound(name);
    return t;
  }

  /** A topic or a queue: what a sender may address. */
  entity(name: string): TopicState {
    const t = this.topics.get(name);
    if (!t) throw notFound(name);
    return t;
  }

  /** A queue. */
  queue(name: string): TopicState {
    const t = this.topics.get(name);
    if (!t || !t.isQueue) throw notFound(name);
    return t;
  }

  /**
   * A subscription, or the message store of a queue (`sub` is then QUEUE_STORE; the AMQP plane and the
   * broker's ReceiveSource name a queue that way).
   */
  sub(topic: string, sub: string): SubscriptionState {
    const t = this.topics.get(topic);
    const s = t && (t.isQueue === (sub === QUEUE_STORE) ? t.subs.get(sub) : undefined);
    if (!s) {
      throw notFound(sub === QUEUE_STORE ? topic : `${topic}/Subscriptions/${sub}`);
    }
    return s;
  }

  rule(topic: string, sub: string, rule: string): CompiledRule {
    const r = this.sub(topic, sub).rules.get(rule);
    if (!r) throw notFound(`${topic}/Subscriptions/${sub}/Rules/${rule}`);
    return r;
  }

  // Journal ------------------------------------------------------------------------------------------------

  append(r: JournalRecord): void {
    if (this.journal.enabled && !this.replaying) this.journal.append(r);
  }

  journalPut(m: StoredMessage): void {
    if (!this.journal.enabled || this.replaying) return;
    m.encoded ??= encodeMessage(m.message);
    this.journal.append(putRecord(m));
  }

  /**
   * Runs one public operation and then commits its journal records: `durable` operations (sends,
   * dead-letters, topology, state) are on disk before they return; the rest are written and synced by the
   * journal's short group-commit timer.
   *
   * `undoable` operations (send) are taken back from memory when their records do not reach the disk: the
   * sender is told to retry, so a copy left in memory would be delivered as well, and its MessageId would
   * make duplicate detection drop the retry. Other operations keep their change in memory and the journal
   * catches up from memory at the next commit.
   */
  op<T>(durable: boolean, f: () => T, undoable = false): T {
    if (!this.journal.enabled || this.replaying) return f();
    const undo: Array<() => void> | undefined = undoable ? [] : undefined;
    this.undo = undo;
    let result: T;
    try {
      result = f();
    } catch (err) {
      this.undo = undefined;
      // What the operation changed before it threw is recorded as before; a storage error replaces its own.
      this.commit(durable, undefined);
      throw err;
    }
    this.undo = undefined;
    this.commit(durable, undo);
    return result;
  }

  /** op() for an operation whose changes are taken back when its records do not reach the disk (send, schedule). */
  undoableOp<T>(durable: boolean, f: () => T): T {
    return this.op(durable, f, true);
  }

  /** Commits outside op() (the expiry sweep). */
  flush(durable: boolean): void {
    if (this.journal.enabled && !this.replaying) this.commit(durable, undefined);
  }

  /** While an undoable operation runs: how to take back one of its changes to memory. */
  onUndo(f: () => void): void {
    this.undo?.push(f);
  }

  private undo: Array<() => void> | undefined;

  private commit(durable: boolean, undo: Array<() => void> | undefined): void {
    try {
      this.journal.commit(durable, this.snapshot);
    } catch (err) {
      if (undo) {
        // Nothing of the undo is journaled: the failed line was never written (or was cut back).
        this.replaying = true;
        try {
          for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
        } finally {
          this.replaying = false;
        }
      } else {
        this.journal.markBehind();
      }
      throw storageError(err);
    }
    this.journal.maybeCompact(this.snapshot);
  }

  guard(f: () => void): void {
    try {
      f();
    } catch (err) {
      this.log.error({ err: String(err) }, 'broker background work failed');
    }
  }
}

/**
 * A write the disk refused (ENOSPC, EIO): InternalError, which the AMQP plane answers with amqp:internal-error,
 * so the client retries, as it does when Azure cannot serve a request. The file system's message names the
 * journal file and the errno, never a payload.
 */
function storageError(err: unknown): BrokerError {
  if (err instanceof BrokerError) return err;
  return new BrokerError(
    'InternalError',
    `The emulator could not write to its data directory: ${String((err as Error).message ?? err)}`,
  );
}

function notFound(path: string): BrokerError {
  return new BrokerError('EntityNotFound', `The messaging entity '${path}' could not be found.`);
}

export function putRecord(m: StoredMessage): Extract<JournalRecord, { k: 'put' }> {
  const sub = m.queue.sub;
  const rec: Extract<JournalRecord, { k: 'put' }> = {
    k: 'put',
    t: sub.topic.desc.name,
    s: sub.desc.subscriptionName,
    q: m.queue.kind,
    seq: m.seq,
    m: m.encoded ?? encodeMessage(m.message),
    sz: m.size,
    et: m.enqueuedTime,
    dc: m.deliveryCount,
    st: m.state === 'deferred' ? 'd' : 'a',
    exp: Number.isFinite(m.expiresAt) ? m.expiresAt : null,
  };
  if (m.deadLetterSource !== undefined) rec.dls = m.deadLetterSource;
  if (m.scheduledEnqueueTime !== undefined) rec.set = m.scheduledEnqueueTime;
  return rec;
}
