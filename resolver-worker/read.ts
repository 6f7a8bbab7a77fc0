// Reading one received Resolver message into plain fields. Lenient on purpose: the Resolver is the platform's
// record, so a bad value in one property (an unparsable RetryCount, a malformed ExpectedBy, an unreadable body)
// is dropped and named in `problems` rather than losing the whole message. Only what makes a message impossible
// to record (no MessageType the contract knows, no EventId) is left for the caller to dead-letter.
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { z } from 'zod';
import { DEFAULT_BUDGET, type BudgetOptions } from './budget.ts';
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
  /**
   * A Resolver replacement (ThrottleRetryCount > 0) whose OriginalEnqueuedTimeUtc is missing or was rejected:
   * `enqueuedAt` is then its own broker time, when its schedule came due, not the message's, which is unknown. The
   * store asks the stale-write guard's rule 8 without its enqueue-time bound for it (docs/resolver.md).
   */
  originalTimeUnknown: boolean;
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

/**
 * An instant (epoch ms) as the store keeps instants: ISO-8601 with a four-digit year, or undefined when it is not
 * finite or its year is outside 0000-9999. toISOString() writes such a year in the expanded form (`+010000-…`,
 * `-000001-…`), which the store's schema refuses, so the whole outcome was refused with it (an InvalidMessage dead
 * letter for one malformed property).
 */
export function isoInstant(t: number): string | undefined {
  if (!Number.isFinite(t)) return undefined;
  const iso = new Date(t).toISOString();
  return iso.startsWith('+') || iso.startsWith('-') ? undefined : iso;
}

/** An instant as replacementOf writes it (`toISOString()`); an offset is accepted and normalised to UTC. */
const instantSchema = z.iso.datetime({ offset: true });

/**
 * What a replacement's age may hold beyond its reschedules: waiting for the Resolver. The age is measured from the
 * original's broker time, so it includes every wait in the session before the Resolver read a copy - the original
 * behind a backlog before its first throttle, each replacement behind its session's backlog once its schedule came
 * due - and those waits are as long as the Resolver was down or behind (a stop over a weekend and the drain after it),
 * which no budget bounds; a store retry-after longer than the backoff, too. A week: the SDK keeps a handled MessageId
 * for as long (DEFAULT_INBOX_RETENTION_MS), the same judgement of how long a message may still be on its way. It was
 * 15 min, so a replacement of a message that had waited more than about an hour (with the default budget) was
 * recorded with its own late time and a property problem. The bound is a plausibility check, not a proof: any
 * sender can set both properties, and it keeps only a value beyond any wait (a 2000-01-01 one) out of the record.
 */
export const REPLACEMENT_BACKLOG_MARGIN_MS = 7 * 24 * 3_600_000;

/**
 * The bound never exceeds 30 days, whatever the budget: the options schema does not limit `maxDelayMs`, and a
 * misconfigured backoff cap (a wrong unit, a stray zero) would otherwise stretch the bound to years and turn the
 * check off. Thirty days holds the week's margin and more than three weeks of reschedules.
 */
export const MAX_REPLACEMENT_AGE_CAP_MS = 30 * 24 * 3_600_000;

/** What the age bound reads of the Resolver's budget (budget.ts): how often and how long it reschedules. */
export type ReplacementBudget = Pick<BudgetOptions, 'maxAttempts' | 'maxDelayMs'>;

/**
 * How far before its own broker time a replacement's OriginalEnqueuedTimeUtc may lie, for the budget the Resolver
 * runs with (startResolver's `budget`; the throttle path reschedules with it): a message is rescheduled at most
 * maxAttempts − 1 times, each after at most maxDelayMs (9 × 300 s = 45 min with the default budget), plus
 * REPLACEMENT_BACKLOG_MARGIN_MS for the waits the schedule does not cover, at most MAX_REPLACEMENT_AGE_CAP_MS. An
 * older value is no replacement's: the message is recorded with the broker's time, as before the property existed.
 */
export function maxReplacementAgeMs(budget: ReplacementBudget = DEFAULT_BUDGET): number {
  return Math.min(MAX_REPLACEMENT_AGE_CAP_MS, Math.max(0, budget.maxAttempts - 1) * budget.maxDelayMs + REPLACEMENT_BACKLOG_MARGIN_MS);
}

