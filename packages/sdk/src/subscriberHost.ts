// The subscriber host: a multi-session processor on the endpoint's main subscription ({E}/{E}). The JS client has
// no session processor, so each of N workers loops: accept the next free session, handle its messages one at a
// time in order, release it when idle or shortly before its lock-renewal horizon (sessionLockHorizon.ts), repeat.
// Broker errors back off; stop() lets in-flight deliveries settle.
// start() checks the subscriptions exist first; the host runs the endpoint's deferred processor too (one start/stop).
import type {
  ServiceBusClient,
  ServiceBusReceivedMessage,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { Subscription } from './contract/index.ts';
import { dedicatedClient } from './servicebus/sessionClient.ts';
import { tolerateSlowDrain } from './servicebus/drainWait.ts';
import { CauseLog } from './causeLog.ts';
import { DeferredProcessor } from './deferredProcessor.ts';
import type { DeferredProcessorOptions } from './deferredProcessor.ts';
import { assertSubscriptionsExist } from './entityCheck.ts';
import { defaultSdkLogger } from './logger.ts';
import { withLinkedSignal } from './abortScope.ts';
import { Backoff, sleep } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { Dispatcher } from './dispatcher.ts';
import type { DeliveryResult, DispatcherOptions } from './dispatcher.ts';
import { COMPLETING_THE_MESSAGE, SessionStateCache, sessionDeliveryPort } from './sessionPort.ts';
import { BoundedLink, boundedCall } from './boundedCall.ts';
import { boundedClose } from './servicebus/boundedClose.ts';
import { dedicatedRetryOptions, defaultOperationTimeoutMs } from './sessionCallBounds.ts';
import { withProcessSpan } from './tracing.ts';
import type { CircuitBreaker } from './circuitBreaker.ts';
import {
  BROKER_DEAD_LETTERS_AT_RELEASE,
  DEFAULT_MAX_DELIVERY_COUNT,
  deliveryStanding,
  isLastDelivery,
  observedLockMs,
  transientHoldMs,
} from './deliveryBudget.ts';
import type { TransientHoldOptions } from './deliveryBudget.ts';
import { receiveWaitMs, sessionLockHorizon, warnSkewedLockOnce } from './sessionLockHorizon.ts';
import type { SessionLockHorizon } from './sessionLockHorizon.ts';
import { SessionLockWatch } from './sessionLockWatch.ts';
import { Prop } from './contract/properties.ts';

export interface SubscriberHostOptions extends DispatcherOptions {
  client: ServiceBusClient;
  /** Sessions handled at the same time (each in order). Default 8. */
  maxConcurrentSessions?: number;
  /**
   * A session with no message for this long is released for other instances. Default 30 s. A receive waits no longer
   * than the session's lock horizon (see maxAutoLockRenewalDurationInMs).
   */
  sessionIdleTimeoutMs?: number;
  /** Messages fetched per receive call within one session. Default 10. */
  maxMessagesPerReceive?: number;
  /**
   * Session lock auto-renewal horizon. Default 5 min. A session is released shortly before it (and accepted again
   * with a fresh lock), however full its backlog; 0 turns renewal off, and the lock's own expiry is the horizon.
   */
  maxAutoLockRenewalDurationInMs?: number;
  backoff?: BackoffOptions;
  /**
   * Opt-in endpoint circuit breaker: counts retry-disposition and transient outcomes; while open the host takes no
   * sessions and receives nothing; half-open lets one delivery probe.
   */
  circuitBreaker?: CircuitBreaker;
  /**
   * After a transient outcome the session (and its unsettled message) is held this long before it is given back:
   * by default the session's lock duration as observed at accept, doubling with each earlier delivery of the
   * message, at most 5 min, and never past the session's lock horizon (docs/sdk.md, "Transient outcomes").
   */
  transientHold?: TransientHoldOptions;
  /** Called after every delivery (metrics, tests). */
  onDelivery?: (result: DeliveryResult, sessionId: string) => void;
  /**
   * How long one accept waits on the broker for a free session before asking again. It bounds stop(): an accept
   * already waiting cannot be cancelled, so stop() waits for it to come back (at most `operationTimeoutMs`, and
   * never less than its default derived from acceptWaitMs: on a connection gone silent an accept came back only
   * after ~60 s). Default 3 s.
   */
  acceptWaitMs?: number;
  /**
   * `dedicated` (default): session receivers use a connection of the host's own, whose accepts wait `acceptWaitMs`
   * and which stop() closes. `shared`: they use `client` (its `retryOptions.timeoutInMs`, 60 s by default, is then
   * how long a pending accept can delay stop()). The dedicated connection falls back to the shared one, with a
   * warning, when the client's credential cannot be reused.
   */
  sessionConnection?: 'dedicated' | 'shared';
  /**
   * Longest wait for one broker call of a delivery (reading or writing the session state, a send, the completion or
   * dead-letter) and for closing a session receiver. Default: above the dedicated session connection's own worst case
   * (3 attempts of `acceptWaitMs`, 0.5 s apart) by 2 s, so 12 s with the default acceptWaitMs (sessionCallBounds.ts).
   * After a dropped connection @azure/service-bus can leave such a call unanswered for the client's operation timeout
   * (60 s by default) and longer; past the bound the delivery is left unsettled (it comes back: at least once), and
   * the session is given up as failed: the worker waits up to the bound for its receiver to close, backs off, then
   * accepts again. A send or session-state call given up is also aborted: a send caught opening its link by the drop
   * otherwise held up the client's reconnect, and every accept with it, for the full 60 s. On the last delivery the
   * budget allows, the steps after a call given up are still attempted, so the Resolver is notified. Keep the bound
   * well above a healthy call's time: a call given up that still succeeds repeats the delivery.
   */
  operationTimeoutMs?: number;
  /**
   * The endpoint's deferred processor (replays parked messages), started and stopped with the host: its options,
   * or `false` when it runs elsewhere. Default: one with default options.
   */
  deferredProcessor?: false | Omit<DeferredProcessorOptions, 'client' | 'endpointId'>;
  /** start() checks that the host's subscriptions exist (a peek on each; Listen suffices). Default true. */
  checkEntities?: boolean;
}

const NO_SESSION_CODES = new Set(['SessionCannotBeLocked', 'ServiceTimeout']);

export class SubscriberHost implements AsyncDisposable {
  private readonly dispatcher: Dispatcher;
  private readonly log: Logger;
  private readonly stopController = new AbortController();
  /**
   * Aborted (and replaced) whenever the endpoint circuit opens: the specification's processor token is cancelled on
   * shutdown and whenever the circuit opens, so handlers in flight in every session stop (those that honour
   * ctx.signal leave their message unsettled; it comes back after the pause).
   */
  private circuitController = new AbortController();
  private sender: ServiceBusSender | undefined;
  /** The client session receivers come from: the host's own connection, or the caller's client. */
  private sessionClient: ServiceBusClient;
  private ownsSessionClient = false;
  private readonly deferred: DeferredProcessor | undefined;
  private readonly causes: CauseLog;
  private starting: Promise<void> | undefined;
  private workers: Promise<void>[] = [];
  /** Sessions being handled right now; stop() waits for these (not for accepts still waiting on the broker). */
  private readonly inFlight = new Set<Promise<void>>();
  private started = false;
  /** Warns once when renewal is off and a lock's expiry looks skewed (sessionLockHorizon then has no bound). */
  private readonly onSkewedLock: ReturnType<typeof warnSkewedLockOnce>;

  private readonly options: SubscriberHostOptions;

  constructor(options: SubscriberHostOptions) {
    this.options = options;
    this.log = options.logger ?? defaultSdkLogger();
    this.dispatcher = new Dispatcher({ ...options, logger: this.log });
    this.causes = new CauseLog(this.log, { endpointId: options.endpointId });
    this.onSkewedLock = warnSkewedLockOnce(this.log, { endpointId: options.endpointId, subscription: options.endpointId });
    this.sessionClient = options.client;
    this.deferred =
      options.deferredProcessor === false
        ? undefined
        : new DeferredProcessor({
            logger: this.log,
            ...options.deferredProcessor,
            client: options.client,
            endpointId: options.endpointId,
          });
    options.circuitBreaker?.onStateChange((from, to) => {
      this.log.warn({ endpointId: options.endpointId, from, to }, 'circuit state changed');
      if (to === 'Open') {
        const opened = this.circuitController;
        this.circuitController = this.newCircuitController();
        opened.abort(new Error('endpoint circuit opened'));
      }
      for (const o of options.observers ?? []) {
        Promise.resolve()
          .then(() => o.onCircuitStateChanged?.(options.endpointId, from, to))
          .catch(() => undefined);
      }
    });
  }

  get endpointId(): string {
    return this.options.endpointId;
  }

  /**
   * Checks the host's subscriptions exist (one MissingEntityError naming what is missing and `npm run provision`),
   * then starts the session workers and the deferred processor. Await it: a failed check rejects.
   */
  start(): Promise<void> {
    if (this.started) return Promise.reject(new Error('the subscriber host is already started'));
    this.started = true;
    this.starting = this.startWorkers();
    return this.starting;
  }

  private async startWorkers(): Promise<void> {
    const { client, endpointId } = this.options;
    if (this.options.sessionConnection !== 'shared') {
      const own = dedicatedClient(client, { retryOptions: dedicatedRetryOptions(this.options.acceptWaitMs) });
      if (own) {
        this.sessionClient = own;
        this.ownsSessionClient = true;
      } else {
        this.log.warn(
          { endpointId },
          "no dedicated session connection (the client's credential is not reusable): stop() may wait for the client's operation timeout",
        );
      }
    }
    if (this.options.checkEntities !== false) {
      const subscriptions: Array<readonly [string, string]> = [[endpointId, endpointId]];
      if (this.deferred)
        subscriptions.push([endpointId, Subscription.DeferredProcessor], [endpointId, Subscription.Deferred]);
      try {
        // On a connection of its own, closed right after: a peek's management link left on a connection that is
        // closed later kept a 120 s rhea idle timer alive after close (measured: the process did not exit).
        const probe = dedicatedClient(client, {}) ?? client;
        try {
          await assertSubscriptionsExist(probe, subscriptions, { signal: this.stopController.signal });
        } finally {
          // Bounded: a close the broker had not answered when the connection dropped never ends (boundedClose.ts).
          if (probe !== client) await this.closeQuietly('closing the subscription check connection', probe);
        }
      } catch (error) {
        // Nothing runs: what the host opened is closed, so a process that gives up here can exit.
        if (this.ownsSessionClient) await this.closeQuietly('closing the session connection', this.sessionClient);
        this.ownsSessionClient = false;
        throw error;
      }
    }
    if (this.stopping) return;
    this.sender = client.createSender(endpointId);
    const n = Math.max(1, this.options.maxConcurrentSessions ?? 8);
    // Each worker holds at most one linked call (accept, receive or delivery) plus one sleep on the stop signal at a
    // time, so its listener count is bounded by the worker count; above Node's default of 10 that is not a leak.
    setMaxListeners(2 * n + 10, this.stopController.signal);
    this.circuitController = this.newCircuitController();
    for (let i = 0; i < n; i++) this.workers.push(this.worker(i));
    this.deferred?.start();
    this.log.info({ endpointId, sessions: n }, 'subscriber host started');
  }

  /**
   * Stops accepting sessions and receiving, and closes what the host opened. A delivery whose handler already has
   * an outcome settles in full; a handler that honours ctx.signal stops without one and its message is redelivered
   * later, as are the messages of a batch not started yet - except on their last delivery, where releasing the
   * session would spend it and the broker dead-letter them silently (the Resolver row left Pending): such a message
   * takes the budget path instead (the notification to the Resolver, then the SDK's own dead-letter; the
   * dispatcher's cancelledOnLastDelivery). Returns within about `acceptWaitMs` plus the settlements in flight (each broker call of which waits at
   * most `operationTimeoutMs`); on a connection gone silent, within the settlements plus about twice
   * `operationTimeoutMs` (the accepts, then the closes). A walk behind a broker call started before stop() and given
   * up (already, or the call in flight when stop() came) starts no new call once stopping, nor does that message:
   * stop() waits for the call in flight (one bound), and the rest of that batch is left to the broker (one warning
   * counts it; those on their last delivery are then dead-lettered by the broker, unannounced). A stop that began
   * healthy walks its rest in full, a call of its own given up included (stopWalk.test.ts).
   */
  async stop(options: { waitForPendingAccepts?: boolean } = {}): Promise<void> {
    if (!this.started) return;
    this.stopController.abort(new Error('subscriber host stopping'));
    await this.starting?.catch(() => undefined);
    const deferredStopped = this.deferred?.stop();
    // In-flight sessions are waited for, so every started settlement runs to the end.
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    // An acceptNextSession already waiting on the broker cannot be interrupted (the client ignores the abort signal
    // once the link attach is on the wire), and closing its connection first would leave the client's 60 s attach
    // timer keeping the process alive. On the host's own connection an accept waits at most acceptWaitMs (a few
    // times, with its retries) on a connection that answers, so the workers are waited for, at most the operation
    // bound: on a connection gone silent (the path died without a reset) an accept came back only after ~60 s. The
    // bound is never below that connection's own worst case: a caller's lower operationTimeoutMs (meant for a
    // delivery's calls) would give up a healthy accept that is still retrying. On a shared client they are waited
    // for only when asked, and then in full (it can take the client's operation timeout).
    if (this.ownsSessionClient && !options.waitForPendingAccepts) {
      await boundedCall('waiting for the pending accepts', () => Promise.allSettled(this.workers), {
        timeoutMs: Math.max(this.operationTimeoutMs, defaultOperationTimeoutMs(this.options.acceptWaitMs)),
      }).catch(() => undefined);
    } else if (options.waitForPendingAccepts) {
      await Promise.allSettled(this.workers);
    }
    await deferredStopped;
    // Each close waits at most the operation bound: on a silent connection a link's close waits for an answer that
    // never comes (the sender's hung for more than 30 s), and stop() would wait with it.
    const closes = [this.sender ? this.closeQuietly('closing the sender', this.sender) : undefined];
    if (this.ownsSessionClient) closes.push(this.closeQuietly('closing the session connection', this.sessionClient));
    await Promise.all(closes);
    this.log.info({ endpointId: this.options.endpointId }, 'subscriber host stopped');
  }

  /** `await using host = ...`: stop() when the scope ends. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private newCircuitController(): AbortController {
    const c = new AbortController();
    // One listener per delivery in flight: bounded by the worker count, as on the stop signal.
    setMaxListeners(2 * Math.max(1, this.options.maxConcurrentSessions ?? 8) + 10, c.signal);
    return c;
  }

  private get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  private async worker(index: number): Promise<void> {
    const backoff = new Backoff(this.options.backoff);
    // Sessions released at their horizon before a receive (a lock that reads as lapsed, a receiver closed at once):
    // without a pause the worker would accept and release in a tight loop.
    const unworked = new Backoff(this.options.backoff);
    const { endpointId } = this.options;
    const breaker = this.options.circuitBreaker;
    while (!this.stopping) {
      const breakerWaitMs = breaker?.acquireWaitMs ?? 0;
      if (breakerWaitMs > 0) {
        // Open: leave every message untouched on the subscription until the pause is over. Half-open with the probe
        // taken by another worker, or paused after a probe found no message: a session accepted now would only be
        // released again at once (acquire refuses it), and again, in a tight loop.
        await sleep(Math.max(50, Math.min(breakerWaitMs, 1000)), this.stopController.signal);
        continue;
      }
      let receiver: ServiceBusSessionReceiver;
      try {
        // A drain answered late must not close the session's link (servicebus/drainWait.ts).
        receiver = tolerateSlowDrain(
          await withLinkedSignal(this.stopController.signal, (abortSignal) =>
            this.sessionClient.acceptNextSession(endpointId, endpointId, {
              maxAutoLockRenewalDurationInMs: this.renewalHorizonMs,
              abortSignal,
            }),
          ),
        );
      } catch (error) {
        if (this.stopping) break;
        const code = (error as { code?: string }).code;
        if (code && NO_SESSION_CODES.has(code)) {
          // No free session right now: ask again (the broker waits on our behalf inside acceptNextSession).
          await sleep(200, this.stopController.signal);
          continue;
        }
        const delay = backoff.next();
        this.causes.failed('accepting a session', error, { worker: index, delayMs: delay });
        await sleep(delay, this.stopController.signal);
        continue;
      }
      // The client counts its renewal horizon from the accept; counted here from a little after it (the horizon's
      // margin covers the gap).
      const acceptedAt = Date.now();
      backoff.reset();
      this.causes.succeeded('accepting a session');
      if (this.stopping) {
        await this.closeReceiver(receiver);
        break;
      }
      // The session's promise includes releasing it, so stop() returns only once the session lock is given back.
      let failure: unknown;
      let releasedUnworked = false;
      const session = this.runSession(receiver, acceptedAt)
        .then((r) => {
          releasedUnworked = r;
        })
        .catch((error: unknown) => {
          failure = error ?? new Error('session failed');
        })
        .finally(() => this.closeReceiver(receiver));
      this.inFlight.add(session);
      await session;
      this.inFlight.delete(session);
      if (failure === undefined) this.causes.succeeded('receiving from a session');
      if (!releasedUnworked) unworked.reset();
      else if (!this.stopping) {
        const delay = unworked.next();
        this.log.warn(
          { worker: index, sessionId: receiver.sessionId, delayMs: delay },
          'session released at its lock horizon before its first receive; waiting before the next accept',
        );
        await sleep(delay, this.stopController.signal);
      }
      if (failure !== undefined && !this.stopping) {
        const delay = backoff.next();
        this.causes.failed('receiving from a session', failure, {
          worker: index,
          sessionId: receiver.sessionId,
          delayMs: delay,
        });
        await sleep(delay, this.stopController.signal);
      }
    }
  }

  /**
   * Handles one session's messages in order until it is idle, a delivery is left for redelivery, its lock horizon
   * is near, or we stop. True when it was released at its horizon before its first receive: accepted again at once,
   * it would be released again at once (a horizon that is never there), so the worker backs off first.
   */
  private async runSession(receiver: ServiceBusSessionReceiver, acceptedAt: number): Promise<boolean> {
    const state = new SessionStateCache(receiver);
    const signal = this.stopController.signal;
    const lockMs = observedLockMs(receiver.sessionLockedUntilUtc, Date.now());
    const horizon = sessionLockHorizon(receiver, acceptedAt, this.renewalHorizonMs, this.onSkewedLock);
    const lock = new SessionLockWatch(receiver, acceptedAt);
    const breaker = this.options.circuitBreaker;
    // How long the last batch took to handle: the next one is not taken unless one as long still ends by the horizon
    // (handlers that take seconds each would otherwise overrun the margin).
    let lastBatchMs = 0;
    let received = false;
    while (!this.stopping) {
      // A steady backlog keeps every receive full, and the session would be kept until its lock ran out mid-batch:
      // the delivery in hand would fail to settle and the batch come back, a delivery spent by each message. Released
      // here instead, with nothing in hand; it is accepted again with a fresh lock and a fresh horizon.
      // The wait for the session's next message ends early enough for a batch as long as the last one to be handled
      // by the horizon: the lock would run out under a longer one, and a message it returned then meet a lost lock.
      const idleMs = this.options.sessionIdleTimeoutMs ?? 30_000;
      const waitMs = receiveWaitMs(horizon, lastBatchMs, idleMs);
      if (!horizon.fits(lastBatchMs) || waitMs === 0) {
        this.logHorizonRelease(receiver, lastBatchMs);
        return !received;
      }
      // Every way out of this batch (no message, an error thrown anywhere, stopping) ends in the finally: a half-open
      // probe that ended without giving its slot back would leave every worker waiting on a probe that is not running.
      const permit = breaker?.acquire(waitMs);
      if (breaker && !permit) return false; // open, or another worker holds the half-open probe
      try {
        const probing = permit?.probe === true;
        let messages;
        try {
          received = true;
          messages = await withLinkedSignal(signal, (abortSignal) =>
            receiver.receiveMessages(probing ? 1 : (this.options.maxMessagesPerReceive ?? 10), {
              maxWaitTimeInMs: waitMs,
              abortSignal,
            }),
          );
        } catch (error) {
          if (this.stopping) return false;
          throw error;
        }
        if (messages.length === 0) {
          if (waitMs < idleMs) this.logHorizonRelease(receiver, lastBatchMs);
          return false; // idle (or at the horizon): release the session
        }
        // The circuit's signal for this batch, taken before the probe's deadline starts: the breaker replaces its
        // controller when it opens, so a deadline that passed before a delivery read `this.circuitController` (a
        // loaded machine, a slow behaviour) aborted the old one and the delivery ran its handler under the fresh one,
        // unbounded - the hang the deadline is there to end (subscriberHost.test.ts' half-open probe test hung so).
        const circuitSignal = this.circuitController.signal;
        permit?.handling(); // a probe's deadline counts from here: the wait for a message was no hang
        const batchStartedAt = Date.now();
        // Set once the circuit opened under this batch: the rest of it goes back with the session.
        let circuitOpened: AbortSignal | undefined;
        // Set once the session lock is known lost under this batch: the rest of it is the broker's again.
        let lockGone: AbortSignal | undefined;
        // Set once a delivery of this batch was left unsettled with the circuit closed: the rest goes back with it.
        let leftBehind: AbortSignal | undefined;
        // Set once a broker call of this batch was given up (operationTimeoutMs): the rest goes back with the session,
        // which is then given up as failed (this error, after the walk). `beforeStop`: the call was started before
        // stop() (the link was silent already when the stop came), not by the stop's own walk.
        let givenUp: { signal: AbortSignal; error: Error; beforeStop: boolean } | undefined;
        // Whether a message of the rest already went back untouched (deliveries left): see replayed copies below.
        let wentBack = false;
        for (const [index, message] of messages.entries()) {
          // Stopping during a walk behind a broker call given up: no new broker call is started. On a silent
          // connection each call of the walk waits out its bound (up to five for a message on its last delivery), and
          // stop() waited for the whole walk: minutes. The rest goes back with the session, as on any stop; those on
          // their last delivery are then dead-lettered by the broker without a word to the Resolver, which is what
          // the warning counts. Test: packages/sdk/e2e/batchGivenUpStop.test.ts.
          // Only behind a call started before stop(): a stop that began healthy walks its rest as before, a slow call
          // of its own walk included - cut there, one slow notification silenced every later message on its last
          // delivery (stopWalk.test.ts).
          if (givenUp?.beforeStop && this.stopping) {
            this.warnWalkCut(receiver.sessionId, messages.slice(index));
            break;
          }
          // A lock known lost (the broker refused a call of the session with SessionLockLost, closed the receiver, or
          // the lock's expiry passed): the rest of the batch is the broker's again, counted a delivery each, and may
          // be with another receiver already. A handler run now has its effects and then cannot settle - the message
          // comes back and runs again. So nothing more is started: the rest goes back as after the circuit opened,
          // those on their last delivery by the budget path below - the broker dead-letters them at the release
          // whatever we do, and the notification goes through the sender, which needs no session lock (their own
          // dead-letter is then refused: expected).
          const lockLost = lockGone ? undefined : lock.lost();
          if (lockLost) {
            this.log.warn(
              { endpointId: this.options.endpointId, sessionId: receiver.sessionId, why: lockLost, left: messages.length - index },
              'session lock lost during a batch: the rest of the batch is not started and comes back with the session',
            );
            lockGone = AbortSignal.abort(new Error('session lock lost'));
          }
          const standing = deliveryStanding(
            message.deliveryCount,
            this.options.maxDeliveryCount ?? DEFAULT_MAX_DELIVERY_COUNT,
          );
          const last = standing.last;
          // Messages not started when stopping, after the circuit opened under the batch, after the lock was lost,
          // after a broker call of the batch was given up, or behind a delivery left unsettled, stay unsettled and
          // come back with the session - except on their last delivery: releasing the session counts it, and the
          // broker would dead-letter the message silently with the Resolver row Pending. Each such one (wherever it
          // is in the rest, not only at its head) is dispatched under an aborted signal - the stop's, or one saying
          // the circuit opened, the lock was lost, an earlier broker call did not answer or an earlier message was
          // left for redelivery - so it is cancelled before its handler and the dispatcher takes the budget path
          // (notification, then dead-letter).
          // Not a replayed copy behind one that went back: its budget path moves the session's replay cursor past
          // the earlier copies, which then come back "already handled" and are completed without running - lost.
          // It goes back too; the broker dead-letters it and the pass's next copy reports the gap (ReplayGap).
          const goingBack = lockGone ?? (this.stopping ? signal : (circuitOpened ?? givenUp?.signal ?? leftBehind));
          if (goingBack && (!last || (wentBack && isReplayedCopy(message)))) {
            wentBack = true;
            continue;
          }
          // One bound per delivery: a session whose call timed out is given up below, so later deliveries start afresh.
          // On the last delivery the budget allows, the steps after a call given up are still attempted (each with its
          // own bound): the budget path's notification is what tells the Resolver, which the broker's own
          // dead-letter at lock expiry would not, and it goes through the sender, whose connection may well be fine.
          // Not after a completion given up: everything the delivery had to tell the Resolver went before it, and the
          // completion may have landed, so a budget notification would contradict the answer the Resolver has.
          // The timeout's text says what becomes of the delivery, and it is quoted further on (the budget path's
          // dead-letter description and notification, the session given up): on the last delivery it does not come
          // back - the SDK dead-letters it, or the broker does at the release.
          const consequence = last
            ? `its last delivery (${standing.delivery} of ${standing.maxDeliveryCount}): it is dead-lettered, not redelivered`
            : 'the delivery is left for redelivery';
          const link = new BoundedLink(this.operationTimeoutMs, consequence, {
            attemptAfterLoss: (lostTo) => last && lostTo.operation !== COMPLETING_THE_MESSAGE,
            // In the walk behind a call given up before the stop, a stop refuses the calls not started yet (the one
            // running keeps its bound), so stop() waits for at most one call of the walk (above). Any other message's
            // calls are refused only once its own link was lost to a call started before the stop (the call in flight
            // when stop() came): on its last delivery the notification, dead-letter and replay cursor after it would
            // each wait out a bound on the silent link. A healthy link during a healthy stop is never refused.
            stopSignal: signal,
            stopRefuses: givenUp?.beforeStop ? 'all' : 'lostBeforeStop',
          });
          const port = sessionDeliveryPort(receiver, this.sender!, state, message, {
            link,
            onCallFailed: (error) => lock.noteFailure(error),
            // The dispatcher's check after the handler asks the same watch: the raw expiry under a local clock ahead
            // of the broker's by a lock or more read every lock as lost, and every outcome was thrown away.
            lockLost: () => lock.lost() !== undefined,
          });
          // The handler's ctx.signal is a per-delivery child too: whatever a handler leaves on it goes with it. It
          // follows the stop signal and the circuit signal of the batch (above): one opened since aborts it.
          const parents = goingBack ?? (breaker ? [signal, circuitSignal] : signal);
          // The handler, its responses and the settlement run in the message's process span (tracing.ts).
          const { result, error } = await withProcessSpan(message, { topic: this.options.endpointId, subscription: this.options.endpointId }, async (span) => {
            const r = await withLinkedSignal(parents, (deliverySignal) => this.dispatcher.dispatchDetailed(message, port, deliverySignal));
            span.setAttribute('nimbus.delivery.result', r.result);
            if (r.result === 'handlerFailed') span.setAttribute('error.type', 'handler_failed');
            return r;
          });
          this.options.onDelivery?.(result, receiver.sessionId);
          // Counted before any hold, so a failing endpoint opens its circuit as soon as the threshold is reached. A
          // delivery whose broker call was given up failed on the connection, not in the handler: not counted.
          // A delivery going back was cancelled before its handler: nothing the breaker should count.
          permit?.record(
            goingBack || (link.lost && result === 'transient')
              ? 'ignored'
              : result === 'handlerFailed' || result === 'transient'
                ? 'failure'
                : result === 'completed'
                  ? 'success'
                  : 'ignored',
            error,
          );
          if (link.lost && !goingBack) {
            // A call that timed out met a lost (or too slow) connection. The session is given up as failed, so the
            // worker backs off before accepting again; a receiver whose link is still open is held first like any
            // delivery left unsettled (hold() skips a closed receiver), since a broker that is connected but slower
            // than the bound would otherwise spend a delivery on every quick release.
            // The rest of the batch is walked first, as behind any delivery left unsettled: giving the session up
            // counts a delivery for each of its messages, and those on their last delivery were dead-lettered by the
            // broker (MaxDeliveryCountExceeded) with no word to the Resolver - a transport fault burned them. Each
            // is now dispatched under an aborted signal and takes the budget path (notification, then the SDK's own
            // dead-letter; each call with its own bound). Test: packages/sdk/e2e/batchGivenUp.test.ts.
            const lostTo = link.lostTo!;
            const fields = {
              endpointId: this.options.endpointId,
              sessionId: receiver.sessionId,
              operation: lostTo.operation,
              timeoutMs: this.operationTimeoutMs,
              result,
              delivery: standing.delivery,
              maxDeliveryCount: standing.maxDeliveryCount,
            };
            if (result === 'deadLettered') {
              this.log.warn(fields, 'a broker call of the last delivery did not answer; the delivery was dead-lettered');
            } else if (result !== 'transient') {
              // The call given up came after the message was settled (the RetryRequest's schedule follows the
              // completion): nothing comes back, so "left for redelivery" would be untrue.
              this.log.warn(
                fields,
                'a broker call after the message was settled did not answer; the message is not redelivered',
              );
            } else if (lostTo.operation === COMPLETING_THE_MESSAGE) {
              // Unsettled on its last delivery (transient there means the SDK's dead-letter did not complete, or was
              // not attempted after a completion given up): released, the broker dead-letters it - no redelivery.
              this.log.warn(
                fields,
                `the completion did not answer: it may have landed after all (then the message does not come back); if not, ${last ? BROKER_DEAD_LETTERS_AT_RELEASE : 'the delivery is redelivered'}`,
              );
            } else if (last) {
              // Among others the stop that cuts the walk behind this call: the SDK's notification and dead-letter are
              // refused then, and the message goes to the broker's dead-letter at the release, not back to a handler.
              this.log.warn(
                fields,
                `a broker call of the last delivery did not answer and the SDK could not dead-letter it: ${BROKER_DEAD_LETTERS_AT_RELEASE}`,
              );
            } else {
              this.log.warn(fields, 'a broker call of the delivery did not answer: the delivery is left for redelivery');
            }
            if (result === 'transient') await this.hold(receiver, lock, message.deliveryCount, lockMs, horizon);
            // The timeout's own text says what becomes of the delivery (above), untrue once the message was settled.
            const why =
              result === 'transient'
                ? lostTo.message
                : `${lostTo.operation} did not answer; the message was settled (${result})`;
            givenUp = {
              signal: AbortSignal.abort(new Error('an earlier broker call of the session did not answer')),
              error: new Error(`giving the session up: ${why}`, { cause: lostTo }),
              beforeStop: link.lostBeforeStop,
            };
            // This message comes back: a replayed copy of the rest on its last delivery goes back too (above).
            if (result === 'transient' || result === 'cancelled') wentBack = true;
            continue;
          }
          // A message of the rest whose own call was given up (its notification or dead-letter): the walk goes on, so
          // every other message on its last delivery is still answered; the session is given up after it.
          if (link.lost) {
            givenUp ??= {
              signal: AbortSignal.abort(new Error('an earlier broker call of the session did not answer')),
              error: new Error(`giving the session up: ${link.lostTo!.message}`, { cause: link.lostTo }),
              beforeStop: link.lostBeforeStop,
            };
            continue;
          }
          // A delivery going back whose dead-letter failed: the session is released with the rest (no hold: the
          // broker ends it at the release, as it would have without the budget path).
          // After a lost lock every dead-letter is refused (transient): the rest is still walked for their notifications.
          if (goingBack) {
            if (result === 'transient' && !lockGone && !givenUp && lock.lost() === undefined) return false;
            continue;
          }
          // Left unsettled for redelivery: keep the session for a while first. Released at once, the message would
          // come straight back and a short outage would spend its whole delivery budget in seconds.
          const unsettled = result === 'transient';
          if (unsettled) await this.hold(receiver, lock, message.deliveryCount, lockMs, horizon);
          // This message comes back: a replayed copy of the rest on its last delivery must go back too (above), or its
          // budget path would move the replay cursor past this one, which would then be completed unrun - lost.
          if (unsettled || result === 'cancelled') wentBack = true;
          // Opened (or still half-open: a probe's outcome that said nothing gave its slot back when recorded): the rest
          // of this batch goes back, those on their last delivery by the budget path (above).
          if (breaker && breaker.state !== 'Closed') {
            circuitOpened = AbortSignal.abort(new Error('endpoint circuit opened'));
            continue;
          }
          // A delivery left unsettled must come back before anything after it in the session, so the session is
          // released and the rest goes back with it, a delivery counted each - those on their last delivery by the
          // budget path (above): released untouched, the broker dead-lettered them silently, the Resolver rows Pending.
          if (unsettled || result === 'cancelled') {
            leftBehind = AbortSignal.abort(new Error('an earlier message of the session was left for redelivery'));
            continue;
          }
        }
        // The rest went back (stopping, the circuit opened, the lock lost, a broker call given up, a delivery left
        // unsettled): release the session; after a call given up, as a failure (the worker backs off).
        if (givenUp) throw givenUp.error;
        if (circuitOpened || lockGone || leftBehind) return false;
        lastBatchMs = Date.now() - batchStartedAt;
      } finally {
        permit?.release();
      }
    }
    return false;
  }

  /**
   * What a stop left undone of a walk behind a broker call given up (once per batch; counts only, no payload): the
   * messages not reached, and how many of them the broker will dead-letter at the release (MaxDeliveryCountExceeded,
   * its own description) with no notification to the Resolver: their rows stay Pending, for Reconcile.
   */
  private warnWalkCut(sessionId: string, rest: readonly ServiceBusReceivedMessage[]): void {
    const max = this.options.maxDeliveryCount ?? DEFAULT_MAX_DELIVERY_COUNT;
    this.log.warn(
      {
        endpointId: this.options.endpointId,
        sessionId,
        notWalked: rest.length,
        onLastDelivery: rest.filter((m) => isLastDelivery(m.deliveryCount, max)).length,
      },
      'stopping during the walk behind a broker call given up: the rest of the batch is left to the broker (it comes back with the session; those on their last delivery are dead-lettered by the broker, without a notification to the Resolver)',
    );
  }

  private logHorizonRelease(receiver: ServiceBusSessionReceiver, lastBatchMs: number): void {
    this.log.debug(
      { endpointId: this.options.endpointId, sessionId: receiver.sessionId, lastBatchMs },
      'session released before its lock-renewal horizon; it is accepted again',
    );
  }

  /** The client's session lock-renewal horizon (0: renewal off). */
  private get renewalHorizonMs(): number {
    return this.options.maxAutoLockRenewalDurationInMs ?? 300_000;
  }

  private get operationTimeoutMs(): number {
    return Math.max(1, this.options.operationTimeoutMs ?? defaultOperationTimeoutMs(this.options.acceptWaitMs));
  }

  /**
   * Closes what the host opened, waiting at most the operation bound; a close still pending ends in the background
   * (logged as abandoned) and a failed one is ignored: the host goes on closing the rest.
   */
  private async closeQuietly(what: string, closable: { close(): Promise<void> }): Promise<void> {
    await boundedClose(what, () => closable.close(), {
      timeoutMs: this.operationTimeoutMs,
      logger: this.log,
      details: { endpointId: this.options.endpointId },
    }).catch(() => undefined);
  }

  /**
   * Closes a session receiver, waiting at most the operation bound: a close on a link a dropped connection left
   * behind can hang for the client's operation timeout. One still pending then finishes in the background.
   */
  private async closeReceiver(receiver: ServiceBusSessionReceiver): Promise<void> {
    await boundedCall('closing the session receiver', () => receiver.close(), {
      timeoutMs: this.operationTimeoutMs,
    }).catch(() => undefined);
  }

  /**
   * Holds a session whose delivery was left unsettled, as if its lock were left to expire (the specification's
   * transient path), doubling with the message's earlier deliveries. The lock stays renewed meanwhile, so nobody
   * else takes the session and nothing behind the message overtakes it. Stopping ends the hold at once, and so does
   * the session's horizon: past it the client renews no more, the lock ran out under the hold and the session went
   * to whoever asked (the message came back then anyway, its delivery spent, while this worker still slept).
   */
  private async hold(
    receiver: ServiceBusSessionReceiver,
    lock: SessionLockWatch,
    deliveryCount: number | undefined,
    lockMs: number,
    horizon: SessionLockHorizon,
  ): Promise<void> {
    // The lock is gone already (it expired under the handler, the broker refused a call with SessionLockLost, or it
    // detached the receiver): the broker has counted the delivery, and another worker may hold the session now.
    // Nothing to hold. Asked of the watch, not of the raw expiry: under a local clock ahead of the broker's by a lock
    // or more the expiry reads as past from the accept on, and no session was ever held - the message came straight
    // back and a short outage spent its delivery budget in seconds.
    if (lock.lost() !== undefined) return;
    const backoffMs = transientHoldMs(deliveryCount, lockMs, this.options.transientHold);
    // On its last delivery the message does not come back after the hold: the broker dead-letters it at the release
    // (the SDK's own dead-letter did not complete), so the log does not say "left for redelivery" there.
    const { delivery, maxDeliveryCount, last } = deliveryStanding(
      deliveryCount,
      this.options.maxDeliveryCount ?? DEFAULT_MAX_DELIVERY_COUNT,
    );
    const left = last ? 'last delivery left unsettled' : 'delivery left for redelivery';
    const then = last ? `; ${BROKER_DEAD_LETTERS_AT_RELEASE}` : '';
    const counts = { deliveryCount, delivery, maxDeliveryCount };
    // No end known (renewal off and the lock's expiry unreadable, the local clock skewed by about a lock or more):
    // nothing renews the lock, so it lapses about one lock after the accept, whenever that is in our time, and a hold
    // capped by nothing slept the whole back-off (up to 5 min) past it while the session went to whoever asked. The
    // session is released at once instead, as the raw-expiry check did under this skew; the message comes back sooner
    // than its back-off asked, never later than a lapsed lock would bring it.
    const end = horizon.end();
    if (!Number.isFinite(end)) {
      this.log.info(
        { endpointId: this.options.endpointId, sessionId: receiver.sessionId, ...counts, backoffMs },
        `${left}: session released without a hold (renewal off, lock expiry unreadable)${then}`,
      );
      return;
    }
    const holdMs = Math.max(0, Math.min(backoffMs, end - Date.now()));
    this.log.info(
      { endpointId: this.options.endpointId, sessionId: receiver.sessionId, ...counts, holdMs, backoffMs },
      `${left}: holding the session first${then}`,
    );
    await sleep(holdMs, this.stopController.signal);
  }
}

export function createSubscriberHost(options: SubscriberHostOptions): SubscriberHost {
  return new SubscriberHost(options);
}

/** A replayed copy of a parked message (it carries the sequence it was parked with): its settlement moves the cursor. */
function isReplayedCopy(message: { applicationProperties?: Record<string, unknown> }): boolean {
  return message.applicationProperties?.[Prop.ReplaySequence] !== undefined;
}
