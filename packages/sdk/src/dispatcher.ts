// One delivery, start to end: observers, pipeline, decision, handler, and the settlement effects in order.
// The broker is reached only through a DeliveryPort, so the same code runs on a session receiver (the host) and
// in unit tests. The settlement rule lives here: once the handler has an outcome, the effects run to the end
// without looking at the stop signal.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { pino } from 'pino';
import { MessageType, Prop } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import {
  afterHandler,
  eventKey,
  FAILED_TO_HANDLE,
  inboxApplies,
  notification,
  replayHandledEffects,
  route,
  truncateDescription,
} from './decide.ts';
import type { DecisionEnv, Invocation } from './decide.ts';
import type { FailureDispositionClassifier } from './dispositions.ts';
import { createHandoffToken } from './handoffToken.ts';
import { retryEverythingClassifier } from './dispositions.ts';
import type { Effect, Settlement, Signal } from './effects.ts';
import {
  errorMessage,
  errorTypeName,
  isCancellationOf,
  MessageAlreadyDeadLetteredError,
  PermanentFailureError,
  TransientError,
} from './errors.ts';
import type { HandlerContext, HandlerRegistry } from './handlers.ts';
import { HandoffRecorder } from './handlers.ts';
import { toOutcome } from './handlerOutcome.ts';
import type { HandlerResult } from './handlerOutcome.ts';
import { authoritativeEventTypeId, fromReceived, originatingIdOf } from './inbound.ts';
import type { InboundMessage, ReceivedLike } from './inbound.ts';
import type { OutgoingMessage } from './outbound.ts';
import { composePipeline } from './pipeline.ts';
import type { LifecycleObserver, MessageInfo, PipelineBehavior, PipelineContext } from './pipeline.ts';
import type { RetryPolicies } from './retryPolicies.ts';
import { Inbox, inboxKey } from './inbox.ts';
import type { InboxStore } from './inbox.ts';
import { validationBehavior } from './validation.ts';
import {
  attemptOf,
  DEFAULT_MAX_DELIVERY_COUNT,
  DELIVERY_BUDGET_SPENT,
  isLastDelivery,
} from './deliveryBudget.ts';
import { SDK_VERSION } from './version.ts';

/** What a delivery needs from the broker. Implemented over a session receiver and the endpoint's sender. */
export interface DeliveryPort {
  readState(): Promise<SessionState>;
  writeState(state: SessionState): Promise<void>;
  send(message: OutgoingMessage): Promise<void>;
  schedule(message: OutgoingMessage, delayMs: number): Promise<void>;
  complete(): Promise<void>;
  deadLetter(reason: string, description: string): Promise<void>;
  /**
   * True when the lock this delivery was received under has already expired. A settlement under a lost lock
   * would tell the Resolver an outcome that a redelivery (possibly already running elsewhere) may contradict.
   */
  lockLost?(): boolean;
  /**
   * True once a broker call of this delivery was given up (it did not answer within the host's bound: the
   * connection is presumably lost). The delivery is then left for redelivery as a connection problem, not counted
   * as the handler's failure (no onMessageFailed), except on the last delivery, which still takes the budget path.
   */
  linkLost?(): boolean;
}

export interface DispatcherOptions {
  endpointId: string;
  handlers: HandlerRegistry;
  classifier?: FailureDispositionClassifier;
  retryPolicies?: RetryPolicies;
  behaviors?: readonly PipelineBehavior[];
  observers?: readonly LifecycleObserver[];
  /** Opt-in idempotent consumer: MessageIds handled successfully are answered DuplicateDetected next time. */
  inbox?: InboxStore;
  /** The built-in validation behaviour (EventId, EventTypeId on EventRequest); on by default. */
  validation?: boolean;
  /**
   * The subscription's MaxDeliveryCount (default 10, what packages/sdk/src/topology provisions). A transient outcome on the
   * delivery this count ends with is dead-lettered by the SDK itself, with a Resolver notification, instead of
   * being left to the broker's silent MaxDeliveryCountExceeded.
   */
  maxDeliveryCount?: number;
  logger?: Logger;
  sdkVersion?: string;
  now?: () => Date;
  random?: () => number;
}

