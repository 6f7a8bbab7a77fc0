// The dead-letter queue of one subscription: peek with paging and a reason filter, replay (DESIGN.md §5) and
// purge. Bodies are read as raw bytes (skipParsingBodyAsJson) so a replayed copy carries exactly the bytes the
// dead letter held, and they are shown as text to the page, never logged.
import type { ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage, ServiceBusReceiver } from '@azure/service-bus';
import { Prop } from '@nimbus/sdk/contract';
import { closeForRequest } from '../requestClose.ts';
import { deadLetterEventOf, isPermanentFailure, replayWarningOf, type DeadLetterEvent, type ReplayWarning } from './deadLetterEvent.ts';

export interface DeadLetterView {
  sequenceNumber: string;
  messageId: string | null;
  sessionId: string | null;
  reason: string | null;
  description: string | null;
  enqueuedAt: string | null;
  deliveryCount: number | null;
  deadLetterSource: string | null;
  applicationProperties: Record<string, unknown>;
  /** The event it belongs to (from its EventId), for the link to the event page; null for a foreign message. */
  event: DeadLetterEvent | null;
  /** Dead-lettered as a permanent failure by the SDK: replayed unchanged it fails again. */
  permanentFailure: boolean;
  /**
   * Set when replaying it unchanged is futile or harmful (a refused Manager command, a resubmission with no room for
   * its handoff: deadLetterEvent.ts replayWarningOf). A replay skips it, or refuses it when listed, unless told `includeWarned`.
   */
  replayWarning: ReplayWarning | null;
  /** The body as UTF-8 text (the page escapes it); binary bodies as base64 with `bodyEncoding: 'base64'`. */
  body: string;
  bodyEncoding: 'utf8' | 'base64';
}

export interface DeadLetterPage {
  items: DeadLetterView[];
  /** Sequence number to peek from for the next page; null at the end of the queue. */
  next: string | null;
  /** Messages looked at for this page (a reason filter can skip many). */
  scanned: number;
}

/**
 * Properties a replayed copy must not carry (DESIGN.md §5): it starts a fresh throttle budget and reads as new. The
 * Resolver's OriginalEnqueuedTimeUtc goes with the budget it belongs to: the Resolver honours it only on a throttle
 * replacement, so on a replay it was only named a property problem (docs/resolver.md).
 */
export const STRIPPED_ON_REPLAY: readonly string[] = [Prop.ThrottleRetryCount, Prop.OriginalEnqueuedTimeUtc, Prop.DeadLetterReason, Prop.DeadLetterErrorDescription];

const MAX_PAGE = 100;
const MAX_SCAN_PER_PAGE = 1000;

function bodyText(body: unknown): { body: string; bodyEncoding: 'utf8' | 'base64' } {
  if (Buffer.isBuffer(body) || body instanceof Uint8Array) {
    const buf = Buffer.from(body);
    const text = buf.toString('utf8');
    // A lossless round trip means it is text; anything else is shown as base64 rather than mangled.
    return Buffer.from(text, 'utf8').equals(buf) ? { body: text, bodyEncoding: 'utf8' } : { body: buf.toString('base64'), bodyEncoding: 'base64' };
  }
  if (typeof body === 'string') return { body, bodyEncoding: 'utf8' };
  try {
    return { body: JSON.stringify(body) ?? '', bodyEncoding: 'utf8' };
  } catch {
    return { body: String(body), bodyEncoding: 'utf8' };
  }
}

function plainProps(props: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(props ?? {})) out[k] = v instanceof Date ? v.toISOString() : v;
  return out;
}

/** A dead letter of `topic` as the page shows it (the topic tells whose event a parked copy is). */
export function viewOf(m: ServiceBusReceivedMessage, topic: string): DeadLetterView {
  const props = plainProps(m.applicationProperties);
  const reason = m.deadLetterReason ?? (typeof props[Prop.DeadLetterReason] === 'string' ? (props[Prop.DeadLetterReason] as string) : null);
  const description =
    m.deadLetterErrorDescription ??
    (typeof props[Prop.DeadLetterErrorDescription] === 'string' ? (props[Prop.DeadLetterErrorDescription] as string) : null);
  return {
    sequenceNumber: m.sequenceNumber?.toString() ?? '',
    messageId: m.messageId == null ? null : String(m.messageId),
    sessionId: m.sessionId ?? null,
    reason: reason ?? null,
    description: description ?? null,
    enqueuedAt: m.enqueuedTimeUtc ? m.enqueuedTimeUtc.toISOString() : null,
    deliveryCount: m.deliveryCount ?? null,
    deadLetterSource: m.deadLetterSource ?? null,
    applicationProperties: props,
    event: deadLetterEventOf(topic, props),
    permanentFailure: isPermanentFailure(reason ?? null),
    replayWarning: replayWarningOf(reason ?? null, props),
    ...bodyText(m.body),
  };
}

