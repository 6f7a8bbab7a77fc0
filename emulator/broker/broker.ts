// The broker behind the contract in api.ts: a facade that checks each public call, runs it as one journaled
// operation and hands the work to the parts that own it (core.ts wires them together):
//   entities.ts    topics, subscriptions, rules            queues.ts      queues (same state as subscriptions)
//   routing.ts     rules, actions and forwarding            delivery.ts    storage, receive, locks, settlement, TTL
//   sessions.ts    session locks and acceptNextSession     scheduling.ts  scheduled messages and the expiry sweep
// Persistence is delegated to a Journal (journal.ts); without a data directory the journal is a no-op and
// everything lives in memory.

import { BrokerError } from './api.ts';
import type {
  Broker,
  BrokerOptions,
  Delivered,
  Disposition,
  EntityTimes,
  OpenReceiverOptions,
  PeekOptions,
  QueueDescription,
  QueueRuntime,
  ReceiveMode,
  ReceiveSource,
  Receiver,
  RuleDescription,
  SessionCaller,
  SubscriptionDescription,
  SubscriptionRuntime,
  TopicDescription,
  TopicRuntime,
  WireMessage,
} from './api.ts';
import { BrokerCore, nullJournal, putRecord } from './core.ts';
import type { JournalSink } from './core.ts';
import { queueKindOf } from './delivery.ts';
import { Entities, ruleView, subView, topicView } from './entities.ts';
import type { JournalRecord } from './journal-records.ts';
import { Queues, queueView } from './queues.ts';
import { SubscriptionState, TopicState } from './model.ts';
import type { QueueKind, ScheduledItem, SessionHolder, SessionState, StoredMessage } from './model.ts';
import { ReceiverImpl } from './receiver.ts';
import { compileRule } from './rules.ts';
import { scheduledTimeOf } from './scheduling.ts';
import { encodedSize, encodeMessage, messageIdForLog, newMessageId, sessionIdOf } from './wire.ts';

export { MAX_FORWARD_HOPS } from './routing.ts';
export type { JournalSink, Log } from './core.ts';
export { nullJournal } from './core.ts';

const SWEEP_INTERVAL_MS = 5_000;

export class ServiceBusBroker implements Broker {
  /** Shared state and the parts; queues.ts and tests reach it through here. */
  readonly core: BrokerCore;
  protected readonly entities: Entities;
  protected readonly queues: Queues;
  private readonly sweepTimer: NodeJS.Timeout;

  constructor(options: BrokerOptions, journal: JournalSink = nullJournal) {
    this.core = new BrokerCore(options, journal, () => this.snapshotRecords());
    this.entities = new Entities(this.core);
    this.queues = new Queues(this.core, this.entities);
    this.sweepTimer = setInterval(
      () => this.core.guard(() => this.core.scheduling.sweepExpired()),
      SWEEP_INTERVAL_MS,
    );
    this.sweepTimer.unref();
  }

  get maxMessageSizeBytes(): number {
    return this.core.maxMessageSizeBytes;
  }

  setJournal(journal: JournalSink): void {
    this.core.journal = journal;
  }

  // Admin: topics, subscriptions, rules --------------------------------------------------------------------

  createTopic(d: Partial<TopicDescription> & { name: string }): TopicDescription & EntityTimes {
    return this.core.op(true, () => this.entities.createTopic(d));
  }

  getTopic(name: string): TopicDescription & EntityTimes {
    return topicView(this.core.topic(name));
  }

  updateTopic(d: Partial<TopicDescription> & { name: string }): TopicDescription & EntityTimes {
    return this.core.op(true, () => this.entities.updateTopic(d));
  }

  deleteTopic(name: string): void {
    this.core.op(true, () => this.entities.deleteEntity(this.core.topic(name)));
  }

  listTopics(): Array<TopicDescription & EntityTimes> {
    return this.entities.listTopics();
  }

  getTopicRuntime(name: string): TopicRuntime {
    return this.entities.topicRuntime(name);
  }

  createSubscription(
    d: Partial<SubscriptionDescription> & { topicName: string; subscriptionName: string },
    defaultRule?: RuleDescription,
  ): SubscriptionDescription & EntityTimes {
    return this.core.op(true, () => this.entities.createSubscription(d, defaultRule));
  }

