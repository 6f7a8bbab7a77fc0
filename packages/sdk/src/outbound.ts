// Builders for every message the subscriber sends: responses to the Resolver, scheduled RetryRequests, parked
// copies, replayed copies and drain triggers. Pure: ids and clocks come from the caller.
import { createHash } from 'node:crypto';
import {
  Address,
  CopyKind,
  derivedMessageId,
  encodeBody,
  MessageType,
  Prop,
  SELF,
  toWireProperties,
} from './contract/index.ts';
import type { ErrorContent, EventContent, MessageContent, WireValue } from './contract/index.ts';
import type { InboundMessage, ReceivedBody } from './inbound.ts';
import { authoritativeEventTypeId, originatingIdOf } from './inbound.ts';
import { SdkProp } from './wire.ts';

/** A message to send to a topic, in the shape the host turns into a ServiceBusMessage. */
export interface OutgoingMessage {
  messageId: string;
  sessionId?: string | undefined;
  correlationId?: string | undefined;
  /** An envelope the SDK wrote (sent as UTF-8 JSON), or a received body carried unchanged (parked, replayed copies). */
  body: string | ReceivedBody;
  applicationProperties: Record<string, WireValue>;
}

/** The body's text: the envelope as written, or a carried body's bytes read as UTF-8 (tests, fake ports). */
export function bodyText(m: Pick<OutgoingMessage, 'body'>): string {
  return typeof m.body === 'string' ? m.body : m.body.bytes.toString('utf8');
}

/** A stable id from parts (hex, 32 chars): the same inputs always give the same MessageId. */
export function deriveId(...parts: Array<string | number>): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(String(p)).update('\u001f');
  return h.digest('hex').slice(0, 32);
}

export interface Clock {
  /** When the handler (or the decision) started; QueueTimeMs = start - enqueued. */
  startedAt: Date;
  /** When the response is built; ProcessingTimeMs = now - start. */
  now: Date;
}

export interface ResponseOptions {
  content?:
    | MessageContent
    | { EventContent?: EventContent | null; ErrorContent?: Partial<ErrorContent> | null }
    | undefined;
  extra?: Record<string, WireValue | null | undefined> | undefined;
  /** Explicit From (the heartbeat reply names the endpoint itself); normally the Resolver forwarder stamps it. */
  from?: string | undefined;
  messageId: string;
}

/** Any response to the Resolver, addressed through the endpoint's own topic (To = Resolver). */
export function buildResponse(
  type: MessageType,
  inbound: InboundMessage,
  clock: Clock,
  options: ResponseOptions,
): OutgoingMessage {
  const queueMs = inbound.enqueuedTime
    ? Math.max(0, clock.startedAt.getTime() - inbound.enqueuedTime.getTime())
    : undefined;
  const processingMs = Math.max(0, clock.now.getTime() - clock.startedAt.getTime());
  const content = options.content ?? { EventContent: inbound.content.EventContent };
  return {
    messageId: options.messageId,
    sessionId: inbound.sessionId,
    // The chain keeps its correlation id end to end (tracing); a message without one is correlated by its id.
    correlationId: inbound.correlationId ?? inbound.messageId,
    body: encodeBody(content),
    applicationProperties: toWireProperties({
      [Prop.To]: Address.Resolver,
      [Prop.From]: options.from,
      [Prop.MessageType]: type,
      [Prop.EventId]: inbound.eventId,
      [Prop.EventTypeId]: authoritativeEventTypeId(inbound),
      [Prop.OriginatingMessageId]: originatingIdOf(inbound),
      [Prop.ParentMessageId]: inbound.messageId,
      [Prop.OriginatingFrom]: inbound.from ?? SELF,
      [Prop.RetryCount]: inbound.retryCount,
      [Prop.QueueTimeMs]: queueMs,
      [Prop.ProcessingTimeMs]: processingMs,
      ...options.extra,
    }),
  };
}

export function errorContentOf(error: unknown, errorType?: string): Partial<ErrorContent> {
  if (error instanceof Error) {
    return {
      ErrorText: error.message,
      ErrorType: errorType ?? error.name,
      ExceptionStackTrace: error.stack ?? null,
      ExceptionSource: null,
    };
  }
  return { ErrorText: String(error), ErrorType: errorType ?? typeof error };
}

/**
 * The RetryRequest: same content and identity, To = Retry (the Retry subscription rewrites To and From). Its
 * MessageId derives from the delivery that failed, not the event: a redelivery of that delivery that runs the
 * handler again (its settlement interrupted before the block) schedules the same id, but another delivery of the
 * event starting a series of its own does not repeat an id the Resolver's history and Retry audit already hold. (The
 * schedule follows the completion, so no redelivery follows a scheduled retry; one interrupted after the block is
 * completed as the blocking event, and the retry is not scheduled.) A delivery without an id falls back to the
 * event's.
 */
export function buildRetryRequest(inbound: InboundMessage, retryCount: number): OutgoingMessage {
  return {
    messageId: deriveId('retry', inbound.messageId || (inbound.eventId ?? ''), retryCount),
    sessionId: inbound.sessionId,
    correlationId: inbound.correlationId ?? inbound.messageId,
    body: encodeBody({ EventContent: inbound.content.EventContent }),
    applicationProperties: toWireProperties({
      [Prop.To]: Address.Retry,
      [Prop.MessageType]: MessageType.RetryRequest,
      [Prop.EventId]: inbound.eventId,
      [Prop.EventTypeId]: authoritativeEventTypeId(inbound),
      [Prop.OriginatingMessageId]: originatingIdOf(inbound),
      [Prop.ParentMessageId]: inbound.messageId,
      [Prop.OriginatingFrom]: inbound.originatingFrom ?? inbound.from ?? SELF,
      [Prop.RetryCount]: retryCount,
    }),
  };
}

