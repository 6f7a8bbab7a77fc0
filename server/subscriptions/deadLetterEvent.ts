// What turns a dead letter from a dead end into a lead: the event it belongs to (the console's event page holds its
// history, payload and "Resubmit with changes"), and whether it failed permanently, so replaying it unchanged would
// only fail again. Both are read from what the SDK puts on the wire (docs/contract.md), never from the body.
import { Address, endpointOf, parseMessageType, Prop, Topic } from '@nimbus/sdk/contract';

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