  getSubscription(topic: string, sub: string): SubscriptionDescription & EntityTimes {
    return subView(this.core.sub(topic, sub));
  }

  updateSubscription(
    d: Partial<SubscriptionDescription> & { topicName: string; subscriptionName: string },
  ): SubscriptionDescription & EntityTimes {
    return this.core.op(true, () => {
      const sub = this.core.sub(d.topicName, d.subscriptionName);
      this.entities.updateSubscriptionState(sub, d, 'subscription');
      return subView(sub);
    });
  }

  deleteSubscription(topic: string, sub: string): void {
    this.core.op(true, () => this.entities.removeSubscription(this.core.sub(topic, sub), true));
  }

  listSubscriptions(topic: string): Array<SubscriptionDescription & EntityTimes> {
    return this.entities.listSubscriptions(topic);
  }

  getSubscriptionRuntime(topic: string, subName: string): SubscriptionRuntime {
    return this.entities.subscriptionRuntime(topic, subName);
  }

  createRule(topic: string, subName: string, rule: RuleDescription): RuleDescription & { createdAt: number } {
    return this.core.op(true, () => this.entities.createRule(topic, subName, rule));
  }

  getRule(topic: string, subName: string, rule: string): RuleDescription & { createdAt: number } {
    return ruleView(this.core.rule(topic, subName, rule));
  }

  updateRule(topic: string, subName: string, rule: RuleDescription): RuleDescription & { createdAt: number } {
    return this.core.op(true, () => this.entities.updateRule(topic, subName, rule));
  }

  deleteRule(topic: string, subName: string, rule: string): void {
    this.core.op(true, () => this.entities.deleteRule(topic, subName, rule));
  }

  listRules(topic: string, subName: string): Array<RuleDescription & { createdAt: number }> {
    return [...this.core.sub(topic, subName).rules.values()].map(ruleView);
  }

  // Admin: queues -------------------------------------------------------------------------------------------

  createQueue(d: Partial<QueueDescription> & { name: string }): QueueDescription & EntityTimes {
    return this.core.op(true, () => this.queues.create(d));
  }

  getQueue(name: string): QueueDescription & EntityTimes {
    return queueView(this.core.queue(name));
  }

  updateQueue(d: Partial<QueueDescription> & { name: string }): QueueDescription & EntityTimes {
    return this.core.op(true, () => this.queues.update(d));
  }

  deleteQueue(name: string): void {
    this.core.op(true, () => this.entities.deleteEntity(this.core.queue(name)));
  }

  listQueues(): Array<QueueDescription & EntityTimes> {
    return this.queues.list();
  }

  getQueueRuntime(name: string): QueueRuntime {
    return this.queues.runtime(name);
  }

  entityKind(name: string): 'topic' | 'queue' | undefined {
    const t = this.core.topics.get(name);
    return t ? (t.isQueue ? 'queue' : 'topic') : undefined;
  }

  // Data plane: send, schedule -----------------------------------------------------------------------------

  send(entity: string, messages: WireMessage[]): void {
    const c = this.core;
    // Undoable: a send the disk refuses is taken back from memory, so that its sender's retry is the only copy.
    c.undoableOp(true, () => {
      const topic = this.entityForSend(entity);
      const sizes = this.admit(messages);
      const now = c.now();
      topic.times.accessedAt = now;
      // The one check entities without duplicate detection pay.
      const detect = topic.desc.requiresDuplicateDetection;
      let duplicates = 0;
      messages.forEach((m, i) => {
        const seq = ++topic.seq;
        if (detect && c.duplicates.repeats(topic, m, seq, now) !== undefined) {
          duplicates++; // accepted, as on Azure, and dropped
          return;
        }
        const at = scheduledTimeOf(m);
        if (at !== undefined && at > now) {
          // A sent message with ScheduledEnqueueTimeUtc in the future is scheduled, as on Azure.
          c.scheduling.add(topic, { seq, message: m, size: sizes[i] ?? 0, at });
        } else {
          c.routing.route({ topic, reservedSeq: seq, message: m, size: sizes[i] ?? 0, hops: 0 });
        }
      });
      c.log.debug(
        {
          entity,
          count: messages.length,
          messageIds: messages.map(messageIdForLog),
          bytes: sizes,
          ...(duplicates > 0 ? { duplicates } : {}),
        },
        'messages sent',
      );
    });
  }

