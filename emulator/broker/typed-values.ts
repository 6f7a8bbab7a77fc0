// AMQP types that survive the emulator. rhea decodes a message's maps into plain JavaScript values, and
// encoding them again picks a type from the value: a `long` 5 comes back as `uint`, a `uuid` as `binary`, a
// `char`, `byte`, `short` or `float` as something else, a `binary` message-id as a `uuid`. Service Bus keeps
// what the sender wrote, and clients in typed languages read properties back by type.
//
// So when a message arrives (and when one is restored from disk) the emulator reads the typed form of its
// delivery annotations, message annotations, properties (message-id, correlation-id) and application
// properties from the raw bytes, and keeps, per key, the typed value of every entry whose type a plain
// re-encode would change. Encoding for delivery or the journal puts those typed values back for every entry
// whose value is still the one received (a rule action or a settlement that changed a value sets a new one,
// typed as the new value says). Everything else (plain strings, timestamps, booleans...) costs nothing extra.

import rhea from 'rhea';
import type { Message } from 'rhea';

/** Where the typed values ride on a message object: a symbol, so encoders, JSON and logs never see them. */
const TYPED = Symbol.for('nimbus.emulator.typedValues');
/** The raw bytes rhea decoded a message from, until captureTypes() has read them. */
const RAW = Symbol.for('nimbus.emulator.rawMessage');

interface TypedLike {
  type?: { name?: string; typecode?: number };
  typecode?: number;
  value: unknown;
  descriptor?: { value: unknown };
}

type MapName = 'delivery_annotations' | 'message_annotations' | 'application_properties';
interface TypedValues {
  maps: Partial<Record<MapName, Map<string, TypedLike>>>;
  message_id?: TypedLike;
  correlation_id?: TypedLike;
}

const types = rhea.types as unknown as {
  Reader: new (b: Buffer) => { remaining(): number; read(): TypedLike };
  wrap(v: unknown): TypedLike;
  unwrap(v: unknown, leaveDescribed?: boolean): unknown;
};
const codec = rhea.message as unknown as { decode(b: Buffer): Message; encode(m: Message): Buffer };

const SECTION: Record<number, MapName | 'properties'> = {
  0x71: 'delivery_annotations',
  0x72: 'message_annotations',
  0x73: 'properties',
  0x74: 'application_properties',
};

let installed = false;
/**
 * Makes rhea keep the bytes each decoded message came from (a non-enumerable symbol property: other users
 * of rhea in the process see nothing), so the plane can read their types. Idempotent.
 */
export function keepRawMessages(): void {
  if (installed) return;
  installed = true;
  const original = codec.decode.bind(codec);
  codec.decode = (buffer: Buffer): Message => {
    const m = original(buffer);
    Object.defineProperty(m, RAW, { value: buffer, configurable: true, enumerable: false, writable: true });
    return m;
  };
}

function typecodeOf(t: TypedLike): number | undefined {
  return t.type?.typecode ?? t.typecode;
}

/** Typed values that a plain unwrap + wrap would not reproduce (type or value), or undefined when none. */
function readTypes(buffer: Buffer): TypedValues | undefined {
  const out: TypedValues = { maps: {} };
  let any = false;
  const reader = new types.Reader(buffer);
  while (reader.remaining()) {
    const section = reader.read();
    const code = Number(section.descriptor?.value);
    if (code >= 0x75) break; // the body and footer come after everything we keep
    const name = SECTION[code];
    if (!name) continue;
    const inner = section.value as TypedLike | unknown[];
    const items = (Array.isArray(inner) ? inner : ((inner as TypedLike)?.value as unknown[])) ?? [];
    if (name === 'properties') {
      for (const [field, index] of [
        ['message_id', 0],
        ['correlation_id', 5],
      ] as const) {
        const v = items[index] as TypedLike | undefined;
        if (v && changesOnRoundTrip(v, true)) {
          out[field] = v;
          any = true;
        }
      }
      continue;
    }
    const kept = new Map<string, TypedLike>();
    for (let i = 0; i + 1 < items.length; i += 2) {
      const key = (items[i] as TypedLike).value;
      const v = items[i + 1] as TypedLike;
      if (typeof key === 'string' && changesOnRoundTrip(v, false)) kept.set(key, v);
    }
    if (kept.size > 0) {
      out.maps[name] = kept;
      any = true;
    }
  }
  return any ? out : undefined;
}

