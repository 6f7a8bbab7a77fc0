// Reading one received Resolver message into plain fields. Lenient on purpose: the Resolver is the platform's
// record, so a bad value in one property (an unparsable RetryCount, a malformed ExpectedBy, an unreadable body)
// is dropped and named in `problems` rather than losing the whole message. Only what makes a message impossible
// to record (no MessageType the contract knows, no EventId) is left for the caller to dead-letter.
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { z } from 'zod';
import { DEFAULT_BUDGET } from './budget.ts';
import {
  decodeBody,
  parseMessageType,
  Prop,
  type MessageContent,
  type MessageType,
} from '@nimbus/sdk/contract';

export type PropertyValue = string | number | boolean | null;

export interface ResolverMessage {
  messageId: string;
  sessionId: string;
  correlationId: string | undefined;
  /** The MessageType property when it names a contract type. */
  messageType: MessageType | undefined;
  /** The MessageType property as received (for the dead-letter description when it is unknown). */
  rawMessageType: string | undefined;
  to: string | undefined;
  from: string | undefined;
  originatingFrom: string | undefined;
  eventId: string | undefined;
  /** The EventTypeId property, else the one inside the body's EventContent. */
  eventTypeId: string | undefined;
  originatingMessageId: string | undefined;
  parentMessageId: string | undefined;
  retryCount: number | undefined;
  /** Application property set on a scheduled replacement (0 when absent or unreadable). */
  throttleRetryCount: number;
  /** The client's delivery count (0 on the first delivery). */
  wireDeliveryCount: number;
  deadLetterReason: string | undefined;
  deadLetterErrorDescription: string | undefined;
  handoffReason: string | undefined;
  externalJobId: string | undefined;
  expectedBy: string | undefined;
  queueTimeMs: number | undefined;
  processingTimeMs: number | undefined;
  /**
   * When the message was enqueued (ISO-8601): the broker's time of the message itself, which a scheduled replacement
   * carries in OriginalEnqueuedTimeUtc (see enqueuedTimeOf), else the time of reading when the broker gave none.
   */
  enqueuedAt: string;
  content: MessageContent;
  /** Why the body could not be read as the envelope (the message is still recorded). */
  bodyProblem: string | undefined;
  /** Properties that were present but unreadable, by name (values are never included: they may be payload). */
  problems: string[];
  /** Every primitive application property, for the history entry (long strings clipped). */
  properties: Record<string, PropertyValue>;
}

/** Longest property value copied into the history entry's property bag. */
const MAX_PROPERTY_CHARS = 1024;

const countSchema = z.union([
  z.number().int().nonnegative(),
  z.string().trim().regex(/^\d+$/).transform(Number),
]);

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function idText(value: unknown): string | undefined {
  if (typeof value === 'string' || typeof value === 'number') return text(value);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  // Long from the AMQP codec (numeric message ids) stringifies sensibly.
  if (value != null && typeof value === 'object' && 'toString' in value) return String(value);
  return undefined;
}

/** An instant as replacementOf writes it (`toISOString()`); an offset is accepted and normalised to UTC. */
const instantSchema = z.iso.datetime({ offset: true });

/**
 * How far before its own broker time a replacement's OriginalEnqueuedTimeUtc may lie. A message is rescheduled at
 * most maxAttempts − 1 = 9 times, each after at most maxDelayMs = 300 s with the default budget (45 min; the
 * backoff alone comes to 1215 s). The slack covers what the schedule does not: a replacement waiting in its session
 * behind a backlog or a Resolver restart before it is read and rescheduled again, a store retry-after longer than
 * the backoff. An older value is no replacement's (or a chain that waited far longer than a throttle does): the
 * message is recorded with the broker's time, as before the property existed.
 */
export const MAX_REPLACEMENT_AGE_MS = (DEFAULT_BUDGET.maxAttempts - 1) * DEFAULT_BUDGET.maxDelayMs + 15 * 60_000;

/**
 * When the message was enqueued, as the Resolver records it: the OriginalEnqueuedTimeUtc a throttled message's
 * scheduled replacement carries (processor.ts replacementOf), else the broker's enqueue time of this delivery. A
 * replacement's own broker time is when its schedule came due (5-300 s per reschedule, ~20 min over nine), and the
 * readers of `enqueuedAt` take it as the message's time (Reconcile's later-response rule, the latency histogram).
 * The property is checked, not trusted: any sender can set it (SDK extra properties, a raw client), and a backdated
 * time would jump a handoff ahead in the agent queue, make Reconcile pick the wrong version and put years into the
 * latency chart. So it is honoured only on a Resolver replacement (ThrottleRetryCount > 0, which replacementOf sets
 * beside it) and only when it is an ISO-8601 instant at most MAX_REPLACEMENT_AGE_MS before this delivery's broker
 * time and not after it; otherwise the broker's time is used and `problem` names why (never the value).
 */
