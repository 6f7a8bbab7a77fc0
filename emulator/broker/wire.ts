// Helpers over rhea's message objects: copying a message for one subscription, sizing, ids, and the
// journal encoding. Bodies are opaque: they are shared between copies and never inspected or logged.

import { randomUUID } from 'node:crypto';
import rhea from 'rhea';
import type { WireMessage } from './api.ts';
import { captureTypes, withTypes } from './typed-values.ts';

/** A copy whose property maps can be changed without touching the original (bodies are shared, never mutated). */
export function copyMessage(m: WireMessage): WireMessage {
  const c = Object.assign(Object.create(Object.getPrototypeOf(m) as object) as object, m) as WireMessage;
  if (m.application_properties) c.application_properties = { ...(m.application_properties as object) };
  if (m.message_annotations) c.message_annotations = { ...(m.message_annotations as object) };
  return c;
}

export function encodedSize(m: WireMessage): number {
  return rhea.message.encode(withTypes(m)).length;
}

/** The journal's form: AMQP bytes with every kept type (typed-values.ts), so a restart restores them too. */
export function encodeMessage(m: WireMessage): string {
  return rhea.message.encode(withTypes(m)).toString('base64');
}

export function decodeMessage(b64: string): WireMessage {
  const raw = Buffer.from(b64, 'base64');
  return captureTypes(rhea.message.decode(raw) as unknown as WireMessage, raw);
}

/** Azure assigns a dash-less uuid when the sender gave no message id. */
export function newMessageId(): string {
  return randomUUID().replace(/-/g, '');
}

export function sessionIdOf(m: WireMessage): string | undefined {
  const g: unknown = m.group_id;
  return g === undefined || g === null ? undefined : String(g);
}

export function messageIdForLog(m: WireMessage): string | undefined {
  const id: unknown = m.message_id;
  if (id === undefined || id === null) return undefined;
  return Buffer.isBuffer(id) ? id.toString('hex') : String(id);
}

export function partitionKeyOf(m: WireMessage): string | undefined {
  const ann = m.message_annotations as Record<string, unknown> | undefined;
  const pk = ann?.['x-opt-partition-key'];
  return typeof pk === 'string' ? pk : undefined;
}

/** TTL in ms from the AMQP header, or undefined when the sender gave none. */
export function headerTtl(m: WireMessage): number | undefined {
  const t: unknown = m.ttl;
  return typeof t === 'number' && t > 0 ? t : undefined;
}
