// The Manager's wire messages (DESIGN.md §3): resubmit, skip and handoff settlement, addressed To = the endpoint
// and sent to the `Manager` topic, whose per-endpoint subscription stamps From = 'Manager' and forwards them to
// the endpoint's topic, where they reach the failed event's session. Pure builders, unit-tested without a broker.
import { createHash } from 'node:crypto';
import type { ServiceBusMessage } from '@azure/service-bus';
import { encodeBody, eventBody, MessageType, Prop, ResolutionStatus, SELF, toWireProperties } from '@nimbus/sdk/contract';
import type { StatusRow, StatusRowSummary } from '../../lib/store/index.ts';

export type CommandType =
  | typeof MessageType.ResubmissionRequest
  | typeof MessageType.SkipRequest
  | typeof MessageType.HandoffCompletedRequest
  | typeof MessageType.HandoffFailedRequest;

/**
 * `seenMessageId` (resubmit, skip): the row's lastMessageId as the operator saw it. Given, the command acts only on
 * that version (or is a repeat of this command's own claim answering it); a row that has moved on since is refused
 * with 409 (Manager.execute). Absent: whatever settleable row the Manager reads now (API callers that do not send it).
 * A handoff settlement pins its version through `messageId` already.
 */
export type CommandSpec =
  | { kind: 'resubmit'; edited?: { payload: unknown; eventTypeId?: string }; seenMessageId?: string }
  | { kind: 'skip'; seenMessageId?: string }
  | { kind: 'handoffComplete'; messageId: string; note?: string; result?: unknown }
  | { kind: 'handoffFail'; messageId: string; errorText: string; errorType?: string };

export function commandType(spec: CommandSpec): CommandType {
  switch (spec.kind) {
    case 'resubmit':
      return MessageType.ResubmissionRequest;
    case 'skip':
      return MessageType.SkipRequest;
    case 'handoffComplete':
      return MessageType.HandoffCompletedRequest;
    case 'handoffFail':
      return MessageType.HandoffFailedRequest;
  }
}

/**
 * The command's MessageId, derived from what it answers: the same command about the same failed message always
 * gets the same id. That is what makes a repeated click recognisable (the row's claim carries it) and lets the
 * subscriber's inbox drop a second copy if one is ever sent.
 */
export function commandMessageId(
  type: CommandType,
  row: Pick<StatusRow, 'endpointId' | 'eventId' | 'sessionId'>,
  answeredMessageId: string,
): string {
  const h = createHash('sha256')
    .update(JSON.stringify([type, row.endpointId, row.eventId, row.sessionId, answeredMessageId]))
    .digest('hex');
  return `${COMMAND_ID_PREFIX}${h.slice(0, 40)}`;
}

const MANAGER_COMMANDS: ReadonlySet<string> = new Set([
  MessageType.ResubmissionRequest,
  MessageType.SkipRequest,
  MessageType.HandoffCompletedRequest,
  MessageType.HandoffFailedRequest,
]);

/** Is `row` the Manager's own claim (not a later projection of something else)? */
export function isManagerClaim(row: Pick<StatusRowSummary, 'status' | 'messageType' | 'from' | 'parentMessageId' | 'lastMessageId' | 'endpointId' | 'eventId' | 'sessionId'>): boolean {
  if (row.status !== ResolutionStatus.Pending || row.messageType == null || !MANAGER_COMMANDS.has(row.messageType)) return false;
  if (row.parentMessageId == null) return false;
  return row.lastMessageId === commandMessageId(row.messageType as CommandType, row, row.parentMessageId);
}

/** Every Manager command's MessageId starts so (commandMessageId): a row's request named so was written by a command. */
export const COMMAND_ID_PREFIX = 'mgr-';

/** The message id a command answers: the one that put the row in its current state. */
export function originatingOf(row: StatusRow, answeredMessageId: string): string {
  const o = row.originatingMessageId;
  return o == null || o === '' || o === SELF ? answeredMessageId : o;
}