/**
 * How a delivery ended, for the caller (host logs, tests). `shortCircuited`: a behaviour did not call next() and the
 * delivery was settled as a success without the handler (the circuit breaker does not count it: nothing ran).
 */
export type DeliveryResult = Signal | 'middlewareDeadLettered' | 'shortCircuited';

/** Carries a non-completed settlement out through the pipeline (behaviours see it as a throw, like the reference). */
class Settled extends Error {
  readonly settlement: Settlement;
  constructor(settlement: Settlement) {
    super(`delivery settled: ${settlement.signal}`);
    this.settlement = settlement;
  }
  get signal(): Signal {
    return this.settlement.signal;
  }
}

export class Dispatcher {
  private readonly log: Logger;
  private readonly classifier: FailureDispositionClassifier;
  private readonly behaviors: readonly PipelineBehavior[];
  private readonly now: () => Date;
  private readonly inbox: Inbox | undefined;

  private readonly options: DispatcherOptions;

  constructor(options: DispatcherOptions) {
    this.options = options;
    this.inbox = options.inbox ? new Inbox(options.inbox) : undefined;
    this.log = options.logger ?? pino({ level: 'silent' });
    this.classifier = options.classifier ?? retryEverythingClassifier;
    this.behaviors = [
      ...(options.validation === false ? [] : [validationBehavior]),
      ...(options.behaviors ?? []),
    ];
    this.now = options.now ?? (() => new Date());
  }

  async dispatch(received: ReceivedLike, port: DeliveryPort, signal: AbortSignal): Promise<DeliveryResult> {
    return (await this.dispatchDetailed(received, port, signal)).result;
  }

  /** As dispatch, plus the error behind a failed, transient or dead-lettered result (for the circuit breaker). */
  async dispatchDetailed(
    received: ReceivedLike,
    port: DeliveryPort,
    signal: AbortSignal,
  ): Promise<{ result: DeliveryResult; error?: unknown }> {
    const m = fromReceived(received);
    const info = messageInfo(m);
    let deadLetteredByBehavior: { reason: string; description: string } | undefined;
    /** A ctx.deadLetter the broker refused, for a behaviour that caught it and returned without next(). */
    let deadLetterFailure: unknown;
    let terminalRan = false;
    let terminalResult: Signal | undefined;
    /** The terminal step's settlement, once its effects ran (a behaviour may throw after it). */
    let terminalSettlement: Settlement | undefined;
    const ctx: PipelineContext = {
      endpointId: this.options.endpointId,
      message: info,
      signal,
      deadLetter: async (reason, description) => {
        const text = truncateDescription(description ?? reason);
        deadLetterFailure = undefined;
        try {
          await port.deadLetter(reason, text);
        } catch (error) {
          deadLetterFailure = error;
          throw error;
        }
        deadLetteredByBehavior = { reason, description: text };
      },
    };
    await this.observe('onMessageReceived', (o) => o.onMessageReceived?.(info));
    try {
      const terminal = async () => {
        terminalRan = true;
        const settlement = await this.decideAndSettle(m, port, signal);
        terminalResult = settlement.signal;
        terminalSettlement = settlement;
        if (settlement.signal !== 'completed') throw new Settled(settlement);
      };
      await composePipeline(this.behaviors, ctx, terminal)();
      if (deadLetteredByBehavior) {
        // A behaviour dead-lettered the message and returned: the message is settled (nothing to hold or redeliver),
        // and the Resolver is told as when the behaviour throws MessageAlreadyDeadLetteredError. Before, it was
        // reported completed (or short-circuited, and the session held) with no notification: the row stayed Pending.
        const { reason, description } = deadLetteredByBehavior;
        const error = new MessageAlreadyDeadLetteredError(reason);
        return { result: await this.behaviourDeadLettered(error, m, info, port, reason, description), error };
      }
      if (!terminalRan) {
        // A behaviour meant to refuse the message, its dead-letter failed and it returned anyway: not a success to
        // complete (the message would be gone, recorded Completed), but a transient outcome - redelivered, so the
        // behaviour's dead-letter is tried again, and on the last delivery the budget path dead-letters it.
        if (deadLetterFailure !== undefined)
          throw new TransientError(`a behaviour's dead-letter failed: ${errorMessage(deadLetterFailure)}`, { cause: deadLetterFailure });
        await this.settleShortCircuit(m, port, signal);
        await this.observe('onMessageCompleted', (o) => o.onMessageCompleted?.(info));
        return { result: 'shortCircuited' };
      }
      await this.observe('onMessageCompleted', (o) => o.onMessageCompleted?.(info));
      return { result: terminalResult ?? 'completed' };
    } catch (error) {
      // A behaviour that threw after the terminal step settled the message (completed, parked, failed and blocked, or
      // dead-lettered it): the settlement stands. The ladder would tell the Resolver "Failed to handle message." over
      // the answer it has and dead-letter a message the broker no longer holds.
      const rethrown = error instanceof Settled && error.settlement === terminalSettlement;
      if (terminalSettlement && settlesMessage(terminalSettlement) && !rethrown) {
        const result = await this.behaviourFailedAfterSettlement(error, m, info, terminalSettlement);
        return { result, error: terminalSettlement.error ?? error };
      }
      const result = await this.ladder(error, m, info, port, signal, deadLetteredByBehavior);
      return { result, error: error instanceof Settled ? error.settlement.error : error };
    }
  }

