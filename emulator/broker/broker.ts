// The broker core: entities, routing (rules, actions, forwarding), locks, sessions, scheduling, TTL and
// dead-lettering behind the contract in api.ts. Persistence is delegated to a Journal (journal.ts); without a
// data directory the journal is a no-op and everything lives in memory.

import { randomUUID } from 'node:crypto';
import { BrokerError, MAX_DURATION_MS } from './api.ts';
import type {
  Broker,
  BrokerOptions,
  Delivered,
  Disposition,
  EntityTimes,
  OpenReceiverOptions,
  PeekOptions,
  ReceiveMode,
  ReceiveSource,
  Receiver,
  RuleDescription,
  SubscriptionDescription,
  SubscriptionRuntime,
  TopicDescription,
  TopicRuntime,
  WireMessage,
} from './api.ts';
import {
  checkPositiveDuration,
  definedOnly,
  subscriptionDefaults,
  topicDefaults,
  validateChildName,
  validateTopicName,
} from './entity-defaults.ts';
import type { JournalRecord } from './journal-records.ts';
import { messageView } from './message-view.ts';
import type { SystemFacts } from './message-view.ts';
import { SessionState, SubscriptionState, TopicState } from './model.ts';
import type { QueueKind, ScheduledItem, SessionWaiter, StoredMessage, SubQueue } from './model.ts';
import { ReceiverImpl } from './receiver.ts';
import { compileRule } from './rules.ts';
import type { CompiledRule } from './rules.ts';
import { Scheduler } from './scheduler.ts';
import {
  copyMessage,
  encodedSize,
  encodeMessage,
  headerTtl,
  messageIdForLog,
  newMessageId,
  partitionKeyOf,
  sessionIdOf,
} from './wire.ts';

/** Azure ends a forwarding chain after this many hops. */
export const MAX_FORWARD_HOPS = 4;
const DEFAULT_MAX_MESSAGE_SIZE = 256 * 1024;
const DEFAULT_MEMORY_BUDGET = 512 * 1024 * 1024;
const SWEEP_INTERVAL_MS = 5_000;

export type Log = NonNullable<BrokerOptions['log']>;
const silentLog: Log = { info() {}, warn() {}, error() {}, debug() {} };

/** Where the broker writes durable records; the in-memory broker uses a sink that does nothing. */
export interface JournalSink {
  readonly enabled: boolean;
  append(record: JournalRecord): void;
  /** Ends one public operation: write what was appended; `durable` forces it to disk before returning. */
  commit(durable: boolean): void;
  close(snapshot: () => JournalRecord[]): Promise<void>;
  /** Called after commits so the journal can compact when it has grown large. */
  maybeCompact(snapshot: () => JournalRecord[]): void;
}

export const nullJournal: JournalSink = {
  enabled: false,
  append() {},
  commit() {},
  async close() {},
  maybeCompact() {},
};

interface RouteWork {
  topic: TopicState;
  /** The sequence number reserved when the message was scheduled; otherwise the topic assigns one. */
  reservedSeq?: number;
  message: WireMessage;
  size: number;
  hops: number;
  scheduledEnqueueTime?: number;
  deadLetterSource?: string;
}

export class ServiceBusBroker implements Broker {
  readonly maxMessageSizeBytes: number;
  private readonly budget: number;
  private readonly now: () => number;
  private readonly log: Log;
  private readonly topics = new Map<string, TopicState>();
  private readonly scheduler: Scheduler;
  private readonly sweepTimer: NodeJS.Timeout;
  private storedBytes = 0;
  private closed = false;
  /** Set while loading persisted state: nothing is journaled then. */
  private replaying = false;

  constructor(
    options: BrokerOptions,
    private journal: JournalSink = nullJournal,
  ) {
    this.maxMessageSizeBytes = Math.min(options.maxMessageSizeBytes ?? DEFAULT_MAX_MESSAGE_SIZE, 1024 * 1024);
    this.budget = options.memoryBudgetBytes ?? DEFAULT_MEMORY_BUDGET;
    this.now = options.now ?? Date.now;
    this.log = options.log ?? silentLog;
    this.scheduler = new Scheduler(this.now, (err) =>
      this.log.error({ err: String(err) }, 'broker timer failed'),
    );
    this.sweepTimer = setInterval(() => this.guard(() => this.sweepExpired()), SWEEP_INTERVAL_MS);
    this.sweepTimer.unref();
  }

  setJournal(journal: JournalSink): void {
    this.journal = journal;
  }

  // -------------------------------------------------------------------------------------------------------
  // Admin: topics
  // -------------------------------------------------------------------------------------------------------

  createTopic(d: Partial<TopicDescription> & { name: string }): TopicDescription & EntityTimes {
    return this.op(true, () => {
      validateTopicName(d.name);
      if (this.topics.has(d.name))
        throw new BrokerError('EntityAlreadyExists', `Topic '${d.name}' already exists.`);
      checkPositiveDuration('defaultMessageTimeToLive', d.defaultMessageTimeToLiveMs);
      const now = this.now();
      const topic = new TopicState(
        { ...topicDefaults(d.name), ...definedOnly(d) },
        { createdAt: now, updatedAt: now, accessedAt: now },
      );
      this.topics.set(d.name, topic);
      this.journalTopic(topic);
      this.log.info({ topic: d.name }, 'topic created');
      return this.topicView(topic);
    });
  }

  getTopic(name: string): TopicDescription & EntityTimes {
    return this.topicView(this.topic(name));
  }

  updateTopic(d: Partial<TopicDescription> & { name: string }): TopicDescription & EntityTimes {
    return this.op(true, () => {
      const topic = this.topic(d.name);
      checkPositiveDuration('defaultMessageTimeToLive', d.defaultMessageTimeToLiveMs);
      topic.desc = { ...topic.desc, ...definedOnly(d), name: topic.desc.name };
      if ('userMetadata' in d && d.userMetadata === undefined) delete topic.desc.userMetadata;
      topic.times.updatedAt = this.now();
      this.journalTopic(topic);
      return this.topicView(topic);
    });
  }

  deleteTopic(name: string): void {
    this.op(true, () => {
      const topic = this.topic(name);
      for (const sub of [...topic.subs.values()]) this.removeSubscription(sub, false);
      for (const item of topic.scheduled.values()) this.storedBytes -= item.size;
      topic.scheduled.clear();
      topic.deleted = true;
      this.topics.delete(name);
      this.append({ k: 'deltopic', t: name });
      this.log.info({ topic: name }, 'topic deleted');
    });
  }

  listTopics(): Array<TopicDescription & EntityTimes> {
    return [...this.topics.values()]
      .sort((a, b) => (a.desc.name < b.desc.name ? -1 : a.desc.name > b.desc.name ? 1 : 0))
      .map((t) => this.topicView(t));
  }

  getTopicRuntime(name: string): TopicRuntime {
    const topic = this.topic(name);
    let size = 0;
    for (const item of topic.scheduled.values()) size += item.size;
    for (const sub of topic.subs.values()) {
      size += sub.main.bytes + sub.deadLetter.bytes + sub.transferDeadLetter.bytes;
    }
    return {
      name,
      ...topic.times,
      sizeInBytes: size,
      subscriptionCount: topic.subs.size,
      scheduledMessageCount: topic.scheduled.size,
    };
  }

  // -------------------------------------------------------------------------------------------------------
  // Admin: subscriptions
  // -------------------------------------------------------------------------------------------------------