export function deadLetterReceiver(client: ServiceBusClient, topic: string, subscription: string, mode: 'peekLock' | 'receiveAndDelete' = 'peekLock'): ServiceBusReceiver {
  return client.createReceiver(topic, subscription, { subQueueType: 'deadLetter', receiveMode: mode, skipParsingBodyAsJson: true });
}

/**
 * A sequence number for `fromSequenceNumber`, which the client types as a `long` Long. What the client does with
 * it is `Long.isLong(v)` (the `__isLong__` brand) and `v.toBytesBE()`; this value provides exactly that, from a
 * decimal string. (`long` is not our dependency, and resolving the client's own copy at run time does not
 * survive the Next.js server bundle.)
 */
type LongLike = NonNullable<ServiceBusReceivedMessage['sequenceNumber']>;
export function sequenceNumber(value: string | bigint): LongLike {
  const n = BigInt.asUintN(64, typeof value === 'bigint' ? value : BigInt(value));
  const bytes: number[] = [];
  for (let i = 7; i >= 0; i--) bytes.push(Number((n >> BigInt(i * 8)) & 0xffn));
  return { __isLong__: true, toBytesBE: () => bytes, toString: () => n.toString() } as unknown as LongLike;
}

/**
 * One page of dead letters, oldest first, starting at sequence number `from` (inclusive). With a reason filter
 * the page holds only matching messages and may have scanned past many others.
 */
export async function peekDeadLetters(
  client: ServiceBusClient,
  topic: string,
  subscription: string,
  options: { from?: string; pageSize?: number; reason?: string } = {},
): Promise<DeadLetterPage> {
  const pageSize = Math.min(Math.max(1, options.pageSize ?? 25), MAX_PAGE);
  const receiver = deadLetterReceiver(client, topic, subscription);
  try {
    const items: DeadLetterView[] = [];
    let scanned = 0;
    // Always from an explicit sequence number: a peek without one continues from the entity's last peek.
    let from: LongLike = sequenceNumber(options.from !== undefined && options.from !== '' ? options.from : '0');
    let next: string | null = null;
    for (;;) {
      const batch = await receiver.peekMessages(pageSize, { fromSequenceNumber: from });
      if (batch.length === 0) {
        next = null;
        break;
      }
      let stopAt: string | null = null;
      for (const m of batch) {
        scanned++;
        const v = viewOf(m, topic);
        if (items.length >= pageSize) {
          stopAt = v.sequenceNumber;
          break;
        }
        if (options.reason === undefined || v.reason === options.reason) items.push(v);
      }
      const last = batch[batch.length - 1]!.sequenceNumber!;
      if (stopAt !== null) {
        next = stopAt;
        break;
      }
      from = sequenceNumber(BigInt(last.toString()) + 1n);
      next = from.toString();
      if (items.length >= pageSize || scanned >= MAX_SCAN_PER_PAGE) break;
    }
    // A page that ends exactly at the queue's end still offers `next`; the following peek is then empty.
    return { items, next, scanned };
  } finally {
    // A peek-only receiver opens no link of its own (its close sends nothing today), but bounded all the same: the
    // page must answer whatever the client's close does (server/requestClose.ts).
    await closeForRequest('a dead-letter peek receiver', receiver, { topic, subscription });
  }
}

/** The copy a replay sends: same MessageId, body bytes and routing fields; the replay-stripped properties gone. */
export function replayCopy(m: ServiceBusReceivedMessage): ServiceBusMessage {
  const strip = new Set(STRIPPED_ON_REPLAY.map((p) => p.toLowerCase()));
  const applicationProperties: NonNullable<ServiceBusMessage['applicationProperties']> = {};
  for (const [k, v] of Object.entries(m.applicationProperties ?? {})) {
    if (!strip.has(k.toLowerCase())) applicationProperties[k] = v as string | number | boolean | Date | null;
  }
  const copy: ServiceBusMessage = { body: m.body, applicationProperties };
  if (m.messageId !== undefined) copy.messageId = m.messageId;
  if (m.sessionId) copy.sessionId = m.sessionId;
  if (m.correlationId !== undefined) copy.correlationId = m.correlationId;
  if (m.contentType) copy.contentType = m.contentType;
  if (m.subject) copy.subject = m.subject;
  if (m.to) copy.to = m.to;
  if (m.replyTo) copy.replyTo = m.replyTo;
  if (m.replyToSessionId) copy.replyToSessionId = m.replyToSessionId;
  return copy;
}

/** Deletes every message of the dead-letter queue (receive-and-delete); returns how many. */
export async function purgeDeadLetters(client: ServiceBusClient, topic: string, subscription: string, maxWaitMs = 1000): Promise<number> {
  const receiver = deadLetterReceiver(client, topic, subscription, 'receiveAndDelete');
  let purged = 0;
  try {
    for (;;) {
      const batch = await receiver.receiveMessages(100, { maxWaitTimeInMs: maxWaitMs });
      if (batch.length === 0) return purged;
      purged += batch.length;
    }
  } finally {
    // Bounded: its link's detach met by a dropped connection never ends, and the purge's audit and answer come after.
    await closeForRequest('a dead-letter purge receiver', receiver, { topic, subscription });
  }
}