  /**
   * What a behaviour threw after the message was settled: logged and reported to observers (onMessageFailed with the
   * behaviour's error; onMessageDeadLettered too when the settlement dead-lettered the message, as it did). Nothing
   * is sent and nothing settled: no notification contradicting the Resolver's answer, no dead-letter, not transient
   * (nothing comes back). The delivery ends with its settlement's signal.
   */
  private async behaviourFailedAfterSettlement(
    error: unknown,
    m: InboundMessage,
    info: MessageInfo,
    settlement: Settlement,
  ): Promise<DeliveryResult> {
    this.log.warn(
      { ...logFields(m), outcome: settlement.signal, err: errorSummary(error) },
      'a behaviour threw after the message was settled: the settlement stands, nothing else is settled or sent',
    );
    await this.observe('onMessageFailed', (o) => o.onMessageFailed?.(info, error));
    if (settlement.signal === 'deadLettered') {
      const reason = lastDeadLetterReason(settlement) ?? FAILED_TO_HANDLE;
      await this.observe('onMessageDeadLettered', (o) => o.onMessageDeadLettered?.(info, reason));
    }
    return settlement.signal;
  }

  /**
   * A behaviour returned without calling next(): the specification's "short-circuit success for known idempotent
   * no-ops". The delivery is settled as if the handler had run and returned - the same decision and effects as a
   * success (ResolutionResponse and completion; a retry or resubmission releases the session and replays; a replayed
   * copy moves the drain cursor), and a delivery that must not run yet (session blocked, draining) is parked as any
   * other - only the handler is not invoked. Before, nothing was settled: the message came back until its deliveries
   * were spent, and the broker dead-lettered it silently (MaxDeliveryCountExceeded) with the Resolver row Pending.
   * A settlement that does not complete (parked, transient) goes to the ladder like the handler's own.
   */
  private async settleShortCircuit(m: InboundMessage, port: DeliveryPort, signal: AbortSignal): Promise<void> {
    this.log.debug(logFields(m), 'a behaviour did not call next(): settled as a success without the handler');
    const settlement = await this.decideAndSettle(m, port, signal, { runHandler: false });
    if (settlement.signal !== 'completed') throw new Settled(settlement);
  }

