// The received message as the decision procedure sees it: properties normalized and validated, body decoded.
// Built from a ServiceBusReceivedMessage by the host (fromReceived), or directly in unit tests.
import { decodeBody, parseMessageType, parseNimbusProperties, Prop, SELF } from './contract/index.ts';
import type { MessageContent, MessageType } from './contract/index.ts';
import { SdkProp } from './wire.ts';

export interface InboundMessage {
  messageId: string;
  sessionId?: string | undefined;
  correlationId?: string | undefined;
  enqueuedTime?: Date | undefined;
  deliveryCount?: number | undefined;
  /** The broker's SequenceNumber (decimal): the same on every redelivery of one message, new on a re-publish. */
  sequenceNumber?: string | undefined;
  /** Undefined when the MessageType property is missing or not a NimBus type. */
  messageType?: MessageType | undefined;
  /** Set when the property bag is not a valid NimBus bag; the message is dead-lettered with this reason. */
  invalid?: string | undefined;
  to?: string | undefined;
  from?: string | undefined;
  eventId?: string | undefined;
  /** The EventTypeId application property (authoritative for native EventRequests). */
  eventTypeIdProperty?: string | undefined;
  retryCount: number;
  originatingMessageId?: string | undefined;
  parentMessageId?: string | undefined;
  /** On a handoff command: the delivery that handed the event off (Prop.HandedOffByMessageId), when the sender named it. */
  handedOffByMessageId?: string | undefined;
  originatingFrom?: string | undefined;
  /** On a replayed copy: the DeferralSequence it was parked with. */
  replaySequence?: number | undefined;
  /** On a replayed copy: the exclusive upper bound of the replay pass that sent it. */
  replayUntil?: number | undefined;
  /** On a parked copy (Deferred subscription) or a drain trigger. */
  deferralSequence?: number | undefined;
  /** The deferred processor's pass-end marker (SdkProp.ReplayPassEnd). */
  replayPassEnd?: boolean | undefined;
  /** A copy of a message that was parked again after a replay (SdkProp.Reparked). */
  reparked?: boolean | undefined;
  content: MessageContent;
  /** Why the body is not a readable envelope (absent, not JSON, wrong shape); undefined when it is. */
  bodyProblem?: string | undefined;
  /**
   * The body as it was received (bytes and content type). Parked and replayed copies carry this, not `content`: a
   * body that is not a readable envelope decodes to empty content, and re-encoding that lost the payload for good.
   */
  receivedBody: ReceivedBody;
  /** Every application property as received, for copies that must carry them all (parking, replay). */
  rawProperties: Readonly<Record<string, unknown>>;
}

/** A received body unchanged: the bytes of its data section and its content type (absent when the sender set none). */
export interface ReceivedBody {
  bytes: Buffer;
  contentType?: string | undefined;
}

/** Minimal shape of what @azure/service-bus hands us (kept structural so tests can build one). */
export interface ReceivedLike {
  messageId?: string | number | Buffer | unknown;
  sessionId?: string;
  correlationId?: string | number | Buffer | unknown;
  enqueuedTimeUtc?: Date;
  deliveryCount?: number;
  /** A Long in @azure/service-bus; a number or bigint elsewhere. */
  sequenceNumber?: unknown;
  /** As the client decoded it: a data section that is JSON arrives parsed, anything else as bytes or the value. */
  body?: unknown;
  contentType?: string;
  /** The client's raw AMQP message: its body is the data section as it was on the wire. */
  _rawAmqpMessage?: { body?: unknown; bodyType?: string | undefined };
  applicationProperties?: Record<string, unknown>;
}

/**
 * The body's bytes as received. The client JSON-parses a data section, and writing the parsed value back would not
 * give the same bytes (whitespace, number forms, key order), so the raw section is read when there is one. A body in
 * an AMQP value section (or a message built in a test) has no bytes of its own: its text, or its JSON, is carried.
 */
export function receivedBodyOf(message: ReceivedLike): ReceivedBody {
  const contentType = message.contentType || undefined;
  return { bytes: bodyBytes(message), ...(contentType !== undefined ? { contentType } : {}) };
}

