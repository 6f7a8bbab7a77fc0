// The decision procedure: for every message type, what a subscriber does with a delivery given the session state
// and (when the handler runs) its outcome. Pure - the host reads the state, runs the handler and executes the
// returned effects in order - so every row of the specification is unit-testable without a broker.
import {
  addPendingHandoff,
  blockedByReason,
  clearHandoffFailed,
  HEARTBEAT_EVENT_TYPE_ID,
  isBlocked,
  isDraining,
  isFailedHandoff,
  isHeartbeatEventType,
  isReleasedBlock,
  markHandoffFailed,
  MAX_PENDING_HANDOFFS,
  MessageType,
  parseEventPayload,
  pendingHandoffOf,
  pendingHandoffsFull,
  Prop,
  readHeartbeatPayload,
  rememberReleasedBlock,
  settlePendingHandoff,
  Address,
  WireText,
} from './contract/index.ts';
import type { ReleaseAnswer, SessionState } from './contract/index.ts';
import type { FailureDisposition } from './dispositions.ts';
import { attemptOf } from './deliveryBudget.ts';
import type { Effect, Settlement } from './effects.ts';
import { errorMessage, errorTypeName } from './errors.ts';
import type { InboundMessage } from './inbound.ts';
import { authoritativeEventTypeId } from './inbound.ts';
import type { Clock, OutgoingMessage } from './outbound.ts';
import {
  buildParkedCopy,
  buildProcessDeferredRequest,
  buildResponse,
  buildRetryRequest,
  deriveId,
  errorContentOf,
} from './outbound.ts';
import type { ScheduledRetry } from './retryPolicies.ts';

export interface HandoffMark {
  reason: string;
  externalJobId?: string | undefined;
  expectedBy?: Date | undefined;
}

/** What running the user handler produced (or, for content problems, what stands in for running it). */
export type HandlerOutcome =
  | { kind: 'success'; handoff?: HandoffMark }
  | { kind: 'failed'; error: unknown; disposition: FailureDisposition; classifierName: string }
  | { kind: 'notFound' }
  | { kind: 'permanent'; error: unknown }
  | { kind: 'transient'; error: unknown }
  | { kind: 'cancelled' };

export interface DecisionEnv {
  endpointId: string;
  clock: Clock;
  sdkVersion: string;
  /** A fresh MessageId for a response. */
  newId: () => string;
  hasHandler: (eventTypeId: string) => boolean;
  /** The retry to schedule after a Retry-disposition failure; undefined when no policy matches or budget is spent. */
  nextRetry?:
    | ((error: unknown, eventTypeId: string | undefined, retryCount: number) => ScheduledRetry | undefined)
    | undefined;
}

export interface Invocation {
  eventTypeId: string;
  payload: unknown;
}

export type Route = { kind: 'settle'; settlement: Settlement } | { kind: 'invoke'; invocation: Invocation };

/** Reason a subscriber dead-letters anything it cannot handle at all (bad properties, foreign sender, odd type). */
export const FAILED_TO_HANDLE = 'Failed to handle message.';
const MAX_DESCRIPTION = 4096;

// ---------------------------------------------------------------------------------------------------------------
// Phase 1: before the handler.

/** Whether the inbox (when enabled) is consulted for this delivery before the session guards. */
export function inboxApplies(m: InboundMessage): boolean {
  if (m.invalid) return false;
  if (m.messageType === MessageType.EventRequest) return !isHeartbeatEventType(authoritativeEventTypeId(m));
  return m.messageType === MessageType.RetryRequest || m.messageType === MessageType.ResubmissionRequest;
}

export interface RouteOptions {
  /** The inbox says this MessageId was already handled successfully by this endpoint. */
  duplicate?: boolean;
}

/** Decides everything that does not need the handler, or says which handler to run with which payload. */
export function route(
  m: InboundMessage,
  state: SessionState,
  env: DecisionEnv,
  options: RouteOptions = {},
): Route {
  const r = routeDelivery(m, state, env, options);
  return r.kind === 'settle' ? { kind: 'settle', settlement: forgetOtherRelease(m, flagGap(r.settlement)) } : r;
}

function routeDelivery(
  m: InboundMessage,
  state: SessionState,
  env: DecisionEnv,
  options: RouteOptions,
): Route {
  if (m.invalid) return settle(deadLetterOnly(m, env, FAILED_TO_HANDLE, m.invalid, state));
  if (
    options.duplicate &&
    inboxApplies(m) &&
    !(m.messageType === MessageType.ResubmissionRequest && !fromManager(m))
  ) {
    return settle(duplicate(m, state, env));
  }
  switch (m.messageType) {
    case MessageType.EventRequest:
      return routeEventRequest(m, state, env);
    case MessageType.RetryRequest: {
      // Only the delivery the session is blocked by is retried; anything else was already resolved by an
      // operator (skip, resubmit) or a handoff settlement. It is completed without running the handler and without
      // a response: a ResolutionResponse would record Completed for an event whose handler never ran (a skipped
      // event would turn Completed). The Resolver keeps the retry in the event's history; its guard refuses it
      // over Completed and Skipped, so the row keeps the outcome that settled it.
      // A redelivery of the retry that released the session is not late either: its settlement was interrupted after
      // the release. It finishes the replay request and the recorded answer without running the handler again: a
      // second run could fail or mark a handoff over a row the Resolver has already closed, and block the session.
      if (!blockedByThis(state, m) && releasedByThis(state, m))
        return settle(finishRetryRelease(m, state, env));
      if (!blockedByThis(state, m)) {
        return settle({
          effects: [{ kind: 'complete' }],
          signal: 'completed',
          note: 'late RetryRequest for an event that no longer blocks the session: completed without a response',
        });
      }
      // A copy of the retry that handed off (its handoff blocks the session under this MessageId, or did): completed
      // as a resubmission's copy is. Run again, it started a second external job for one scheduled retry.
      if (handedOffByThis(state, m)) return settle(handoffCopy(m));
      return invokeOrSettle(m, state, env);
    }
    case MessageType.ResubmissionRequest:
    case MessageType.SkipRequest:
    case MessageType.HandoffCompletedRequest:
    case MessageType.HandoffFailedRequest: {
      if (!fromManager(m)) {
        const description = `${m.messageType} is accepted only from Manager (From = ${m.from ? `'${m.from}'` : 'missing'})`;
        return settle(refuse(m, env, description));
      }
      if (m.messageType === MessageType.ResubmissionRequest) {
        if (handedOffByThis(state, m)) return settle(handoffCopy(m));
        return invokeOrSettle(m, state, env);
      }
      if (m.messageType === MessageType.SkipRequest) return settle(decideSkip(m, state, env));
      if (m.messageType === MessageType.HandoffCompletedRequest)
        return settle(decideHandoffCompleted(m, state, env));
      return settle(decideHandoffFailed(m, state, env));
    }
    case MessageType.ProcessDeferredRequest:
      // Only the deferred processor's pass-end marker belongs on the main subscription; a trigger does not.
      if (m.replayPassEnd && m.replayUntil !== undefined) return settle(decideReplayPassEnd(m, state, env));
      return settle(
        deadLetterOnly(
          m,
          env,
          FAILED_TO_HANDLE,
          'ProcessDeferredRequest is not handled by a subscriber',
          state,
        ),
      );
    case MessageType.ContinuationRequest:
      // Legacy broker-defer drain, removed in v4: logged and completed.
      return settle({
        effects: [{ kind: 'complete' }],
        signal: 'completed',
        note: 'legacy ContinuationRequest completed',
      });
    default: {
      const description = `MessageType '${m.messageType ?? 'missing'}' is not handled by a subscriber`;
      return settle(deadLetterOnly(m, env, FAILED_TO_HANDLE, description, state));
    }
  }
}

