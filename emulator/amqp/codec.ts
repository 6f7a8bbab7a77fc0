// Pure encoding helpers shared by the links and the $management node: entity paths, lock-token byte orders,
// .NET ticks and the message annotations the client reads on every received message.

import rhea from 'rhea';
import { captureTypes, withTypes } from '../broker/typed-values.ts';
import type { Message } from 'rhea';
import { QUEUE_STORE } from '../broker/api.ts';
import type { Delivered, ReceiveSource } from '../broker/api.ts';

/** A receive source for a bare entity name: a queue's own messages. */
export function queueSource(name: string): ReceiveSource {
  return { topic: name, subscription: QUEUE_STORE };
}

/** What an attach address names (a bare name is a topic or a queue: senders do not care which). */
export type ParsedAddress =
  | { kind: 'cbs' }
  | { kind: 'topic'; topic: string }
  | { kind: 'subscription'; source: ReceiveSource }
  | { kind: 'management'; entity: ParsedEntity };

export type ParsedEntity = { kind: 'topic'; topic: string } | { kind: 'subscription'; source: ReceiveSource };

/**
 * Parse `topic`, `topic/Subscriptions/sub[/$DeadLetterQueue|/$Transfer/$DeadLetterQueue]` and the same
 * followed by `/$management`. The client sends bare paths; a full `sb://host/` or `amqp://host/` prefix is
 * tolerated because other clients send that form.
 */
export function parseAddress(address: string | undefined): ParsedAddress | undefined {
  if (!address) return undefined;
  let path = address.replace(/^[a-z]+:\/\/[^/]+\//i, '').replace(/^\/+/, '');
  if (path === '$cbs') return { kind: 'cbs' };
  let management = false;
  if (/\/\$management$/i.test(path)) {
    management = true;
    path = path.replace(/\/\$management$/i, '');
  }
  const entity = parseEntity(path);
  if (!entity) return undefined;
  if (management) return { kind: 'management', entity };
  return entity;
}

function parseEntity(path: string): ParsedEntity | undefined {
  const parts = path.split('/');
  if (parts.some((p) => p.length === 0)) return undefined;
  if (parts.length === 1) return { kind: 'topic', topic: parts[0]! };
  // A queue's dead-letter queues: `queue/$DeadLetterQueue`, `queue/$Transfer/$DeadLetterQueue`.
  const tail = parts.slice(1).map((p) => p.toLowerCase());
  if (tail.length === 1 && tail[0] === '$deadletterqueue') {
    return {
      kind: 'subscription',
      source: { topic: parts[0]!, subscription: QUEUE_STORE, subQueue: 'deadLetter' },
    };
  }
  if (tail.length === 2 && tail[0] === '$transfer' && tail[1] === '$deadletterqueue') {
    return {
      kind: 'subscription',
      source: { topic: parts[0]!, subscription: QUEUE_STORE, subQueue: 'transferDeadLetter' },
    };
  }
  if (parts.length < 3 || parts[1]!.toLowerCase() !== 'subscriptions') return undefined;
  const topic = parts[0]!;
  const subscription = parts[2]!;
  const rest = parts.slice(3).map((p) => p.toLowerCase());
  if (rest.length === 0) return { kind: 'subscription', source: { topic, subscription } };
  if (rest.length === 1 && rest[0] === '$deadletterqueue') {
    return { kind: 'subscription', source: { topic, subscription, subQueue: 'deadLetter' } };
  }
  if (rest.length === 2 && rest[0] === '$transfer' && rest[1] === '$deadletterqueue') {
    return { kind: 'subscription', source: { topic, subscription, subQueue: 'transferDeadLetter' } };
  }
  return undefined;
}

/** The path an error message names, as the client would recognise it. */
export function describeSource(source: ReceiveSource): string {
  const base =
    source.subscription === QUEUE_STORE
      ? source.topic
      : `${source.topic}/Subscriptions/${source.subscription}`;
  if (source.subQueue === 'deadLetter') return `${base}/$DeadLetterQueue`;
  if (source.subQueue === 'transferDeadLetter') return `${base}/$Transfer/$DeadLetterQueue`;
  return base;
}

// ---------------------------------------------------------------------------------------------------------
// Lock tokens. The broker's token string is in delivery-tag byte order. The client turns a delivery tag into
// its token string after swapping the first three groups (the .NET GUID layout) and sends that layout back in
// $management bodies, so a token from a body must be swapped again to find the broker's token.
// ---------------------------------------------------------------------------------------------------------

export function lockTokenToTag(lockToken: string): Buffer {
  return rhea.string_to_uuid(lockToken);
}

export function tagToLockToken(tag: Buffer | string): string {
  const bytes = typeof tag === 'string' ? Buffer.from(tag) : tag;
  if (bytes.length !== 16) throw new Error('a lock token must be 16 bytes');
  return rhea.uuid_to_string(bytes);
}

/** Swap the first three GUID groups; the operation is its own inverse. */
export function swapGuidGroups(b: Buffer): Buffer {
  if (b.length !== 16) throw new Error('a lock token must be 16 bytes');
  return Buffer.from([b[3]!, b[2]!, b[1]!, b[0]!, b[5]!, b[4]!, b[7]!, b[6]!, ...b.subarray(8)]);
}

/** A lock token as it appears in a $management request body (uuid, .NET order) to the broker's token. */
export function managementLockTokenToBroker(value: unknown): string {
  if (Buffer.isBuffer(value)) return tagToLockToken(swapGuidGroups(value));
  if (typeof value === 'string') return tagToLockToken(swapGuidGroups(rhea.string_to_uuid(value)));
  throw new Error('lock token must be a uuid');
}

/** The broker's token to the uuid a $management response carries. */
export function brokerLockTokenToManagement(lockToken: string): Buffer {
  return swapGuidGroups(lockTokenToTag(lockToken));
}

// ---------------------------------------------------------------------------------------------------------
// Numbers.
// ---------------------------------------------------------------------------------------------------------

const TICKS_AT_EPOCH = 621355968000000000n;

/** Epoch milliseconds to .NET ticks as an 8-byte big-endian long (com.microsoft:locked-until-utc). */
export function msToTicksBuffer(ms: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(Math.trunc(ms)) * 10000n + TICKS_AT_EPOCH);
  return b;
}