  /** The outer catch ladder: what escaped the pipeline decides the remaining settlement and observers. */
  private async ladder(
    error: unknown,
    m: InboundMessage,
    info: MessageInfo,
    port: DeliveryPort,
    signal: AbortSignal,
    /** What a behaviour dead-lettered the message with (ctx.deadLetter), if it did. */
    deadLetteredByBehavior: { reason: string; description: string } | undefined,
  ): Promise<DeliveryResult> {
    if (error instanceof Settled) {
      const settled = error.settlement;
      if (error.signal === 'deadLettered') {
        await this.observe('onMessageFailed', (o) => o.onMessageFailed?.(info, settled?.error));
        const reason = lastDeadLetterReason(settled) ?? FAILED_TO_HANDLE;
        await this.observe('onMessageDeadLettered', (o) => o.onMessageDeadLettered?.(info, reason));
      } else if (error.signal === 'transient') {
        if (this.lastDelivery(m)) return this.budgetSpent(settled.error, m, info, port);
        await this.observe('onMessageFailed', (o) => o.onMessageFailed?.(info, settled?.error));
      } else if (error.signal === 'cancelled' && this.lastDelivery(m)) {
        return this.cancelledOnLastDelivery(m, info, port, signal);
      }
      // deferred, handlerFailed and cancelled: nothing after OnMessageReceived.
      return error.signal;
    }
    if (isCancellationOf(error, signal))
      return this.lastDelivery(m) ? this.cancelledOnLastDelivery(m, info, port, signal) : 'cancelled';
    if (error instanceof TransientError) {
      if (this.lastDelivery(m)) return this.budgetSpent(error, m, info, port);
      if (port.linkLost?.()) {
        // The host logs what was given up and gives the session up; the handler did not fail.
        this.log.debug({ ...logFields(m), err: errorSummary(error) }, 'broker call given up: left for redelivery');
        return 'transient';
      }
      this.log.warn({ ...logFields(m), err: errorSummary(error) }, 'transient failure: left for redelivery');
      await this.observe('onMessageFailed', (o) => o.onMessageFailed?.(info, error));
      return 'transient';
    }
    const env = this.env(new Date());
    if (error instanceof MessageAlreadyDeadLetteredError || deadLetteredByBehavior !== undefined) {
      // The reason and description the message was dead-lettered with, when the behaviour used ctx.deadLetter (as on
      // the returning path): the error's text is only what it threw.
      const reason = deadLetteredByBehavior?.reason ?? errorMessage(error);
      const description = deadLetteredByBehavior?.description ?? errorMessage(error);
      return this.behaviourDeadLettered(error, m, info, port, reason, description);
    }
    // A behaviour threw (or a permanent failure escaped it): notification, then the dead-letter.
    await this.observe('onMessageFailed', (o) => o.onMessageFailed?.(info, error));
    const reason =
      error instanceof PermanentFailureError
        ? `Permanent failure: ${errorTypeName(error)}: ${errorMessage(error)}`
        : FAILED_TO_HANDLE;
    const description = truncateDescription(errorMessage(error) || reason);
    await this.runBestEffort(notification(m, env, reason, description, error), port, m);
    try {
      await port.deadLetter(truncateDescription(reason), description);
    } catch (settleError) {
      this.log.warn(
        { ...logFields(m), err: errorSummary(settleError) },
        'dead-letter after a pipeline failure did not complete; the lock will expire',
      );
      await this.observe('onMessageFailed', (o) => o.onMessageFailed?.(info, settleError));
      return 'transient';
    }
    // A replayed copy still counts as handled for the drain, or the session would wait for it forever; when it ends
    // its pass, the next pass is asked for. After the dead-letter, not before: a cursor written first and a
    // dead-letter that then failed made the redelivery a copy "already handled", completed - the payload lost.
    await this.settleReplay(m, port);
    this.log.warn({ ...logFields(m), reason }, 'dead-lettered after a pipeline failure');
    await this.observe('onMessageDeadLettered', (o) => o.onMessageDeadLettered?.(info, reason));
    return 'deadLettered';
  }