function routeEventRequest(m: InboundMessage, state: SessionState, env: DecisionEnv): Route {
  // The heartbeat is answered before anything that could park or refuse it.
  const typeId = authoritativeEventTypeId(m);
  if (isHeartbeatEventType(typeId)) return settle(heartbeatReply(m, env));

  const s = m.replaySequence;
  if (s !== undefined && s < state.NextReplaySequence) {
    // A second replayed copy of a sequence already handled (a crash between replay-send and complete). If it ends
    // its pass, the rest of the pass is accounted for like any pass end.
    return settle({
      effects: [
        ...replayGap(m, state, env),
        ...stateAndReplayTrigger(m, state, advanceReplay(state, m)),
        { kind: 'complete' },
      ],
      signal: 'completed',
      note: `replayed copy of sequence ${s} already handled`,
    });
  }
  if (isBlocked(state)) {
    if (state.BlockedByEventId === eventKey(m)) {
      // A delivery of the blocking event itself: its earlier delivery blocked the session but was never completed
      // (or this is a second copy). Completed without running the handler and without a response.
      const next = advanceReplay(state, m);
      const effects: Effect[] = [...replayGap(m, state, env)];
      if (next !== state) effects.push({ kind: 'setState', state: next });
      effects.push({ kind: 'complete' });
      return settle({ effects, signal: 'completed', note: 'delivery of the blocking event itself' });
    }
    // The text is the contract's: the console reads the blocker back out of it (server/heldBack.ts).
    return settle(park(m, state, env, blockedByReason(m.sessionId ?? '', state.BlockedByEventId ?? '')));
  }
  if (s === undefined && isDraining(state)) {
    return settle(park(m, state, env, `Session ${m.sessionId ?? ''} is replaying parked messages`));
  }
  if (s !== undefined && !m.reparked && s < state.ReparkedUntil) {
    // Parked while the replay of earlier messages was under way, one of which met a block and was parked again with
    // a higher sequence than this one: it runs first, so this copy goes behind it.
    return settle(
      park(
        m,
        state,
        env,
        `Session ${m.sessionId ?? ''} is replaying a message parked before this one and parked again since`,
      ),
    );
  }
  return invokeOrSettle(m, state, env);
}

function invokeOrSettle(m: InboundMessage, state: SessionState, env: DecisionEnv): Route {
  const prepared = prepareInvocation(m, env);
  if (prepared.ok) return { kind: 'invoke', invocation: prepared.invocation };
  return settle(afterHandler(m, state, prepared.outcome, env));
}

/** The content checks every handler invocation passes first: handler known, types agree, payload safe. */
export function prepareInvocation(
  m: InboundMessage,
  env: DecisionEnv,
): { ok: true; invocation: Invocation } | { ok: false; outcome: HandlerOutcome } {
  // A property and body that disagree make the message malformed whichever of the two names a handled type, so this
  // comes before the handler lookup: otherwise an unhandled property type would be answered Unsupported and
  // completed, hiding a malformed message the specification dead-letters.
  const bodyType = m.content.EventContent?.EventTypeId;
  if (m.eventTypeIdProperty && bodyType && bodyType !== m.eventTypeIdProperty) {
    return {
      ok: false,
      outcome: {
        kind: 'permanent',
        error: new PayloadError(
          `the EventTypeId property '${m.eventTypeIdProperty}' disagrees with the body's '${bodyType}'`,
        ),
      },
    };
  }
  const typeId = authoritativeEventTypeId(m);
  if (!typeId || !env.hasHandler(typeId)) return { ok: false, outcome: { kind: 'notFound' } };
  if (m.bodyProblem)
    return { ok: false, outcome: { kind: 'permanent', error: new PayloadError(m.bodyProblem) } };
  const payload = parseEventPayload(m.content.EventContent?.EventJson);
  if (!payload.ok)
    return { ok: false, outcome: { kind: 'permanent', error: new PayloadError(payload.problem) } };
  return { ok: true, invocation: { eventTypeId: typeId, payload: payload.value } };
}

/** A wire-format problem with the message itself: always permanent, never retried. */
export class PayloadError extends Error {
  override readonly name = 'PayloadDeserializationError';
}

// ---------------------------------------------------------------------------------------------------------------
// Phase 2: after the handler.

/** The settlement of a delivery whose handler produced `outcome` (or whose content check stood in for it). */
export function afterHandler(
  m: InboundMessage,
  state: SessionState,
  outcome: HandlerOutcome,
  env: DecisionEnv,
): Settlement {
  return forgetOtherRelease(m, settleAfterHandler(m, state, outcome, env));
}

function settleAfterHandler(
  m: InboundMessage,
  state: SessionState,
  outcome: HandlerOutcome,
  env: DecisionEnv,
): Settlement {
  if (outcome.kind === 'transient')
    return {
      effects: [],
      signal: 'transient',
      error: outcome.error,
      note: 'transient failure: left for redelivery',
    };
  if (outcome.kind === 'cancelled')
    return { effects: [], signal: 'cancelled', note: 'processor stopping: left unsettled' };
  switch (m.messageType) {
    case MessageType.RetryRequest:
      return afterRetry(m, state, outcome, env);
    case MessageType.ResubmissionRequest:
      return afterResubmission(m, state, outcome, env);
    default:
      return afterEventRequest(m, state, outcome, env);
  }
}

function afterEventRequest(
  m: InboundMessage,
  state: SessionState,
  outcome: Exclude<HandlerOutcome, { kind: 'transient' | 'cancelled' }>,
  env: DecisionEnv,
): Settlement {
  const settlement = settleEventRequest(m, state, outcome, env);
  const gap = replayGap(m, state, env);
  return gap.length === 0 ? settlement : flagGap({ ...settlement, effects: [...gap, ...settlement.effects] });
}

function settleEventRequest(
  m: InboundMessage,
  state: SessionState,
  outcome: Exclude<HandlerOutcome, { kind: 'transient' | 'cancelled' }>,
  env: DecisionEnv,
): Settlement {
  const replayed = advanceReplay(state, m);
  switch (outcome.kind) {
    case 'success': {
      if (outcome.handoff) {
        const next = block(replayed, m);
        return {
          effects: [
            send(handoffResponse(m, env, outcome.handoff)),
            { kind: 'setState', state: next },
            { kind: 'complete' },
          ],
          signal: 'completed',
          note: 'pending handoff: session parked on the external job',
        };
      }
      return {
        effects: [
          send(response(MessageType.ResolutionResponse, m, env)),
          ...stateAndReplayTrigger(m, state, replayed),
          { kind: 'complete' },
        ],
        signal: 'completed',
        note: 'handled',
      };
    }
    case 'notFound':
      return {
        effects: [
          send(response(MessageType.UnsupportedResponse, m, env)),
          ...stateAndReplayTrigger(m, state, replayed),
          { kind: 'complete' },
        ],
        signal: 'completed',
        note: 'no handler for the event type',
      };
    case 'permanent':
      return deadLetterWith(m, env, outcome.error, stateAndReplayTrigger(m, state, replayed));
    case 'failed': {
      if (outcome.disposition === 'Discard') {
        return {
          effects: [
            send(discardResponse(m, env, outcome)),
            ...stateAndReplayTrigger(m, state, replayed),
            { kind: 'complete' },
          ],
          signal: 'completed',
          note: 'discarded',
        };
      }
      if (outcome.disposition === 'DeadLetter')
        return deadLetterWith(m, env, outcome.error, stateAndReplayTrigger(m, state, replayed));
      const effects: Effect[] = [
        send(errorResponse(m, env, outcome.error)),
        { kind: 'setState', state: block(replayed, m) },
        { kind: 'complete' },
      ];
      effects.push(...scheduleRetry(m, env, outcome.error));
      return {
        effects,
        signal: 'handlerFailed',
        error: outcome.error,
        note: 'handler failed: session blocked',
      };
    }
  }
}

