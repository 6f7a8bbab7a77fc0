// Sessions: which session a message belongs to, session locks and their expiry, acceptNextSession's queue
// of waiters served in arrival order, and releasing a receiver (which releases its session lock).

import { BrokerError } from './api.ts';
import type { ReceiveMode, Receiver } from './api.ts';
import type { BrokerCore } from './core.ts';
import { SessionState } from './model.ts';
import type { SessionHolder, SessionWaiter, StoredMessage, SubscriptionState } from './model.ts';
import { ReceiverImpl } from './receiver.ts';

export class Sessions {
  constructor(private readonly c: BrokerCore) {}

  /** The session a message belongs to: only main queues of session entities have sessions. */
  of(m: StoredMessage): SessionState | undefined {
    const q = m.queue;
    if (q.kind !== 'main' || !q.sub.desc.requiresSession || m.sessionId === undefined) return undefined;
    return this.forId(q.sub, m.sessionId);
  }

  forId(sub: SubscriptionState, id: string): SessionState {
    let s = sub.sessions.get(id);
    if (!s) {
      s = new SessionState(id, this.c.now());
      sub.sessions.set(id, s);
    }
    return s;
  }

  forgetIfIdle(sub: SubscriptionState, s: SessionState): void {
    if (s.messageCount === 0 && s.state === null && !s.holder) {
      sub.sessions.delete(s.id);
      sub.ready.delete(s.id);
    }
  }

  markReady(sub: SubscriptionState, s: SessionState): void {
    if (s.holder || s.availableCount === 0) return;
    if (!sub.ready.has(s.id)) sub.ready.set(s.id, s);
    this.serveWaiters(sub);
  }

  /** A receiver for one named session; SessionCannotBeLocked when another receiver holds it. */
  acceptSession(sub: SubscriptionState, sessionId: string, mode: ReceiveMode): Receiver {
    const session = this.forId(sub, sessionId);
    this.expireLockIfDue(sub, session);
    if (session.holder) {
      throw new BrokerError(
        'SessionCannotBeLocked',
        `The session '${sessionId}' on '${sub.path}' is locked by another receiver.`,
      );
    }
    const r = new ReceiverImpl(this.c.receiverHost, sub, 'main', mode, session);
    this.lock(sub, session, r);
    return r;
  }

  acceptNext(sub: SubscriptionState, mode: ReceiveMode, timeoutMs: number): Promise<Receiver> {
    return new Promise<Receiver>((resolve, reject) => {
      const waiter: SessionWaiter = {
        done: false,
        grant: (session) => {
          waiter.done = true;
          const r = new ReceiverImpl(this.c.receiverHost, sub, 'main', mode, session);
          this.lock(sub, session, r);
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
      this.c.scheduler.at(this.c.now() + Math.max(0, timeoutMs), () => {
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
      const session = this.nextReady(sub);
      if (!session) return;
      sub.waiters.shift();
      head.grant(session);
    }
  }

  private nextReady(sub: SubscriptionState): SessionState | undefined {
    for (const session of sub.ready.values()) {
      sub.ready.delete(session.id);
      this.c.delivery.dropExpiredHead(session.available);
      if (session.availableCount > 0 && !session.holder) return session;
    }
    return undefined;
  }

  /** Called by a receiver's close(). */
  release(r: ReceiverImpl): void {
    if (r.closed) return;
    r.closed = true;
    this.c.op(false, () => {
      const sub = r.sub;
      sub.listeners.delete(r);
      const session = r.session;
      if (session && session.holder === r) this.unlock(sub, session);
    });
  }

  private lock(sub: SubscriptionState, session: SessionState, r: ReceiverImpl): void {
    session.holder = r;
    session.epoch++;
    session.lockedUntil = this.c.now() + sub.desc.lockDurationMs;
    sub.ready.delete(session.id);
    this.scheduleExpiry(sub, session);
    this.c.log.debug({ path: sub.path, sessionId: session.id }, 'session locked');
    r.signal();
  }

  renew(sub: SubscriptionState, sessionId: string, isCaller?: (holder: SessionHolder) => boolean): number {
    const session = this.held(sub, sessionId, isCaller);
    session.lockedUntil = this.c.now() + sub.desc.lockDurationMs;
    for (const m of session.locked) m.lockedUntil = session.lockedUntil;
    this.scheduleExpiry(sub, session);
    return session.lockedUntil;
  }

  private scheduleExpiry(sub: SubscriptionState, session: SessionState): void {
    const epoch = session.epoch;
    this.c.scheduler.at(session.lockedUntil, () =>
      this.c.op(false, () => {
        if (session.epoch === epoch) this.expireLockIfDue(sub, session);
      }),
    );
  }

  expireLockIfDue(sub: SubscriptionState, session: SessionState): void {
    const holder = session.holder;
    if (!holder || session.lockedUntil > this.c.now()) return;
    this.c.log.info({ path: sub.path, sessionId: session.id }, 'session lock expired');
    this.unlock(sub, session);
    holder.closedByBroker('SessionLockLost', `The session lock on '${session.id}' expired.`);
  }

  /** Ends a session lock: its messages' locks die with it and those messages count a delivery. */
  private unlock(sub: SubscriptionState, session: SessionState): void {
    session.holder = undefined;
    session.epoch++;
    if (sub.deleted) {
      session.locked.clear();
      return;
    }
    const locked = [...session.locked].sort((a, b) => a.seq - b.seq);
    for (const m of locked) {
      this.c.delivery.unlock(m);
      this.c.delivery.redeliverOrDeadLetter(m);
    }
    this.forgetIfIdle(sub, session);
    if (sub.sessions.get(session.id) === session) this.markReady(sub, session);
  }

  /**
   * A session whose lock is held, by a receiver `isCaller` accepts when given (the receiver a $management
   * request names); SessionLockLost otherwise, as Azure refuses another receiver's session: a lock held by
   * someone else is, for the caller, a lock it does not have.
   */
  held(
    sub: SubscriptionState,
    sessionId: string,
    isCaller?: (holder: SessionHolder) => boolean,
  ): SessionState {
    const session = sub.sessions.get(sessionId);
    if (session) this.expireLockIfDue(sub, session);
    if (!session || !session.holder) {
      throw new BrokerError('SessionLockLost', `The session lock on '${sessionId}' is not held.`);
    }
    if (isCaller && !isCaller(session.holder)) {
      throw new BrokerError(
        'SessionLockLost',
        `The session lock on '${sessionId}' is held by another receiver; accept the session to use it.`,
      );
    }
    return session;
  }
}