  /** A message a behaviour dead-lettered itself (ctx.deadLetter): the Resolver notification only, then observers. */
  private async behaviourDeadLettered(
    error: unknown,
    m: InboundMessage,
    info: MessageInfo,
    port: DeliveryPort,
    reason: string,
    description: string,
  ): Promise<DeliveryResult> {
    await this.observe('onMessageFailed', (o) => o.onMessageFailed?.(info, error));
    await this.runBestEffort(notification(m, this.env(new Date()), reason, description), port, m);
    // A replayed copy dead-lettered by a behaviour still counts as handled for the drain (and may end its pass).
    await this.settleReplay(m, port);
    await this.observe('onMessageDeadLettered', (o) => o.onMessageDeadLettered?.(info, reason));
    return 'middlewareDeadLettered';
  }

  /**
   * The replay bookkeeping of a dead-lettered replayed copy: after the dead-letter of a behaviour, of the catch
   * ladder or of the budget path (a cursor moved past a copy still on the queue loses it). Best effort: a
   * cursor left behind is caught up by the next copy handled or the pass-end marker of a pass that finds nothing.
   */
  private async settleReplay(m: InboundMessage, port: DeliveryPort): Promise<void> {
    if (m.messageType !== MessageType.EventRequest || m.replaySequence === undefined) return;
    try {
      await this.execute(replayHandledEffects(m, await port.readState(), this.env(new Date())), port, m);
    } catch (error) {
      this.log.warn(
        { ...logFields(m), err: errorSummary(error) },
        'replay cursor not advanced after a dead-lettered replayed copy; the next copy or the pass end skips it with a ReplayGap notice',
      );
    }
  }

  private lastDelivery(m: InboundMessage): boolean {
    return isLastDelivery(m.deliveryCount, this.options.maxDeliveryCount ?? DEFAULT_MAX_DELIVERY_COUNT);
  }

  /**
   * A cancelled delivery (the host stopping, the endpoint circuit opening) on the last delivery the subscription
   * allows. Cancelled is left unsettled so that the message comes back - but releasing its session counts the delivery
   * (as an abandon or a lock expiry would: the broker has no way to give a delivery back uncounted), and on the last
   * one the broker dead-letters it silently (MaxDeliveryCountExceeded) with the Resolver row Pending. So it takes the
   * budget path a transient outcome takes; its description says it was cancelled and why.
   */
  private cancelledOnLastDelivery(
    m: InboundMessage,
    info: MessageInfo,
    port: DeliveryPort,
    signal: AbortSignal,
  ): Promise<DeliveryResult> {
    const reason: unknown = signal.reason;
    const cause = reason instanceof Error ? reason : new Error(typeof reason === 'string' ? reason : 'cancelled');
    return this.budgetSpent(cause, m, info, port, 'was cancelled');
  }

  /**
   * A transient outcome on the last delivery the subscription allows. Left unsettled, the broker would dead-letter
   * it at lock expiry without telling anyone, and the Resolver's row would stay Pending. So it takes the
   * specification's dead-letter path: the notification first (best effort), then the dead-letter with the same
   * reason the broker would have used. A replayed copy then advances the drain cursor when the state can be read.
   */
  private async budgetSpent(
    error: unknown,
    m: InboundMessage,
    info: MessageInfo,
    port: DeliveryPort,
    ended: 'ended transient' | 'was cancelled' = 'ended transient',
  ): Promise<DeliveryResult> {
    const max = this.options.maxDeliveryCount ?? DEFAULT_MAX_DELIVERY_COUNT;
    const reason = DELIVERY_BUDGET_SPENT;
    const description = truncateDescription(
      `Delivery ${attemptOf(m.deliveryCount)} of ${max} ${ended}: ${errorMessage(error) || errorTypeName(error)}`,
    );
    await this.observe('onMessageFailed', (o) => o.onMessageFailed?.(info, error));
    await this.runBestEffort(notification(m, this.env(new Date()), reason, description, error), port, m);
    try {
      await port.deadLetter(reason, description);
    } catch (settleError) {
      this.log.warn(
        { ...logFields(m), err: errorSummary(settleError) },
        'dead-letter after the last delivery did not complete; the broker dead-letters it at lock expiry',
      );
      return 'transient';
    }
    // A replayed copy advances the drain cursor after the dead-letter, not before (as on the ladder's path): the SDK's
    // budget can end before the subscription's, and a cursor written before a dead-letter that then failed made the
    // redelivery a copy "already handled", completed - the payload lost.
    await this.settleReplay(m, port);
    this.log.warn({ ...logFields(m), reason, ended }, 'dead-lettered: delivery budget spent');
    await this.observe('onMessageDeadLettered', (o) => o.onMessageDeadLettered?.(info, reason));
    return 'deadLettered';
  }