function afterRetry(
  m: InboundMessage,
  state: SessionState,
  outcome: Exclude<HandlerOutcome, { kind: 'transient' | 'cancelled' }>,
  env: DecisionEnv,
): Settlement {
  switch (outcome.kind) {
    case 'success': {
      if (outcome.handoff) {
        return {
          effects: [
            send(handoffResponse(m, env, outcome.handoff)),
            // Only the blocking retry gets here (route() settles the others); never take over another event's block.
            ...(!isBlocked(state) || blockedByThis(state, m) ? [setState(block(state, m))] : []),
            { kind: 'complete' },
          ],
          signal: 'completed',
          note: 'retry parked a pending handoff',
        };
      }
      return {
        effects: [
          ...releaseSteps(m, state, { MessageType: MessageType.ResolutionResponse }),
          send(retryReleaseAnswer(m, env, { MessageType: MessageType.ResolutionResponse })),
          { kind: 'complete' },
        ],
        signal: 'completed',
        note: 'retry succeeded: session released',
      };
    }
    case 'notFound':
      // The handler was removed since the failure: recorded Unsupported; the block stays for the operator.
      return {
        effects: [send(response(MessageType.UnsupportedResponse, m, env)), { kind: 'complete' }],
        signal: 'completed',
        note: 'retry found no handler',
      };
    case 'permanent':
      // The session stays blocked: an operator decides (resubmit with fixed data, or skip).
      return deadLetterWith(m, env, outcome.error, []);
    case 'failed': {
      if (outcome.disposition === 'Discard') {
        const answer = discardAnswer(outcome);
        return {
          effects: [
            ...releaseSteps(m, state, answer),
            send(retryReleaseAnswer(m, env, answer)),
            { kind: 'complete' },
          ],
          signal: 'completed',
          note: 'retry discarded: session released',
        };
      }
      if (outcome.disposition === 'DeadLetter') return deadLetterWith(m, env, outcome.error, []);
      return {
        effects: [
          send(errorResponse(m, env, outcome.error)),
          { kind: 'complete' },
          ...scheduleRetry(m, env, outcome.error),
        ],
        signal: 'handlerFailed',
        error: outcome.error,
        note: 'retry failed again: session stays blocked',
      };
    }
  }
}

function afterResubmission(
  m: InboundMessage,
  state: SessionState,
  outcome: Exclude<HandlerOutcome, { kind: 'transient' | 'cancelled' }>,
  env: DecisionEnv,
): Settlement {
  const mine = blockedByThis(state, m);
  switch (outcome.kind) {
    case 'success': {
      if (outcome.handoff) {
        if (isBlocked(state) && !mine && pendingHandoffsFull(state, eventKey(m)))
          return pendingHandoffsFullDeadLetter(m, state, env, outcome.handoff);
        // Blocked by another event: that block stays, and the handoff is recorded beside it (PendingHandoffs), so
        // that its completion or failure can still be answered; otherwise the handoff parks the session on this event.
        const next =
          !isBlocked(state) || mine
            ? block(state, m)
            : clearHandoffFailed(addPendingHandoff(state, eventKey(m), m.messageId), eventKey(m), m.messageId);
        return {
          effects: [send(handoffResponse(m, env, outcome.handoff)), setState(next), { kind: 'complete' }],
          signal: 'completed',
          note:
            !isBlocked(state) || mine
              ? 'resubmission parked a pending handoff'
              : 'resubmission handed off while another event blocks the session: handoff pending beside the block',
        };
      }
      // Handled: a handoff of the event still pending beside the block is over.
      const next = mine ? release(state, m) : settlePendingHandoff(state, eventKey(m));
      const effects: Effect[] = next !== state ? [{ kind: 'setState', state: next }] : [];
      effects.push(...drain(m, next), send(response(MessageType.ResolutionResponse, m, env)), {
        kind: 'complete',
      });
      return {
        effects,
        signal: 'completed',
        note: mine ? 'resubmission succeeded: session released' : 'resubmission succeeded',
      };
    }
    case 'notFound':
      return {
        effects: [send(response(MessageType.UnsupportedResponse, m, env)), { kind: 'complete' }],
        signal: 'completed',
        note: 'resubmission found no handler',
      };
    case 'permanent':
      return deadLetterWith(m, env, outcome.error, []);
    case 'failed': {
      if (outcome.disposition === 'Discard') {
        const next = mine ? release(state, m) : settlePendingHandoff(state, eventKey(m));
        const effects: Effect[] = next !== state ? [{ kind: 'setState', state: next }] : [];
        effects.push(...drain(m, next), send(discardResponse(m, env, outcome)), { kind: 'complete' });
        return { effects, signal: 'completed', note: 'resubmission discarded' };
      }
      if (outcome.disposition === 'DeadLetter') return deadLetterWith(m, env, outcome.error, []);
      // No re-block and no scheduled retry: the operator asked for exactly one attempt.
      return {
        effects: [send(errorResponse(m, env, outcome.error)), { kind: 'complete' }],
        signal: 'handlerFailed',
        error: outcome.error,
        note: 'resubmission failed',
      };
    }
  }
}

/** Dead-letter reason of a resubmission whose handoff cannot be recorded beside the block (pendingHandoffsFull). */
export const PENDING_HANDOFFS_FULL = 'PendingHandoffsFull';

/**
 * A resubmission handed off beside another event's block while the session state already records
 * MAX_PENDING_HANDOFFS such handoffs. Recorded by forgetting the oldest (as once), that one was lost silently: its
 * row stayed Pending (Handoff) and its completion was refused. Answered PendingHandoffResponse without a record, this
 * one would be. So nothing is recorded and the resubmission is dead-lettered with a reason the operator sees (the
 * Resolver's notification makes the row DeadLettered with the text): the recorded handoffs stay settleable, and this
 * event can be resubmitted once some are settled or the blocker is skipped. The handler ran, so the external job may
 * exist: the text names it.
 */
function pendingHandoffsFullDeadLetter(
  m: InboundMessage,
  state: SessionState,
  env: DecisionEnv,
  h: HandoffMark,
): Settlement {
  const job = h.externalJobId ? `, job ${h.externalJobId}` : '';
  const description = truncateDescription(
    `the resubmission of event ${eventKey(m)} handed off (${h.reason}${job}), but session ${m.sessionId ?? ''} ` +
      `already holds ${state.PendingHandoffs.length} handoffs pending beside the block of event ` +
      `${state.BlockedByEventId ?? ''} (at most ${MAX_PENDING_HANDOFFS}): this handoff is not recorded, and its ` +
      `completion would be refused. The external job may have started. Settle or skip some of those events, or the ` +
      `blocking one, then resubmit this event`,
  );
  return {
    effects: [
      notification(m, env, PENDING_HANDOFFS_FULL, description),
      { kind: 'deadLetter', reason: PENDING_HANDOFFS_FULL, description },
    ],
    signal: 'deadLettered',
    error: new Error(description),
    // Ids only in the log line: the handoff's reason is the handler's text.
    note: `dead-lettered ${PENDING_HANDOFFS_FULL}: ${MAX_PENDING_HANDOFFS} handoffs already pending beside the block of ${state.BlockedByEventId ?? ''}`,
    warn: true,
  };
}