  schedule(entity: string, messages: WireMessage[], scheduledEnqueueTimes: number[]): number[] {
    const c = this.core;
    return c.undoableOp(true, () => {
      const topic = this.entityForSend(entity);
      if (scheduledEnqueueTimes.length !== messages.length) {
        throw new BrokerError('BadRequest', 'Each scheduled message needs one scheduled enqueue time.');
      }
      const sizes = this.admit(messages);
      const now = c.now();
      topic.times.accessedAt = now;
      const detect = topic.desc.requiresDuplicateDetection;
      const seqs: number[] = [];
      const added: number[] = [];
      messages.forEach((message, i) => {
        const seq = ++topic.seq;
        // Azure records a scheduled message's MessageId when it is scheduled. A duplicate answers with the
        // number of the message it repeats, so a sender that retried can still cancel what it scheduled.
        const earlier = detect ? c.duplicates.repeats(topic, message, seq, now) : undefined;
        if (earlier !== undefined) {
          seqs.push(earlier);
          return;
        }
        const at = scheduledEnqueueTimes[i] ?? now;
        const item: ScheduledItem = { seq, message, size: sizes[i] ?? 0, at };
        seqs.push(seq);
        added.push(seq);
        c.scheduling.add(topic, item);
        c.log.debug(
          { entity, messageId: messageIdForLog(message), bytes: item.size, at },
          'message scheduled',
        );
      });
      // Due (or past) times are routed now, after the batch is recorded.
      for (const seq of added) c.scheduling.fire(topic, seq);
      return seqs;
    });
  }

  cancelScheduled(entity: string, sequenceNumbers: number[]): void {
    this.core.op(true, () => {
      const topic = this.core.entity(entity);
      const now = this.core.now();
      for (const seq of sequenceNumbers) {
        // A due message belongs to its entity even if its timer has not run yet: enqueue it, not cancel it.
        if ((topic.scheduled.get(seq)?.at ?? Infinity) <= now) this.core.scheduling.fire(topic, seq);
        if (!topic.scheduled.has(seq) && !this.core.scheduling.isUndecodable(topic, seq)) {
          throw new BrokerError(
            'MessageNotFound',
            `No scheduled message with sequence number ${seq} on '${entity}'.`,
          );
        }
      }
      for (const seq of sequenceNumbers) this.core.scheduling.remove(topic, seq);
    });
  }

  // Data plane: receivers ----------------------------------------------------------------------------------

