// The Resolver's session processor on Resolver/Resolver. The JS client has no session processor, so each of N
// workers loops: accept the next free session (the broker hands each session to one receiver at a time, which
// is what makes several workers and several instances safe), resolve its messages in order (a receive's rows
// recorded side by side, resolve.ts), settle each, and release the session when a receive comes back short
// (its backlog is done) or empty, when a message is left for redelivery (it must come back before anything
// behind it), or shortly before the session's lock-renewal horizon (a session is never worked on past its lock).
import type {
  ServiceBusClient,
  ServiceBusMessage,
  ServiceBusReceivedMessage,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { Prop, Topic } from '@nimbus/sdk/contract';
import { sessionLockHorizon, withLinkedSignal } from '@nimbus/sdk';
import { tolerateSlowDrain } from '@nimbus/sdk/servicebus';
import { withProcessSpan, withSettleSpan } from '@nimbus/sdk';
import { context, type Context } from '@opentelemetry/api';
import type { ResolverMetrics } from './metrics.ts';
import { sleep } from '../lib/concurrency/sleep.ts';
import { BatchResolution, resolveMessage, type ResolveContext, type Settlement } from './resolve.ts';
import { StoreOutage } from './outage.ts';
import { STOPPED, untilStopped } from './untilStopped.ts';
import { enqueuedTimeOf, originalTimeUnknownOf, type ReplacementBudget } from './read.ts';
import { DEFAULT_BUDGET } from './budget.ts';

export interface ProcessorOptions {
  client: ServiceBusClient;
  context: Omit<ResolveContext, 'signal'>;
  concurrency: number;
  sessionIdleTimeoutMs: number;
  maxMessagesPerReceive: number;
  maxAutoLockRenewalDurationInMs: number;
  topic?: string;
  subscription?: string;
  onSettled?: (event: SettledEvent) => void;
  /** While halted on denied store access, how often access is probed again. Default 30 s. */
  accessProbeMs?: number;
  /** While the store is down (a transient failure and a failed probe), how often it is probed. Default 5 s. */
  outageProbeMs?: number;
}

/**
 * What the processor is doing, for readiness: receiving, halted (and why) until store access is back, or holding
 * its messages while the store is unavailable.
 */
export interface ResolverState {
  receiving: boolean;
  halted: { reason: string; since: string } | null;
  /** Set while the store is down for everyone: no new session is taken; messages in hand are held until the lock horizon. */
  storeUnavailable: { since: string } | null;
}

export interface SettledEvent {
  messageId: string;
  sessionId: string;
  /** The client's delivery count of this delivery (0 on the first). */
  deliveryCount: number;
  settlement: Settlement;
  /** False when the settlement call itself failed (lock lost…): the message will come back. */
  ok: boolean;
}

/** The store record the access probe writes and reads while receiving is halted (never read by anyone else). */
export const ACCESS_PROBE_ID = 'ResolverAccessProbe';

/** A broker call in flight (a settlement, a receiver's or the sender's close): what a stop gives up at its deadline. */
interface BrokerCall {
  call: string;
  sessionId?: string;
  messageId?: string;
}

/** How many of the given-up calls a stop's warning names (the count is always there). */
const GIVEN_UP_NAMED = 50;

/** Errors of acceptNextSession that only mean "no free session right now". */
const NO_SESSION_CODES = new Set(['SessionCannotBeLocked', 'ServiceTimeout']);

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

export class ResolverProcessor {
  readonly #o: ProcessorOptions;
  readonly #log: Logger;
  readonly #metrics: ResolverMetrics;
  readonly #stop = new AbortController();
  readonly #topic: string;
  readonly #subscription: string;
  /** Where spans say the messages come from. */
  readonly #where: { topic: string; subscription: string };
  /** Each traced message's process-span context, for its settlement span (which may come after the batch). */
  readonly #traceContexts = new WeakMap<ServiceBusReceivedMessage, Context>();
  #sender: ServiceBusSender | undefined;
  #workers: Promise<void>[] = [];
  /** Sessions being worked on right now: stop() waits for these, not for workers still waiting to accept one. */
  readonly #inSession = new Set<Promise<void>>();
  /** The broker calls running now, by what they are (ids only, never a payload): named when a stop gives them up. */
  readonly #brokerCalls = new Set<BrokerCall>();
  /** Set while the store denies access (401/403): no worker receives, a probe looks for access to come back. */
  #halted: { reason: string; since: string } | undefined;
  #probe: Promise<void> | undefined;
  /** The store-outage circuit: open while a transient failure is confirmed by a failing probe (outage.ts). */
  readonly #outage: StoreOutage;

  constructor(options: ProcessorOptions) {
    this.#o = options;
    this.#log = options.context.log;
    this.#metrics = options.context.metrics;
    this.#outage = new StoreOutage({
      probe: () => this.#probeStore(),
      probeEveryMs: options.outageProbeMs ?? 5_000,
      signal: this.#stop.signal,
      log: this.#log,
    });
    this.#topic = options.topic ?? Topic.Resolver;
    this.#subscription = options.subscription ?? Topic.Resolver;
    this.#where = { topic: this.#topic, subscription: this.#subscription };
  }

  start(): void {
    // Every worker waiting to accept (and every session) listens on the stop signal: that is expected, not a leak.
    setMaxListeners(this.#o.concurrency * 3 + 10, this.#stop.signal);
    this.#sender = this.#o.client.createSender(this.#topic);
    for (let i = 0; i < this.#o.concurrency; i++) this.#workers.push(this.#worker(i));
    this.#log.info({ sessions: this.#o.concurrency }, 'Resolver: started');
  }

  /**
   * Stops accepting and receiving; waits for nothing in the store. Messages whose writes have ended are settled;
   * a message whose write is still running is left unsettled (its session released, it comes back; the write goes
   * on unawaited and its copy is absorbed by the idempotent history and the guard); waits (back-offs, holds,
   * probes) end at once; anything not started stays put. Settlements already issued, receiver closes and the
   * sender's close are awaited until `deadline` aborts: the client gives an unanswered settlement 60 s and retries
   * it, longer than a container platform's grace period. What is still running then is given up (and logged): a
   * message whose settlement went unanswered is redelivered once its lock lapses, and its copy is absorbed by the
   * idempotent history and the guard.
   * Workers still waiting in acceptNextSession are not awaited: the client does not always honour the abort
   * signal there (it can wait out the broker's accept timeout), and closing the client ends them; a session they
   * still get is released untouched.
   */
  async stop(deadline: AbortSignal): Promise<void> {
    if (this.#stop.signal.aborted) return;
    this.#stop.abort();
    await untilStopped(Promise.allSettled([...this.#inSession]), deadline);
    // The store's waits: both end at once on stop (a probe in flight is not waited for).
    await this.#probe;
    await this.#outage.closed();
    this.#workers = [];
    const sender = this.#sender;
    if (sender) await untilStopped(this.#brokerCall({ call: 'close the sender' }, () => sender.close()).catch(() => undefined), deadline);
    if (deadline.aborted) this.#logGivenUp();
    this.#log.info('Resolver: stopped');
  }

  /** Runs a broker call registered in #brokerCalls while it runs, so a stop that gives it up can name it. */
  async #brokerCall<T>(call: BrokerCall, work: () => Promise<T>): Promise<T> {
    this.#brokerCalls.add(call);
    try {
      return await work();
    } finally {
      this.#brokerCalls.delete(call);
    }
  }

  /** The stop's deadline passed: names what the broker left unanswered (ids only) and what becomes of it. */
  #logGivenUp(): void {
    const calls = [...this.#brokerCalls];
    if (calls.length === 0 && this.#inSession.size === 0) return;
    this.#log.warn(
      { givenUp: calls.length, calls: calls.slice(0, GIVEN_UP_NAMED), sessions: this.#inSession.size },
      'Resolver: the broker did not answer within the stop deadline; its calls are given up. A message whose settlement went unanswered comes back once its lock lapses (its stored outcome absorbs the copy)',
    );
  }

  get #stopping(): boolean {
    return this.#stop.signal.aborted;
  }

  state(): ResolverState {
    const down = this.#outage.down;
    return {
      receiving: !this.#stopping && this.#halted === undefined && down === undefined,
      halted: this.#halted ? { ...this.#halted } : null,
      storeUnavailable: down ?? null,
    };
  }

  /** A write and a read of the processor's own probe record: the store serves the Resolver when both work. */
  async #probeStore(): Promise<void> {
    const { store, version, now } = this.#o.context;
    await store.setServiceHealth({ serviceId: ACCESS_PROBE_ID, status: 'On', version, lastSeenAt: now().toISOString() });
    await store.getServiceHealth(ACCESS_PROBE_ID);
  }

  /**
   * Stops receiving on every worker (messages in hand are left unsettled and come back later) and starts probing
   * the store until it lets us in again. Only the first halt logs: every worker meets the same wrong key.
   */
  #halt(reason: string): void {
    if (this.#halted || this.#stopping) return;
    this.#halted = { reason, since: new Date().toISOString() };
    this.#log.error({ reason }, `Resolver: receiving stopped: ${reason}. Nothing is dead-lettered meanwhile; receiving resumes when the store accepts the Resolver again`);
    this.#probe = this.#probeAccess();
  }

  /**
   * Until access is back: a write and a read of a probe record of its own in the store (a key may allow reads and
   * not writes; the Resolver needs both), every `accessProbeMs`. Its own record, so it races nobody's. Then a create
   * and a read in each container an outcome's record writes (store.probeOutcomeAccess): a data-plane role scoped to
   * some containers can refuse `history` while `platform` answers, and a probe of `platform` alone resumed receiving
   * into the same refusal, a delivery spent by the message each time, until the broker dead-lettered it
   * (MaxDeliveryCountExceeded), which is what halting is there to prevent.
   */
  async #probeAccess(): Promise<void> {
    const every = this.#o.accessProbeMs ?? 30_000;
    while (this.#halted && (await sleep(every, this.#stop.signal))) {
      try {
        // A probe the store does not answer must not keep stop() waiting (stop() awaits this loop).
        const probe = async () => {
          await this.#probeStore();
          await this.#o.context.store.probeOutcomeAccess();
        };
        if ((await untilStopped(probe(), this.#stop.signal)) === STOPPED) return;
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (code === 401 || code === 403) continue;
        // Any other failure is not a denial: an outage is the outage circuit's (outage.ts), a failing write its budget's.
      }
      this.#log.info({ haltedSince: this.#halted?.since }, 'Resolver: the store accepts the Resolver again; receiving resumes');
      this.#halted = undefined;
    }
  }

  async #worker(index: number): Promise<void> {
    let failures = 0;
    while (!this.#stopping) {
      // Halted on denied access, or the store is down: taking a session would only spend its messages' deliveries.
      if (this.#halted || this.#outage.down) {
        await sleep(200, this.#stop.signal);
        continue;
      }
      let receiver: ServiceBusSessionReceiver;
      try {
        // Each accept and each session gets its own short-lived signal linked to the stop signal: the client adds
        // abort listeners per call and does not always remove them (see packages/sdk/src/abortScope.ts).
        // A drain answered late must not close the session's link: every completion of the batch would fail
        // (@nimbus/sdk servicebus/drainWait.ts).
        receiver = tolerateSlowDrain(
          await withLinkedSignal(this.#stop.signal, (abortSignal) =>
            this.#o.client.acceptNextSession(this.#topic, this.#subscription, {
              maxAutoLockRenewalDurationInMs: this.#o.maxAutoLockRenewalDurationInMs,
              abortSignal,
            }),
          ),
        );
      } catch (err) {
        if (this.#stopping) break;
        const code = (err as { code?: string }).code;
        if (code !== undefined && NO_SESSION_CODES.has(code)) {
          await sleep(100, this.#stop.signal);
          continue;
        }
        failures++;
        const delay = Math.min(100 * 2 ** Math.min(failures, 8), 10_000);
        this.#log.warn({ worker: index, err: errorText(err), delayMs: delay }, 'Resolver: accepting a session failed');
        await sleep(delay, this.#stop.signal);
        continue;
      }
      failures = 0;
      const session = this.#session(index, receiver, Date.now());
      this.#inSession.add(session);
      await session;
      this.#inSession.delete(session);
    }
  }

  async #session(index: number, receiver: ServiceBusSessionReceiver, acceptedAt: number): Promise<void> {
    try {
      await this.#runSession(receiver, acceptedAt);
    } catch (err) {
      if (!this.#stopping) {
        this.#log.warn({ worker: index, sessionId: receiver.sessionId, err: errorText(err) }, 'Resolver: session receive failed');
        await sleep(200, this.#stop.signal);
      }
    } finally {
      await this.#brokerCall({ call: 'close the session receiver', sessionId: receiver.sessionId }, () => receiver.close()).catch(() => undefined);
    }
  }

  async #runSession(receiver: ServiceBusSessionReceiver, acceptedAt: number): Promise<void> {
    await withLinkedSignal(this.#stop.signal, (signal) => this.#receiveLoop(receiver, signal, this.#lockHorizon(receiver, acceptedAt)));
  }

  /**
   * Until when (epoch ms) a session may be worked on: only while the client still renews its lock, since a lock
   * that lapses loses the session and spends a delivery of every message in hand. The SDK's session horizon
   * (@nimbus/sdk sessionLockHorizon.ts, as its subscriber host): a margin before the renewal horizon, or sooner the
   * lock's current expiry less its own margin (a renewal that failed), 0 once the receiver is closed. Past it the
   * session takes no more messages, and a hold through an outage or a wait in place ends by then.
   */
  #lockHorizon(receiver: ServiceBusSessionReceiver, acceptedAt: number): () => number {
    const horizon = sessionLockHorizon(receiver, acceptedAt, this.#o.maxAutoLockRenewalDurationInMs);
    return () => horizon.endWithinLock();
  }

  /**
   * One receive of up to `maxMessagesPerReceive`. The client returns early only when the batch is full;
   * otherwise it waits out `sessionIdleTimeoutMs` (and then drains the link's credit, so nothing is in flight
   * when the session is released). That wait is therefore kept short.
   */
  #receive(receiver: ServiceBusSessionReceiver, signal: AbortSignal): Promise<ServiceBusReceivedMessage[]> {
    return withLinkedSignal(signal, (abortSignal) =>
      receiver.receiveMessages(this.#o.maxMessagesPerReceive, { maxWaitTimeInMs: this.#o.sessionIdleTimeoutMs, abortSignal }),
    );
  }

  async #receiveLoop(receiver: ServiceBusSessionReceiver, signal: AbortSignal, horizon: () => number): Promise<void> {
    // Heartbeat writes retried in place ask the outage circuit after a transient failure (resolve.ts retryInPlace).
    // Their waits in place end before the session's lock horizon.
    const ctx: ResolveContext = { ...this.#o.context, signal, storeDown: () => this.#outage.confirmDown(), lockHorizon: horizon };
    while (!this.#stopping && !this.#halted && !this.#outage.down) {
      // A steady backlog keeps every receive full, and the session would be kept until its lock ran out mid-batch:
      // the completions would fail and the batch come back, a delivery spent by each message. Released here instead,
      // with nothing in hand; any worker accepts it again with a fresh lock and a fresh horizon.
      if (horizon() <= Date.now()) {
        this.#log.debug({ sessionId: receiver.sessionId }, 'Resolver: session released before its lock-renewal horizon; it is accepted again');
        return;
      }
      let messages: ServiceBusReceivedMessage[];
      try {
        messages = await this.#receive(receiver, signal);
      } catch (err) {
        if (this.#stopping) return;
        throw err;
      }
      if (messages.length === 0) return; // idle: release the session for any worker of any instance
      // Completions are sent together once the batch is resolved (or before any other settlement): issued in one
      // tick, the client's AMQP layer writes them as one disposition frame over the range of deliveries instead
      // of one frame and one socket write each, which a profile showed to be the Resolver's largest Service Bus
      // cost. Each is still sent only after its message's outcome is stored; if the process dies first, the copy
      // that comes back is harmless (same MessageId: idempotent history, the guard). Everything else (dead
      // letter, reschedule, redelivery) waits for them, and so does the next receive.
      // No receive runs ahead of resolving: a message received but not yet resolved when the session is released
      // (a redelivery) counts a delivery against its own budget although it did nothing wrong.
      const resolved: Array<{ message: ServiceBusReceivedMessage; settlement: Settlement; started: number }> = [];
      const drain = async () =>
        (
          await Promise.all(
            resolved
              .splice(0)
              .map(({ message, settlement, started }) =>
                this.#settle(receiver, message, settlement).then(({ ok }) => this.#settled(receiver, message, settlement, ok, started)),
              ),
          )
        ).every(Boolean);
      // The rows with several messages in the batch are recorded together as the batch starts (BatchResolution).
      // When the loop ends early, the messages recorded ahead of their turn are completed with the rest: their
      // outcomes are stored, and a copy coming back would only add an "Ignored stale" comment.
      const batch = new BatchResolution(messages, ctx);
      // A recovery after this point: the batch's row writes may have failed in the outage (stale failures).
      const recoveriesAtStart = this.#outage.recoveries;
      // On stop only writes already finished are taken: a store that does not answer must not keep stop() waiting.
      const completeRecordedAhead = async () => {
        for (const [message, settlement] of await batch.takeRecordedAhead(this.#stop.signal)) {
          resolved.push({ message, settlement, started: performance.now() });
        }
      };
      for (const message of messages) {
        if (this.#stopping || this.#halted) break; // not started: stays locked to this session and comes back with it
        const started = performance.now();
        // The message's process span continues the trace it carries; its store write (resolve.ts) is a child.
        let settlement = await withProcessSpan(message, this.#where, async (span) => {
          if (span.isRecording()) this.#traceContexts.set(message, context.active());
          // A stop does not wait for the store: a message whose write is still running is left (unsettled, it comes
          // back with its session); the write goes on unawaited, and the copy's write is absorbed (idempotent history).
          const resolved = await untilStopped(batch.resolve(message), this.#stop.signal);
          const s: Settlement = resolved === STOPPED ? { kind: 'leave' } : resolved;
          span.setAttribute('nimbus.resolver.settlement', s.kind === 'complete' ? s.result : s.kind);
          return s;
        });
        if (settlement.kind === 'complete') {
          resolved.push({ message, settlement, started });
          continue;
        }
        if (!(await drain())) {
          await batch.takeRecordedAhead(this.#stop.signal); // lock lost: nothing more can settle; let running writes finish
          return;
        }
        // A write whose tries in place reached the lock horizon is abandoned now: holding it would outlast the lock.
        if (isTransientStoreFailure(settlement) && !isAtHorizon(settlement)) {
          const stale = this.#outage.recoveries !== recoveriesAtStart;
          settlement = await this.#holdThroughOutage(message, settlement, horizon, ctx, stale);
          if (settlement.kind === 'complete') {
            resolved.push({ message, settlement, started });
            continue;
          }
        }
        const { ok, keepSession } = await this.#settle(receiver, message, settlement, horizon);
        this.#settled(receiver, message, settlement, ok, started);
        if (!ok || !keepSession) {
          await completeRecordedAhead();
          await drain();
          return;
        }
      }
      await completeRecordedAhead();
      if (!(await drain()) || this.#stopping) return;
      // A receive that came back short waited out the whole receive wait and drained the link: the session had
      // nothing more. It is released now rather than after one more empty wait (a session's backlog then costs one
      // wait, not two); a message that arrives later is simply accepted again by a free worker of any instance.
      if (messages.length < this.#o.maxMessagesPerReceive) return;
    }
  }

  /**
   * A transient store failure: is the store down for everyone, or does this write keep failing? While a probe of
   * the store fails too, the message is held (session and lock kept) and retried in place once the store answers,
   * spending no delivery. When the store answers and the retry fails again, the failure is the message's own and
   * the settlement the budget gave it stands (abandon for redelivery, or StoreUnavailable on the last attempt). At
   * the lock-renewal horizon the held message is released once (#atHorizon); the circuit then keeps every worker
   * from taking sessions until the store answers.
   */
  async #holdThroughOutage(
    message: ServiceBusReceivedMessage,
    failed: Settlement,
    holdUntil: () => number,
    ctx: ResolveContext,
    stale: boolean,
  ): Promise<Settlement> {
    let current = failed;
    // The store came back since this batch began: its rows were written as it started, so this failure may be a
    // leftover of the outage. Retried directly, without a probe per message or a retry counted.
    if (stale) {
      if (this.#stopping) return { kind: 'leave' };
      const retried = await untilStopped(resolveMessage(message, ctx), this.#stop.signal);
      if (retried === STOPPED) return { kind: 'leave' };
      current = retried;
    }
    let retriedWhileUp = false;
    while (isTransientStoreFailure(current) && !isAtHorizon(current)) {
      if (this.#stopping) return { kind: 'leave' };
      // A heartbeat write handed over by retryInPlace already has the circuit's word (its probe failed).
      const handedOver = current.kind === 'redeliver' && current.inPlace === true;
      if (handedOver || (await this.#outage.confirmDown())) {
        if (this.#stopping) return { kind: 'leave' };
        // Counted as held only when it actually waits (not past the horizon, not on stop).
        if (holdUntil() <= Date.now()) return this.#atHorizon(message, current);
        this.#metrics.storeRetry({ 'nimbus.store.reason': 'transient', 'nimbus.retry.action': 'held' });
        const waited = await this.#outage.waitUntilUp(holdUntil);
        if (waited === 'stopped') return { kind: 'leave' };
        if (waited === 'timeout') return this.#atHorizon(message, current);
        retriedWhileUp = false;
      } else {
        if (this.#stopping) return { kind: 'leave' };
        // The store answers. A heartbeat write that already spent its tries in place has had its retries (one more
        // loop would outlast the lock horizon); any other write gets one more try, which tells a failure of its own
        // from an outage that just ended.
        if (isInPlace(current) || retriedWhileUp) return current;
        retriedWhileUp = true;
        this.#metrics.storeRetry({ 'nimbus.store.reason': 'transient', 'nimbus.retry.action': 'retried_in_place' });
      }
      const retried = await untilStopped(resolveMessage(message, ctx), this.#stop.signal);
      if (retried === STOPPED) return { kind: 'leave' };
      current = retried;
    }
    return current;
  }

  /**
   * The store is still down at the lock-renewal horizon: the held message is released now, before the lock lapses.
   * A redelivery is abandoned at once (the hold was its back-off; waiting longer would abandon with a lost lock).
   * A heartbeat or liveness write is dropped, never dead-lettered: heartbeats are never tracked, and a copy
   * minutes old would only be stale (the next probe round records a fresh one). Anything else (StoreUnavailable on
   * the last attempt) is carried out as the budget decided.
   */
  #atHorizon(message: ServiceBusReceivedMessage, held: Settlement): Settlement {
    const where = { messageId: String(message.messageId), sessionId: message.sessionId };
    if (isInPlace(held)) {
      this.#log.warn(where, 'Resolver: store still unavailable at the session lock renewal horizon; dropping the stale heartbeat');
      return { kind: 'complete', result: 'dropped' };
    }
    this.#log.warn(where, 'Resolver: store still unavailable at the session lock renewal horizon; releasing the message');
    return held.kind === 'redeliver' ? { ...held, delayMs: 0 } : held;
  }

  #settled(receiver: ServiceBusSessionReceiver, message: ServiceBusReceivedMessage, settlement: Settlement, ok: boolean, started: number): boolean {
    const result = settlement.kind === 'complete' ? settlement.result : settlement.kind;
    this.#metrics.message({ 'nimbus.result': ok ? result : 'settle_failed' });
    this.#metrics.messageDuration(performance.now() - started, { 'nimbus.result': result });
    this.#o.onSettled?.({
      messageId: String(message.messageId),
      sessionId: receiver.sessionId,
      deliveryCount: message.deliveryCount ?? 0,
      settlement,
      ok,
    });
    return ok;
  }

  /**
   * Carries out a settlement. `keepSession` false releases the session (the message must come back first). A wait
   * before an abandon ends at the session's `horizon`, if given.
   */
  async #settle(
    receiver: ServiceBusSessionReceiver,
    message: ServiceBusReceivedMessage,
    s: Settlement,
    horizon?: () => number,
  ): Promise<{ ok: boolean; keepSession: boolean }> {
    const where = { messageId: String(message.messageId), sessionId: receiver.sessionId, eventId: message.applicationProperties?.[Prop.EventId] as string | undefined };
    // Registered for the stop's deadline (a wait before an abandon ends at once on stop; the broker's answer may not).
    const call: BrokerCall = { call: s.kind, messageId: where.messageId, sessionId: where.sessionId };
    this.#brokerCalls.add(call);
    try {
      switch (s.kind) {
        case 'complete':
          await withSettleSpan('complete', this.#where, () => receiver.completeMessage(message), this.#traceContexts.get(message));
          return { ok: true, keepSession: true };
        case 'deadLetter':
          await withSettleSpan(
            'dead_letter',
            this.#where,
            () => receiver.deadLetterMessage(message, { deadLetterReason: s.reason, deadLetterErrorDescription: s.description }),
            this.#traceContexts.get(message),
          );
          if (s.storeReason) this.#metrics.storeRetry({ 'nimbus.store.reason': s.storeReason, 'nimbus.retry.action': 'dead_lettered' });
          this.#log.warn({ ...where, reason: s.reason }, 'Resolver: message dead-lettered');
          return { ok: true, keepSession: true };
        case 'reschedule':
          return await this.#reschedule(receiver, message, s, horizon);
        case 'redeliver':
          return await this.#redeliver(receiver, message, s.delayMs, s.storeReason, horizon);
        case 'leave':
          return { ok: true, keepSession: false };
        case 'halt':
          // Left unsettled: it comes back when the session is accepted again, once the store lets us in.
          this.#halt(s.reason);
          return { ok: true, keepSession: false };
      }
    } catch (err) {
      this.#log.warn({ ...where, kind: s.kind, err: errorText(err) }, 'Resolver: settlement failed; the message will be redelivered');
      return { ok: false, keepSession: false };
    } finally {
      this.#brokerCalls.delete(call);
    }
  }

  /**
   * The replacement goes first and the original is completed only after it is scheduled: the failure mode is a
   * duplicate (harmless: same MessageId, idempotent history, the guard), never a loss. If scheduling fails the
   * original is left to redeliver, which spends the same budget through DeliveryCount.
   */
  async #reschedule(
    receiver: ServiceBusSessionReceiver,
    message: ServiceBusReceivedMessage,
    s: Extract<Settlement, { kind: 'reschedule' }>,
    horizon?: () => number,
  ): Promise<{ ok: boolean; keepSession: boolean }> {
    try {
      await this.#sender!.scheduleMessages(replacementOf(message, s.attempt, this.#o.context.budget), new Date(Date.now() + s.delayMs));
    } catch (err) {
      this.#log.warn(
        { messageId: String(message.messageId), sessionId: receiver.sessionId, err: errorText(err) },
        'Resolver: the throttled message could not be rescheduled; leaving it to redeliver',
      );
      const { delayMs } = s;
      return this.#redeliver(receiver, message, Math.min(delayMs, this.#o.context.transientMaxDelayMs), 'throttled', horizon);
    }
    await receiver.completeMessage(message);
    this.#metrics.storeRetry({ 'nimbus.store.reason': 'throttled', 'nimbus.retry.action': 'rescheduled' });
    this.#metrics.retryDelay(s.delayMs / 1000, { 'nimbus.delay.source': s.source });
    return { ok: true, keepSession: true };
  }

  /**
   * Waits (holding the session, so nothing behind the message overtakes it), then abandons and releases. The wait
   * (up to 30 s) ends at the session's lock horizon: later, the lock may be gone and the abandon would fail with it
   * (the copy then comes back anyway, only with a failed settlement and a session held for nothing).
   */
  async #redeliver(
    receiver: ServiceBusSessionReceiver,
    message: ServiceBusReceivedMessage,
    delayMs: number,
    reason: 'throttled' | 'transient',
    horizon?: () => number,
  ): Promise<{ ok: boolean; keepSession: boolean }> {
    const wait = horizon ? Math.min(delayMs, Math.max(0, horizon() - Date.now())) : delayMs;
    if (!(await sleep(wait, this.#stop.signal))) return { ok: true, keepSession: false };
    await receiver.abandonMessage(message);
    this.#metrics.storeRetry({ 'nimbus.store.reason': reason, 'nimbus.retry.action': 'abandoned' });
    return { ok: true, keepSession: false };
  }
}

/** A heartbeat or liveness write's settlement (retried in place, resolve.ts): never dead-lettered for an outage. */
function isInPlace(s: Settlement): boolean {
  return (s.kind === 'redeliver' || s.kind === 'deadLetter') && s.inPlace === true;
}

/** A write retried in place that stopped at the session's lock horizon (resolve.ts retryInPlace): abandon at once. */
function isAtHorizon(s: Settlement): boolean {
  return s.kind === 'redeliver' && s.atHorizon === true;
}

/** A settlement decided by a transient store failure (5xx, timeouts, resets): a redelivery or, on the last attempt, StoreUnavailable. */
function isTransientStoreFailure(s: Settlement): boolean {
  return (s.kind === 'redeliver' || s.kind === 'deadLetter') && s.storeReason === 'transient';
}

/**
 * The scheduled replacement of a throttled message: the same body, ids (MessageId above all: the guard's ancestor
 * check and the idempotent history rely on it), session, routing fields and application properties, with
 * ThrottleRetryCount set to the attempt just spent and OriginalEnqueuedTimeUtc to the time this message is recorded
 * with (read.ts enqueuedTimeOf, under the running budget's age bound): the broker's time of the first delivery, kept
 * through every later reschedule. The broker stamps the replacement when its schedule comes due, so without it the
 * row (and a history entry whose create was the throttled write) would carry a time minutes after the message's own.
 */
export function replacementOf(
  message: ServiceBusReceivedMessage,
  attempt: number,
  budget: ReplacementBudget = DEFAULT_BUDGET,
): ServiceBusMessage {
  const applicationProperties: NonNullable<ServiceBusMessage['applicationProperties']> = {
    ...(message.applicationProperties ?? {}),
    [Prop.ThrottleRetryCount]: attempt,
  };
  const enqueued = enqueuedTimeOf(message, budget).at;
  // A replacement whose original time is unknown stays unknown: its own broker time, carried on as the original's,
  // would read as a plausible time on the next replacement and bound the guard's rule 8 at a time after the retry
  // that superseded it (read.ts originalTimeUnknown). Unreadable and no broker time to put instead: dropped too,
  // rather than carried on as a problem on every copy.
  if (enqueued && !originalTimeUnknownOf(message, budget)) applicationProperties[Prop.OriginalEnqueuedTimeUtc] = enqueued.toISOString();
  else delete applicationProperties[Prop.OriginalEnqueuedTimeUtc];
  const copy: ServiceBusMessage = {
    body: message.body,
    messageId: message.messageId,
    sessionId: message.sessionId,
    applicationProperties,
  };
  if (message.correlationId !== undefined) copy.correlationId = message.correlationId;
  if (message.contentType !== undefined) copy.contentType = message.contentType;
  if (message.subject !== undefined) copy.subject = message.subject;
  if (message.to !== undefined) copy.to = message.to;
  if (message.replyTo !== undefined) copy.replyTo = message.replyTo;
  if (message.replyToSessionId !== undefined) copy.replyToSessionId = message.replyToSessionId;
  if (message.partitionKey !== undefined) copy.partitionKey = message.partitionKey;
  if (message.timeToLive !== undefined) copy.timeToLive = message.timeToLive;
  return copy;
}
