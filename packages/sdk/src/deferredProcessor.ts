// The deferred processor: a non-session receiver on {E}/DeferredProcessor. Each ProcessDeferredRequest names a
// session; the processor takes that session on {E}/Deferred and replays its parked messages, in DeferralSequence
// order, back to the endpoint topic (To = {E}, a MessageId derived from the parked copy's, ReplaySequence = the parked sequence), completing
// each parked copy after its replay was sent. Only sequences below the trigger's ReplayUntil are replayed: what
// was parked after the trigger waits for the next pass (DESIGN.md §5), so a session that blocks again mid-replay
// does not bounce its parked messages between the two subscriptions. A pass with a bound ends with a pass-end marker
// sent to the same session after its copies, so the main handler can skip sequences that will never come back.
// Every broker call of a pass is bounded (operationTimeoutMs): the processor handles one trigger at a time, so a call
// that a dropped connection leaves unanswered would otherwise stall the replay of every session of the endpoint.
// A pass works a parked session no longer than its lock horizon (sessionLockHorizon.ts): a long pass releases it
// shortly before, while the lock holds, and accepts it again to go on where it stopped.
import type {
  ServiceBusClient,
  ServiceBusReceivedMessage,
  ServiceBusReceiver,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import Long from 'long';
import type { Logger } from 'pino';
import { defaultSdkLogger } from './logger.ts';
import { MessageType, Subscription } from './contract/index.ts';
import { withLinkedSignal } from './abortScope.ts';
import { boundedCall } from './boundedCall.ts';
import { boundedClose } from './servicebus/boundedClose.ts';
import { Backoff, sleep } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { loggableError } from './causeLog.ts';
import { fromReceived } from './inbound.ts';
import type { InboundMessage } from './inbound.ts';
import { buildReplayedCopy, buildReplayPassEnd } from './outbound.ts';
import { toServiceBusMessage } from './transport.ts';
import { tolerateSlowDrain } from './servicebus/drainWait.ts';
import { sessionLockHorizon, warnSkewedLockOnce } from './sessionLockHorizon.ts';
import { lockRenewalDelayMs } from './lockRenewalDelay.ts';
import {
  buildLockedRecheck,
  DEFAULT_LOCKED_RECHECK_DELAY_MS,
  lockedRechecksOf,
  MAX_LOCKED_RECHECKS,
} from './lockedRecheck.ts';
import type { SessionLockHorizon } from './sessionLockHorizon.ts';

/**
 * Room for this host's clock being ahead of the broker's when a released lock's expiry (the broker's time, read by the
 * client) is compared with ours.
 */
const OWN_LOCK_SLACK_MS = 1_000;

/** The broker refused the session because a receiver holds its lock. */
function isSessionLocked(error: unknown): boolean {
  return (error as { code?: string } | undefined)?.code === 'SessionCannotBeLocked';
}

/** A parked message received, its copy not yet sent: the pass's last one is sent as its end. */
interface HeldMessage {
  message: ServiceBusReceivedMessage;
  inbound: InboundMessage;
}

/** What one stretch of a pass on one accept of the parked session did. */
interface ReplayStretch {
  replayed: number;
  held?: HeldMessage | undefined;
  /** Stopped before the session's lock horizon with parked messages left below the bound. */
  atHorizon: boolean;
}

/** A parked session accepted by a pass, and until when it may be worked on. */
interface AcceptedParked {
  receiver: ServiceBusSessionReceiver;
  horizon: SessionLockHorizon;
  /**
   * Set by its first release: a second one (the pass's `finally` after a re-accept that failed) would remember the
   * lock again, read later, so under skew (or with no expiry) one default lock on from then.
   */
  released: boolean;
}

export interface DeferredProcessorOptions {
  client: ServiceBusClient;
  endpointId: string;
  logger?: Logger;
  /** Parked messages fetched per receive. Default 20. */
  batchSize?: number;
  /** How long to wait for more parked messages before the pass ends. Default 1 s. */
  drainWaitMs?: number;
  /** How long to wait for the next trigger per receive call. Default 5 s. */
  triggerWaitMs?: number;
  /**
   * Longest wait for one broker call of a pass (accept, peek, receive, send, complete, close). Default 30 s. When
   * the connection drops in the middle of a call, the @azure/service-bus client can leave it unanswered for its own
   * 60 s operation timeout and longer (a session receiver's completeMessage and close, an acceptSession, a send:
   * 60-90 s measured), whatever `retryOptions.timeoutInMs` says. Past the bound the pass is given up and its trigger
   * retried, which is safe: a replayed copy sent twice is recognised by its sequence.
   */
  operationTimeoutMs?: number;
  /**
   * How long after its accept the client renews a parked session's lock. Default 60 s. A pass never works a parked
   * session past it: the session is released shortly before and accepted again with a fresh lock (docs/sdk.md).
   */
  maxAutoLockRenewalDurationInMs?: number;
  /**
   * How long after a trigger was refused its parked session (another receiver held it) a copy of it is scheduled to
   * look again (lockedRecheck.ts). Default 30 s, the lock duration the SDK provisions: a lock that outlives its
   * receiver's pass runs out by then. At most MAX_LOCKED_RECHECKS copies follow one another.
   */
  lockedRecheckDelayMs?: number;
  backoff?: BackoffOptions;
  /** Called after each trigger (tests, metrics). */
  onPass?: (pass: ReplayPass) => void;
}

export interface ReplayPass {
  sessionId: string | undefined;
  replayed: number;
  outcome: 'replayed' | 'no-session-id' | 'session-locked' | 'already-replayed' | 'failed';
}

export class DeferredProcessor {
  private readonly log: Logger;
  private readonly stopController = new AbortController();
  private receiver: ServiceBusReceiver | undefined;
  private sender: ServiceBusSender | undefined;
  private loop: Promise<void> | undefined;
  /**
   * The bound of the last pass this processor finished per session (bounded, oldest dropped first). A trigger at or
   * below it asks for nothing that pass did not already replay or account for (sequences are handed out in order),
   * so it is completed without a pass: a second, empty pass would only send a pass-end marker for nothing.
   */
  private readonly finished = new Map<string, number>();
  /**
   * Parked-session receivers of passes given up on, per session, until their close has come back: the broker may
   * still count their session lock, and a retried trigger that finds the session locked must not take that for
   * another pass replaying it.
   */
  private readonly closing = new Map<string, Promise<void>>();
  /**
   * Parked sessions this processor released, with the expiry (epoch ms, plus OWN_LOCK_SLACK_MS) of the lock they were
   * released with. @azure/service-bus's close swallows a detach that failed (it logs and resolves), so the broker
   * may go on holding a released receiver's lock until it runs out: a refused accept in that window is not taken for
   * another pass (which would leave the rest parked with no trigger), and is tried again once the lock has run out.
   * The expiry is the horizon's lockHeldUntil(), not the broker's as read: under clock skew that read as already
   * past (nothing remembered) or as far ahead (every refusal, a rival's too, taken for our own lock for that long).
   */
  private readonly released = new Map<string, number>();

  /** Warns once when renewal is off and a lock's expiry looks skewed (sessionLockHorizon then has no bound). */
  private readonly onSkewedLock: ReturnType<typeof warnSkewedLockOnce>;

  private readonly options: DeferredProcessorOptions;

  constructor(options: DeferredProcessorOptions) {
    this.options = options;
    this.log = options.logger ?? defaultSdkLogger();
    this.onSkewedLock = warnSkewedLockOnce(this.log, { endpointId: options.endpointId, subscription: Subscription.Deferred });
  }

  start(): void {
    if (this.loop) throw new Error('the deferred processor is already started');
    const { client, endpointId } = this.options;
    this.receiver = this.createTriggerReceiver();
    this.sender = client.createSender(endpointId);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopController.abort(new Error('deferred processor stopping'));
    await this.loop?.catch(() => undefined);
    // Closing what a dropped connection left behind can hang like any other call (servicebus/boundedClose.ts): each
    // close is waited for at most the bound, side by side, and one given up says so (it used to be dropped silently,
    // so a stop that took the whole bound left no trace of why).
    const { receiver, sender } = this;
    const close = (what: string, part: { close(): Promise<void> } | undefined) =>
      part &&
      boundedClose(what, () => part.close(), {
        timeoutMs: this.options.operationTimeoutMs ?? 30_000,
        logger: this.log,
        details: { endpointId: this.options.endpointId },
      }).catch(() => undefined);
    await Promise.all([
      close("closing the deferred processor's trigger receiver", receiver),
      close("closing the deferred processor's sender", sender),
    ]);
  }

  /** The client's lock-renewal horizon for a parked session. */
  private get renewalHorizonMs(): number {
    return this.options.maxAutoLockRenewalDurationInMs ?? 60_000;
  }

  private get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /** One trigger at a time: the only ordering guarantee the replay needs besides the session's own FIFO. */
  private async run(): Promise<void> {
    const backoff = new Backoff(this.options.backoff);
    while (!this.stopping) {
      let triggers: ServiceBusReceivedMessage[];
      try {
        const receiver = this.receiver!;
        triggers = await withLinkedSignal(this.stopController.signal, (abortSignal) =>
          receiver.receiveMessages(1, { maxWaitTimeInMs: this.options.triggerWaitMs ?? 5000, abortSignal }),
        );
        backoff.reset();
      } catch (error) {
        if (this.stopping) return;
        const delay = backoff.next();
        this.log.warn(
          { err: loggableError(error), delayMs: delay },
          'receiving replay triggers failed; backing off',
        );
        // A receiver whose link broke is not trusted to come back by itself (see below): the next receive uses a new one.
        this.renewTriggerReceiver();
        await sleep(delay, this.stopController.signal);
        continue;
      }
      for (const trigger of triggers) {
        // A pass that failed met a broker problem, typically a dropped connection. The trigger receiver then gets a
        // new link: after a connection reset that came while it was not receiving (the processor was in a pass),
        // the client's receiver was seen to come back deaf - every receive empty, the abandoned trigger active on the
        // subscription - so the endpoint replayed nothing ever again.
        if ((await this.handleTrigger(trigger)) === 'failed') this.renewTriggerReceiver();
      }
    }
  }

  /**
   * The triggers' receiver, without the client's automatic lock renewal: that renewal outlives a receiver closed
   * after a connection reset (the client's close skips it then), so a trigger whose pass was given up stayed locked,
   * renewed by a receiver nobody used, for the client's 5 min renewal window, and its retry waited that long. The
   * processor holds a trigger's lock itself while its pass runs (holdTriggerLock).
   */
  private createTriggerReceiver(): ServiceBusReceiver {
    return this.options.client.createReceiver(this.options.endpointId, Subscription.DeferredProcessor, {
      maxAutoLockRenewalDurationInMs: 0,
    });
  }

  /** A fresh receiver for the triggers; the old one is closed in the background (its close may hang as well). */
  private renewTriggerReceiver(): void {
    if (this.stopping) return;
    const old = this.receiver;
    try {
      this.receiver = this.createTriggerReceiver();
    } catch (error) {
      // createReceiver throws at once when the client's connection is closed (its owner shutting down before
      // stop(), seen in the chaos test's teardown): an exception here would end the loop unhandled. The old
      // receiver stays; its next receive fails, backs off and asks again, until stop().
      this.log.warn(
        { err: loggableError(error) },
        'renewing the trigger receiver failed; retrying after the next receive',
      );
      return;
    }
    if (old) void this.quietly('closing the old trigger receiver', () => old.close());
  }

  private report(pass: ReplayPass): ReplayPass['outcome'] {
    this.options.onPass?.(pass);
    return pass.outcome;
  }

  private async handleTrigger(trigger: ServiceBusReceivedMessage): Promise<ReplayPass['outcome']> {
    const release = this.holdTriggerLock(this.receiver!, trigger);
    try {
      return await this.handleLockedTrigger(trigger);
    } finally {
      release();
    }
  }

  /**
   * Renews the trigger's lock at half its remaining time until the returned function is called (the pass has
   * ended). A renewal that fails ends the hold: the lock is lost, the pass's completion of the trigger fails and
   * the trigger comes back. The remaining time is read by the local clock off the broker's expiry, so under clock
   * skew it is no measure of the lock: a reading that is no lock a broker grants renews at half the shortest one
   * (lockRenewalDelayMs). Before, a reading already past renewed at once, again and again for the whole pass, and
   * one far ahead let the lock lapse mid-pass.
   */
  private holdTriggerLock(receiver: ServiceBusReceiver, trigger: ServiceBusReceivedMessage): () => void {
    let released = false;
    let timer: NodeJS.Timeout | undefined;
    const renewBefore = (lockedUntil: Date | undefined) => {
      if (released || !lockedUntil) return;
      timer = setTimeout(
        () =>
          void this.bounded('renewing the trigger lock', () => receiver.renewMessageLock(trigger)).then(
            renewBefore,
            (error: unknown) => {
              if (!released)
                this.log.debug({ err: loggableError(error) }, 'renewing the trigger lock failed');
            },
          ),
        lockRenewalDelayMs(lockedUntil.getTime(), Date.now()),
      );
    };
    renewBefore(trigger.lockedUntilUtc);
    return () => {
      released = true;
      clearTimeout(timer);
    };
  }

  private async handleLockedTrigger(trigger: ServiceBusReceivedMessage): Promise<ReplayPass['outcome']> {
    const inbound = fromReceived(trigger);
    const sessionId =
      trigger.sessionId ||
      (typeof trigger.applicationProperties?.SessionId === 'string'
        ? (trigger.applicationProperties.SessionId as string)
        : undefined);
    const receiver = this.receiver!;
    if (inbound.messageType !== MessageType.ProcessDeferredRequest || !sessionId) {
      const reason = !sessionId
        ? 'No SessionId'
        : `not a ProcessDeferredRequest (${inbound.messageType ?? 'no MessageType'})`;
      await this.bounded('dead-lettering a bad trigger', () =>
        receiver.deadLetterMessage(trigger, { deadLetterReason: reason, deadLetterErrorDescription: reason }),
      ).catch((e) => this.log.warn({ err: loggableError(e) }, 'dead-lettering a bad trigger failed'));
      return this.report({ sessionId, replayed: 0, outcome: 'no-session-id' });
    }
    const until = inbound.replayUntil ?? Number.POSITIVE_INFINITY;
    if (until <= (this.finished.get(sessionId) ?? -1)) {
      await this.quietly('completing the trigger', () => receiver.completeMessage(trigger));
      return this.report({ sessionId, replayed: 0, outcome: 'already-replayed' });
    }
    let parked: AcceptedParked;
    try {
      parked = await this.acceptParked(sessionId);
    } catch (error) {
      if (this.lockedByAnotherPass(error, sessionId))
        return this.endSessionLocked(receiver, trigger, sessionId, 0);
      this.log.warn(
        { sessionId, err: loggableError(error) },
        'could not open the parked session; the trigger will be retried',
      );
      await this.quietly('abandoning the trigger', () => receiver.abandonMessage(trigger));
      return this.report({ sessionId, replayed: 0, outcome: 'failed' });
    }
    let replayed = 0;
    try {
      let pass = await this.replay(parked, sessionId, until);
      replayed = pass.replayed;
      // Stopped before the parked session's lock horizon: the copy in hand is sent (not as the end), the session
      // released while its lock holds and accepted again with a fresh lock; the pass goes on where it stopped (what
      // it completed is gone from the session, the rest is still in sequence order). A failed accept fails the pass
      // like any other call: its trigger is retried, and the copies already sent are recognised by their sequence.
      while (pass.atHorizon && !this.stopping) {
        // A stretch that took nothing (a horizon already past at the accept: a receiver closed at once) would be
        // released and accepted again without end, the trigger renewed all the while: the pass fails instead, and
        // its trigger is retried later.
        if (pass.replayed === 0 && !pass.held)
          throw new Error(
            "the parked session's lock horizon left no room for a message; the pass made no progress",
          );
        if (pass.held) {
          await this.sendAndComplete(parked.receiver, pass.held, sessionId, until, false);
          replayed++;
        }
        this.log.info(
          { sessionId, replayed, until },
          'parked session released before its lock-renewal horizon; accepted again to go on with the pass',
        );
        await this.release(sessionId, parked);
        try {
          parked = await this.acceptParked(sessionId);
        } catch (error) {
          if (!this.lockedByAnotherPass(error, sessionId)) throw error;
          // Another receiver took the session between the release and this accept (refused again after our
          // released lock ran out, acceptParked): as on the first accept. Abandoned, the trigger would spend a
          // delivery for nothing.
          return await this.endSessionLocked(receiver, trigger, sessionId, replayed);
        }
        pass = await this.replay(parked, sessionId, until);
        replayed += pass.replayed;
      }
      if (this.stopping) throw new Error('stopping before the pass ended; the trigger will be retried');
      const bounded = until !== Number.POSITIVE_INFINITY;
      // The end of the pass rides on its last copy (or, when the pass found nothing, on a marker), sent only once
      // every parked message below the bound has been received (replay() throws otherwise): a copy this pass did
      // not get to (a receive that came back early) must not be taken for a gap by the main handler.
      if (pass.held) {
        await this.sendAndComplete(parked.receiver, pass.held, sessionId, until, bounded);
        replayed++;
      } else if (bounded) {
        const marker = toServiceBusMessage(
          buildReplayPassEnd(inbound, this.options.endpointId, sessionId, until),
        );
        await this.bounded('sending the pass-end marker', (abortSignal) =>
          this.sender!.sendMessages(marker, { abortSignal }),
        );
      }
      await this.bounded('completing the trigger', () => receiver.completeMessage(trigger));
      if (bounded) this.rememberFinished(sessionId, until);
      this.log.debug({ sessionId, replayed, until }, 'replay pass finished');
      return this.report({ sessionId, replayed, outcome: 'replayed' });
    } catch (error) {
      this.log.warn(
        { sessionId, replayed, err: loggableError(error) },
        'replay pass failed; the trigger will be retried',
      );
      await this.quietly('abandoning the trigger', () => receiver.abandonMessage(trigger));
      return this.report({ sessionId, replayed, outcome: 'failed' });
    } finally {
      await this.release(sessionId, parked);
    }
  }

  /**
   * Ends a pass whose parked session another receiver holds. That receiver's pass may replay the rest, or may be
   * over already, its lock lingering (a close in progress, or a lost detach: the same silent close as in
   * `released`, but in another process, which this one cannot know of) while the main handler's next trigger, sent
   * on its pass-end copy, reached us: completed alone, that trigger left the rest parked until new traffic parked on
   * the session. So a copy of the trigger is scheduled one lock duration on (a bounded chain, lockedRecheck.ts),
   * then the trigger is completed: a re-check that finds the rest replayed costs an empty pass, one that finds a
   * rival still there schedules the next. A schedule that fails abandons the trigger instead (it is retried).
   */
  private async endSessionLocked(
    receiver: ServiceBusReceiver,
    trigger: ServiceBusReceivedMessage,
    sessionId: string,
    replayed: number,
  ): Promise<ReplayPass['outcome']> {
    const hop = lockedRechecksOf(trigger) + 1;
    if (hop > MAX_LOCKED_RECHECKS) {
      this.log.warn(
        { sessionId, rechecks: hop - 1 },
        'parked session still held by another receiver after the last re-check; the trigger is completed',
      );
    } else {
      const delayMs = this.options.lockedRecheckDelayMs ?? DEFAULT_LOCKED_RECHECK_DELAY_MS;
      const copy = buildLockedRecheck(trigger, hop);
      try {
        await this.bounded('scheduling a re-check of the held session', (abortSignal) =>
          this.sender!.scheduleMessages(copy, new Date(Date.now() + delayMs), { abortSignal }),
        );
      } catch (error) {
        this.log.warn(
          { sessionId, err: loggableError(error) },
          'scheduling a re-check of the held parked session failed; the trigger will be retried',
        );
        await this.quietly('abandoning the trigger', () => receiver.abandonMessage(trigger));
        return this.report({ sessionId, replayed, outcome: 'failed' });
      }
      this.log.info(
        { sessionId, replayed, recheck: hop, delayMs },
        'parked session held by another receiver; a copy of the trigger is scheduled to look again',
      );
    }
    await this.quietly('completing the trigger', () => receiver.completeMessage(trigger));
    return this.report({ sessionId, replayed, outcome: 'session-locked' });
  }

  /**
   * Whether an accept failed because another pass holds the session. Not when a receiver of our own is still
   * closing, nor while the lock of one we released may still hold: that lock is what the broker refused.
   */
  private lockedByAnotherPass(error: unknown, sessionId: string): boolean {
    return (
      isSessionLocked(error) && !this.closing.has(sessionId) && this.ownLockUntil(sessionId) === undefined
    );
  }

  /** Until when a lock of a receiver this processor released may still hold the session; undefined once past. */
  private ownLockUntil(sessionId: string): number | undefined {
    const until = this.released.get(sessionId);
    if (until === undefined || until > Date.now()) return until;
    this.released.delete(sessionId);
    return undefined;
  }

  /**
   * Accepts the parked session (bounded) and starts its horizon. A receiver of this session from a pass given up on
   * (or from this pass's previous stretch) is closed first, so that its lock is gone. Refused while the lock of a
   * receiver we released may still hold (its close failed silently), the accept waits for that lock to run out
   * (at most the bound) and is tried once more: a refusal then is another pass's, unless the wait was cut short.
   * So a wait that ran its course forgets the remembered lock: the bound may end it before the lock as remembered
   * (one default lock plus OWN_LOCK_SLACK_MS, under skew or with no expiry, against a 30 s bound), and a refusal
   * then, taken for our own, failed the pass (its trigger abandoned, a delivery spent) instead of ending it
   * session-locked with a re-check.
   */
  private async acceptParked(sessionId: string): Promise<AcceptedParked> {
    const closing = this.closing.get(sessionId);
    if (closing) await this.quietly('closing an earlier parked-session receiver', () => closing);
    let accepted: ServiceBusSessionReceiver;
    try {
      accepted = await this.acceptSession(sessionId);
    } catch (error) {
      const ownUntil = this.ownLockUntil(sessionId);
      if (!isSessionLocked(error) || ownUntil === undefined) throw error;
      const waitMs = Math.min(ownUntil - Date.now(), this.options.operationTimeoutMs ?? 30_000);
      this.log.info(
        { sessionId, waitMs },
        'parked session refused while the lock of a receiver we released may still hold it; accepting again once it has run out',
      );
      await sleep(waitMs, this.stopController.signal);
      if (!this.stopping) this.released.delete(sessionId);
      accepted = await this.acceptSession(sessionId);
    }
    this.released.delete(sessionId);
    // A drain answered late must not close the parked session's link mid-pass (servicebus/drainWait.ts).
    const receiver = tolerateSlowDrain(accepted);
    // Taken after the accept: the client counts its renewals from a little before, the horizon's margin covers it.
    const horizon = sessionLockHorizon(receiver, Date.now(), this.renewalHorizonMs, this.onSkewedLock);
    return { receiver, horizon, released: false };
  }

  /** One bounded accept of the parked session. */
  private acceptSession(sessionId: string): Promise<ServiceBusSessionReceiver> {
    return this.bounded(
      'accepting the parked session',
      (abortSignal) =>
        this.options.client.acceptSession(this.options.endpointId, Subscription.Deferred, sessionId, {
          maxAutoLockRenewalDurationInMs: this.renewalHorizonMs,
          abortSignal,
        }),
      // Accepted after all: let its lock go at once.
      (late) => void late.close().catch(() => undefined),
    );
  }

  /**
   * Closes a pass's parked-session receiver, waiting at most the bound. A close still pending then is remembered
   * until it comes back (see `closing`). Whatever the close said, the lock it was released with is remembered until
   * it runs out (see `released`): a close that failed is logged, and one that failed silently cannot be told apart.
   * Once per accepted session (AcceptedParked.released): a second call does nothing.
   */
  private async release(sessionId: string, parked: AcceptedParked): Promise<void> {
    if (parked.released) return;
    parked.released = true;
    const { receiver, horizon } = parked;
    const heldUntil = horizon.lockHeldUntil();
    const closed = receiver.close().catch((error: unknown) => {
      this.log.warn(
        { sessionId, err: loggableError(error) },
        'closing the parked session failed; its lock may hold until it runs out',
      );
    });
    const settled = await this.bounded('closing the parked session', () => closed.then(() => true)).catch(
      () => false,
    );
    this.rememberReleased(sessionId, heldUntil);
    if (settled) return;
    const pending = closed.finally(() => {
      if (this.closing.get(sessionId) === pending) this.closing.delete(sessionId);
    });
    this.closing.set(sessionId, pending);
  }

  /**
   * One broker call of a pass, given up after `operationTimeoutMs` or when the processor stops; the caller then
   * treats it as failed. `call` gets a signal that aborts then: every call that takes one passes it on, because the
   * processor's calls run on the caller's client, and a send (or accept, peek, receive) caught opening its link by a
   * dropped connection holds that link's lock on a request nobody answers. The client's reconnect waits for that
   * lock, so every call on the client, the caller's own included, waited the client's 60 s operation timeout;
   * aborted, the request is dropped at once. The calls that take no signal (settlements, close) cannot be
   * cancelled and may still finish: `late` gets what it returns then (to release it), and a late failure is dropped.
   */
  private bounded<T>(
    what: string,
    call: (abortSignal: AbortSignal) => Promise<T>,
    late?: (value: T) => void,
  ): Promise<T> {
    return boundedCall(what, call, {
      timeoutMs: this.options.operationTimeoutMs ?? 30_000,
      consequence: 'the pass is given up',
      signal: this.stopController.signal,
      stopMessage: 'the deferred processor is stopping',
      late,
    });
  }

  /**
   * A bounded call whose failure changes nothing: settling the trigger (its lock expires and it comes back) or
   * closing a receiver that is being replaced.
   */
  private async quietly(what: string, call: () => Promise<void>): Promise<void> {
    await this.bounded(what, call).catch(() => undefined);
  }

  /** Remembers a released lock's expiry; those already run out are dropped, so the map holds only live ones. */
  private rememberReleased(sessionId: string, lockedUntil: number): void {
    const now = Date.now();
    for (const [id, until] of this.released) if (until <= now) this.released.delete(id);
    if (Number.isFinite(lockedUntil) && lockedUntil + OWN_LOCK_SLACK_MS > now)
      this.released.set(sessionId, lockedUntil + OWN_LOCK_SLACK_MS);
  }

  private rememberFinished(sessionId: string, until: number): void {
    this.finished.delete(sessionId);
    this.finished.set(sessionId, until);
    if (this.finished.size > 10_000) this.finished.delete(this.finished.keys().next().value!);
  }

  /** Sends a parked message's replayed copy, then completes the parked message: a copy is never lost. */
  private async sendAndComplete(
    parked: ServiceBusSessionReceiver,
    held: HeldMessage,
    sessionId: string,
    until: number,
    passEnd: boolean,
  ): Promise<void> {
    const sequence = held.inbound.deferralSequence ?? 0;
    const bound = until === Number.POSITIVE_INFINITY ? sequence + 1 : until;
    const copy = toServiceBusMessage(
      buildReplayedCopy(held.inbound, this.options.endpointId, sessionId, bound, passEnd),
    );
    await this.bounded('sending a replayed copy', (abortSignal) =>
      this.sender!.sendMessages(copy, { abortSignal }),
    );
    await this.bounded('completing a parked message', () => parked.completeMessage(held.message));
  }

  /**
   * How many parked messages are below `until`, by peeking (no lock taken, no delivery counted). Parked copies are
   * sent in sequence order, so paging stops at the first page with none below the bound.
   */
  private async countBelow(parked: ServiceBusSessionReceiver, until: number): Promise<number> {
    let below = 0;
    // From the session's start, explicitly: without fromSequenceNumber the client goes on from the last message
    // peeked on this entity by any receiver of the client, so a second pass would not see the front of the session.
    let from = Long.ZERO;
    for (;;) {
      const start = from;
      const page = await this.bounded('peeking the parked session', (abortSignal) =>
        parked.peekMessages(this.options.batchSize ?? 20, { fromSequenceNumber: start, abortSignal }),
      );
      const n = page.filter((m) => (fromReceived(m).deferralSequence ?? 0) < until).length;
      below += n;
      if (page.length === 0 || n === 0) return below;
      from = Long.fromValue(page[page.length - 1]!.sequenceNumber!).add(1);
    }
  }

  /**
   * Replays parked messages below `until` in sequence order, each copy sent before its parked message is completed.
   * The last one found is held back (still locked, not yet sent): the caller sends it, as the pass's end or, when
   * the stretch stopped at the session's lock horizon (`atHorizon`), before it accepts the session again.
   *
   * Only the parked messages below the bound are received (counted by peeking first). Receiving one above it and
   * abandoning it, as passes did before, spent one of its deliveries each time: a session that drains through
   * many passes (a long handoff, a loaded machine) had a message parked above their bounds dead-lettered from
   * {E}/Deferred after maxDeliveryCount passes, and the pass that should have replayed it found nothing (a
   * ReplayGap, its row left Deferred). Throws when fewer than counted arrive (the trigger is retried).
   *
   * No batch is taken unless it ends by the session's horizon: its receive and a step per message (a copy sent, a
   * parked message completed), plus one for the message held back, each as long as the longest seen so far. A pass
   * that outlasted the horizon lost the parked session's lock mid-pass: the pass failed, and every parked message
   * still in hand or not yet received came back with a delivery spent (the 10th dead-letters it). Until a step was
   * timed, batches are of one message, so a stretch always replays at least one.
   */
  private async replay(parked: AcceptedParked, sessionId: string, until: number): Promise<ReplayStretch> {
    const { receiver, horizon } = parked;
    let replayed = 0;
    let held: HeldMessage | undefined;
    const wanted = await this.countBelow(receiver, until);
    let received = 0;
    let stepMs = 0;
    let receiveMs = 0;
    while (received < wanted) {
      // Stopping prevents the next batch; a call still waiting when the processor stops is given up (bounded), and
      // the trigger, not completed, brings the rest of the pass back later.
      if (this.stopping) return { replayed, held, atHorizon: false };
      let count = stepMs === 0 ? 1 : Math.min(this.options.batchSize ?? 20, wanted - received);
      while (count > 0 && !horizon.fits(receiveMs + (count + 1) * stepMs)) count--;
      if (count === 0) return { replayed, held, atHorizon: true };
      const receiveStarted = Date.now();
      const batch = await this.bounded('receiving parked messages', (abortSignal) =>
        receiver.receiveMessages(count, { maxWaitTimeInMs: this.options.drainWaitMs ?? 1000, abortSignal }),
      );
      receiveMs = Math.max(receiveMs, Date.now() - receiveStarted);
      if (batch.length === 0)
        throw new Error(
          `${wanted - received} parked message(s) below ${until} did not arrive; the pass is not complete`,
        );
      const ordered = batch
        .map((message) => ({ message, inbound: fromReceived(message) }))
        .sort((a, b) => (a.inbound.deferralSequence ?? 0) - (b.inbound.deferralSequence ?? 0));
      for (const item of ordered) {
        const sequence = item.inbound.deferralSequence ?? 0;
        if (sequence >= until) {
          // Not expected (parked out of order): the next pass replays it.
          await this.bounded('abandoning a parked message', () => receiver.abandonMessage(item.message));
          continue;
        }
        received++;
        if (held) {
          const stepStarted = Date.now();
          await this.sendAndComplete(receiver, held, sessionId, until, false);
          stepMs = Math.max(stepMs, Date.now() - stepStarted);
          replayed++;
        }
        held = item;
      }
    }
    return { replayed, held, atHorizon: false };
  }
}

export function createDeferredProcessor(options: DeferredProcessorOptions): DeferredProcessor {
  return new DeferredProcessor(options);
}