export function enqueuedTimeOf(message: ServiceBusReceivedMessage): { at: Date | undefined; problem?: string } {
  const broker = message.enqueuedTimeUtc instanceof Date && Number.isFinite(message.enqueuedTimeUtc.getTime()) ? message.enqueuedTimeUtc : undefined;
  const props = message.applicationProperties as Record<string, unknown> | undefined;
  const raw = props?.[Prop.OriginalEnqueuedTimeUtc];
  if (raw == null || raw === '') return { at: broker };
  // Read as readResolverMessage reads it: an unreadable count is no replacement's (readResolverMessage names it).
  const throttle = countSchema.safeParse(props?.[Prop.ThrottleRetryCount]);
  if (!throttle.success || throttle.data === 0)
    return { at: broker, problem: `${Prop.OriginalEnqueuedTimeUtc} is set on a message that is not a Resolver replacement (no ${Prop.ThrottleRetryCount})` };
  const parsed = instantSchema.safeParse(raw);
  if (!parsed.success) return { at: broker, problem: `${Prop.OriginalEnqueuedTimeUtc} is not an ISO-8601 date-time` };
  const original = new Date(parsed.data);
  if (broker && original.getTime() > broker.getTime())
    return { at: broker, problem: `${Prop.OriginalEnqueuedTimeUtc} is later than the broker's enqueue time` };
  if (broker && broker.getTime() - original.getTime() > MAX_REPLACEMENT_AGE_MS)
    return { at: broker, problem: `${Prop.OriginalEnqueuedTimeUtc} is more than ${MAX_REPLACEMENT_AGE_MS / 60_000} min before the broker's enqueue time` };
  return { at: original };
}

export function readResolverMessage(message: ServiceBusReceivedMessage, now: () => Date = () => new Date()): ResolverMessage {
  const props = (message.applicationProperties ?? {}) as Record<string, unknown>;
  const problems: string[] = [];

  const count = (name: string): number | undefined => {
    const raw = props[name];
    if (raw == null || raw === '') return undefined;
    const parsed = countSchema.safeParse(raw);
    if (parsed.success) return parsed.data;
    problems.push(`${name} is not a non-negative integer`);
    return undefined;
  };
  const instant = (name: string): string | undefined => {
    const raw = props[name];
    if (raw == null || raw === '') return undefined;
    const t = raw instanceof Date ? raw.getTime() : typeof raw === 'string' ? Date.parse(raw) : Number.NaN;
    if (Number.isFinite(t)) return new Date(t).toISOString();
    problems.push(`${name} is not a date-time`);
    return undefined;
  };

  const rawType = text(props[Prop.MessageType]);
  const decoded = decodeBody(message.body);
  const eventTypeId = text(props[Prop.EventTypeId]) ?? decoded.content.EventContent?.EventTypeId ?? undefined;

  const properties: Record<string, PropertyValue> = {};
  for (const [key, value] of Object.entries(props)) {
    if (typeof value === 'string') properties[key] = value.length > MAX_PROPERTY_CHARS ? `${value.slice(0, MAX_PROPERTY_CHARS)}…` : value;
    else if (typeof value === 'number' || typeof value === 'boolean' || value === null) properties[key] = value;
    else if (value instanceof Date) properties[key] = value.toISOString();
  }

  const throttle = count(Prop.ThrottleRetryCount);
  const enqueued = enqueuedTimeOf(message);
  if (enqueued.problem) problems.push(enqueued.problem);
  return {
    messageId: idText(message.messageId) ?? '',
    sessionId: message.sessionId ?? '',
    correlationId: idText(message.correlationId),
    messageType: parseMessageType(rawType),
    rawMessageType: rawType,
    to: text(props[Prop.To]),
    from: text(props[Prop.From]),
    originatingFrom: text(props[Prop.OriginatingFrom]),
    eventId: text(props[Prop.EventId]),
    eventTypeId: eventTypeId === null || eventTypeId === '' ? undefined : eventTypeId,
    originatingMessageId: text(props[Prop.OriginatingMessageId]),
    parentMessageId: text(props[Prop.ParentMessageId]),
    retryCount: count(Prop.RetryCount),
    throttleRetryCount: throttle ?? 0,
    wireDeliveryCount: typeof message.deliveryCount === 'number' ? message.deliveryCount : 0,
    deadLetterReason: text(props[Prop.DeadLetterReason]),
    deadLetterErrorDescription: text(props[Prop.DeadLetterErrorDescription]),
    handoffReason: text(props[Prop.HandoffReason]),
    externalJobId: text(props[Prop.ExternalJobId]),
    expectedBy: instant(Prop.ExpectedBy),
    queueTimeMs: count(Prop.QueueTimeMs),
    processingTimeMs: count(Prop.ProcessingTimeMs),
    enqueuedAt: (enqueued.at ?? now()).toISOString(),
    content: decoded.content,
    // An absent body is normal for some control messages; only a body that is there and unreadable is a problem.
    bodyProblem: decoded.ok || message.body == null || message.body === '' ? undefined : decoded.problem,
    problems,
    properties,
  };
}