/** An AMQP long the client may send as a number or (beyond 2^53) an 8-byte buffer. */
export function longToNumber(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  if (typeof value === 'bigint') return Number(value);
  if (Buffer.isBuffer(value) && value.length === 8) return Number(value.readBigInt64BE());
  throw new Error('expected a long');
}

export function longBuffer(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(Math.trunc(n)));
  return b;
}

// ---------------------------------------------------------------------------------------------------------
// Messages handed to the client.
// ---------------------------------------------------------------------------------------------------------

const MESSAGE_STATE = { active: 0, deferred: 1, scheduled: 2 } as const;

/**
 * The stored message plus the broker-owned annotations and header fields. A copy, so the broker's stored
 * message is never mutated by the plane.
 */
export function toOutgoingMessage(d: Delivered, withLock: boolean): Message {
  // Properties and annotations go out with the AMQP types they came in with (typed-values.ts).
  const typed = withTypes(d.message);
  const annotations: Record<string, unknown> = { ...(typed.message_annotations ?? {}) };
  annotations['x-opt-sequence-number'] = rhea.types.wrap_long(d.sequenceNumber);
  annotations['x-opt-enqueued-time'] = new Date(d.enqueuedTime);
  annotations['x-opt-message-state'] = rhea.types.wrap_int(MESSAGE_STATE[d.state]);
  if (withLock && d.lockedUntil !== undefined) annotations['x-opt-locked-until'] = new Date(d.lockedUntil);
  else delete annotations['x-opt-locked-until'];
  if (d.scheduledEnqueueTime !== undefined) {
    annotations['x-opt-scheduled-enqueue-time'] = new Date(d.scheduledEnqueueTime);
  }
  if (d.deadLetterSource !== undefined) annotations['x-opt-deadletter-source'] = d.deadLetterSource;
  if (d.partitionKey !== undefined) annotations['x-opt-partition-key'] = d.partitionKey;
  if (d.enqueueSequenceNumber !== undefined) {
    annotations['x-opt-enqueue-sequence-number'] = rhea.types.wrap_long(d.enqueueSequenceNumber);
  }
  const out = { ...typed } as Message & { delivery_count?: number };
  out.message_annotations = annotations as Message['message_annotations'];
  out.delivery_count = d.deliveryCount;
  return out;
}

/** Encoded size of a message as it went over the wire (used for the size limit on format-0 transfers). */
export function encodedSize(msg: Message): number {
  return encodeMessage(withTypes(msg)).length;
}

/**
 * The messages inside a batch transfer (message format 0x80013700): every data section of the outer message
 * is one encoded message.
 */
export function decodeBatch(payload: Buffer): Message[] {
  const outer = decodeMessage(payload);
  const body = outer.body as { typecode?: number; content?: unknown; multiple?: boolean } | undefined;
  if (!body || body.typecode !== 0x75) throw new Error('a batch must carry its messages as data sections');
  const parts = body.multiple ? (body.content as unknown[]) : [body.content];
  return parts.map((p) => {
    if (!Buffer.isBuffer(p)) throw new Error('a batch data section must be binary');
    return captureTypes(decodeMessage(p), p);
  });
}

export const BATCH_FORMAT = 0x80013700;

// rhea's typings omit the outcome constructors and type decode() with a different Message; one typed facade.
interface DescribedFactory {
  described(): unknown;
}
const rheaMessage = rhea.message as unknown as {
  accepted(): DescribedFactory;
  rejected(fields: object): DescribedFactory;
  modified(fields: object): DescribedFactory;
  released(): DescribedFactory;
  encode(msg: Message): Buffer;
  decode(buffer: Buffer): Message;
};

export const outcome = {
  accepted: (): unknown => rheaMessage.accepted().described(),
  rejected: (error?: { condition: string; description?: string; info?: object }): unknown =>
    rheaMessage.rejected(error ? { error } : {}).described(),
  modified: (fields: { undeliverable_here?: boolean; delivery_failed?: boolean }): unknown =>
    rheaMessage.modified(fields).described(),
};

export function decodeMessage(buffer: Buffer): Message {
  return rheaMessage.decode(buffer);
}

export function encodeMessage(msg: Message): Buffer {
  return rheaMessage.encode(msg);
}