/**
 * The pass-end marker, sent by the deferred processor when a pass found nothing to replay (otherwise the pass's last
 * copy carries the pass end). Every replayed copy of earlier passes came before it in the session, so a cursor still
 * below the pass's bound means parked sequences that will never come back (a parked copy dead-lettered or expired on
 * the Deferred subscription, a replayed copy dead-lettered by the broker): left alone, the session would stay
 * draining and park every new message forever. The gap is skipped with a ReplayGap notice (the Resolver records it
 * in the history and audit of the event whose release started the replay) and a warning, and the next pass is asked
 * for when more was parked meanwhile. The parked events' own rows keep showing Deferred.
 */
function decideReplayPassEnd(m: InboundMessage, state: SessionState, env: DecisionEnv): Settlement {
  const until = m.replayUntil!;
  const from = state.NextReplaySequence;
  if (from >= until)
    return {
      effects: [{ kind: 'complete' }],
      signal: 'completed',
      note: `replay pass up to ${until} complete`,
    };
  const next: SessionState = { ...state, NextReplaySequence: until };
  return {
    effects: [
      gapNotice(m, env, from, until),
      { kind: 'setState', state: next },
      ...drain(m, next),
      { kind: 'complete' },
    ],
    signal: 'completed',
    note: `replay gap skipped: parked sequences ${from} to ${until - 1} did not come back`,
    warn: true,
  };
}

function decideSkip(m: InboundMessage, state: SessionState, env: DecisionEnv): Settlement {
  if (!blockedByThis(state, m) && !releasedByThis(state, m)) {
    const skip = send(response(MessageType.SkipResponse, m, env, { content: {} }));
    // Skipped, a handoff of the event pending beside the block is over.
    const next = settlePendingHandoff(state, eventKey(m));
    return {
      effects: [...(next !== state ? [setState(next)] : []), skip, { kind: 'complete' }],
      signal: 'completed',
      note: 'skip of an event that does not block the session',
    };
  }
  const skip = send(releaseAnswer(MessageType.SkipResponse, m, env, { content: {} }));
  return {
    effects: [...releaseSteps(m, state), skip, { kind: 'complete' }],
    signal: 'completed',
    note: blockedByThis(state, m)
      ? 'skipped: session released'
      : 'redelivered skip that released the session: replay and answer finished',
  };
}

function decideHandoffCompleted(m: InboundMessage, state: SessionState, env: DecisionEnv): Settlement {
  // Only the session's pending handoff can be completed: a ResolutionResponse for any other event would record
  // Completed for work the session was not waiting for (a duplicate completion, a skipped handoff, a wrong
  // address, an earlier handoff of the same event). Refused visibly instead; the Resolver keeps (or restores) the
  // row's status.
  if (namesEarlierHandoff(state, m)) return refuse(m, env, earlierHandoffRefusal(m, state));
  if (!blockedByThis(state, m) && !releasedByThis(state, m)) {
    if (namesHandoffBesideBlock(state, m)) return completeBesideBlock(m, state, env);
    const why = isBlocked(state)
      ? `the session is blocked by ${state.BlockedByEventId}`
      : 'the session is not blocked';
    return refuse(
      m,
      env,
      `HandoffCompletedRequest refused: event ${eventKey(m)} is not the pending handoff of session ${m.sessionId ?? ''} (${why})`,
    );
  }
  // The Resolver gets the external system's result as the event's content; the user handler never runs again.
  const resolution = send(
    releaseAnswer(MessageType.ResolutionResponse, m, env, {
      content: { EventContent: m.content.EventContent },
    }),
  );
  return {
    effects: [...releaseSteps(m, state), resolution, { kind: 'complete' }],
    signal: 'completed',
    note: blockedByThis(state, m)
      ? 'handoff completed: session released'
      : 'redelivered handoff completion that released the session: replay and answer finished',
  };
}

function decideHandoffFailed(m: InboundMessage, state: SessionState, env: DecisionEnv): Settlement {
  // The failure of an earlier handoff of the event is refused like its completion: answered, it would record Failed
  // over the handoff the session still waits for, and the console would then refuse that handoff's own settlement
  // (the row is no longer a handoff) while the session stays blocked by it.
  if (namesEarlierHandoff(state, m)) return refuse(m, env, earlierHandoffRefusal(m, state));
  // Likewise a handoff whose block is over: job 1's late failure after job 2 completed the event.
  if (namesReleasedHandoff(state, m)) return refuse(m, env, releasedHandoffRefusal(m, state));
  // The caller's text and type, verbatim (HandoffClient.fail(coords, errorText, errorType)).
  const error = send(
    response(MessageType.ErrorResponse, m, env, {
      content: {
        EventContent: m.content.EventContent,
        ErrorContent: {
          ErrorText: m.content.ErrorContent?.ErrorText || WireText.HandoffFailed,
          ErrorType: m.content.ErrorContent?.ErrorType || WireText.HandoffFailedErrorType,
        },
      },
    }),
  );
  // The failed handoff stays recorded, marked failed (FailedHandoffs) so that a replay of the resubmission that made
  // it runs again instead of being taken for a copy (handedOffByThis). Written before the answer: a redelivery after
  // the write finds the mark and writes nothing.
  const marked = markFailedHandoff(state, m);
  const effects: Effect[] = [...(marked !== state ? [setState(marked)] : []), error, { kind: 'complete' }];
  // Answered even when the event does not block the session (the block was lost, or the handoff was settled
  // another way): the Manager claimed the row Pending before sending, and only an answer moves it on. Failed with
  // the external system's text is true and actionable (resubmit or skip). That includes a handoff pending beside
  // another event's block (PendingHandoffs): like a blocking handoff's block, its entry stays until the operator
  // resubmits or skips the event.
  if (!blockedByThis(state, m))
    return {
      effects,
      signal: 'completed',
      note: 'handoff failure for an event that does not block the session: recorded Failed, block unchanged',
    };
  // The session stays blocked: the operator resubmits or skips.
  return { effects, signal: 'completed', note: 'handoff failed: session stays blocked' };
}

/** The state with the handoff this failure settles marked failed: the block's delivery, or the entry beside it. */
function markFailedHandoff(state: SessionState, m: InboundMessage): SessionState {
  const by = blockedByThis(state, m)
    ? state.BlockedByMessageId
    : namesHandoffBesideBlock(state, m)
      ? pendingHandoffOf(state, eventKey(m))?.MessageId
      : undefined;
  return by ? markHandoffFailed(state, eventKey(m), by) : state;
}

// ---------------------------------------------------------------------------------------------------------------
// Building blocks.

function fromManager(m: InboundMessage): boolean {
  return (m.from ?? '').toLowerCase() === Address.Manager.toLowerCase();
}

/**
 * An inbox duplicate: answered DuplicateDetected without running the handler, even on a blocked session (it is not
 * parked). A duplicate retry or resubmission of the blocker still finishes the release its first delivery began.
 */
