// From one Resolver message to what the store records: which endpoint the event belongs to, the history entry
// and the status write. Pure. The status itself is not computed here: the store derives it from the message
// type and DeadLetterErrorDescription with the contract's resultingStatus, so the row and the rule cannot drift.
import {
  endpointOf,
  isHistoryOnly,
  isRequestType,
  isUnauthorisedCommand,
  MessageType,
  parseEventPayload,
  SELF,
  type MessageType as MessageTypeT,
} from '@nimbus/sdk/contract';
import type { HistoryWrite, StatusWrite } from '../lib/store/index.ts';
import type { ResolverMessage } from './read.ts';
import { traceIdOf } from '@nimbus/sdk';

// Attribution (which row a message updates, which messages only add history) is the contract's, shared with the
// SDK's test harness.
export { endpointOf, isHistoryOnly, isRequestType, isUnauthorisedCommand };

/**
 * `From` as recorded: a request put back on a topic by hand (a replayed dead letter) has none, and must still be
 * recorded, under OriginatingFrom or "self"; a response keeps its From, which is what identifies its endpoint.
 * A refused Manager-only command (isUnauthorisedCommand) is never recorded under OriginatingFrom: its From is what
 * authorises it, and one without From but with OriginatingFrom "Manager" would read as the Manager's on its entry
 * (isHistoryOnly false: operator intent, or the event's DeadLettered outcome) although the Resolver judged it
 * history-only and never wrote the row. Recorded as "self" (sender unknown), the entry is judged as the message was.
 */
function recordedFrom(m: ResolverMessage & { messageType: MessageTypeT }): string | undefined {
  if (!isRequestType(m.messageType)) return m.from;
  return isUnauthorisedCommand(m) ? (m.from ?? SELF) : (m.from ?? m.originatingFrom ?? SELF);
}

/** Marks a value cut to fit a limit. */
export const TRUNCATED = '… [truncated]';

// Clipping to the store's field limits: an over-long error text must not turn a real outcome into a dead letter.
function clip(value: string | undefined, max: number): string | null {
  if (value === undefined) return null;
  return value.length > max ? `${value.slice(0, max - TRUNCATED.length)}${TRUNCATED}` : value;
}

/** The request's event body, parsed; undefined when the message carries none (the row keeps what it has). */
function payloadOf(m: ResolverMessage & { messageType: MessageTypeT }): { payload?: unknown; problem?: string } {
  if (!isRequestType(m.messageType)) return {};
  const json = m.content.EventContent?.EventJson;
  if (json == null || json.trim() === '') return {};
  const parsed = parseEventPayload(json);
  if (parsed.ok) return { payload: parsed.value };
  // Too deep or malformed: kept as the raw text so an operator can still see and repair it on resubmit.
  return { payload: json, problem: parsed.problem };
}

/** A handoff settlement command: its body is the settlement's content, not the event's payload. */
export function settlesHandoff(type: MessageTypeT): boolean {
  return type === MessageType.HandoffCompletedRequest || type === MessageType.HandoffFailedRequest;
}

function orNull(value: string | undefined): string | null {
  return value ?? null;
}

export interface Projection {
  endpointId: string;
  history: HistoryWrite;
  status: StatusWrite;
}

export function project(m: ResolverMessage & { messageType: MessageTypeT; eventId: string }, endpointId: string): Projection {
  const error = m.content.ErrorContent;
  const { payload, problem: payloadProblem } = payloadOf(m);
  const properties: HistoryWrite['properties'] = { ...m.properties };
  if (m.bodyProblem) properties.ResolverBodyProblem = m.bodyProblem;
  if (payloadProblem) properties.ResolverPayloadProblem = payloadProblem;
  if (m.problems.length > 0) properties.ResolverPropertyProblems = m.problems.join('; ');

  const common = {
    endpointId,
    eventId: m.eventId,
    messageId: m.messageId,
    messageType: m.messageType,
    sessionId: m.sessionId,
    eventTypeId: clip(m.eventTypeId, 260),
    parentMessageId: orNull(m.parentMessageId),
    originatingMessageId: orNull(m.originatingMessageId),
    correlationId: clip(m.correlationId, 128),
    from: clip(recordedFrom(m), 260),
    to: clip(m.to, 260),
    enqueuedAt: m.enqueuedAt,
    errorText: clip(error?.ErrorText ?? undefined, 32_768),
    errorType: clip(error?.ErrorType ?? undefined, 1024),
    deadLetterReason: clip(m.deadLetterReason, 4096),
    deadLetterErrorDescription: clip(m.deadLetterErrorDescription, 32_768),
    retryCount: m.retryCount ?? null,
    handoffReason: clip(m.handoffReason, 4096),
    externalJobId: clip(m.externalJobId, 512),
    expectedBy: m.expectedBy ?? null,
  };
  const history: HistoryWrite = {
    ...common,
    queueTimeMs: m.queueTimeMs ?? null,
    processingTimeMs: m.processingTimeMs ?? null,
    traceId: traceIdOf(m.properties),
    properties,
    ...(payload !== undefined ? { payload } : {}),
  };
  // A handoff settlement's content (the external system's result, or the Manager's { note, completedBy }) is what the
  // settlement said, not the event: it stays in the command's history entry (the event page's timeline shows it, a
  // repeat reads a completion's note there) and never becomes the row's payload. Before, it did, so a completion the
  // subscriber refused left the row back on its handoff park with the note as the event's payload, and a Resubmit (or
  // an agent receiving the handoff) then got the note instead of the event (notices.test.ts, "handoff settlement").
  const eventPayload = payload !== undefined && !settlesHandoff(m.messageType);
  const status: StatusWrite = { ...common, ...(eventPayload ? { payload } : {}) };
  return { endpointId, history, status };
}