  /** Reads the state, decides, runs the handler when asked, and executes the settlement. */
  private async decideAndSettle(
    m: InboundMessage,
    port: DeliveryPort,
    signal: AbortSignal,
    /** false: a behaviour short-circuited; the handler's place is taken by a success. */
    { runHandler = true }: { runHandler?: boolean } = {},
  ): Promise<Settlement> {
    // The reads that choose a path observe the stop signal; nothing after the handler does.
    if (signal.aborted)
      return { effects: [], signal: 'cancelled', note: 'processor stopping before the delivery started' };
    let state: SessionState;
    try {
      state = await port.readState();
    } catch (error) {
      throw new TransientError(`session state could not be read: ${errorMessage(error)}`, { cause: error });
    }
    // The inbox pre-check comes before the session guards: a duplicate is answered, never parked.
    const key = this.inbox && inboxApplies(m) ? inboxKey(this.options.endpointId, m.messageId) : undefined;
    const duplicate = key !== undefined && (await this.inbox!.isDuplicate(key));
    const startedAt = this.now();
    const first = route(m, state, this.env(startedAt), { duplicate });
    let settlement: Settlement;
    if (first.kind === 'settle') {
      settlement = first.settlement;
    } else {
      const result: HandlerResult = runHandler ? await this.invoke(m, first.invocation, signal) : { ok: true };
      const outcome = toOutcome(result, {
        classifier: this.classifier,
        eventTypeId: first.invocation.eventTypeId,
        endpointId: this.options.endpointId,
        signal,
      });
      // A handler that outlived the session lock (renewal off or failing) no longer owns the session: the broker
      // has made the message available again, and a redelivery may already be settling it. Sending this outcome
      // would let a stale answer overwrite the real one on the Resolver, so nothing is settled; the redelivery
      // decides. That includes the inbox: recording the key here would turn the redelivery into a duplicate, and the
      // Resolver would only ever see a SkipResponse for an event that was handled. (The check narrows the window to
      // the settlement itself; the broker refuses the state write and the completion past it anyway.)
      if (port.lockLost?.())
        throw new TransientError('the session lock expired while the handler ran; left for redelivery');
      if (key !== undefined && outcome.kind === 'success' && !outcome.handoff) {
        // Recorded before the settlement: a crash after this point makes the redelivery a duplicate, not a rerun.
        await this.inbox!.record(key, this.now());
        // A successful resubmission of the blocker also covers the delivery that blocked the session.
        const blockerKey =
          m.messageType === MessageType.ResubmissionRequest &&
          state.BlockedByEventId === eventKey(m) &&
          state.BlockedByMessageId
            ? inboxKey(this.options.endpointId, state.BlockedByMessageId)
            : undefined;
        if (blockerKey) await this.inbox!.record(blockerKey, this.now());
      }
      settlement = afterHandler(m, state, outcome, this.env(startedAt));
    }
    try {
      await this.execute(settlement.effects, port, m);
    } catch (error) {
      if (!(error instanceof StepAfterCompletion)) throw error;
      // The message is settled: the delivery keeps its own outcome (no transient path, no budget dead-letter of a
      // completed message, no hold), and what was left undone is said as such.
      this.log.warn(
        { ...logFields(m), step: error.effect.kind, err: errorSummary(error.cause) },
        afterCompletionFailure(error.effect),
      );
      return settlement;
    }
    this.log[settlement.warn ? 'warn' : 'debug'](
      { ...logFields(m), outcome: settlement.signal, note: settlement.note },
      'delivery settled',
    );
    return settlement;
  }