function duplicate(m: InboundMessage, state: SessionState, env: DecisionEnv): Settlement {
  if (m.messageType !== MessageType.EventRequest && !blockedByThis(state, m) && releasedByThis(state, m)) {
    // The redelivery of a release that succeeded (the inbox records only successes) and was interrupted after its
    // state write: it finishes with the same answer, not a DuplicateDetected skip that would record Skipped.
    return {
      effects: [
        ...drain(m, state),
        send(releaseAnswer(MessageType.ResolutionResponse, m, env)),
        { kind: 'complete' },
      ],
      signal: 'completed',
      note: 'inbox duplicate of the delivery that released the session: replay and answer finished',
    };
  }
  const skip = send(
    response(MessageType.SkipResponse, m, env, {
      content: {
        EventContent: m.content.EventContent,
        ErrorContent: { ErrorText: WireText.DuplicateDetected },
      },
    }),
  );
  const effects: Effect[] = [];
  if (m.messageType === MessageType.EventRequest) {
    effects.push(...replayGap(m, state, env), ...stateAndReplayTrigger(m, state, advanceReplay(state, m)));
  } else if (blockedByThis(state, m)) {
    const next = release(state, m);
    effects.push({ kind: 'setState', state: next }, ...drain(m, next));
  } else {
    // Likewise a duplicate resubmission ends a handoff of its event pending beside the block, as its success did
    // (afterResubmission). The inbox records the success before the settlement, so when the state write after it did
    // not happen (refused, the lock lost, a crash), this duplicate is the only delivery left to end the entry. Before,
    // the entry stayed for ever: a late completion of the superseded handoff was answered Completed, and the entry
    // kept one of the MAX_PENDING_HANDOFFS places. (A retry's success never settles such an entry: only a blocking
    // retry runs.)
    // Only a redelivery does so: the message whose success the inbox recorded, come back because its settlement
    // stopped. A first delivery that is a duplicate is another copy of an older resubmission (a console dead-letter
    // replay keeps the MessageId, a Manager re-send derives the same one) that may arrive after a later resubmission
    // of the event handed off again; the entry is then that later handoff's, and settling it refused the live job's
    // completion. The entry cannot say which it is: it holds the id of the delivery that handed off, never the
    // duplicate's own (a success is not a handoff), so the delivery count is what tells them apart.
    const next =
      m.messageType === MessageType.ResubmissionRequest && attemptOf(m.deliveryCount) > 1
        ? settlePendingHandoff(state, eventKey(m))
        : state;
    if (next !== state) effects.push(setState(next));
    effects.push(...drain(m, next));
  }
  effects.push(skip, { kind: 'complete' });
  return { effects, signal: 'completed', note: 'inbox duplicate' };
}

function heartbeatReply(m: InboundMessage, env: DecisionEnv): Settlement {
  const probe = readHeartbeatPayload(m.content.EventContent?.EventJson);
  const now = env.clock.now.toISOString();
  const stamped = {
    ...probe,
    ForwardReceivedTime: now,
    BackwardSendTime: now,
    Endpoint: m.to ?? env.endpointId,
    SdkVersion: env.sdkVersion,
  };
  const reply = response(MessageType.ResolutionResponse, m, env, {
    content: { EventContent: { EventTypeId: HEARTBEAT_EVENT_TYPE_ID, EventJson: JSON.stringify(stamped) } },
    from: m.to ?? env.endpointId,
  });
  return { effects: [send(reply), { kind: 'complete' }], signal: 'completed', note: 'heartbeat answered' };
}

/** Parks a message behind the session's blocker: DeferralResponse, parked copy, state, complete. */
function park(m: InboundMessage, state: SessionState, env: DecisionEnv, text: string): Settlement {
  if (parkedAlready(state, m)) return alreadyParked(m, state);
  const sequence = state.NextDeferralSequence;
  const advanced = advanceReplay(state, m);
  const next: SessionState = {
    ...advanced,
    NextDeferralSequence: sequence + 1,
    DeferredCount: state.DeferredCount + 1,
    // A replayed copy parked again: the messages first parked below its new sequence must not overtake it.
    ...(m.replaySequence !== undefined ? { ReparkedUntil: sequence + 1 } : {}),
    ParkedBy: {
      MessageId: m.messageId,
      ...(m.sequenceNumber !== undefined ? { SequenceNumber: m.sequenceNumber } : {}),
      DeferralSequence: sequence,
    },
  };
  const deferral = response(MessageType.DeferralResponse, m, env, {
    content: {
      EventContent: m.content.EventContent,
      ErrorContent: { ErrorText: text, ErrorType: 'SessionBlockedException' },
    },
  });
  // The parked copy goes out before the state write: a crash in between re-parks the same message under the same
  // sequence and MessageId, which the replay recognises, instead of leaving a hole in the sequence.
  // Parked behind a drain (not a block), it also asks for a pass that includes it: if the pass in progress or its
  // trigger was lost, this one still replays the session, so a drain cannot outlive the traffic that waits on it.
  return {
    effects: [
      ...replayGap(m, state, env),
      send(deferral),
      send(buildParkedCopy(m, sequence)),
      { kind: 'setState', state: next },
      ...(isBlocked(state) ? [] : drain(m, next)),
      { kind: 'complete' },
    ],
    signal: 'deferred',
    note: `parked with sequence ${sequence}`,
  };
}

/**
 * This delivery parked its message already (the state names it: see ParkedBy): its completion failed after the
 * state write, and nothing of the session was settled since (its messages are settled in order). Matched by
 * MessageId and, when both are known, the broker's SequenceNumber, so a re-publish with the same MessageId is parked
 * as a message of its own.
 */
function parkedAlready(state: SessionState, m: InboundMessage): boolean {
  const p = state.ParkedBy;
  if (p == null || p.MessageId !== m.messageId) return false;
  return p.SequenceNumber === undefined || m.sequenceNumber === undefined || p.SequenceNumber === m.sequenceNumber;
}

/**
 * The redelivery of a message parked already: its DeferralResponse and parked copy went out before the state write,
 * so only what came after it is left - the replay request of a park behind a drain (same MessageId as the first:
 * it derives from the session and the bound, which have not moved) and the completion. Parking again gave the
 * message a second sequence and a second parked copy, and the replay ran its handler twice.
 */
function alreadyParked(m: InboundMessage, state: SessionState): Settlement {
  return {
    effects: [...(isBlocked(state) ? [] : drain(m, state)), { kind: 'complete' }],
    signal: 'deferred',
    note: `parked already with sequence ${state.ParkedBy?.DeferralSequence ?? '?'}: completed without parking again`,
  };
}

/**
 * Notification, dead-letter, then `after` (a replayed copy's cursor write and next-pass request). The cursor goes
 * after the dead-letter: written first, a dead-letter that failed left the redelivery a copy "already handled", which
 * was completed - the Resolver said DeadLettered, the DLQ was empty and the payload gone. This way round, a failure
 * between the two leaves the cursor behind, and the pass end skips the sequence with a ReplayGap notice.
 */
function deadLetterWith(m: InboundMessage, env: DecisionEnv, error: unknown, after: Effect[]): Settlement {
  const reason = `Permanent failure: ${errorTypeName(error)}: ${errorMessage(error)}`;
  const description = truncateDescription(errorMessage(error) || reason);
  return {
    effects: [
      notification(m, env, reason, description, error),
      { kind: 'deadLetter', reason: truncateDescription(reason), description },
      ...after,
    ],
    signal: 'deadLettered',
    error,
    note: 'dead-lettered (permanent failure)',
  };
}

function deadLetterOnly(
  m: InboundMessage,
  env: DecisionEnv,
  reason: string,
  description: string,
  _state: SessionState,
): Settlement {
  return {
    effects: [
      notification(m, env, reason, truncateDescription(description)),
      { kind: 'deadLetter', reason, description: truncateDescription(description) },
    ],
    signal: 'deadLettered',
    error: new Error(description),
    note: `dead-lettered: ${description}`,
  };
}