/** The age bound in words, for the problem it names: hours, as the margin is counted in them. */
function ageText(ms: number): string {
  return `${Math.round((ms / 3_600_000) * 100) / 100} h`;
}

/**
 * When the message was enqueued, as the Resolver records it: the OriginalEnqueuedTimeUtc a throttled message's
 * scheduled replacement carries (processor.ts replacementOf), else the broker's enqueue time of this delivery. A
 * replacement's own broker time is when its schedule came due (5-300 s per reschedule, ~20 min over nine), and the
 * readers of `enqueuedAt` take it as the message's time (Reconcile's later-response rule, the latency histogram).
 * The property is checked, not trusted: any sender can set it (SDK extra properties, a raw client), and a backdated
 * time would jump a handoff ahead in the agent queue, make Reconcile pick the wrong version and put years into the
 * latency chart. So it is honoured only on a Resolver replacement (ThrottleRetryCount > 0, which replacementOf sets
 * beside it) and only when it is an ISO-8601 instant at most maxReplacementAgeMs(budget) before this delivery's
 * broker time and not after it; otherwise the broker's time is used and `problem` names why (never the value).
 * `budget` is the one the Resolver runs with, which its reschedules follow.
 */
export function enqueuedTimeOf(
  message: ServiceBusReceivedMessage,
  budget: ReplacementBudget = DEFAULT_BUDGET,
): { at: Date | undefined; problem?: string; original?: true } {
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
  const maxAgeMs = maxReplacementAgeMs(budget);
  if (broker && broker.getTime() - original.getTime() > maxAgeMs)
    return { at: broker, problem: `${Prop.OriginalEnqueuedTimeUtc} is more than ${ageText(maxAgeMs)} before the broker's enqueue time` };
  return { at: original, original: true };
}

/**
 * Whether a message is a Resolver replacement whose original enqueue time is unknown: ThrottleRetryCount > 0 (read
 * as readResolverMessage reads it) and OriginalEnqueuedTimeUtc missing or not honoured (enqueuedTimeOf).
 */
export function originalTimeUnknownOf(message: ServiceBusReceivedMessage, budget: ReplacementBudget = DEFAULT_BUDGET): boolean {
  const throttle = countSchema.safeParse((message.applicationProperties as Record<string, unknown> | undefined)?.[Prop.ThrottleRetryCount]);
  return throttle.success && throttle.data > 0 && enqueuedTimeOf(message, budget).original !== true;
}

export function readResolverMessage(
  message: ServiceBusReceivedMessage,
  now: () => Date = () => new Date(),
  budget: ReplacementBudget = DEFAULT_BUDGET,
): ResolverMessage {
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
    const iso = isoInstant(t);
    if (iso !== undefined) return iso;
    problems.push(Number.isFinite(t) ? `${name} is outside the years 0000-9999` : `${name} is not a date-time`);
    return undefined;
  };

  const rawType = text(props[Prop.MessageType]);
  const decoded = decodeBody(message.body);
  const eventTypeId = text(props[Prop.EventTypeId]) ?? decoded.content.EventContent?.EventTypeId ?? undefined;

  const properties: Record<string, PropertyValue> = {};
  for (const [key, value] of Object.entries(props)) {
    if (typeof value === 'string') properties[key] = value.length > MAX_PROPERTY_CHARS ? `${value.slice(0, MAX_PROPERTY_CHARS)}…` : value;
    else if (typeof value === 'number' || typeof value === 'boolean' || value === null) properties[key] = value;
    else if (value instanceof Date) {
      // An AMQP timestamp outside JS Date's range decodes to an Invalid Date, whose toISOString() throws (a Java
      // sender's "never", new Date(Long.MAX_VALUE)): that threw out of the whole read, before any settlement.
      const iso = Number.isFinite(value.getTime()) ? value.toISOString() : undefined;
      if (iso !== undefined) properties[key] = iso;
      else problems.push(`${key} is not a date-time`);
    }
  }

  const throttle = count(Prop.ThrottleRetryCount);
  const enqueued = enqueuedTimeOf(message, budget);
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
    originalTimeUnknown: (throttle ?? 0) > 0 && enqueued.original !== true,
    content: decoded.content,
    // An absent body is normal for some control messages; only a body that is there and unreadable is a problem.
    bodyProblem: decoded.ok || message.body == null || message.body === '' ? undefined : decoded.problem,
    problems,
    properties,
  };
}
