// What turns a dead letter from a dead end into a lead: the event it belongs to (the console's event page holds its
// history, payload and "Resubmit with changes"), and whether it failed permanently, so replaying it unchanged would
// only fail again. Both are read from what the SDK puts on the wire (docs/contract.md), never from the body.
import { Address, endpointOf, MessageType, parseMessageType, Prop, Topic, WireText } from '@nimbus/sdk/contract';

/** The event a dead letter belongs to: the key of the console's event page, and the type to show with it. */
export interface DeadLetterEvent {
  endpointId: string;
  eventId: string;
  eventTypeId: string | null;
}

const RESERVED_ADDRESSES = new Set<string>(Object.values(Address).map((a) => a.toLowerCase()));
const PLATFORM_TOPICS = new Set<string>([Topic.Resolver, Topic.Manager].map((t) => t.toLowerCase()));

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);

/**
 * The event of a dead letter on `topic`, or null for a message without an EventId (a foreign message, a trigger).
 * The endpoint is the one whose row the Resolver writes for it (requests: To, responses: From). A parked or
 * retried copy is addressed to a reserved address instead; on an endpoint's topic (topics are named after their
 * endpoint) that endpoint owns it. On a platform topic without an attributable endpoint there is no page to go to.
 */
export function deadLetterEventOf(topic: string, props: Record<string, unknown>): DeadLetterEvent | null {
  const eventId = text(props[Prop.EventId]);
  if (eventId === undefined) return null;
  const messageType = parseMessageType(props[Prop.MessageType]);
  const attributed = messageType ? endpointOf({ messageType, to: text(props[Prop.To]), from: text(props[Prop.From]) }) : undefined;
  const endpointId =
    attributed !== undefined && !RESERVED_ADDRESSES.has(attributed.toLowerCase()) ? attributed : PLATFORM_TOPICS.has(topic.toLowerCase()) ? undefined : topic;
  if (endpointId === undefined) return null;
  return { endpointId, eventId, eventTypeId: text(props[Prop.EventTypeId]) ?? null };
}

/**
 * The SDK dead-letters every permanent failure with a reason that starts with this (packages/sdk decide.ts and
 * dispatcher.ts: `Permanent failure: <ErrorType>: <message>`): a PermanentFailureError, a payload that does not
 * match its schema, one that nests too deep, an EventTypeId property that disagrees with the body, and errors
 * the failure classifier maps to DeadLetter. The same message fails the same way when it is replayed unchanged.
 */
export const PERMANENT_FAILURE_REASON_PREFIX = 'Permanent failure';

export function isPermanentFailure(reason: string | null): boolean {
  return reason !== null && reason.startsWith(PERMANENT_FAILURE_REASON_PREFIX);
}

/**
 * Why replaying a dead letter unchanged is futile or harmful, for the dead letters where that is certain from what
 * the SDK put on the wire. Such a dead letter is marked in the list and the preview, skipped by a replay of a
 * filter or a whole queue, and refused (409) when listed one by one - unless the request says `includeWarned`.
 * Only the subscriber's own dead letters qualify: the message is the command itself, never the ErrorResponse notice
 * that carries the same DeadLetterReason to the Resolver (a notice dead-lettered by the Resolver replays fine).
 */
export interface ReplayWarning {
  /** The DeadLetterReason that makes it futile. */
  code: 'CommandRefused' | 'PendingHandoffsFull';
  text: string;
}

/** The SDK's reason for a resubmission whose handoff the session could not record (packages/sdk decide.ts PENDING_HANDOFFS_FULL). */
const PENDING_HANDOFFS_FULL = 'PendingHandoffsFull';
const MANAGER_COMMANDS = new Set<string>([MessageType.ResubmissionRequest, MessageType.SkipRequest, MessageType.HandoffCompletedRequest, MessageType.HandoffFailedRequest]);

export function replayWarningOf(reason: string | null, props: Record<string, unknown>): ReplayWarning | null {
  const type = parseMessageType(props[Prop.MessageType]);
  if (reason === WireText.CommandRefused && type !== undefined && MANAGER_COMMANDS.has(type)) {
    // decide.ts `refuse`: not From = Manager, or a handoff settlement the session no longer waits for. The copy
    // carries the same properties to the same session state, so it is refused again (server/subscriptions/refusedReplay.test.ts).
    return { code: 'CommandRefused', text: 'a refused Manager command: replaying it is refused again; resubmit or skip the event from its page instead' };
  }
  if (reason === PENDING_HANDOFFS_FULL && type === MessageType.ResubmissionRequest) {
    // Its handler ran and handed off (an external job may exist). A replayed copy runs the handler again outside the
    // Manager's claim of the row, and while the session still holds its pending handoffs it is dead-lettered again.
    return {
      code: 'PendingHandoffsFull',
      text: 'a resubmission its session had no room to hand off: replayed, its handler runs again (another external job may start); settle or skip the pending handoffs, then resubmit the event from its page instead',
    };
  }
  return null;
}