  private async invoke(
    m: InboundMessage,
    invocation: Invocation,
    signal: AbortSignal,
  ): Promise<HandlerResult> {
    const recorder = new HandoffRecorder(this.now);
    const ctx: HandlerContext = {
      endpointId: this.options.endpointId,
      messageId: m.messageId,
      // The validation behaviour dead-letters a delivery without EventId; with it turned off the event is keyed by
      // its MessageId, as the session's block is (eventKey).
      eventId: eventKey(m),
      eventTypeId: invocation.eventTypeId,
      messageType: m.messageType,
      // Main subscriptions require sessions: every delivery has one.
      sessionId: m.sessionId ?? '',
      correlationId: m.correlationId,
      parentMessageId: m.parentMessageId,
      originatingMessageId: originatingIdOf(m),
      from: m.from,
      retryCount: m.retryCount,
      signal,
      markPendingHandoff: (reason, externalJobId, expectedBy) => {
        recorder.record(reason, externalJobId, expectedBy);
        // The coordinates the settlement must name: this delivery parked the handoff.
        return createHandoffToken({
          endpointId: this.options.endpointId,
          eventId: eventKey(m),
          sessionId: m.sessionId ?? '',
          messageId: m.messageId,
          eventTypeId: invocation.eventTypeId,
          ...(m.correlationId !== undefined ? { correlationId: m.correlationId } : {}),
          originatingMessageId: originatingIdOf(m),
        });
      },
    };
    try {
      await this.options.handlers.invoke(invocation.eventTypeId, invocation.payload, ctx);
      return recorder.mark ? { ok: true, handoff: recorder.mark } : { ok: true };
    } catch (error) {
      return { ok: false, error };
    }
  }

  /**
   * Runs the effects in order. A failing required step leaves the rest undone and the delivery to redelivery - unless
   * the message was settled already (completed or dead-lettered): then nothing comes back, so the failure is not
   * transient (StepAfterCompletion).
   */
  private async execute(effects: readonly Effect[], port: DeliveryPort, m: InboundMessage): Promise<void> {
    let completed = false;
    for (const effect of effects) {
      if (effect.kind === 'send' && effect.bestEffort) {
        await this.runBestEffort(effect, port, m);
        continue;
      }
      try {
        await this.apply(effect, port);
      } catch (error) {
        if (completed) throw new StepAfterCompletion(effect, error);
        throw new TransientError(`settlement step '${effect.kind}' failed: ${errorMessage(error)}`, {
          cause: error,
        });
      }
      if (effect.kind === 'complete' || effect.kind === 'deadLetter') completed = true;
    }
  }

  private async apply(effect: Effect, port: DeliveryPort): Promise<void> {
    switch (effect.kind) {
      case 'send':
        return port.send(effect.message);
      case 'schedule':
        return port.schedule(effect.message, effect.delayMs);
      case 'setState':
        return port.writeState(effect.state);
      case 'complete':
        return port.complete();
      case 'deadLetter':
        return port.deadLetter(effect.reason, effect.description);
    }
  }

  /** The dead-letter notification: a failed send is logged, never fatal (the DLQ stays the source of truth). */
  private async runBestEffort(effect: Effect, port: DeliveryPort, m: InboundMessage): Promise<void> {
    try {
      await this.apply(effect, port);
    } catch (error) {
      this.log.warn(
        { ...logFields(m), err: errorSummary(error) },
        'dead-letter notification to the Resolver failed; dead-lettering anyway',
      );
    }
  }

  private env(startedAt: Date): DecisionEnv {
    const policies = this.options.retryPolicies;
    const random = this.options.random ?? Math.random;
    return {
      endpointId: this.options.endpointId,
      clock: { startedAt, now: this.now() },
      sdkVersion: this.options.sdkVersion ?? SDK_VERSION,
      newId: () => randomUUID(),
      hasHandler: (t) => this.options.handlers.has(t),
      nextRetry: policies
        ? (error, eventTypeId, retryCount) => policies.nextRetry(error, eventTypeId, retryCount, random)
        : undefined,
    };
  }