  createSubscription(
    d: Partial<SubscriptionDescription> & { topicName: string; subscriptionName: string },
    defaultRule?: RuleDescription,
  ): SubscriptionDescription & EntityTimes {
    return this.op(true, () => {
      const topic = this.topic(d.topicName);
      validateChildName('subscription', d.subscriptionName);
      if (topic.subs.has(d.subscriptionName)) {
        throw new BrokerError(
          'EntityAlreadyExists',
          `Subscription '${d.subscriptionName}' already exists on topic '${d.topicName}'.`,
        );
      }
      this.checkSubscriptionFields(d);
      const rule = compileRule(defaultRule ?? { name: '$Default', filter: { kind: 'true' } }, this.now());
      if (defaultRule) validateChildName('rule', defaultRule.name);
      const now = this.now();
      const sub = new SubscriptionState(
        topic,
        { ...subscriptionDefaults(d.topicName, d.subscriptionName), ...definedOnly(d) },
        { createdAt: now, updatedAt: now, accessedAt: now },
      );
      sub.rules.set(rule.description.name, rule);
      topic.subs.set(d.subscriptionName, sub);
      this.append({ k: 'sub', d: { ...sub.desc, ...sub.times } });
      this.append({
        k: 'rule',
        t: d.topicName,
        s: d.subscriptionName,
        d: rule.description,
        c: rule.createdAt,
      });
      this.log.info({ topic: d.topicName, subscription: d.subscriptionName }, 'subscription created');
      return this.subView(sub);
    });
  }

  getSubscription(topic: string, sub: string): SubscriptionDescription & EntityTimes {
    return this.subView(this.sub(topic, sub));
  }

  updateSubscription(
    d: Partial<SubscriptionDescription> & { topicName: string; subscriptionName: string },
  ): SubscriptionDescription & EntityTimes {
    return this.op(true, () => {
      const sub = this.sub(d.topicName, d.subscriptionName);
      this.checkSubscriptionFields(d);
      if (d.requiresSession !== undefined && d.requiresSession !== sub.desc.requiresSession) {
        throw new BrokerError(
          'BadRequest',
          'The RequiresSession property of an existing subscription cannot be changed.',
        );
      }
      sub.desc = {
        ...sub.desc,
        ...definedOnly(d),
        topicName: sub.desc.topicName,
        subscriptionName: sub.desc.subscriptionName,
      };
      // An update replaces the description (as Azure's PUT does): optional fields sent as undefined are cleared.
      for (const key of ['forwardTo', 'forwardDeadLetteredMessagesTo', 'userMetadata'] as const) {
        if (key in d && d[key] === undefined) delete sub.desc[key];
      }
      sub.times.updatedAt = this.now();
      this.append({ k: 'sub', d: { ...sub.desc, ...sub.times } });
      // A status change may make receivers able to read again.
      this.signalAll(sub);
      return this.subView(sub);
    });
  }

  deleteSubscription(topic: string, sub: string): void {
    this.op(true, () => this.removeSubscription(this.sub(topic, sub), true));
  }

  listSubscriptions(topic: string): Array<SubscriptionDescription & EntityTimes> {
    return [...this.topic(topic).subs.values()]
      .sort((a, b) => (a.desc.subscriptionName < b.desc.subscriptionName ? -1 : 1))
      .map((s) => this.subView(s));
  }

  getSubscriptionRuntime(topic: string, subName: string): SubscriptionRuntime {
    const sub = this.sub(topic, subName);
    const active = sub.main.messages.size;
    const dead = sub.deadLetter.messages.size;
    const tdead = sub.transferDeadLetter.messages.size;
    // Scheduled messages wait at the topic until they are routed; each subscription reports the topic's count.
    const scheduled = sub.topic.scheduled.size;
    return {
      topicName: topic,
      subscriptionName: subName,
      ...sub.times,
      activeMessageCount: active,
      deadLetterMessageCount: dead,
      scheduledMessageCount: scheduled,
      transferMessageCount: 0,
      transferDeadLetterMessageCount: tdead,
      totalMessageCount: active + dead + tdead,
    };
  }

  // -------------------------------------------------------------------------------------------------------
  // Admin: rules
  // -------------------------------------------------------------------------------------------------------

  createRule(topic: string, subName: string, rule: RuleDescription): RuleDescription & { createdAt: number } {
    return this.op(true, () => {
      const sub = this.sub(topic, subName);
      validateChildName('rule', rule.name);
      if (sub.rules.has(rule.name)) {
        throw new BrokerError('EntityAlreadyExists', `Rule '${rule.name}' already exists on '${sub.path}'.`);
      }
      const compiled = compileRule(rule, this.now());
      sub.rules.set(rule.name, compiled);
      this.append({ k: 'rule', t: topic, s: subName, d: compiled.description, c: compiled.createdAt });
      return ruleView(compiled);
    });
  }

  getRule(topic: string, subName: string, rule: string): RuleDescription & { createdAt: number } {
    return ruleView(this.rule(topic, subName, rule));
  }

  updateRule(topic: string, subName: string, rule: RuleDescription): RuleDescription & { createdAt: number } {
    return this.op(true, () => {
      const sub = this.sub(topic, subName);
      const old = this.rule(topic, subName, rule.name);
      const compiled = compileRule(rule, old.createdAt);
      sub.rules.set(rule.name, compiled);
      this.append({ k: 'rule', t: topic, s: subName, d: compiled.description, c: compiled.createdAt });
      return ruleView(compiled);
    });
  }

  deleteRule(topic: string, subName: string, rule: string): void {
    this.op(true, () => {
      const sub = this.sub(topic, subName);
      this.rule(topic, subName, rule);
      sub.rules.delete(rule);
      this.append({ k: 'delrule', t: topic, s: subName, r: rule });
    });
  }

  listRules(topic: string, subName: string): Array<RuleDescription & { createdAt: number }> {
    return [...this.sub(topic, subName).rules.values()].map(ruleView);
  }

  // -------------------------------------------------------------------------------------------------------
  // Data plane: send, schedule
  // -------------------------------------------------------------------------------------------------------

  send(entity: string, messages: WireMessage[]): void {
    this.op(true, () => {
      const topic = this.topicForSend(entity);
      const sizes = this.admit(messages);
      const now = this.now();
      topic.times.accessedAt = now;
      messages.forEach((m, i) => {
        const at = scheduledTimeOf(m);
        if (at !== undefined && at > now) {
          // A sent message with ScheduledEnqueueTimeUtc in the future is scheduled, as on Azure.
          this.addScheduled(topic, { seq: ++topic.seq, message: m, size: sizes[i] ?? 0, at });
        } else {
          this.route({ topic, message: m, size: sizes[i] ?? 0, hops: 0 });
        }
      });
      this.log.debug(
        { topic: entity, count: messages.length, messageIds: messages.map(messageIdForLog), bytes: sizes },
        'messages sent',
      );
    });
  }

  schedule(entity: string, messages: WireMessage[], scheduledEnqueueTimes: number[]): number[] {
    return this.op(true, () => {
      const topic = this.topicForSend(entity);
      if (scheduledEnqueueTimes.length !== messages.length) {
        throw new BrokerError('BadRequest', 'Each scheduled message needs one scheduled enqueue time.');
      }
      const sizes = this.admit(messages);
      const now = this.now();
      topic.times.accessedAt = now;
      const seqs: number[] = [];
      messages.forEach((message, i) => {
        const at = scheduledEnqueueTimes[i] ?? now;
        const item: ScheduledItem = { seq: ++topic.seq, message, size: sizes[i] ?? 0, at };
        seqs.push(item.seq);
        this.addScheduled(topic, item);
        this.log.debug(
          { topic: entity, messageId: messageIdForLog(message), bytes: item.size, at },
          'message scheduled',
        );
      });
      // Due (or past) times are routed now, after the batch is recorded.
      for (const seq of seqs) this.fireScheduled(topic, seq);
      return seqs;
    });
  }