/** Properties a parked or replayed copy must not inherit (they describe the hop, not the event). */
const HOP_PROPERTIES = new Set<string>([
  Prop.To,
  Prop.OriginalSessionId,
  Prop.DeferralSequence,
  Prop.ReplaySequence,
  SdkProp.ReplayUntil,
  SdkProp.ReplayPassEnd,
]);

function carriedProperties(inbound: InboundMessage): Record<string, WireValue> {
  const out: Record<string, WireValue> = {};
  for (const [k, v] of Object.entries(inbound.rawProperties)) {
    if (HOP_PROPERTIES.has(k)) continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
    else if (v instanceof Date) out[k] = v.toISOString();
  }
  return out;
}

/**
 * The copy parked on the Deferred subscription. Every property is kept (From above all: the replayed copy must
 * look like the original), and so is the body, byte for byte with its content type. Its MessageId is derived from the original's (DESIGN.md §5, stable ids): a copy parked
 * twice after a crash, or replayed twice, carries the same id, yet it is not the original itself, so the Resolver
 * records the replay as a new delivery instead of refusing it as a stale copy of a message the row already
 * answered (the DeferralResponse names the original as its parent).
 */
export function buildParkedCopy(inbound: InboundMessage, sequence: number): OutgoingMessage {
  return {
    messageId: derivedMessageId(inbound.messageId, CopyKind.Parked),
    sessionId: inbound.sessionId,
    correlationId: inbound.correlationId,
    // The received bytes, not the decoded content: a body that is not a readable envelope decodes to empty content,
    // and the copy must still carry it, so its eventual dead-letter names the real problem and keeps the payload.
    body: inbound.receivedBody,
    applicationProperties: {
      ...carriedProperties(inbound),
      [Prop.To]: Address.Deferred,
      [Prop.OriginalSessionId]: inbound.sessionId ?? '',
      [Prop.DeferralSequence]: sequence,
      // Carried on from here (not a hop property): every later copy of this message was parked again.
      ...(inbound.replaySequence !== undefined ? { [SdkProp.Reparked]: true } : {}),
    },
  };
}

/** The replayed copy of a parked message, back to the endpoint's main subscription; its id derives from the parked copy's. */
export function buildReplayedCopy(
  parked: InboundMessage,
  endpointId: string,
  sessionId: string,
  until: number,
  /** The last copy of its pass: the main handler accounts for every sequence below `until` after it. */
  passEnd = false,
): OutgoingMessage {
  return {
    messageId: derivedMessageId(parked.messageId, CopyKind.Replayed),
    sessionId,
    correlationId: parked.correlationId,
    body: parked.receivedBody,
    applicationProperties: {
      ...carriedProperties(parked),
      [Prop.To]: endpointId,
      [Prop.ReplaySequence]: parked.deferralSequence ?? 0,
      [SdkProp.ReplayUntil]: until,
      ...(passEnd ? { [SdkProp.ReplayPassEnd]: true } : {}),
    },
  };
}

/**
 * The pass-end marker: sent by the deferred processor to the endpoint's own session after the replayed copies of a
 * pass (and after checking that nothing below `until` is still parked). Same id for the same pass, so a pass run
 * twice sends one marker's worth of effect. It reaches the Resolver too (the second Resolver rule), recorded in the
 * history of the event whose release started the replay.
 */
export function buildReplayPassEnd(
  trigger: InboundMessage,
  endpointId: string,
  sessionId: string,
  until: number,
): OutgoingMessage {
  return {
    messageId: deriveId('replay-end', sessionId, until, trigger.messageId),
    sessionId,
    correlationId: trigger.correlationId ?? trigger.messageId,
    body: encodeBody({}),
    applicationProperties: toWireProperties({
      [Prop.To]: endpointId,
      [Prop.MessageType]: MessageType.ProcessDeferredRequest,
      [Prop.EventId]: trigger.eventId ?? trigger.messageId,
      [Prop.EventTypeId]: trigger.eventTypeIdProperty,
      [Prop.ParentMessageId]: trigger.messageId,
      [SdkProp.ReplayUntil]: until,
      [SdkProp.ReplayPassEnd]: true,
    }),
  };
}

/** Asks the deferred processor to replay the session's parked messages with a sequence below `until`. */
export function buildProcessDeferredRequest(inbound: InboundMessage, until: number): OutgoingMessage {
  const sessionId = inbound.sessionId ?? '';
  return {
    messageId: deriveId('drain', sessionId, until),
    sessionId,
    correlationId: inbound.correlationId ?? inbound.messageId,
    body: encodeBody({}),
    applicationProperties: toWireProperties({
      [Prop.To]: Address.DeferredProcessor,
      [Prop.MessageType]: MessageType.ProcessDeferredRequest,
      [Prop.EventId]: inbound.eventId,
      [Prop.EventTypeId]: authoritativeEventTypeId(inbound),
      [Prop.ParentMessageId]: inbound.messageId,
      [SdkProp.SessionId]: sessionId,
      [SdkProp.ReplayUntil]: until,
    }),
  };
}