  openReceiver(opts: OpenReceiverOptions): Promise<Receiver> {
    const c = this.core;
    try {
      const sub = c.sub(opts.source.topic, opts.source.subscription);
      const kind = queueKindOf(opts.source);
      const topicStatus = sub.topic.desc.status;
      const receiveOff = sub.topic.isQueue
        ? topicStatus === 'ReceiveDisabled' || topicStatus === 'Disabled'
        : sub.desc.status === 'ReceiveDisabled' ||
          sub.desc.status === 'Disabled' ||
          topicStatus === 'Disabled';
      if (receiveOff) {
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
      sub.times.accessedAt = c.now();
      if (!opts.session) {
        const r = new ReceiverImpl(c.receiverHost, sub, kind, opts.mode, undefined);
        sub.listeners.add(r);
        r.signal();
        return Promise.resolve(r);
      }
      const { sessionId, timeoutMs } = opts.session;
      if (sessionId !== null) return Promise.resolve(c.sessions.acceptSession(sub, sessionId, opts.mode));
      return c.sessions.acceptNext(sub, opts.mode, timeoutMs);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  // Data plane: settlement, locks, session state -----------------------------------------------------------

  settle(
    source: ReceiveSource,
    lockToken: string,
    disposition: Disposition,
    sessionId?: string,
    caller?: SessionCaller,
  ): void {
    const c = this.core;
    c.op(disposition.kind === 'deadLetter' || disposition.kind === 'defer', () => {
      if (sessionId === undefined && queueKindOf(source) === 'main') {
        const sub = c.sub(source.topic, source.subscription);
        if (sub.desc.requiresSession) {
          // A session message's lock belongs to its session's receiver, which names the session: a lock token
          // alone would let any client settle it. Azure answers this request with an internal error (the
          // clients that met it had left session-id out: azure-service-bus-node#212, and #544 of the .NET
          // client for receive-by-sequence-number), not with the message settled.
          throw new BrokerError(
            'InternalError',
            `The service was unable to process the request; please retry the operation. (Settling a message of the session entity '${sub.path}' needs the session-id of the session that holds its lock.)`,
          );
        }
      }
      const m = c.delivery.lockedMessage(source, lockToken, sessionId, holderTest(caller));
      m.queue.sub.times.accessedAt = c.now();
      c.delivery.settle(m, disposition);
    });
  }

  renewLock(source: ReceiveSource, lockToken: string): number {
    const c = this.core;
    return c.op(false, () => {
      const m = c.delivery.lockedMessage(source, lockToken, undefined);
      const sub = m.queue.sub;
      if (m.lockEpoch !== undefined && m.sessionId !== undefined) {
        // Session messages are held by the session lock; renewing it is renewSessionLock's job.
        return sub.sessions.get(m.sessionId)?.lockedUntil ?? c.now();
      }
      m.lockedUntil = c.now() + sub.desc.lockDurationMs;
      c.delivery.scheduleLockExpiry(m);
      return m.lockedUntil;
    });
  }

  renewSessionLock(source: ReceiveSource, sessionId: string, caller?: SessionCaller): number {
    const c = this.core;
    return c.op(false, () =>
      c.sessions.renew(c.sub(source.topic, source.subscription), sessionId, holderTest(caller)),
    );
  }

  getSessionState(source: ReceiveSource, sessionId: string, caller?: SessionCaller): Buffer | null {
    const c = this.core;
    return c.sessions.held(c.sub(source.topic, source.subscription), sessionId, holderTest(caller)).state;
  }

  setSessionState(
    source: ReceiveSource,
    sessionId: string,
    state: Buffer | null,
    caller?: SessionCaller,
  ): void {
    const c = this.core;
    c.op(true, () => {
      const sub = c.sub(source.topic, source.subscription);
      const session = c.sessions.held(sub, sessionId, holderTest(caller));
      session.state = state && state.length > 0 ? Buffer.from(state) : state ? Buffer.alloc(0) : null;
      session.updatedAt = c.now();
      c.append({
        k: 'ss',
        t: sub.topic.desc.name,
        s: sub.desc.subscriptionName,
        id: sessionId,
        v: session.state ? session.state.toString('base64') : null,
      });
    });
  }

  peek(source: ReceiveSource, opts: PeekOptions): Delivered[] {
    const c = this.core;
    return c.op(false, () => {
      const sub = c.sub(source.topic, source.subscription);
      const q = sub.queue(queueKindOf(source));
      const now = c.now();
      const out: Delivered[] = [];
      const expired: StoredMessage[] = [];
      for (const m of q.inOrder(opts.fromSequenceNumber ?? 0)) {
        if (out.length >= opts.maxCount) break;
        if (opts.sessionId !== undefined && m.sessionId !== opts.sessionId) continue;
        if (q.kind === 'main' && m.expiresAt <= now && m.lockToken === undefined) {
          expired.push(m);
          continue;
        }
        out.push(c.delivery.delivered(m, false));
      }
      for (const m of expired) {
        c.delivery.markUnavailable(m);
        c.delivery.expire(m);
      }
      return out;
    });
  }

  receiveDeferred(
    source: ReceiveSource,
    sequenceNumbers: number[],
    mode: ReceiveMode,
    sessionId?: string,
    caller?: SessionCaller,
  ): Delivered[] {
    const c = this.core;
    return c.op(false, () => {
      const sub = c.sub(source.topic, source.subscription);
      const q = sub.queue(queueKindOf(source));
      // The session first: a caller without its lock learns nothing of its messages, and takes none.
      let session: SessionState | undefined;
      if (q.kind === 'main' && sub.desc.requiresSession) {
        if (sessionId === undefined) throw new BrokerError('InvalidOperation', 'A session id is required.');
        session = c.sessions.held(sub, sessionId, holderTest(caller));
      }
      // A number asked for twice is one message, handed out once.
      const found = [...new Set(sequenceNumbers)].map((seq) => {
        const held = q.messages.get(seq);
        // A lapsed lock ends here as its timer would have (counting the delivery, perhaps dead-lettering).
        if (held) c.delivery.expireLockIfDue(held);
        const m = q.messages.get(seq);
        if (!m || m.state !== 'deferred' || (sessionId !== undefined && m.sessionId !== sessionId)) {
          throw new BrokerError(
            'MessageNotFound',
            `No deferred message with sequence number ${seq} on '${sub.path}'.`,
          );
        }
        if (m.lockToken !== undefined) {
          // Azure's answer: taking the lock from its holder would hand one message to two receivers.
          throw new BrokerError(
            'MessageNotFound',
            `Failed to lock one or more specified messages. Either the message is already locked or does not exist (sequence number ${seq} on '${sub.path}').`,
          );
        }
        return m;
      });
      sub.times.accessedAt = c.now();
      const out = found.map((m) => {
        if (mode === 'receiveAndDelete') {
          const d = c.delivery.delivered(m);
          c.delivery.removeMessage(m);
          return d;
        }
        c.delivery.lockMessage(m, session);
        return c.delivery.delivered(m);
      });
      // As take() does: a lock lost in a crash counts as a delivery, so a deferred message meets MaxDeliveryCount too.
      if (mode === 'peekLock' && found.length > 0) {
        c.append({
          k: 'lk',
          t: sub.topic.desc.name,
          s: sub.desc.subscriptionName,
          q: q.kind,
          seqs: found.map((m) => m.seq),
        });
      }
      return out;
    });
  }

  deleteMessages(
    source: ReceiveSource,
    maxCount: number,
    beforeEnqueuedTime: number,
    sessionId?: string,
  ): number {
    const c = this.core;
    return c.op(true, () => {
      const sub = c.sub(source.topic, source.subscription);
      const q = sub.queue(queueKindOf(source));
      let deleted = 0;
      for (const m of q.inOrder(0)) {
        if (deleted >= maxCount) break;
        if (m.lockToken !== undefined || m.enqueuedTime >= beforeEnqueuedTime) continue;
        if (sessionId !== undefined && m.sessionId !== sessionId) continue;
        c.delivery.removeMessage(m);
        deleted++;
      }
      if (deleted > 0) c.log.info({ path: sub.path, deleted }, 'messages deleted');
      return deleted;
    });
  }

  listSessions(source: ReceiveSource, updatedSince?: number): string[] {
    const sub = this.core.sub(source.topic, source.subscription);
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
    this.core.scheduler.runDue();
    this.core.guard(() => this.core.scheduling.sweepExpired());
  }

  /** How many MessageIds an entity's duplicate detection history holds (for tests and diagnostics). */
  duplicateHistorySize(entity: string): number {
    return this.core.entity(entity).duplicates?.size ?? 0;
  }

  /** Total bytes of stored message content (all entities, including scheduled messages). */
  get totalStoredBytes(): number {
    return this.core.storedBytes;
  }

  async close(): Promise<void> {
    const c = this.core;
    if (c.closed) return;
    c.closed = true;
    c.scheduler.close();
    clearInterval(this.sweepTimer);
    for (const topic of c.topics.values()) {
      for (const sub of topic.subs.values()) {
        for (const w of sub.waiters) {
          if (!w.done) w.fail(new BrokerError('EntityNotFound', 'The broker was closed.'));
        }
        sub.waiters.length = 0;
      }
    }
    await c.journal.close(() => this.snapshotRecords());
  }

  // Checks -------------------------------------------------------------------------------------------------

  private entityForSend(entity: string): TopicState {
    const topic = this.core.entity(entity);
    if (topic.desc.status === 'SendDisabled' || topic.desc.status === 'Disabled') {
      throw new BrokerError('SendDisabled', `Messaging entity '${entity}' is currently disabled for send.`);
    }
    return topic;
  }

  /** Checks a whole batch (sizes, quota) before anything is stored; assigns missing message ids. */
  private admit(messages: WireMessage[]): number[] {
    const c = this.core;
    const sizes: number[] = [];
    let total = 0;
    for (const m of messages) {
      if (m.message_id === undefined || m.message_id === null) m.message_id = newMessageId();
      const size = encodedSize(m);
      if (size > c.maxMessageSizeBytes) {
        throw new BrokerError(
          'MessageSizeExceeded',
          `The message is ${size} bytes; the limit is ${c.maxMessageSizeBytes} bytes.`,
        );
      }
      sizes.push(size);
      total += size;
    }
    if (c.storedBytes + total > c.budget) {
      throw new BrokerError(
        'QuotaExceeded',
        `The emulator's memory budget of ${c.budget} bytes is used up (${c.storedBytes} stored).`,
      );
    }
    return sizes;
  }

  // Snapshot and restore (used by persistence.ts) ----------------------------------------------------------

  /** The full state as journal records (a snapshot). */
  snapshotRecords(): JournalRecord[] {
    const out: JournalRecord[] = [];
    for (const topic of this.core.topics.values()) {
      const t = topic.desc.name;
      out.push({
        k: 'topic',
        d: { ...topic.desc, ...topic.times },
        ...(topic.isQueue ? { queue: true as const } : {}),
      });
      out.push({ k: 'ctr', t, v: topic.seq });
      if (topic.duplicates) {
        this.core.duplicates.prune(topic, this.core.now());
        for (const [id, s] of topic.duplicates.entries()) out.push({ k: 'dd', t, id, at: s.at, seq: s.seq });
      }
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
    // After their entities' records, so that loading finds the subscription they belong to.
    for (const u of this.core.undecodable) if (!u.sub.deleted) out.push(u.rec);
    for (const u of this.core.undecodableScheduled) if (!u.topic.deleted) out.push(u.rec);
    return out;
  }

  beginRestore(): void {
    this.core.replaying = true;
  }

  endRestore(): void {
    this.core.replaying = false;
  }

  restoreTopic(d: TopicDescription & EntityTimes, seq: number, isQueue = false): TopicState {
    const { createdAt, updatedAt, accessedAt, ...desc } = d;
    const topic = new TopicState(desc, { createdAt, updatedAt, accessedAt }, isQueue);
    topic.seq = seq;
    this.core.topics.set(desc.name, topic);
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
        this.core.log.error(
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
    const delivery = this.core.delivery;
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
      delivery.insert(m);
      return;
    }
    // Locks do not survive a restart: the lost lock counts as a delivery.
    m.deliveryCount++;
    delivery.insert(m);
    if (kind === 'main' && m.deliveryCount >= sub.desc.maxDeliveryCount) {
      delivery.deadLetter(
        m,
        'MaxDeliveryCountExceeded',
        `The message was delivered ${m.deliveryCount} times; the subscription allows ${sub.desc.maxDeliveryCount}.`,
        undefined,
      );
    }
  }

  /** A persisted message that could not be decoded: kept as it was stored (see BrokerCore.undecodable). */
  keepUndecodable(sub: SubscriptionState, rec: Extract<JournalRecord, { k: 'put' }>): void {
    this.core.undecodable.push({ sub, rec });
  }

  restoreSessionState(sub: SubscriptionState, id: string, state: Buffer): void {
    this.core.sessions.forId(sub, id).state = state;
  }

  /** A persisted scheduled message that could not be decoded (see BrokerCore.undecodableScheduled). */
  keepUndecodableScheduled(topic: TopicState, rec: Extract<JournalRecord, { k: 'sch' }>): void {
    this.core.undecodableScheduled.push({ topic, rec });
  }

  restoreScheduled(topic: TopicState, item: ScheduledItem): void {
    this.core.scheduling.add(topic, item);
  }

  restoreDuplicates(topic: TopicState, entries: Array<{ id: string; at: number; seq: number }>): void {
    if (topic.desc.requiresDuplicateDetection) this.core.duplicates.restore(topic, entries);
  }
}

/** A caller's test of a session's holder: the holders are this broker's receivers, the ones it handed out. */
function holderTest(caller: SessionCaller | undefined): ((holder: SessionHolder) => boolean) | undefined {
  return caller && ((holder) => holder instanceof ReceiverImpl && caller(holder));
}