  cancelScheduled(entity: string, sequenceNumbers: number[]): void {
    this.op(true, () => {
      const topic = this.topic(entity);
      for (const seq of sequenceNumbers) {
        if (!topic.scheduled.has(seq)) {
          throw new BrokerError(
            'MessageNotFound',
            `No scheduled message with sequence number ${seq} on '${entity}'.`,
          );
        }
      }
      for (const seq of sequenceNumbers) this.removeScheduled(topic, seq);
    });
  }

  // -------------------------------------------------------------------------------------------------------
  // Data plane: receivers
  // -------------------------------------------------------------------------------------------------------

  openReceiver(opts: OpenReceiverOptions): Promise<Receiver> {
    try {
      const sub = this.sub(opts.source.topic, opts.source.subscription);
      const kind = queueKindOf(opts.source);
      const topicStatus = sub.topic.desc.status;
      if (
        sub.desc.status === 'ReceiveDisabled' ||
        sub.desc.status === 'Disabled' ||
        topicStatus === 'Disabled'
      ) {
        throw new BrokerError(
          'ReceiveDisabled',
          `Messaging entity '${sub.path}' is currently disabled for receive.`,
        );
      }
      const sessionful = kind === 'main' && sub.desc.requiresSession;
      if (sessionful && !opts.session) {
        throw new BrokerError(
          'InvalidOperation',
          `'${sub.path}' requires sessions: open a session receiver.`,
        );
      }
      if (!sessionful && opts.session) {
        throw new BrokerError('InvalidOperation', `'${sub.path}' does not use sessions.`);
      }
      sub.times.accessedAt = this.now();
      if (!opts.session) {
        const r = new ReceiverImpl(this, sub, kind, opts.mode, undefined);
        sub.listeners.add(r);
        r.signal();
        return Promise.resolve(r);
      }
      const { sessionId, timeoutMs } = opts.session;
      if (sessionId !== null) {
        const session = this.sessionFor(sub, sessionId);
        this.expireSessionLockIfDue(sub, session);
        if (session.holder) {
          throw new BrokerError(
            'SessionCannotBeLocked',
            `The session '${sessionId}' on '${sub.path}' is locked by another receiver.`,
          );
        }
        const r = new ReceiverImpl(this, sub, kind, opts.mode, session);
        this.lockSession(sub, session, r);
        return Promise.resolve(r);
      }
      return this.acceptNextSession(sub, opts.mode, timeoutMs);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private acceptNextSession(sub: SubscriptionState, mode: ReceiveMode, timeoutMs: number): Promise<Receiver> {
    return new Promise<Receiver>((resolve, reject) => {
      const waiter: SessionWaiter = {
        done: false,
        grant: (session) => {
          waiter.done = true;
          const r = new ReceiverImpl(this, sub, 'main', mode, session);
          this.lockSession(sub, session, r);
          resolve(r);
        },
        fail: (e) => {
          waiter.done = true;
          reject(e);
        },
      };
      // Earlier waiters are served first; a new caller joins the back of the line.
      sub.waiters.push(waiter);
      this.serveWaiters(sub);
      if (waiter.done) return;
      this.scheduler.at(this.now() + Math.max(0, timeoutMs), () => {
        if (waiter.done) return;
        const i = sub.waiters.indexOf(waiter);
        if (i >= 0) sub.waiters.splice(i, 1);
        waiter.fail(
          new BrokerError('NoSessionAvailable', `No unlocked session with messages on '${sub.path}'.`),
        );
      });
    });
  }

  /** Hands ready sessions to waiting acceptNextSession calls, in arrival order on both sides. */
  private serveWaiters(sub: SubscriptionState): void {
    while (sub.waiters.length > 0) {
      const head = sub.waiters[0] as SessionWaiter;
      if (head.done) {
        sub.waiters.shift();
        continue;
      }
      const session = this.nextReadySession(sub);
      if (!session) return;
      sub.waiters.shift();
      head.grant(session);
    }
  }

  private nextReadySession(sub: SubscriptionState): SessionState | undefined {
    for (const session of sub.ready.values()) {
      sub.ready.delete(session.id);
      this.dropExpiredHead(session.available, sub);
      if (session.availableCount > 0 && !session.holder) return session;
    }
    return undefined;
  }

  /** Called by a receiver's take(). */
  takeFor(r: ReceiverImpl, max: number): Delivered[] {
    if (this.closed || r.closed) return [];
    return this.op(false, () => {
      const sub = r.sub;
      if (sub.deleted) return [];
      const out: Delivered[] = [];
      const now = this.now();
      let heap = sub.queue(r.kind).available;
      const session = r.session;
      if (session) {
        this.expireSessionLockIfDue(sub, session);
        if (session.holder !== r) return [];
        heap = session.available;
      }
      const lockedSeqs: number[] = [];
      while (out.length < max) {
        const m = heap.pop();
        if (!m) break;
        if (!m.available || m.queue.messages.get(m.seq) !== m) continue;
        this.markUnavailable(m);
        if (m.expiresAt <= now) {
          this.expire(m);
          continue;
        }
        if (r.mode === 'receiveAndDelete') {
          out.push(this.delivered(m));
          this.removeMessage(m);
        } else {
          this.lockMessage(m, session);
          lockedSeqs.push(m.seq);
          out.push(this.delivered(m));
        }
      }
      if (out.length > 0) sub.times.accessedAt = now;
      if (lockedSeqs.length > 0) {
        this.append({
          k: 'lk',
          t: sub.topic.desc.name,
          s: sub.desc.subscriptionName,
          q: r.kind,
          seqs: lockedSeqs,
        });
      }
      return out;
    });
  }

  /** Called by a receiver's close(). */
  releaseReceiver(r: ReceiverImpl): void {
    if (r.closed) return;
    r.closed = true;
    this.op(false, () => {
      const sub = r.sub;
      sub.listeners.delete(r);
      const session = r.session;
      if (session && session.holder === r) this.unlockSession(sub, session);
    });
  }

  // -------------------------------------------------------------------------------------------------------
  // Data plane: settlement, locks, session state
  // -------------------------------------------------------------------------------------------------------

  settle(source: ReceiveSource, lockToken: string, disposition: Disposition, sessionId?: string): void {
    this.op(disposition.kind === 'deadLetter' || disposition.kind === 'defer', () => {
      const m = this.lockedMessage(source, lockToken, sessionId);
      const sub = m.queue.sub;
      sub.times.accessedAt = this.now();
      switch (disposition.kind) {
        case 'complete':
          this.unlock(m);
          this.removeMessage(m);
          return;
        case 'abandon':
          this.unlock(m);
          this.modify(m, disposition.propertiesToModify);
          this.redeliverOrDeadLetter(m);
          return;
        case 'defer':
          this.unlock(m);
          this.modify(m, disposition.propertiesToModify);
          m.state = 'deferred';
          this.journalPut(m);
          return;
        case 'deadLetter':
          if (m.queue.kind !== 'main') {
            throw new BrokerError(
              'InvalidOperation',
              'A message in a dead-letter queue cannot be dead-lettered again.',
            );
          }
          this.unlock(m);
          this.deadLetter(m, disposition.reason, disposition.description, disposition.propertiesToModify);
          return;
      }
    });
  }

  renewLock(source: ReceiveSource, lockToken: string): number {
    return this.op(false, () => {
      const m = this.lockedMessage(source, lockToken, undefined);
      const sub = m.queue.sub;
      if (m.lockEpoch !== undefined && m.sessionId !== undefined) {
        // Session messages are held by the session lock; renewing it is renewSessionLock's job.
        return sub.sessions.get(m.sessionId)?.lockedUntil ?? this.now();
      }
      m.lockedUntil = this.now() + sub.desc.lockDurationMs;
      this.scheduleLockExpiry(m);
      return m.lockedUntil;
    });
  }

  renewSessionLock(source: ReceiveSource, sessionId: string): number {
    return this.op(false, () => {
      const sub = this.sub(source.topic, source.subscription);
      const session = this.heldSession(sub, sessionId);
      session.lockedUntil = this.now() + sub.desc.lockDurationMs;
      for (const m of session.locked) m.lockedUntil = session.lockedUntil;
      this.scheduleSessionExpiry(sub, session);
      return session.lockedUntil;
    });
  }

  getSessionState(source: ReceiveSource, sessionId: string): Buffer | null {
    const sub = this.sub(source.topic, source.subscription);
    const session = this.heldSession(sub, sessionId);
    return session.state;
  }

  setSessionState(source: ReceiveSource, sessionId: string, state: Buffer | null): void {
    this.op(true, () => {
      const sub = this.sub(source.topic, source.subscription);
      const session = this.heldSession(sub, sessionId);
      session.state = state && state.length > 0 ? Buffer.from(state) : state ? Buffer.alloc(0) : null;
      session.updatedAt = this.now();
      this.append({
        k: 'ss',
        t: sub.topic.desc.name,
        s: sub.desc.subscriptionName,
        id: sessionId,
        v: session.state ? session.state.toString('base64') : null,
      });
    });
  }

  peek(source: ReceiveSource, opts: PeekOptions): Delivered[] {
    return this.op(false, () => {
      const sub = this.sub(source.topic, source.subscription);
      const q = sub.queue(queueKindOf(source));
      const now = this.now();
      const out: Delivered[] = [];
      const expired: StoredMessage[] = [];
      for (const m of q.inOrder(opts.fromSequenceNumber ?? 0)) {
        if (out.length >= opts.maxCount) break;
        if (opts.sessionId !== undefined && m.sessionId !== opts.sessionId) continue;
        if (q.kind === 'main' && m.expiresAt <= now && m.lockToken === undefined) {
          expired.push(m);
          continue;
        }
        out.push(this.delivered(m, false));
      }
      for (const m of expired) {
        this.markUnavailable(m);
        this.expire(m);
      }
      return out;
    });
  }

  receiveDeferred(
    source: ReceiveSource,
    sequenceNumbers: number[],
    mode: ReceiveMode,
    sessionId?: string,
  ): Delivered[] {
    return this.op(false, () => {
      const sub = this.sub(source.topic, source.subscription);
      const q = sub.queue(queueKindOf(source));
      const found = sequenceNumbers.map((seq) => {
        const m = q.messages.get(seq);
        if (!m || m.state !== 'deferred' || (sessionId !== undefined && m.sessionId !== sessionId)) {
          throw new BrokerError(
            'MessageNotFound',
            `No deferred message with sequence number ${seq} on '${sub.path}'.`,
          );
        }
        return m;
      });
      let session: SessionState | undefined;
      if (q.kind === 'main' && sub.desc.requiresSession) {
        if (sessionId === undefined) throw new BrokerError('InvalidOperation', 'A session id is required.');
        session = this.heldSession(sub, sessionId);
      }
      sub.times.accessedAt = this.now();
      return found.map((m) => {
        if (m.lockToken !== undefined) this.unlock(m);
        if (mode === 'receiveAndDelete') {
          const d = this.delivered(m);
          this.removeMessage(m);
          return d;
        }
        this.lockMessage(m, session);
        return this.delivered(m);
      });
    });
  }

  listSessions(source: ReceiveSource, updatedSince?: number): string[] {
    const sub = this.sub(source.topic, source.subscription);
    const out: string[] = [];
    for (const s of sub.sessions.values()) {
      if (s.messageCount === 0 && s.state === null) continue;
      if (updatedSince !== undefined && s.updatedAt < updatedSince) continue;
      out.push(s.id);
    }
    return out;
  }

  /** Runs due timers and the expiry sweep now (for tests that drive an injected clock). */
  runDueWork(): void {
    this.scheduler.runDue();
    this.guard(() => this.sweepExpired());
  }

  /** Total bytes of stored message content (all entities, including scheduled messages). */
  get totalStoredBytes(): number {
    return this.storedBytes;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.scheduler.close();
    clearInterval(this.sweepTimer);
    for (const topic of this.topics.values()) {
      for (const sub of topic.subs.values()) {
        for (const w of sub.waiters) {
          if (!w.done) w.fail(new BrokerError('EntityNotFound', 'The broker was closed.'));
        }
        sub.waiters.length = 0;
      }
    }
    await this.journal.close(() => this.snapshotRecords());
  }

  // -------------------------------------------------------------------------------------------------------
  // Routing
  // -------------------------------------------------------------------------------------------------------

  /** Routes one message through a topic's subscriptions, following forwards iteratively (bounded by hops). */
  private route(first: RouteWork): void {
    const work: RouteWork[] = [first];
    for (let w = work.shift(); w; w = work.shift()) {
      // Every subscription's first copy carries the topic's number for this message; extra copies get new ones.
      const topic = w.topic;
      const baseSeq = w.reservedSeq ?? ++topic.seq;
      for (const sub of topic.subs.values()) {
        if (sub.desc.status === 'Disabled') continue;
        let baseUsed = false;
        const seqFor = (): number => {
          if (baseUsed) return ++topic.seq;
          baseUsed = true;
          return baseSeq;
        };
        const { copies, failure } = this.matchCopies(sub, w);
        if (failure && copies.length === 0 && sub.desc.deadLetteringOnFilterEvaluationExceptions) {
          const copy = copyMessage(w.message);
          this.storeNew(sub, 'deadLetter', seqFor(), copy, w, {
            reason: 'FilterEvaluationException',
            description: failure,
          });
        }
        for (const copy of copies) {
          const target = sub.desc.forwardTo;
          if (!target) {
            this.storeNew(sub, 'main', seqFor(), copy, w);
            continue;
          }
          if (w.hops >= MAX_FORWARD_HOPS) {
            this.storeNew(sub, 'transferDeadLetter', seqFor(), copy, w, {
              reason: 'TransferHopCountExceeded',
              description: `The message was forwarded ${w.hops} times; the limit is ${MAX_FORWARD_HOPS}.`,
            });
            continue;
          }
          const next = this.topics.get(target);
          if (!next) {
            this.storeNew(sub, 'transferDeadLetter', seqFor(), copy, w, {
              reason: 'ForwardToEntityNotFound',
              description: `The forward target '${target}' of '${sub.path}' does not exist.`,
            });
            continue;
          }
          if (next.desc.status === 'SendDisabled' || next.desc.status === 'Disabled') {
            this.storeNew(sub, 'transferDeadLetter', seqFor(), copy, w, {
              reason: 'ForwardToEntityDisabled',
              description: `The forward target '${target}' of '${sub.path}' is disabled for send.`,
            });
            continue;
          }
          next.times.accessedAt = this.now();
          const forwarded: RouteWork = { ...w, topic: next, message: copy, hops: w.hops + 1 };
          delete forwarded.reservedSeq;
          work.push(forwarded);
        }
      }
    }
  }

  /**
   * The copies a subscription keeps of one message: one per matching rule that has an action (each with that
   * action applied), plus one if any matching rule has no action.
   */
  private matchCopies(sub: SubscriptionState, w: RouteWork): { copies: WireMessage[]; failure?: string } {
    const facts: SystemFacts = { enqueuedTime: this.now(), size: w.size };
    if (w.scheduledEnqueueTime !== undefined) facts.scheduledEnqueueTime = w.scheduledEnqueueTime;
    const view = messageView(w.message, facts);
    const copies: WireMessage[] = [];
    let plain = false;
    let failure: string | undefined;
    for (const rule of sub.rules.values()) {
      let matched: boolean;
      try {
        matched = rule.matches(view);
      } catch (err) {
        failure = `Rule '${rule.description.name}': ${err instanceof Error ? err.message : String(err)}`;
        continue;
      }
      if (!matched) continue;
      if (rule.action) {
        const copy = copyMessage(w.message);
        try {
          rule.action(messageView(copy, facts));
        } catch (err) {
          failure = `Rule '${rule.description.name}' action: ${err instanceof Error ? err.message : String(err)}`;
          continue;
        }
        copies.push(copy);
      } else if (!plain) {
        plain = true;
        copies.push(copyMessage(w.message));
      }
    }
    return failure === undefined ? { copies } : { copies, failure };
  }

  private storeNew(
    sub: SubscriptionState,
    kind: QueueKind,
    seq: number,
    message: WireMessage,
    w: RouteWork,
    deadLetter?: { reason: string; description: string },
  ): void {
    const now = this.now();
    let target = kind;
    const sessionId = sessionIdOf(message);
    if (kind === 'main' && sub.desc.requiresSession && sessionId === undefined) {
      // A session subscription cannot hand out a message without a session id; keep it visible in the DLQ.
      target = 'deadLetter';
      deadLetter = {
        reason: 'SessionIdIsMissing',
        description: `'${sub.path}' requires sessions and the message has no SessionId.`,
      };
    }
    if (deadLetter) {
      message.application_properties = {
        ...((message.application_properties as object | undefined) ?? {}),
        DeadLetterReason: deadLetter.reason,
        DeadLetterErrorDescription: deadLetter.description,
      };
    }
    const ttl = Math.min(
      headerTtl(message) ?? Infinity,
      sub.desc.defaultMessageTimeToLiveMs,
      sub.topic.desc.defaultMessageTimeToLiveMs,
    );
    const m: StoredMessage = {
      seq,
      message,
      size: w.size,
      enqueuedTime: now,
      deliveryCount: 0,
      state: 'active',
      expiresAt: target === 'main' && ttl < MAX_DURATION_MS ? now + ttl : Infinity,
      available: false,
      queue: sub.queue(target),
    };
    if (sessionId !== undefined) m.sessionId = sessionId;
    if (w.scheduledEnqueueTime !== undefined) m.scheduledEnqueueTime = w.scheduledEnqueueTime;
    if (w.deadLetterSource !== undefined) m.deadLetterSource = w.deadLetterSource;
    this.insert(m);
    this.journalPut(m);
    if (deadLetter) {
      this.log.info(
        { path: sub.path, messageId: messageIdForLog(message), bytes: w.size, reason: deadLetter.reason },
        'message dead-lettered on arrival',
      );
    }
  }

  // -------------------------------------------------------------------------------------------------------
  // Storage and availability
  // -------------------------------------------------------------------------------------------------------

  private insert(m: StoredMessage): void {
    const q = m.queue;
    q.messages.set(m.seq, m);
    q.noteInsert(m.seq);
    q.bytes += m.size;
    if (Number.isFinite(m.expiresAt)) q.expiring++;
    this.storedBytes += m.size;
    const session = this.sessionOf(m);
    if (session) {
      session.messageCount++;
      session.updatedAt = this.now();
    }
    if (m.state === 'active') this.makeAvailable(m);
  }

  private removeMessage(m: StoredMessage): void {
    const q = m.queue;
    if (q.messages.get(m.seq) !== m) return;
    this.markUnavailable(m);
    if (m.lockToken !== undefined) this.unlock(m);
    q.messages.delete(m.seq);
    if (q.messages.size === 0) q.noteEmpty();
    q.bytes -= m.size;
    if (Number.isFinite(m.expiresAt)) q.expiring--;
    this.storedBytes -= m.size;
    const session = this.sessionOf(m);
    if (session) {
      session.messageCount--;
      session.updatedAt = this.now();
      this.forgetSessionIfIdle(q.sub, session);
    }
    this.append({
      k: 'del',
      t: q.sub.topic.desc.name,
      s: q.sub.desc.subscriptionName,
      q: q.kind,
      seq: m.seq,
    });
  }

  private makeAvailable(m: StoredMessage): void {
    if (m.available) return;
    m.available = true;
    const session = this.sessionOf(m);
    if (session) {
      session.available.push(m);
      session.availableCount++;
      if (session.holder) session.holder.signal();
      else this.markReady(m.queue.sub, session);
    } else {
      m.queue.available.push(m);
      m.queue.availableCount++;
      for (const l of m.queue.sub.listeners) if (l.kind === m.queue.kind) l.signal();
    }
  }

  private markUnavailable(m: StoredMessage): void {
    if (!m.available) return;
    m.available = false;
    const session = this.sessionOf(m);
    if (session) session.availableCount--;
    else m.queue.availableCount--;
  }

  /** The session a message belongs to: only main queues of session subscriptions have sessions. */
  private sessionOf(m: StoredMessage): SessionState | undefined {
    const q = m.queue;
    if (q.kind !== 'main' || !q.sub.desc.requiresSession || m.sessionId === undefined) return undefined;
    return this.sessionFor(q.sub, m.sessionId);
  }

  private sessionFor(sub: SubscriptionState, id: string): SessionState {
    let s = sub.sessions.get(id);
    if (!s) {
      s = new SessionState(id, this.now());
      sub.sessions.set(id, s);
    }
    return s;
  }

  private forgetSessionIfIdle(sub: SubscriptionState, s: SessionState): void {
    if (s.messageCount === 0 && s.state === null && !s.holder) {
      sub.sessions.delete(s.id);
      sub.ready.delete(s.id);
    }
  }

  private markReady(sub: SubscriptionState, s: SessionState): void {
    if (s.holder || s.availableCount === 0) return;
    if (!sub.ready.has(s.id)) sub.ready.set(s.id, s);
    this.serveWaiters(sub);
  }

  private lockMessage(m: StoredMessage, session: SessionState | undefined): void {
    const sub = m.queue.sub;
    m.lockToken = randomUUID();
    sub.locks.set(m.lockToken, m);
    if (session) {
      m.lockEpoch = session.epoch;
      m.lockedUntil = session.lockedUntil;
      session.locked.add(m);
    } else {
      m.lockedUntil = this.now() + sub.desc.lockDurationMs;
      this.scheduleLockExpiry(m);
    }
  }

  private unlock(m: StoredMessage): void {
    if (m.lockToken === undefined) return;
    const sub = m.queue.sub;
    sub.locks.delete(m.lockToken);
    if (m.sessionId !== undefined) sub.sessions.get(m.sessionId)?.locked.delete(m);
    delete m.lockToken;
    delete m.lockedUntil;
    delete m.lockEpoch;
  }

  private scheduleLockExpiry(m: StoredMessage): void {
    const token = m.lockToken;
    const until = m.lockedUntil ?? 0;
    this.scheduler.at(until, () =>
      this.op(false, () => {
        if (m.lockToken !== token || (m.lockedUntil ?? 0) > this.now()) return;
        if (m.queue.messages.get(m.seq) !== m) return; // settled or its subscription deleted meanwhile
        this.lockExpired(m);
      }),
    );
  }

  private lockExpired(m: StoredMessage): void {
    this.log.debug({ path: m.queue.sub.path, messageId: messageIdForLog(m.message) }, 'message lock expired');
    this.unlock(m);
    this.redeliverOrDeadLetter(m);
  }

  /** After an abandon or a lost lock: count the delivery, then make it available again or dead-letter it. */
  private redeliverOrDeadLetter(m: StoredMessage): void {
    m.deliveryCount++;
    const max = m.queue.sub.desc.maxDeliveryCount;
    if (m.queue.kind === 'main' && m.deliveryCount >= max) {
      this.deadLetter(
        m,
        'MaxDeliveryCountExceeded',
        `The message was delivered ${m.deliveryCount} times; the subscription allows ${max}.`,
        undefined,
      );
      return;
    }
    this.append({
      k: 'dc',
      t: m.queue.sub.topic.desc.name,
      s: m.queue.sub.desc.subscriptionName,
      q: m.queue.kind,
      seq: m.seq,
      dc: m.deliveryCount,
    });
    if (m.state === 'active') this.makeAvailable(m);
  }

  private modify(m: StoredMessage, props: Record<string, unknown> | undefined): void {
    if (!props || Object.keys(props).length === 0) return;
    // Replace, never mutate: earlier Delivered objects keep what they were given.
    const copy = copyMessage(m.message);
    copy.application_properties = {
      ...((copy.application_properties as object | undefined) ?? {}),
      ...props,
    };
    m.message = copy;
    delete m.encoded;
    this.journalPut(m);
  }

  /** Moves a message to its subscription's dead-letter queue (keeping its sequence number). */
  private deadLetter(
    m: StoredMessage,
    reason: string | undefined,
    description: string | undefined,
    props: Record<string, unknown> | undefined,
  ): void {
    const sub = m.queue.sub;
    this.removeMessage(m);
    const copy = copyMessage(m.message);
    const appProps: Record<string, unknown> = {
      ...((copy.application_properties as object | undefined) ?? {}),
    };
    if (reason !== undefined) appProps.DeadLetterReason = reason;
    if (description !== undefined) appProps.DeadLetterErrorDescription = description;
    Object.assign(appProps, props ?? {});
    copy.application_properties = appProps;
    this.log.info(
      { path: sub.path, messageId: messageIdForLog(m.message), bytes: m.size, reason },
      'message dead-lettered',
    );
    const forward = sub.desc.forwardDeadLetteredMessagesTo;
    const target = forward ? this.topics.get(forward) : undefined;
    if (target && target.desc.status !== 'SendDisabled' && target.desc.status !== 'Disabled') {
      this.route({ topic: target, message: copy, size: m.size, hops: 1, deadLetterSource: sub.path });
      return;
    }
    const dead: StoredMessage = {
      seq: m.seq,
      message: copy,
      size: m.size,
      enqueuedTime: m.enqueuedTime,
      deliveryCount: m.deliveryCount,
      state: 'active',
      expiresAt: Infinity,
      available: false,
      queue: sub.deadLetter,
    };
    if (m.sessionId !== undefined) dead.sessionId = m.sessionId;
    if (m.scheduledEnqueueTime !== undefined) dead.scheduledEnqueueTime = m.scheduledEnqueueTime;
    if (m.deadLetterSource !== undefined) dead.deadLetterSource = m.deadLetterSource;
    if (sub.deadLetter.messages.has(dead.seq)) dead.seq = ++sub.topic.seq;
    this.insert(dead);
    this.journalPut(dead);
  }

  /** A message whose time to live has passed: dead-letter it or drop it, as the subscription says. */
  private expire(m: StoredMessage): void {
    const sub = m.queue.sub;
    if (sub.desc.deadLetteringOnMessageExpiration) {
      this.deadLetter(m, 'TTLExpiredException', 'The message expired and was dead-lettered.', undefined);
    } else {
      this.log.debug({ path: sub.path, messageId: messageIdForLog(m.message) }, 'message expired');
      this.removeMessage(m);
    }
  }

  private dropExpiredHead(
    heap: { peek(): StoredMessage | undefined; pop(): StoredMessage | undefined },
    _sub: SubscriptionState,
  ): void {
    const now = this.now();
    for (let m = heap.peek(); m; m = heap.peek()) {
      if (!m.available || m.queue.messages.get(m.seq) !== m) {
        heap.pop();
        continue;
      }
      if (m.expiresAt > now) return;
      heap.pop();
      this.markUnavailable(m);
      this.expire(m);
    }
  }

  /** Periodic: expire available messages whose time has passed, so counts stay right without receivers. */
  private sweepExpired(): void {
    if (this.closed) return;
    const now = this.now();
    let touched = false;
    for (const topic of this.topics.values()) {
      for (const sub of topic.subs.values()) {
        if (sub.main.expiring === 0) continue;
        const due: StoredMessage[] = [];
        for (const m of sub.main.messages.values()) {
          if (m.expiresAt <= now && m.lockToken === undefined && m.state === 'active') due.push(m);
        }
        for (const m of due) {
          this.markUnavailable(m);
          this.expire(m);
          touched = true;
        }
      }
    }
    if (touched) this.journal.commit(true);
  }

  // -------------------------------------------------------------------------------------------------------
  // Sessions
  // -------------------------------------------------------------------------------------------------------

  private lockSession(sub: SubscriptionState, session: SessionState, r: ReceiverImpl): void {
    session.holder = r;
    session.epoch++;
    session.lockedUntil = this.now() + sub.desc.lockDurationMs;
    sub.ready.delete(session.id);
    this.scheduleSessionExpiry(sub, session);
    this.log.debug({ path: sub.path, sessionId: session.id }, 'session locked');
    r.signal();
  }

  private scheduleSessionExpiry(sub: SubscriptionState, session: SessionState): void {
    const epoch = session.epoch;
    this.scheduler.at(session.lockedUntil, () =>
      this.op(false, () => {
        if (session.epoch === epoch) this.expireSessionLockIfDue(sub, session);
      }),
    );
  }

  private expireSessionLockIfDue(sub: SubscriptionState, session: SessionState): void {
    const holder = session.holder;
    if (!holder || session.lockedUntil > this.now()) return;
    this.log.info({ path: sub.path, sessionId: session.id }, 'session lock expired');
    this.unlockSession(sub, session);
    holder.closedByBroker('SessionLockLost', `The session lock on '${session.id}' expired.`);
  }

  /** Ends a session lock: its messages' locks die with it and those messages count a delivery. */
  private unlockSession(sub: SubscriptionState, session: SessionState): void {
    session.holder = undefined;
    session.epoch++;
    if (sub.deleted) {
      session.locked.clear();
      return;
    }
    const locked = [...session.locked].sort((a, b) => a.seq - b.seq);
    for (const m of locked) {
      this.unlock(m);
      this.redeliverOrDeadLetter(m);
    }
    this.forgetSessionIfIdle(sub, session);
    if (sub.sessions.get(session.id) === session) this.markReady(sub, session);
  }

  private heldSession(sub: SubscriptionState, sessionId: string): SessionState {
    const session = sub.sessions.get(sessionId);
    if (session) this.expireSessionLockIfDue(sub, session);
    if (!session || !session.holder) {
      throw new BrokerError('SessionLockLost', `The session lock on '${sessionId}' is not held.`);
    }
    return session;
  }

  // -------------------------------------------------------------------------------------------------------
  // Scheduled messages
  // -------------------------------------------------------------------------------------------------------

  private addScheduled(topic: TopicState, item: ScheduledItem): void {
    topic.scheduled.set(item.seq, item);
    topic.scheduledBytes += item.size;
    this.storedBytes += item.size;
    if (this.journal.enabled && !this.replaying) {
      item.encoded ??= encodeMessage(item.message);
      this.append({
        k: 'sch',
        t: topic.desc.name,
        seq: item.seq,
        m: item.encoded,
        sz: item.size,
        at: item.at,
      });
    }
    this.scheduler.at(item.at, () => this.op(true, () => this.fireScheduled(topic, item.seq)));
  }

  private removeScheduled(topic: TopicState, seq: number): ScheduledItem | undefined {
    const item = topic.scheduled.get(seq);
    if (!item) return undefined;
    topic.scheduled.delete(seq);
    topic.scheduledBytes -= item.size;
    this.storedBytes -= item.size;
    this.append({ k: 'unsch', t: topic.desc.name, seq });
    return item;
  }

  /** Routes one scheduled message if it is still scheduled and due (a cancelled one is simply gone). */
  private fireScheduled(topic: TopicState, seq: number): void {
    const item = topic.scheduled.get(seq);
    if (topic.deleted || !item || item.at > this.now()) return;
    this.removeScheduled(topic, seq);
    this.route({
      topic,
      message: item.message,
      size: item.size,
      hops: 0,
      scheduledEnqueueTime: item.at,
      reservedSeq: item.seq,
    });
  }

  // -------------------------------------------------------------------------------------------------------
  // Lookups and checks
  // -------------------------------------------------------------------------------------------------------

  private topic(name: string): TopicState {
    const t = this.topics.get(name);
    if (!t) throw new BrokerError('EntityNotFound', `The messaging entity '${name}' could not be found.`);
    return t;
  }

  private sub(topic: string, sub: string): SubscriptionState {
    const s = this.topic(topic).subs.get(sub);
    if (!s) {
      throw new BrokerError(
        'EntityNotFound',
        `The messaging entity '${topic}/Subscriptions/${sub}' could not be found.`,
      );
    }
    return s;
  }

  private rule(topic: string, sub: string, rule: string): CompiledRule {
    const r = this.sub(topic, sub).rules.get(rule);
    if (!r) {
      throw new BrokerError(
        'EntityNotFound',
        `The messaging entity '${topic}/Subscriptions/${sub}/Rules/${rule}' could not be found.`,
      );
    }
    return r;
  }

  private topicForSend(entity: string): TopicState {
    const topic = this.topic(entity);
    if (topic.desc.status === 'SendDisabled' || topic.desc.status === 'Disabled') {
      throw new BrokerError('SendDisabled', `Messaging entity '${entity}' is currently disabled for send.`);
    }
    return topic;
  }

  /** Checks a whole batch (sizes, quota) before anything is stored; assigns missing message ids. */
  private admit(messages: WireMessage[]): number[] {
    const sizes: number[] = [];
    let total = 0;
    for (const m of messages) {
      if (m.message_id === undefined || m.message_id === null) m.message_id = newMessageId();
      const size = encodedSize(m);
      if (size > this.maxMessageSizeBytes) {
        throw new BrokerError(
          'MessageSizeExceeded',
          `The message is ${size} bytes; the limit is ${this.maxMessageSizeBytes} bytes.`,
        );
      }
      sizes.push(size);
      total += size;
    }
    if (this.storedBytes + total > this.budget) {
      throw new BrokerError(
        'QuotaExceeded',
        `The emulator's memory budget of ${this.budget} bytes is used up (${this.storedBytes} stored).`,
      );
    }
    return sizes;
  }

  private lockedMessage(
    source: ReceiveSource,
    lockToken: string,
    sessionId: string | undefined,
  ): StoredMessage {
    const sub = this.sub(source.topic, source.subscription);
    const kind = queueKindOf(source);
    const m = sub.locks.get(lockToken);
    if (sessionId !== undefined && kind === 'main' && sub.desc.requiresSession) {
      const session = sub.sessions.get(sessionId);
      if (session) this.expireSessionLockIfDue(sub, session);
      if (!session || !session.holder || (m && m.lockEpoch !== session.epoch)) {
        throw new BrokerError('SessionLockLost', `The session lock on '${sessionId}' was lost.`);
      }
    }
    if (!m || m.queue.kind !== kind) {
      throw new BrokerError(
        'MessageLockLost',
        `The lock on the message is lost or the lock token is unknown.`,
      );
    }
    if (m.lockEpoch === undefined && (m.lockedUntil ?? 0) <= this.now()) {
      this.lockExpired(m);
      throw new BrokerError('MessageLockLost', `The lock on the message expired.`);
    }
    if (m.lockEpoch !== undefined && m.sessionId !== undefined) {
      const session = sub.sessions.get(m.sessionId);
      if (session) this.expireSessionLockIfDue(sub, session);
      if (!session || session.epoch !== m.lockEpoch || !session.holder) {
        throw new BrokerError('SessionLockLost', `The session lock on '${m.sessionId}' was lost.`);
      }
    }
    return m;
  }

  private checkSubscriptionFields(d: Partial<SubscriptionDescription>): void {
    checkPositiveDuration('lockDuration', d.lockDurationMs);
    checkPositiveDuration('defaultMessageTimeToLive', d.defaultMessageTimeToLiveMs);
    if (
      d.maxDeliveryCount !== undefined &&
      (!Number.isInteger(d.maxDeliveryCount) || d.maxDeliveryCount < 1)
    ) {
      throw new BrokerError('BadRequest', 'maxDeliveryCount must be a positive integer.');
    }
    if (d.forwardTo) validateTopicName(d.forwardTo);
    if (d.forwardDeadLetteredMessagesTo) validateTopicName(d.forwardDeadLetteredMessagesTo);
  }

  private removeSubscription(sub: SubscriptionState, journal: boolean): void {
    const topic = sub.topic;
    sub.deleted = true;
    topic.subs.delete(sub.desc.subscriptionName);
    for (const q of [sub.main, sub.deadLetter, sub.transferDeadLetter]) {
      this.storedBytes -= q.bytes;
      q.messages.clear();
      q.available.clear();
      q.bytes = 0;
    }
    const err = `The messaging entity '${sub.path}' was deleted.`;
    for (const l of [...sub.listeners]) l.closedByBroker('EntityNotFound', err);
    for (const s of sub.sessions.values()) s.holder?.closedByBroker('EntityNotFound', err);
    for (const w of sub.waiters) if (!w.done) w.fail(new BrokerError('EntityNotFound', err));
    sub.waiters.length = 0;
    sub.listeners.clear();
    sub.sessions.clear();
    sub.ready.clear();
    sub.locks.clear();
    if (journal) this.append({ k: 'delsub', t: topic.desc.name, s: sub.desc.subscriptionName });
    this.log.info(
      { topic: topic.desc.name, subscription: sub.desc.subscriptionName },
      'subscription deleted',
    );
  }

  private signalAll(sub: SubscriptionState): void {
    for (const l of sub.listeners) l.signal();
    for (const s of sub.sessions.values()) s.holder?.signal();
  }

  // -------------------------------------------------------------------------------------------------------
  // Views and journaling
  // -------------------------------------------------------------------------------------------------------

  delivered(m: StoredMessage, withLock = true): Delivered {
    const d: Delivered = {
      message: m.message,
      sequenceNumber: m.seq,
      enqueuedTime: m.enqueuedTime,
      deliveryCount: m.deliveryCount,
      state: m.state,
    };
    if (withLock && m.lockToken !== undefined) {
      d.lockToken = m.lockToken;
      if (m.lockedUntil !== undefined) d.lockedUntil = m.lockedUntil;
    }
    if (m.scheduledEnqueueTime !== undefined) d.scheduledEnqueueTime = m.scheduledEnqueueTime;
    if (m.deadLetterSource !== undefined) d.deadLetterSource = m.deadLetterSource;
    const pk = partitionKeyOf(m.message);
    if (pk !== undefined) d.partitionKey = pk;
    return d;
  }

  private topicView(t: TopicState): TopicDescription & EntityTimes {
    return { ...t.desc, ...t.times };
  }

  private subView(s: SubscriptionState): SubscriptionDescription & EntityTimes {
    return { ...s.desc, ...s.times };
  }

  private append(r: JournalRecord): void {
    if (this.journal.enabled && !this.replaying) this.journal.append(r);
  }

  private journalTopic(t: TopicState): void {
    this.append({ k: 'topic', d: { ...t.desc, ...t.times } });
  }

  private journalPut(m: StoredMessage): void {
    if (!this.journal.enabled || this.replaying) return;
    m.encoded ??= encodeMessage(m.message);
    this.journal.append(putRecord(m));
  }

  /**
   * Runs one public operation and then commits its journal records: `durable` operations (sends,
   * dead-letters, topology, state) are on disk before they return; the rest are written and synced by the
   * journal's short group-commit timer.
   */
  private op<T>(durable: boolean, f: () => T): T {
    try {
      return f();
    } finally {
      if (this.journal.enabled && !this.replaying) {
        this.journal.commit(durable);
        this.journal.maybeCompact(() => this.snapshotRecords());
      }
    }
  }

  private guard(f: () => void): void {
    try {
      f();
    } catch (err) {
      this.log.error({ err: String(err) }, 'broker background work failed');
    }
  }

  /** The full state as journal records (a snapshot). */
  snapshotRecords(): JournalRecord[] {
    const out: JournalRecord[] = [];
    for (const topic of this.topics.values()) {
      const t = topic.desc.name;
      out.push({ k: 'topic', d: { ...topic.desc, ...topic.times } });
      out.push({ k: 'ctr', t, v: topic.seq });
      for (const item of topic.scheduled.values()) {
        item.encoded ??= encodeMessage(item.message);
        out.push({ k: 'sch', t, seq: item.seq, m: item.encoded, sz: item.size, at: item.at });
      }
      for (const sub of topic.subs.values()) {
        const s = sub.desc.subscriptionName;
        out.push({ k: 'sub', d: { ...sub.desc, ...sub.times } });
        for (const rule of sub.rules.values())
          out.push({ k: 'rule', t, s, d: rule.description, c: rule.createdAt });
        for (const q of [sub.main, sub.deadLetter, sub.transferDeadLetter]) {
          const locked: number[] = [];
          for (const m of q.inOrder(0)) {
            m.encoded ??= encodeMessage(m.message);
            out.push(putRecord(m));
            if (m.lockToken !== undefined) locked.push(m.seq);
          }
          if (locked.length > 0) out.push({ k: 'lk', t, s, q: q.kind, seqs: locked });
        }
        for (const session of sub.sessions.values()) {
          if (session.state) out.push({ k: 'ss', t, s, id: session.id, v: session.state.toString('base64') });
        }
      }
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------------------
  // Restore (used by persistence.ts while loading)
  // -------------------------------------------------------------------------------------------------------

  beginRestore(): void {
    this.replaying = true;
  }

  endRestore(): void {
    this.replaying = false;
  }

  restoreTopic(d: TopicDescription & EntityTimes, seq: number): TopicState {
    const { createdAt, updatedAt, accessedAt, ...desc } = d;
    const topic = new TopicState(desc, { createdAt, updatedAt, accessedAt });
    topic.seq = seq;
    this.topics.set(desc.name, topic);
    return topic;
  }

  restoreSubscription(
    topic: TopicState,
    d: SubscriptionDescription & EntityTimes,
    rules: Array<{ d: RuleDescription; c: number }>,
  ): SubscriptionState {
    const { createdAt, updatedAt, accessedAt, ...desc } = d;
    const sub = new SubscriptionState(topic, desc, { createdAt, updatedAt, accessedAt });
    for (const r of rules) {
      try {
        sub.rules.set(r.d.name, compileRule(r.d, r.c));
      } catch (err) {
        // A rule the SQL engine no longer accepts must not stop the broker from starting.
        this.log.error(
          { path: sub.path, rule: r.d.name, err: String(err) },
          'persisted rule could not be compiled',
        );
      }
    }
    topic.subs.set(desc.subscriptionName, sub);
    return sub;
  }

  restoreMessage(
    sub: SubscriptionState,
    kind: QueueKind,
    rec: Extract<JournalRecord, { k: 'put' }>,
    message: WireMessage,
    wasLocked: boolean,
  ): void {
    const m: StoredMessage = {
      seq: rec.seq,
      message,
      size: rec.sz,
      enqueuedTime: rec.et,
      deliveryCount: rec.dc,
      state: rec.st === 'd' ? 'deferred' : 'active',
      expiresAt: rec.exp ?? Infinity,
      available: false,
      queue: sub.queue(kind),
      encoded: rec.m,
    };
    const sid = sessionIdOf(message);
    if (sid !== undefined) m.sessionId = sid;
    if (rec.dls !== undefined) m.deadLetterSource = rec.dls;
    if (rec.set !== undefined) m.scheduledEnqueueTime = rec.set;
    if (!wasLocked) {
      this.insert(m);
      return;
    }
    // Locks do not survive a restart: the lost lock counts as a delivery.
    m.deliveryCount++;
    if (kind === 'main' && m.deliveryCount >= sub.desc.maxDeliveryCount) {
      this.insert(m);
      this.deadLetter(
        m,
        'MaxDeliveryCountExceeded',
        `The message was delivered ${m.deliveryCount} times; the subscription allows ${sub.desc.maxDeliveryCount}.`,
        undefined,
      );
      return;
    }
    this.insert(m);
  }

  restoreSessionState(sub: SubscriptionState, id: string, state: Buffer): void {
    this.sessionFor(sub, id).state = state;
  }

  restoreScheduled(topic: TopicState, item: ScheduledItem): void {
    this.addScheduled(topic, item);
  }
}

/** ScheduledEnqueueTimeUtc as the client sends it (a timestamp annotation), in epoch ms. */
function scheduledTimeOf(m: WireMessage): number | undefined {
  const v: unknown = m.message_annotations?.['x-opt-scheduled-enqueue-time'];
  if (v instanceof Date) return v.getTime();
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  return undefined;
}

function queueKindOf(source: ReceiveSource): QueueKind {
  return source.subQueue ?? 'main';
}

function ruleView(r: CompiledRule): RuleDescription & { createdAt: number } {
  return { ...r.description, createdAt: r.createdAt };
}

function putRecord(m: StoredMessage): Extract<JournalRecord, { k: 'put' }> {
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

export type { SubQueue };