function changesOnRoundTrip(v: TypedLike, messageId: boolean): boolean {
  const plain = types.unwrap(v);
  if (messageId) {
    // rhea re-wraps a message id by JavaScript type: number -> ulong, Buffer -> uuid, string -> string.
    const code = typecodeOf(v);
    if (typeof plain === 'string') return code !== 0xa1 && code !== 0xb1;
    if (typeof plain === 'number') return code !== 0x80 && code !== 0x53 && code !== 0x44;
    return code !== 0x98;
  }
  if (plain !== null && typeof plain === 'object' && !(plain instanceof Date) && !Buffer.isBuffer(plain)) {
    return true; // lists, maps, arrays, described values: keep them as they were written
  }
  let again: TypedLike;
  try {
    again = types.wrap(plain);
  } catch {
    return true;
  }
  return !sameCode(typecodeOf(again), typecodeOf(v));
}

/** Short and long encodings of one type (e.g. str8/str32, smalluint/uint) are the same type. */
function sameCode(a: number | undefined, b: number | undefined): boolean {
  return a !== undefined && b !== undefined && canonical(a) === canonical(b);
}
const CANONICAL: Record<number, number> = {
  0x43: 0x70,
  0x52: 0x70, // uint0, smalluint -> uint
  0x44: 0x80,
  0x53: 0x80, // ulong0, smallulong -> ulong
  0x54: 0x71, // smallint -> int
  0x55: 0x81, // smalllong -> long
  0xa1: 0xb1, // str8 -> str32
  0xa3: 0xb3, // sym8 -> sym32
  0xa0: 0xb0, // vbin8 -> vbin32
  0x41: 0x56,
  0x42: 0x56, // true, false -> boolean
  0xc0: 0xd0,
  0x45: 0xd0, // list8, list0 -> list32
  0xc1: 0xd1, // map8 -> map32
  0xe0: 0xf0, // array8 -> array32
};
function canonical(code: number): number {
  return CANONICAL[code] ?? code;
}

/**
 * Reads the types of a message rhea decoded (through keepRawMessages) or of the given bytes, and keeps the
 * ones a re-encode would lose on the message. Call once per message, when it enters the emulator.
 */
export function captureTypes(m: Message, raw?: Buffer): Message {
  const holder = m as unknown as Record<symbol, unknown>;
  const buffer = raw ?? (holder[RAW] as Buffer | undefined);
  if (holder[RAW] !== undefined) delete holder[RAW];
  if (!buffer) return m;
  // Fast path: nothing whose type could be lost (no maps; ids that are strings or numbers, which rhea
  // re-encodes as string / ulong, the types the clients send). Saves a second parse of most messages.
  const mayLose =
    m.application_properties !== undefined ||
    m.message_annotations !== undefined ||
    (m as { delivery_annotations?: unknown }).delivery_annotations !== undefined ||
    Buffer.isBuffer(m.message_id) ||
    Buffer.isBuffer(m.correlation_id);
  if (!mayLose) return m;
  let typed: TypedValues | undefined;
  try {
    typed = readTypes(buffer);
  } catch {
    typed = undefined; // rhea decoded it already; an exotic encoding simply keeps rhea's view
  }
  if (typed) holder[TYPED] = typed;
  return m;
}

/** The message as it should be encoded: unchanged values carry their original AMQP types again. */
export function withTypes(m: Message): Message {
  const typed = (m as unknown as Record<symbol, TypedValues | undefined>)[TYPED];
  if (!typed) return m;
  const out = { ...m } as Message & Record<string, unknown>;
  for (const [name, kept] of Object.entries(typed.maps) as Array<[MapName, Map<string, TypedLike>]>) {
    const current = m[name] as Record<string, unknown> | undefined;
    if (!current) continue;
    let copy: Record<string, unknown> | undefined;
    for (const [key, v] of kept) {
      if (!(key in current) || !sameValue(current[key], v)) continue;
      copy ??= { ...current };
      copy[key] = v;
    }
    if (copy) out[name] = copy;
  }
  for (const field of ['message_id', 'correlation_id'] as const) {
    const v = typed[field];
    if (v && sameValue(m[field], v)) (out as Record<string, unknown>)[field] = v;
  }
  return out;
}

/** The typed form of a message's message-id (for a reply's correlation-id), or its plain value. */
export function typedMessageId(m: Message): unknown {
  const typed = (m as unknown as Record<symbol, TypedValues | undefined>)[TYPED];
  const v = typed?.message_id;
  return v && sameValue(m.message_id, v) ? v : m.message_id;
}

function sameValue(current: unknown, typed: TypedLike): boolean {
  const plain = types.unwrap(typed);
  if (current === plain) return true;
  if (Buffer.isBuffer(current) && Buffer.isBuffer(plain)) return current.equals(plain);
  if (current instanceof Date && plain instanceof Date) return current.getTime() === plain.getTime();
  if (current !== null && typeof current === 'object' && plain !== null && typeof plain === 'object') {
    try {
      return JSON.stringify(current) === JSON.stringify(plain);
    } catch {
      return false;
    }
  }
  return false;
}