function bodyBytes(message: ReceivedLike): Buffer {
  const raw = message._rawAmqpMessage;
  if (raw && (raw.bodyType ?? 'data') === 'data') {
    const section = raw.body as { content?: unknown } | undefined;
    const content = section instanceof Uint8Array ? section : section?.content;
    if (content instanceof Uint8Array) return Buffer.from(content);
    // A body of several data sections (rhea gives their contents as an array): their bytes in order, as a receiver
    // that reads the message whole would take them. Before, the array fell through to the JSON of Buffer objects.
    if (isByteChunks(content)) return Buffer.concat(content);
  }
  const body = message.body;
  if (body == null) return Buffer.alloc(0);
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (isByteChunks(body)) return Buffer.concat(body);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  try {
    return Buffer.from(JSON.stringify(body) ?? '', 'utf8');
  } catch {
    return Buffer.from(String(body), 'utf8');
  }
}

function isByteChunks(v: unknown): v is Uint8Array[] {
  return Array.isArray(v) && v.length > 0 && v.every((c) => c instanceof Uint8Array);
}

export function fromReceived(message: ReceivedLike): InboundMessage {
  const raw = { ...(message.applicationProperties ?? {}) };
  const decoded = decodeBody(message.body);
  const base: InboundMessage = {
    messageId: idString(message.messageId) ?? '',
    sessionId: message.sessionId || undefined,
    correlationId: idString(message.correlationId),
    enqueuedTime: message.enqueuedTimeUtc,
    deliveryCount: message.deliveryCount,
    sequenceNumber: sequenceNumberString(message.sequenceNumber),
    retryCount: 0,
    content: decoded.content,
    bodyProblem: decoded.ok ? undefined : decoded.problem,
    receivedBody: receivedBodyOf(message),
    rawProperties: raw,
  };
  const parsed = parseNimbusProperties(raw);
  if (!parsed.ok) {
    return {
      ...base,
      messageType: parseMessageType(raw[Prop.MessageType]),
      invalid: parsed.problem,
      to: str(raw[Prop.To]),
      from: str(raw[Prop.From]),
      eventId: str(raw[Prop.EventId]),
      eventTypeIdProperty: str(raw[Prop.EventTypeId]),
    };
  }
  const p = parsed.properties as Record<string, unknown>;
  return {
    ...base,
    messageType: parsed.properties.MessageType,
    to: str(p[Prop.To]),
    from: str(p[Prop.From]),
    eventId: str(p[Prop.EventId]),
    eventTypeIdProperty: str(p[Prop.EventTypeId]),
    retryCount: typeof p[Prop.RetryCount] === 'number' ? (p[Prop.RetryCount] as number) : 0,
    originatingMessageId: str(p[Prop.OriginatingMessageId]),
    parentMessageId: str(p[Prop.ParentMessageId]),
    handedOffByMessageId: str(p[Prop.HandedOffByMessageId]),
    originatingFrom: str(p[Prop.OriginatingFrom]),
    replaySequence: count(p[Prop.ReplaySequence]),
    replayUntil: count(raw[SdkProp.ReplayUntil]),
    deferralSequence: count(p[Prop.DeferralSequence] ?? raw[Prop.DeferralSequence]),
    replayPassEnd: raw[SdkProp.ReplayPassEnd] === true,
    reparked: raw[SdkProp.Reparked] === true,
  };
}

/** The event type: the property when present, else the body's (messages from before the property existed). */
export function authoritativeEventTypeId(m: InboundMessage): string | undefined {
  return m.eventTypeIdProperty ?? (m.content.EventContent?.EventTypeId || undefined);
}

/** OriginatingMessageId of anything answering `m`: the chain's first message id (`self` means m itself). */
export function originatingIdOf(m: InboundMessage): string {
  const o = m.originatingMessageId;
  return o == null || o === '' || o === SELF ? m.messageId : o;
}

function str(v: unknown): string | undefined {
  if (v == null) return undefined;
  const s =
    typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
  return s === '' ? undefined : s;
}

function count(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === 'string' && /^\d+$/.test(v.trim())) return Number(v.trim());
  return undefined;
}

/** A Long (its toString is decimal), number, bigint or decimal string; undefined for anything else. */
function sequenceNumberString(v: unknown): string | undefined {
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'string') return /^\d+$/.test(v) ? v : undefined;
  if (typeof v === 'object' && v !== null && v.toString !== Object.prototype.toString) {
    const text = String(v);
    return /^\d+$/.test(text) ? text : undefined;
  }
  return undefined;
}

function idString(v: unknown): string | undefined {
  if (v == null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  return String(v);
}