/**
 * The delivery that handed the event off, as the handoff row records it: a PendingHandoffResponse's parent. A
 * handoff command names it (Prop.HandedOffByMessageId) so the subscriber can tell the handoff its session waits for
 * from an earlier one of the same event. Not the row's lastMessageId: once a refused command has been recorded, the
 * Resolver restores the handoff row under the refusal notice's id, which the subscriber never saw, while the
 * restored row keeps the response's parent. Undefined for any other row: a claim re-sent by a repeat no longer
 * names it, and the Manager finds it in the history instead (buildCommand's `handedOff`).
 */
export function handedOffBy(row: Pick<StatusRow, 'messageType' | 'parentMessageId'>): string | undefined {
  if (row.messageType !== MessageType.PendingHandoffResponse) return undefined;
  const parent = row.parentMessageId;
  return parent == null || parent === '' || parent === SELF ? undefined : parent;
}

/**
 * Who a command is sent for: a person's or service's display name with its stable id (principalKey: `user:<oid>`,
 * `service:<id>`), written with every entry the command leaves in the event's history - two people may share a name,
 * and a name changes in Entra. A bare string is a name without an id (the platform's own duties, older callers).
 */
export type Auditor = string | { name: string; id: string };
export const auditorName = (a: Auditor): string => (typeof a === 'string' ? a : a.name);
const AUDITOR_MAX = 256;
/**
 * The audit entry's `auditor` and, when known, `auditorId`, cut to the history's 256 characters: an OIDC subject may be
 * 255 characters (`user:` + it is more), and an entry over the limit was refused after the command went out - a
 * command sent, answered 400, and a bulk job finding no receipt for it. A name left empty falls back to the id.
 */
export const auditorFields = (a: Auditor): { auditor: string; auditorId?: string } => {
  if (typeof a === 'string') return { auditor: a.slice(0, AUDITOR_MAX) };
  const id = a.id.slice(0, AUDITOR_MAX);
  return { auditor: a.name.slice(0, AUDITOR_MAX) || id, ...(id !== '' ? { auditorId: id } : {}) };
};

export interface BuiltCommand {
  type: CommandType;
  messageId: string;
  message: ServiceBusMessage;
}

export function buildCommand(
  spec: CommandSpec,
  row: StatusRow,
  answeredMessageId: string,
  eventTypeId: string | null,
  payload: unknown,
  auditor: Auditor,
  /** A handoff command's delivery that handed off, when `row` no longer names it (a claim re-sent by a repeat). */
  handedOff?: string,
): BuiltCommand {
  const type = commandType(spec);
  const messageId = commandMessageId(type, row, answeredMessageId);
  let body: string;
  switch (spec.kind) {
    case 'resubmit':
      body = eventBody(eventTypeId ?? '', payload);
      break;
    case 'skip':
      body = encodeBody({});
      break;
    case 'handoffComplete': {
      // The external system's result becomes the event's content in the Resolver; a note alone is wrapped.
      const result = spec.result !== undefined ? spec.result : spec.note !== undefined ? { note: spec.note, completedBy: auditorName(auditor) } : undefined;
      body =
        result === undefined
          ? encodeBody({})
          : encodeBody({ EventContent: { EventTypeId: eventTypeId, EventJson: JSON.stringify(result) } });
      break;
    }
    case 'handoffFail':
      body = encodeBody({ ErrorContent: { ErrorText: spec.errorText, ErrorType: spec.errorType ?? null } });
      break;
  }
  return {
    type,
    messageId,
    message: {
      messageId,
      sessionId: row.sessionId || undefined,
      correlationId: row.correlationId ?? answeredMessageId,
      contentType: 'application/json',
      // Bytes, not a string: the client would JSON-encode a string a second time.
      body: Buffer.from(body, 'utf8'),
      // No From: the Manager subscription's rule action stamps it, so only the broker can say 'Manager'.
      applicationProperties: toWireProperties({
        [Prop.To]: row.endpointId,
        [Prop.MessageType]: type,
        [Prop.EventId]: row.eventId,
        [Prop.EventTypeId]: eventTypeId,
        [Prop.ParentMessageId]: answeredMessageId,
        [Prop.HandedOffByMessageId]: spec.kind === 'handoffComplete' || spec.kind === 'handoffFail' ? (handedOff ?? handedOffBy(row)) : undefined,
        [Prop.OriginatingMessageId]: originatingOf(row, answeredMessageId),
        [Prop.RetryCount]: 0,
      }),
    },
  };
}