  private async observe(
    hook: string,
    call: (o: LifecycleObserver) => void | Promise<void> | undefined,
  ): Promise<void> {
    for (const observer of this.options.observers ?? []) {
      try {
        await call(observer);
      } catch (error) {
        this.log.warn({ hook, err: errorSummary(error) }, 'lifecycle observer failed (ignored)');
      }
    }
  }
}

/**
 * A settlement step that failed after the message was completed. Not a TransientError: the broker has nothing to
 * redeliver, so the transient path (onMessageFailed, the hold, the budget dead-letter on the last delivery) would
 * report a redelivery that never comes, and on the last delivery dead-letter a message that is gone.
 */
class StepAfterCompletion extends Error {
  readonly effect: Effect;
  constructor(effect: Effect, cause: unknown) {
    super(`settlement step '${effect.kind}' failed after the completion: ${errorMessage(cause)}`, { cause });
    this.effect = effect;
  }
}

/** What a step left undone after the completion (or dead-letter) means for the event (the log line's message). */
function afterCompletionFailure(effect: Effect): string {
  // Only a replayed copy writes the session state after its dead-letter: its replay cursor (see deadLetterWith).
  if (effect.kind === 'setState')
    return 'replay cursor not advanced after the dead-letter of a replayed copy; the next copy or its pass end skips it with a ReplayGap notice';
  if (effect.kind === 'schedule' && effect.message.applicationProperties[Prop.MessageType] === MessageType.RetryRequest)
    return (
      'the RetryRequest was not scheduled (its schedule failed after the message was completed): the event stays ' +
      'Failed and its session blocked until an operator resubmits or skips it'
    );
  return `settlement step '${effect.kind}' failed after the message was completed: it is not redelivered, the step is not retried`;
}

/** True when the settlement's effects completed or dead-lettered the message: nothing comes back to redeliver. */
function settlesMessage(settlement: Settlement): boolean {
  return settlement.effects.some((e) => e.kind === 'complete' || e.kind === 'deadLetter');
}

function lastDeadLetterReason(settlement: Settlement | undefined): string | undefined {
  const dl = settlement?.effects.find(
    (e): e is Extract<Effect, { kind: 'deadLetter' }> => e.kind === 'deadLetter',
  );
  return dl?.reason;
}

export function messageInfo(m: InboundMessage): MessageInfo {
  return {
    messageId: m.messageId,
    sessionId: m.sessionId,
    correlationId: m.correlationId,
    messageType: m.messageType,
    eventId: m.eventId,
    eventTypeId: authoritativeEventTypeId(m),
    from: m.from,
    to: m.to,
    deliveryCount: m.deliveryCount,
    retryCount: m.retryCount,
  };
}

/** Identity fields only: logs never carry bodies. */
export function logFields(m: InboundMessage): Record<string, unknown> {
  return {
    messageId: m.messageId,
    eventId: m.eventId,
    sessionId: m.sessionId,
    messageType: m.messageType,
    eventTypeId: authoritativeEventTypeId(m),
  };
}

/**
 * What a log line says about an error: its type, message and code. Broker errors are not always Error instances
 * (an AMQP error is `{ condition, description }`): those keep their name, description and condition instead of
 * reading as type "object" with the whole object as JSON.
 */
export function errorSummary(error: unknown): { type: string; message: string; code?: string } {
  const o = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : undefined;
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const code = text(o?.code) ?? text(o?.condition);
  const type =
    error instanceof Error ? errorTypeName(error) : (text(o?.name) ?? (o ? 'BrokerError' : typeof error));
  const message =
    error instanceof Error
      ? errorMessage(error)
      : (text(o?.message) ?? text(o?.description) ?? errorMessage(error));
  return { type, message: message.slice(0, 500), ...(code !== undefined ? { code } : {}) };
}