/**
 * A refused command: dead-lettered with the stable reason CommandRefused, after a notification the Resolver records
 * in the event's history and audit without touching the row. The session state is not touched either.
 */
function refuse(m: InboundMessage, env: DecisionEnv, description: string): Settlement {
  const text = truncateDescription(description);
  return {
    effects: [
      notification(m, env, WireText.CommandRefused, text),
      { kind: 'deadLetter', reason: WireText.CommandRefused, description: text },
    ],
    signal: 'deadLettered',
    error: new Error(description),
    note: `command refused: ${description}`,
  };
}

/** The Resolver notification sent before a dead-letter; best effort (the DLQ stays the source of truth). */
export function notification(
  m: InboundMessage,
  env: DecisionEnv,
  reason: string,
  description: string,
  error?: unknown,
): Effect {
  const content =
    error !== undefined
      ? { EventContent: m.content.EventContent, ErrorContent: errorContentOf(error) }
      : { EventContent: m.content.EventContent };
  const message = response(MessageType.ErrorResponse, m, env, {
    content,
    extra: { [Prop.DeadLetterReason]: reason, [Prop.DeadLetterErrorDescription]: description },
  });
  return { kind: 'send', message, bestEffort: true };
}

function scheduleRetry(m: InboundMessage, env: DecisionEnv, error: unknown): Effect[] {
  const next = env.nextRetry?.(error, authoritativeEventTypeId(m), m.retryCount);
  if (!next) return [];
  return [{ kind: 'schedule', message: buildRetryRequest(m, next.retryCount), delayMs: next.delayMs }];
}

/**
 * A replayed copy that ends without a decision of its own (dead-lettered by a pipeline behaviour, or a behaviour
 * threw): it still counts as handled for the drain, and when it ends its pass the next pass is asked for, exactly
 * as a handled copy would. Empty for anything that is not a replayed EventRequest.
 */
export function replayHandledEffects(m: InboundMessage, state: SessionState, env: DecisionEnv): Effect[] {
  if (m.messageType !== MessageType.EventRequest || m.replaySequence === undefined) return [];
  const effects = [...replayGap(m, state, env), ...stateAndReplayTrigger(m, state, advanceReplay(state, m))];
  return forgetOtherRelease(m, { effects, signal: 'completed', note: '' }).effects;
}

function stateAndReplayTrigger(m: InboundMessage, before: SessionState, after: SessionState): Effect[] {
  if (after === before) return [];
  const effects: Effect[] = [{ kind: 'setState', state: after }];
  // The copy that ends a replay pass asks for the next pass when messages were parked meanwhile.
  if (
    !isBlocked(after) &&
    after.NextReplaySequence >= (m.replayUntil ?? 0) &&
    after.NextReplaySequence < after.NextDeferralSequence
  ) {
    effects.push(send(buildProcessDeferredRequest(m, after.NextDeferralSequence)));
  }
  return effects;
}

/** After an unblock: ask the deferred processor to replay what is parked, unless nothing is waiting. */
function drain(m: InboundMessage, next: SessionState): Effect[] {
  if (isBlocked(next) || next.NextReplaySequence >= next.NextDeferralSequence) return [];
  return [send(buildProcessDeferredRequest(m, next.NextDeferralSequence))];
}

function response(
  type: MessageType,
  m: InboundMessage,
  env: DecisionEnv,
  options: {
    content?: Parameters<typeof buildResponse>[3]['content'];
    extra?: Parameters<typeof buildResponse>[3]['extra'];
    from?: string;
    /** A fixed MessageId (a release's answer); otherwise a fresh one. */
    messageId?: string;
  } = {},
): OutgoingMessage {
  return buildResponse(type, m, env.clock, { ...options, messageId: options.messageId ?? env.newId() });
}

function errorResponse(m: InboundMessage, env: DecisionEnv, error: unknown): OutgoingMessage {
  return response(MessageType.ErrorResponse, m, env, {
    content: { EventContent: m.content.EventContent, ErrorContent: errorContentOf(error) },
  });
}

function discardResponse(
  m: InboundMessage,
  env: DecisionEnv,
  outcome: { error: unknown; classifierName: string },
): OutgoingMessage {
  const { ErrorText, ErrorType } = discardAnswer(outcome);
  return response(MessageType.SkipResponse, m, env, {
    content: { EventContent: m.content.EventContent, ErrorContent: { ErrorText, ErrorType } },
  });
}

/** A discard's SkipResponse content, as recorded for a release (bounded: it is kept in the session state). */
function discardAnswer(outcome: { error: unknown; classifierName: string }): ReleaseAnswer & {
  ErrorText: string;
  ErrorType: string;
} {
  const type = errorTypeName(outcome.error);
  const text = `${type}: ${errorMessage(outcome.error)} Classified as Discard by ${outcome.classifierName}.`;
  return {
    MessageType: MessageType.SkipResponse,
    ErrorText: truncateDescription(text),
    ErrorType: truncateDescription(type),
  };
}

function handoffResponse(m: InboundMessage, env: DecisionEnv, h: HandoffMark): OutgoingMessage {
  return response(MessageType.PendingHandoffResponse, m, env, {
    extra: {
      [Prop.HandoffReason]: h.reason,
      [Prop.ExternalJobId]: h.externalJobId,
      [Prop.ExpectedBy]: h.expectedBy?.toISOString(),
    },
  });
}

function send(message: OutgoingMessage): Effect {
  return { kind: 'send', message };
}

function settle(settlement: Settlement): Route {
  return { kind: 'settle', settlement: flagGap(settlement) };
}

/** A settlement that skips a replay gap is logged as a warning by the host. */
function flagGap(settlement: Settlement): Settlement {
  const gap = settlement.effects.some(
    (e) => e.kind === 'send' && e.message.applicationProperties[Prop.DeadLetterReason] === WireText.ReplayGap,
  );
  return gap ? { ...settlement, warn: true } : settlement;
}

/** The id a block is keyed by: the EventId (validation makes it mandatory; the MessageId stands in without it). */
export function eventKey(m: InboundMessage): string {
  return m.eventId ?? m.messageId;
}

function blockedByThis(state: SessionState, m: InboundMessage): boolean {
  return isBlocked(state) && state.BlockedByEventId === eventKey(m);
}

/**
 * Whether this resubmission or retry is a copy of a delivery that handed its event off: its MessageId is the one the
 * block recorded (a resubmission or a retry blocks the session under its own MessageId only by handing off: a failed
 * one leaves the block as it was) or the one of its event's handoff pending beside another event's block, and that
 * handoff's failure was not answered since; or it is one of the event's blocks that are over (ReleasedBlocks: the
 * handoff settled or replaced since; a resubmission's MessageId, derived from its type, names no other delivery, nor
 * does a retry's, derived from the failed delivery and the attempt). A copy comes with the same MessageId: a
 * redelivery after the state write (the completion refused, the lock lost, a crash), a Manager repeat of a
 * resubmission (which derives the same id) or a console dead-letter replay (which keeps it). The inbox cannot tell: it
 * records successes only.
 *
 * Once the handoff failed (FailedHandoffs), its record stays (the block, or the entry beside it) but the row is
 * Failed: a delivery of that resubmission now is an operator's replay of it (the console's dead-letter replay keeps
 * the MessageId: the resubmission was dead-lettered after its state write), and runs the handler as a resubmission.
 * Completed as a copy, as once, it did nothing: no answer, the session still blocked, the row still Failed.
 */
