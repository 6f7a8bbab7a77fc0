// Application properties, message annotations and delivery annotations keep their AMQP types end to end:
// sent with bare rhea in exact types, received back and compared type code by type code on the wire, then
// again after a restart from the data directory (the journal stores the typed encoding). Before
// typed-values.ts a long came back as uint, a uuid as binary, a char/byte/short/float as another type.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import rhea from 'rhea';
import type { Connection, Message } from 'rhea';
import { startEmulator } from '../index.ts';
import type { RunningEmulator } from '../index.ts';
import { tempDir } from '../conformance/helpers.ts';
import { putToken } from './test-support.ts';

const RAW = Symbol.for('nimbus.emulator.rawMessage');
const t = rhea.types as unknown as Record<string, (...a: unknown[]) => unknown>;

interface TypedLike {
  type?: { typecode?: number };
  value: unknown;
  descriptor?: { value: unknown };
}

/** Per section (0x71 delivery annotations, 0x72 message annotations, 0x74 application properties): key -> type code. */
function sectionTypes(m: Message): Map<number, Map<string, number>> {
  const raw = (m as unknown as Record<symbol, Buffer | undefined>)[RAW];
  assert.ok(raw, 'raw bytes kept');
  const reader = new (
    rhea.types as unknown as { Reader: new (b: Buffer) => { remaining(): number; read(): TypedLike } }
  ).Reader(raw);
  const out = new Map<number, Map<string, number>>();
  while (reader.remaining()) {
    const s = reader.read();
    const code = Number(s.descriptor?.value);
    const inner = s.value as TypedLike | TypedLike[] | null;
    const items = Array.isArray(inner)
      ? inner
      : inner && Array.isArray(inner.value)
        ? (inner.value as TypedLike[])
        : [];
    if (![0x71, 0x72, 0x74].includes(code)) continue;
    const m2 = new Map<string, number>();
    for (let i = 0; i + 1 < items.length; i += 2)
      m2.set(String(items[i]!.value), canonical(items[i + 1]!.type!.typecode!));
    out.set(code, m2);
  }
  return out;
}

const CANON: Record<number, number> = {
  0x43: 0x70,
  0x52: 0x70,
  0x44: 0x80,
  0x53: 0x80,
  0x54: 0x71,
  0x55: 0x81,
  0xa1: 0xb1,
  0xa3: 0xb3,
  0xa0: 0xb0,
  0xc0: 0xd0,
  0x45: 0xd0,
  0xc1: 0xd1,
  0x41: 0x56,
  0x42: 0x56,
};
const canonical = (c: number): number => CANON[c] ?? c;

const PROPS: Record<string, [unknown, number]> = {
  long: [t.wrap_long!(5), 0x81],
  ulong: [t.wrap_ulong!(6), 0x80],
  int: [t.wrap_int!(7), 0x71],
  short: [t.wrap_short!(8), 0x61],
  byte: [t.wrap_byte!(9), 0x51],
  float: [t.wrap_float!(1.5), 0x72],
  double: [t.wrap_double!(2.5), 0x82],
  char: [t.wrap_char!(65), 0x73],
  uuid: [t.wrap_uuid!(Buffer.alloc(16, 7)), 0x98],
  binary: [t.wrap_binary!(Buffer.from([1, 2])), 0xb0],
  timestamp: [t.wrap_timestamp!(1_700_000_000_000), 0x83],
  symbol: [t.wrap_symbol!('sym'), 0xb3],
  nothing: [null, 0x40],
  text: ['plain', 0xb1],
};

describe('AMQP types of properties and annotations survive the emulator and a restart', () => {
  let dir: { dir: string; remove(): Promise<void> };
  let emulator: RunningEmulator;

  before(async () => {
    dir = await tempDir('typed');
  });
  after(async () => {
    await emulator?.close();
    await dir?.remove();
  });

  async function connect(em: RunningEmulator): Promise<Connection> {
    const connection = rhea
      .create_container()
      .connect({ host: '127.0.0.1', port: em.port, reconnect: false });
    await new Promise<void>((resolve) => connection.once('connection_open', () => resolve()));
    return connection;
  }

  async function receiveOne(connection: Connection, em: RunningEmulator, address: string): Promise<Message> {
    await putToken(connection, em, address);
    return new Promise<Message>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no message')), 10_000);
      const r = connection.open_receiver({ source: { address }, autoaccept: false });
      r.on('message', (ctx) => {
        clearTimeout(timer);
        resolve(ctx.message as Message);
        r.close();
      });
    });
  }

  function assertTypes(m: Message): void {
    const types = sectionTypes(m);
    const app = types.get(0x74)!;
    for (const [key, [, code]] of Object.entries(PROPS)) {
      assert.equal(app.get(key)?.toString(16), code.toString(16), `application property ${key}`);
    }
    const ann = types.get(0x72)!;
    assert.equal(ann.get('x-custom-long')?.toString(16), '81', 'message annotation long');
    assert.equal(ann.get('x-custom-map')?.toString(16), 'd1', 'message annotation map');
    assert.equal(ann.get('x-custom-list')?.toString(16), 'd0', 'message annotation list');
    assert.equal(types.get(0x71)?.get('x-delivery-note')?.toString(16), 'b1', 'delivery annotation kept');
    assert.ok(m.application_properties?.timestamp instanceof Date, 'a timestamp is read back as a Date');
  }

  it('every type round-trips through send and receive, and again after a restart', async () => {
    emulator = await startEmulator({ port: 0, dataDir: dir.dir, key: 'typedkey1234567890abcd' });
    emulator.broker.createTopic({ name: 'typed' });
    emulator.broker.createSubscription({ topicName: 'typed', subscriptionName: 'a' });
    emulator.broker.createSubscription({ topicName: 'typed', subscriptionName: 'b' });
    const connection = await connect(emulator);
    await putToken(connection, emulator, 'typed');
    const app: Record<string, unknown> = {};
    for (const [key, [value]] of Object.entries(PROPS)) app[key] = value;
    await new Promise<void>((resolve, reject) => {
      const sender = connection.open_sender({ target: { address: 'typed' } });
      sender.once('sendable', () => {
        sender.send({
          message_id: 'typed-1',
          body: 'b',
          application_properties: app,
          message_annotations: {
            'x-custom-long': t.wrap_long!(42),
            'x-custom-map': t.wrap_map!({ k: t.wrap_short!(1) }),
            'x-custom-list': t.wrap_list!([t.wrap_byte!(1), 'x']),
          },
          delivery_annotations: { 'x-delivery-note': 'kept' },
        } as unknown as Message);
      });
      sender.on('accepted', () => resolve());
      sender.on('rejected', () => reject(new Error('rejected')));
    });
    assertTypes(await receiveOne(connection, emulator, 'typed/Subscriptions/a'));
    connection.close();
    await emulator.close();

    // Restart from the data directory: subscription b still holds its copy, typed as sent.
    emulator = await startEmulator({ port: 0, dataDir: dir.dir, key: 'typedkey1234567890abcd' });
    const again = await connect(emulator);
    assertTypes(await receiveOne(again, emulator, 'typed/Subscriptions/b'));
    again.close();
  });
});
