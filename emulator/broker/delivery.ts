// Delivery and locks: storing a message in a sub-queue, making it available, handing it to a receiver,
// peek-lock and its expiry, settlement (complete, abandon, defer, dead-letter) and time-to-live. The same
// code serves a subscription and a queue: both are a SubscriptionState with main and dead-letter sub-queues.

import { randomUUID } from 'node:crypto';
import { BrokerError } from './api.ts';
import type { Delivered, Disposition, ReceiveSource } from './api.ts';
import type { BrokerCore } from './core.ts';
import type { QueueKind, SessionHolder, SessionState, StoredMessage } from './model.ts';
import type { ReceiverImpl } from './receiver.ts';
import { copyMessage, messageIdForLog, partitionKeyOf } from './wire.ts';

export class Delivery {
  constructor(private readonly c: BrokerCore) {}

  /** Called by a receiver's take(). */
  take(r: ReceiverImpl, max: number): Delivered[] {
    const c = this.c;
    if (c.closed || r.closed) return [];
    return c.op(false, () => {
      const sub = r.sub;
      if (sub.deleted) return [];
      const out: Delivered[] = [];
      const now = c.now();
      let heap = sub.queue(r.kind).available;
      const session = r.session;
      if (session) {
        c.sessions.expireLockIfDue(sub, session);
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
        c.append({
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

  settle(m: StoredMessage, disposition: Disposition): void {
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
        this.c.journalPut(m);
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
  }

  // Storage and availability -------------------------------------------------------------------------------

  insert(m: StoredMessage): void {
    const q = m.queue;
    q.messages.set(m.seq, m);
    q.noteInsert(m.seq);
    q.bytes += m.size;
    if (Number.isFinite(m.expiresAt)) q.expiring++;
    this.c.storedBytes += m.size;
    const session = this.c.sessions.of(m);
    if (session) {
      session.messageCount++;
      session.updatedAt = this.c.now();
    }
    if (m.state === 'active') this.makeAvailable(m);
    // Receivers are woken in a microtask, so nobody has taken it when a failed send takes it back.
    this.c.onUndo(() => this.removeMessage(m));
  }

  removeMessage(m: StoredMessage): void {
    const q = m.queue;
    if (q.messages.get(m.seq) !== m) return;
    this.markUnavailable(m);
    if (m.lockToken !== undefined) this.unlock(m);
    q.messages.delete(m.seq);
    if (q.messages.size === 0) q.noteEmpty();
    q.bytes -= m.size;
    if (Number.isFinite(m.expiresAt)) q.expiring--;
    this.c.storedBytes -= m.size;
    const session = this.c.sessions.of(m);
    if (session) {
      session.messageCount--;
      session.updatedAt = this.c.now();
      this.c.sessions.forgetIfIdle(q.sub, session);
    }
    this.c.append({
      k: 'del',
      t: q.sub.topic.desc.name,
      s: q.sub.desc.subscriptionName,
      q: q.kind,
      seq: m.seq,
    });
  }

  makeAvailable(m: StoredMessage): void {
    if (m.available) return;
    m.available = true;
    const session = this.c.sessions.of(m);
    if (session) {
      session.available.push(m);
      session.availableCount++;
      if (session.holder) session.holder.signal();
      else this.c.sessions.markReady(m.queue.sub, session);
    } else {
      m.queue.available.push(m);
      m.queue.availableCount++;
      for (const l of m.queue.sub.listeners) if (l.kind === m.queue.kind) l.signal();
    }
  }

  markUnavailable(m: StoredMessage): void {
    if (!m.available) return;
    m.available = false;
    const session = this.c.sessions.of(m);
    if (session) session.availableCount--;
    else m.queue.availableCount--;
  }

  // Locks --------------------------------------------------------------------------------------------------

  lockMessage(m: StoredMessage, session: SessionState | undefined): void {
    const sub = m.queue.sub;
    m.lockToken = randomUUID();
    sub.locks.set(m.lockToken, m);
    if (session) {
      m.lockEpoch = session.epoch;
      m.lockedUntil = session.lockedUntil;
      session.locked.add(m);
    } else {
      m.lockedUntil = this.c.now() + sub.desc.lockDurationMs;
      this.scheduleLockExpiry(m);
    }
  }

  unlock(m: StoredMessage): void {
    if (m.lockToken === undefined) return;
    const sub = m.queue.sub;
    sub.locks.delete(m.lockToken);
    if (m.sessionId !== undefined) sub.sessions.get(m.sessionId)?.locked.delete(m);
    delete m.lockToken;
    delete m.lockedUntil;
    delete m.lockEpoch;
  }

  scheduleLockExpiry(m: StoredMessage): void {
    const token = m.lockToken;
    const until = m.lockedUntil ?? 0;
    this.c.scheduler.at(until, () =>
      this.c.op(false, () => {
        if (m.lockToken !== token || (m.lockedUntil ?? 0) > this.c.now()) return;
        if (m.queue.messages.get(m.seq) !== m) return; // settled or its subscription deleted meanwhile
        this.lockExpired(m);
      }),
    );
  }

  /** Ends a lock that has lapsed (the message's own, or its session's) without waiting for its timer. */
  expireLockIfDue(m: StoredMessage): void {
    if (m.lockToken === undefined) return;
    if (m.lockEpoch !== undefined && m.sessionId !== undefined) {
      const session = m.queue.sub.sessions.get(m.sessionId);
      if (session) this.c.sessions.expireLockIfDue(m.queue.sub, session);
    } else if ((m.lockedUntil ?? 0) <= this.c.now()) {
      this.lockExpired(m);
    }
  }

  lockExpired(m: StoredMessage): void {
    this.c.log.debug(
      { path: m.queue.sub.path, messageId: messageIdForLog(m.message) },
      'message lock expired',
    );
    this.unlock(m);
    this.redeliverOrDeadLetter(m);
  }

  /** The message a lock token names, checking that its lock (or its session's lock) still holds. */
  lockedMessage(
    source: ReceiveSource,
    lockToken: string,
    sessionId: string | undefined,
    isCaller?: (holder: SessionHolder) => boolean,
  ): StoredMessage {
    const c = this.c;
    const sub = c.sub(source.topic, source.subscription);
    const kind = queueKindOf(source);
    const m = sub.locks.get(lockToken);
    if (sessionId !== undefined && kind === 'main' && sub.desc.requiresSession) {
      const session = sub.sessions.get(sessionId);
      if (session) c.sessions.expireLockIfDue(sub, session);
      if (!session || !session.holder || (m && m.lockEpoch !== session.epoch)) {
        throw new BrokerError('SessionLockLost', `The session lock on '${sessionId}' was lost.`);
      }
      // Held by a receiver other than the one asking: for the caller, a lock it does not have.
      if (isCaller && !isCaller(session.holder)) {
        throw new BrokerError(
          'SessionLockLost',
          `The session lock on '${sessionId}' is held by another receiver; accept the session to use it.`,
        );
      }
    }
    // A lock token of another session's message is not one of this session's locks: holding one session lock
    // does not settle another receiver's messages.
    const otherSession = sessionId !== undefined && m?.sessionId !== undefined && m.sessionId !== sessionId;
    if (!m || m.queue.kind !== kind || otherSession) {
      throw new BrokerError(
        'MessageLockLost',
        `The lock on the message is lost or the lock token is unknown.`,
      );
    }
    if (m.lockEpoch === undefined && (m.lockedUntil ?? 0) <= c.now()) {
      this.lockExpired(m);
      throw new BrokerError('MessageLockLost', `The lock on the message expired.`);
    }
    if (m.lockEpoch !== undefined && m.sessionId !== undefined) {
      const session = sub.sessions.get(m.sessionId);
      if (session) c.sessions.expireLockIfDue(sub, session);
      if (!session || session.epoch !== m.lockEpoch || !session.holder) {
        throw new BrokerError('SessionLockLost', `The session lock on '${m.sessionId}' was lost.`);
      }
    }
    return m;
  }

  // Redelivery, dead-lettering, expiry ---------------------------------------------------------------------

  /** After an abandon or a lost lock: count the delivery, then make it available again or dead-letter it. */
  redeliverOrDeadLetter(m: StoredMessage): void {
    m.deliveryCount++;
    const max = m.queue.sub.desc.maxDeliveryCount;
    if (m.queue.kind === 'main' && m.deliveryCount >= max) {
      this.deadLetter(
        m,
        'MaxDeliveryCountExceeded',
        `The message was delivered ${m.deliveryCount} times; the ${m.queue.sub.topic.isQueue ? 'queue' : 'subscription'} allows ${max}.`,
        undefined,
      );
      return;
    }
    this.c.append({
      k: 'dc',
      t: m.queue.sub.topic.desc.name,
      s: m.queue.sub.desc.subscriptionName,
      q: m.queue.kind,
      seq: m.seq,
      dc: m.deliveryCount,
    });
    if (m.state === 'active') this.makeAvailable(m);
  }

  modify(m: StoredMessage, props: Record<string, unknown> | undefined): void {
    if (!props || Object.keys(props).length === 0) return;
    // Replace, never mutate: earlier Delivered objects keep what they were given.
    const copy = copyMessage(m.message);
    copy.application_properties = {
      ...((copy.application_properties as object | undefined) ?? {}),
      ...props,
    };
    m.message = copy;
    delete m.encoded;
    this.c.journalPut(m);
  }

  /** Moves a message to its entity's dead-letter queue (keeping its sequence number), or forwards it. */
  deadLetter(
    m: StoredMessage,
    reason: string | undefined,
    description: string | undefined,
    props: Record<string, unknown> | undefined,
  ): void {
    const c = this.c;
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
    c.log.info(
      { path: sub.path, messageId: messageIdForLog(m.message), bytes: m.size, reason },
      'message dead-lettered',
    );
    if (c.routing.forwardDeadLetter(sub, copy, m.size)) return;
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
    c.journalPut(dead);
  }

  /** A message whose time to live has passed: dead-letter it or drop it, as its entity says. */
  expire(m: StoredMessage): void {
    const sub = m.queue.sub;
    if (sub.desc.deadLetteringOnMessageExpiration) {
      this.deadLetter(m, 'TTLExpiredException', 'The message expired and was dead-lettered.', undefined);
    } else {
      this.c.log.debug({ path: sub.path, messageId: messageIdForLog(m.message) }, 'message expired');
      this.removeMessage(m);
    }
  }

  dropExpiredHead(heap: { peek(): StoredMessage | undefined; pop(): StoredMessage | undefined }): void {
    const now = this.c.now();
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
}

export function queueKindOf(source: ReceiveSource): QueueKind {
  return source.subQueue ?? 'main';
}