function handedOffByThis(state: SessionState, m: InboundMessage): boolean {
  if (m.messageId === '') return false;
  const pending = blockedByThis(state, m)
    ? state.BlockedByMessageId
    : pendingHandoffOf(state, eventKey(m))?.MessageId;
  if (pending === m.messageId) return !isFailedHandoff(state, eventKey(m), m.messageId);
  return isReleasedBlock(state, eventKey(m), m.messageId);
}

/**
 * A copy of a resubmission or retry that handed off (handedOffByThis): completed without running the handler again
 * and without a response. Before, the handler ran again - a second external job for one operator action or one
 * scheduled retry - and its PendingHandoffResponse replaced the first one's on the Resolver (after the handoff was
 * settled, a resubmission's copy blocked the session again on a row the Resolver had closed). The first delivery's
 * PendingHandoffResponse went out before its state write, so the Resolver has it already; a handoff still pending
 * stays under that delivery, whose token or coordinates still settle it.
 */
function handoffCopy(m: InboundMessage): Settlement {
  const what = m.messageType === MessageType.RetryRequest ? 'retry' : 'resubmission';
  return {
    effects: [{ kind: 'complete' }],
    signal: 'completed',
    note: `copy of ${what} ${m.messageId}, which handed off: completed without running the handler`,
  };
}

/**
 * Whether a handoff command settles an earlier handoff of the event the session is blocked by, not the one it waits
 * for. One event can be handed off more than once (the operator resubmits it while its handoff is pending and the
 * resubmission hands off again; a retry hands off), and a settlement of the earlier handoff can still arrive (its
 * agent reports late). The command names its handoff by the delivery that handed the event off
 * (HandedOffByMessageId); the block records the delivery that blocked the session (BlockedByMessageId). Only when
 * both are known and differ is it another handoff: a command that names none (an older sender) and a block with no
 * recorded delivery (state written by an older SDK) are matched by EventId alone, as before.
 */
function namesEarlierHandoff(state: SessionState, m: InboundMessage): boolean {
  const named = m.handedOffByMessageId;
  const pending = blockedByThis(state, m)
    ? state.BlockedByMessageId
    : pendingHandoffOf(state, eventKey(m))?.MessageId;
  return named != null && named !== '' && pending != null && pending !== '' && named !== pending;
}

/**
 * Whether a handoff command settles the handoff of its event that is pending beside another event's block
 * (SessionState.PendingHandoffs): a resubmission handed the event off while another event blocked the session. A
 * command naming no delivery (an older sender) is matched by EventId alone; one naming another delivery of the event
 * is refused before this (namesEarlierHandoff).
 */
function namesHandoffBesideBlock(state: SessionState, m: InboundMessage): boolean {
  const pending = pendingHandoffOf(state, eventKey(m));
  if (!pending || blockedByThis(state, m)) return false;
  const named = m.handedOffByMessageId;
  return named == null || named === '' || named === pending.MessageId;
}

/**
 * The completion of a handoff pending beside another event's block: the entry is over, the Resolver gets the result
 * (Completed), and the session stays as it is - the other event's block, or the drain in progress, is not touched,
 * and no replay is asked for. Settled as a release is (state first, ReleasedBy naming this command, the answer under a
 * MessageId derived from it), so a redelivery after the state write finishes through a release's redelivery path
 * (which also re-asks for the replay when the session is draining by then: harmless, a replayed copy already handled
 * is only completed).
 */
function completeBesideBlock(m: InboundMessage, state: SessionState, env: DecisionEnv): Settlement {
  const next: SessionState = {
    ...settlePendingHandoff(state, eventKey(m)),
    ReleasedBy: { EventId: eventKey(m), MessageId: m.messageId },
  };
  const resolution = send(
    releaseAnswer(MessageType.ResolutionResponse, m, env, {
      content: { EventContent: m.content.EventContent },
    }),
  );
  return {
    effects: [setState(next), resolution, { kind: 'complete' }],
    signal: 'completed',
    note: 'handoff pending beside the block completed: the session state otherwise unchanged',
  };
}

/**
 * Whether a handoff command names a handoff whose block is over (SessionState.ReleasedBlocks): it was settled
 * another way (completed by a later handoff of the event, skipped, resubmitted) or replaced by a later handoff that
 * has been settled since. Answered, its failure would record Failed over the outcome that released the session.
 */
function namesReleasedHandoff(state: SessionState, m: InboundMessage): boolean {
  const named = m.handedOffByMessageId;
  if (named == null || named === '' || blockedByThis(state, m)) return false;
  return isReleasedBlock(state, eventKey(m), named);
}

function releasedHandoffRefusal(m: InboundMessage, state: SessionState): string {
  const now = isBlocked(state) ? `blocked by event ${state.BlockedByEventId ?? ''}` : 'not blocked';
  return (
    `${m.messageType ?? 'handoff command'} refused: the handoff of event ${eventKey(m)} made by message ` +
    `${m.handedOffByMessageId ?? ''} is no longer pending (session ${m.sessionId ?? ''} was released from it and is ` +
    `${now}): a late settlement of a handoff settled another way`
  );
}

function earlierHandoffRefusal(m: InboundMessage, state: SessionState): string {
  const pending = blockedByThis(state, m)
    ? `session ${m.sessionId ?? ''} is blocked by message ${state.BlockedByMessageId ?? ''} of that event`
    : `the handoff of that event pending in session ${m.sessionId ?? ''} is message ` +
      `${pendingHandoffOf(state, eventKey(m))?.MessageId ?? ''}'s`;
  return (
    `${m.messageType ?? 'handoff command'} refused: it names the handoff of event ${eventKey(m)} made by message ` +
    `${m.handedOffByMessageId ?? ''}, but ${pending} (an earlier handoff's settlement, or a wrong message id)`
  );
}

/**
 * Blocks the session by this delivery; a block it replaces (another delivery of the event) is remembered as over, and
 * so is a handoff of the event pending beside the block: the block is now what the event waits for.
 */
export function block(state: SessionState, m: InboundMessage): SessionState {
  const replaced = state.BlockedByMessageId !== m.messageId ? rememberReleasedBlock(state) : state;
  // A delivery whose handoff failed that blocks again (an operator's replay of it handed off once more) is pending.
  const superseded = clearHandoffFailed(settlePendingHandoff(replaced, eventKey(m)), eventKey(m), m.messageId);
  return { ...superseded, BlockedByEventId: eventKey(m), BlockedByMessageId: m.messageId || null };
}

/** Unblocks the session; the delivery that blocked it is remembered (see namesReleasedHandoff). */
export function unblock(state: SessionState): SessionState {
  return { ...rememberReleasedBlock(state), BlockedByEventId: null, BlockedByMessageId: null };
}

/** Unblocks the session and remembers which delivery did it, and with which answer when known (see releaseSteps). */
export function release(state: SessionState, m: InboundMessage, answer?: ReleaseAnswer): SessionState {
  const by = { EventId: eventKey(m), MessageId: m.messageId, ...(answer ? { Answer: answer } : {}) };
  return { ...unblock(state), ReleasedBy: by };
}

/**
 * ReleasedBy marks the redelivery of one interrupted release. A state write made by any other delivery clears it:
 * the session's messages are settled in order, so the releasing message was settled by then, and a later copy with
 * the same MessageId (a retry's id is fixed per failed delivery and attempt) is a late command, not that redelivery.
 */
function forgetOtherRelease(m: InboundMessage, settlement: Settlement): Settlement {
  if (
    !settlement.effects.some(
      (e) => e.kind === 'setState' && e.state.ReleasedBy && !releasedByThis(e.state, m),
    )
  )
    return settlement;
  const effects = settlement.effects.map((e) =>
    e.kind === 'setState' && e.state.ReleasedBy && !releasedByThis(e.state, m)
      ? { ...e, state: { ...e.state, ReleasedBy: null } }
      : e,
  );
  return { ...settlement, effects };
}

/**
 * The redelivery of a retry that released the session: the replay request (when nothing blocks the session) and
 * the answer recorded at the release, with the same MessageIds. The handler does not run again. State written
 * before the answer was recorded cannot say what it was: then only the replay request goes out, and the row keeps
 * what the Resolver recorded (an operator can still skip or resubmit the event).
 */
function finishRetryRelease(m: InboundMessage, state: SessionState, env: DecisionEnv): Settlement {
  const answer = state.ReleasedBy?.Answer;
  return {
    effects: [
      ...drain(m, state),
      ...(answer ? [send(retryReleaseAnswer(m, env, answer))] : []),
      { kind: 'complete' },
    ],
    signal: 'completed',
    note: answer
      ? 'redelivered retry that released the session: replay and answer finished, handler not run again'
      : 'redelivered retry that released the session: replay finished; answer not recorded, handler not run again',
  };
}

/** A retry's release answer, the same on every delivery: a ResolutionResponse, or a discard's SkipResponse. */
function retryReleaseAnswer(m: InboundMessage, env: DecisionEnv, answer: ReleaseAnswer): OutgoingMessage {
  if (answer.MessageType === MessageType.ResolutionResponse)
    return releaseAnswer(MessageType.ResolutionResponse, m, env);
  const errorContent = { ErrorText: answer.ErrorText ?? '', ErrorType: answer.ErrorType ?? '' };
  return releaseAnswer(MessageType.SkipResponse, m, env, {
    content: { EventContent: m.content.EventContent, ErrorContent: errorContent },
  });
}

/** This very message released the session earlier: a redelivery of a release whose settlement was interrupted. */
function releasedByThis(state: SessionState, m: InboundMessage): boolean {
  return state.ReleasedBy?.MessageId === m.messageId && state.ReleasedBy.EventId === eventKey(m);
}

/**
 * The steps of a release before its answer: the state write that unblocks the session, then the replay request.
 * A release is settled as state, replay request, answer, completion; a failing step leaves the message for
 * redelivery, which finds the session already released by it (ReleasedBy). Then the state is not written again (the
 * session may have been blocked by another event since) and the replay request and answer are sent again. Both
 * carry the same MessageIds as the first time (the replay request's derives from the session and its bound, the
 * answer's from the message: releaseAnswerId), so a copy that did get out the first time is recognised as the same
 * message by the deferred processor and the Resolver's history.
 */
function releaseSteps(m: InboundMessage, state: SessionState, answer?: ReleaseAnswer): Effect[] {
  if (!blockedByThis(state, m)) return drain(m, state);
  const next = release(state, m, answer);
  return [setState(next), ...drain(m, next)];
}

/** The MessageId of a release's answer: the same on every delivery of the releasing message. */
function releaseAnswerId(type: MessageType, m: InboundMessage): string {
  return deriveId('release-answer', type, m.messageId);
}

function releaseAnswer(
  type: MessageType,
  m: InboundMessage,
  env: DecisionEnv,
  options: Omit<Parameters<typeof response>[3], 'messageId'> = {},
): OutgoingMessage {
  return response(type, m, env, { ...options, messageId: releaseAnswerId(type, m) });
}

function setState(state: SessionState): Effect {
  return { kind: 'setState', state };
}

/**
 * A replayed copy has been dealt with: every parked sequence up to its own is done, and when it is the last copy of
 * its pass (ReplayPassEnd), every sequence below the pass's bound (the ones that did not come back are a gap; see
 * replayGap). Same object when unchanged.
 */
export function advanceReplay(state: SessionState, m: InboundMessage): SessionState {
  const s = m.replaySequence;
  if (s === undefined) return state;
  const to = m.replayPassEnd && m.replayUntil !== undefined ? Math.max(s + 1, m.replayUntil) : s + 1;
  if (to <= state.NextReplaySequence) return state;
  return { ...state, NextReplaySequence: to };
}

/**
 * The ReplayGap notices a replayed copy owes before its cursor moves. Two kinds of gap:
 * - before the copy: the cursor is below its own sequence, so the sequences between never came back ahead of it. A
 *   pass sends its copies in sequence order, so they are not late: a parked copy deleted, dead-lettered or expired on
 *   the Deferred subscription, or not visible to the pass (one that shows up later finds its sequence behind the
 *   cursor and is completed without running). Before, the cursor moved past them with no notice at all, and the
 *   operator lost track of the event; only a gap at the end of a pass was reported.
 * - after the copy, when it is the last of its pass (ReplayPassEnd): the sequences between it and the pass's bound.
 * Waiting for either would keep the session draining, parking every new message, forever. A notice goes to the
 * Resolver, which records it in the history and audit of this event; the lost events' rows keep showing Deferred.
 * A cursor write lost after a replayed copy's dead-letter shows here as a gap too (this side cannot tell the two
 * apart); the Resolver then has that copy's dead-letter notification and this notice, in history only.
 */
function replayGap(m: InboundMessage, state: SessionState, env: DecisionEnv): Effect[] {
  const s = m.replaySequence;
  if (s === undefined) return [];
  const effects: Effect[] = [];
  if (state.NextReplaySequence < s) effects.push(gapNotice(m, env, state.NextReplaySequence, s, { before: s }));
  if (m.replayPassEnd && m.replayUntil !== undefined) {
    const from = Math.max(state.NextReplaySequence, s + 1);
    if (from < m.replayUntil) effects.push(gapNotice(m, env, from, m.replayUntil));
  }
  return effects;
}

/**
 * The notice for parked sequences `from` to `until - 1` skipped. Its MessageId derives from the session and the range,
 * so a notice sent again (a redelivery after a later settlement step failed) is the same message, which the Resolver
 * records once (its audit is keyed by the notice's MessageId).
 */
function gapNotice(
  m: InboundMessage,
  env: DecisionEnv,
  from: number,
  until: number,
  /** A gap found ahead of the copy with this sequence, mid-pass (not at the pass's end). */
  at: { before: number } | undefined = undefined,
): Effect {
  const range = until - from === 1 ? `sequence ${from}` : `sequences ${from} to ${until - 1}`;
  const where =
    at === undefined
      ? `by the end of the replay pass up to ${until}`
      : `ahead of sequence ${at.before} in its replay pass${m.replayUntil !== undefined ? ` up to ${m.replayUntil}` : ''}`;
  const description =
    `parked ${range} of session ${m.sessionId ?? ''} did not come back ${where} ` +
    `(dead-lettered or expired on the way; see the Deferred subscription's dead-letter queue); skipped so the session goes on`;
  const notice = response(MessageType.ErrorResponse, m, env, {
    content: { EventContent: null, ErrorContent: { ErrorText: description, ErrorType: WireText.ReplayGap } },
    extra: { [Prop.DeadLetterReason]: WireText.ReplayGap, [Prop.DeadLetterErrorDescription]: description },
    messageId: deriveId('replay-gap', env.endpointId, m.sessionId ?? '', from, until),
  });
  return { kind: 'send', message: notice, bestEffort: true };
}

/** Dead-letter descriptions are bounded: cut at a line break before the limit and marked. */
export function truncateDescription(text: string, limit = MAX_DESCRIPTION): string {
  if (text.length <= limit) return text;
  const suffix = '\n...[TRUNCATED]...';
  const room = limit - suffix.length;
  const cut = text.lastIndexOf('\n', room);
  return text.slice(0, cut > 0 ? cut : room) + suffix;
}
