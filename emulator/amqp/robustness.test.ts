// The one-port server under bad input: garbage bytes, malformed AMQP frames, silent sockets and unknown
// $management operations close (or answer) only the offending connection; the emulator keeps serving.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { createRequire } from 'node:module';
import rhea from 'rhea';
import type { Message } from 'rhea';
import { startEmulator } from '../index.ts';
import type { Harness } from './test-support.ts';
import { putToken, startHarness } from './test-support.ts';

// rhea's frame builders, to write a disposition no rhea link would send.
const frames = createRequire(import.meta.url)('rhea/lib/frames.js') as {
  disposition(fields: Record<string, unknown>): unknown;
};
// The accepted outcome as rhea encodes it (its type declarations leave the outcome builders out).
const accepted = (rhea.message as unknown as { accepted(): { described(): unknown } }).accepted().described();

/** Write bytes on a fresh socket and collect everything until the server closes it. */
function exchange(port: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      if (bytes.length) socket.write(bytes);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('robustness of the one-port server', () => {
  let h: Harness;

  before(async () => {
    h = await startHarness(
      (em) => {
        em.broker.createTopic({ name: 'rb' });
        em.broker.createSubscription({ topicName: 'rb', subscriptionName: 's' });
      },
      { handshakeTimeoutMs: 500 },
    );
  });
  after(async () => {
    await h.close();
  });

  /** Proof that the emulator still serves: a full send and receive with the real client. */
  async function stillServes(body: string): Promise<void> {
    const sender = h.client.createSender('rb');
    await sender.sendMessages({ body });
    const receiver = h.client.createReceiver('rb', 's', { receiveMode: 'receiveAndDelete' });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.equal(m?.body, body);
    await receiver.close();
    await sender.close();
  }

  /** A bare rhea sender to 'rb', and how its connection ended (the close's condition). */
  async function senderToRb(): Promise<{ sender: rhea.Sender; ended: Promise<string> }> {
    const connection = rhea
      .create_container()
      .connect({ host: '127.0.0.1', port: h.emulator.port, reconnect: false });
    const ended = new Promise<string>((resolve) => {
      connection.on('connection_close', (ctx) => resolve(ctx.connection.error?.condition ?? 'closed'));
      connection.on('connection_error', (ctx) => resolve(ctx.connection.error?.condition ?? 'error'));
      connection.on('disconnected', () => resolve('disconnected'));
    });
    await putToken(connection, h.emulator, 'rb');
    return { sender: connection.open_sender({ target: { address: 'rb' } }), ended };
  }

  test('GET /health answers 200 {"status":"ok"}', async () => {
    const res = await httpGet(h.emulator.port, '/health');
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body), { status: 'ok' });
  });

  test('garbage bytes get an HTTP 400 on that connection only', async () => {
    const reply = await exchange(h.emulator.port, Buffer.from([0, 1, 2, 0xff, 0x0d, 0x0a, 0x0d, 0x0a]));
    assert.match(reply.toString('latin1'), /^HTTP\/1\.1 400/);
    await stillServes('after-garbage');
  });

  test('a malformed AMQP frame is answered with a framing error and the connection closed', async () => {
    const header = Buffer.from('AMQP\x00\x01\x00\x00', 'latin1');
    const badFrame = Buffer.from([0, 0, 0, 16, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]);
    const reply = await exchange(h.emulator.port, Buffer.concat([header, badFrame]));
    assert.ok(reply.subarray(0, 8).equals(header), 'the server answers with its protocol header');
    assert.ok(
      reply.includes(Buffer.from('amqp:connection:framing-error')),
      'the close carries a framing error',
    );
    await stillServes('after-bad-frame');
  });

  test('a frame declaring more than the advertised max-frame-size closes that connection', async () => {
    const header = Buffer.from('AMQP\x00\x01\x00\x00', 'latin1');
    const hugePrefix = Buffer.alloc(8);
    hugePrefix.writeUInt32BE(100 * 1024 * 1024, 0);
    hugePrefix[4] = 2;
    await exchange(h.emulator.port, Buffer.concat([header, hugePrefix, Buffer.alloc(1024)]));
    await stillServes('after-huge-frame');
  });

  test('a delivery that keeps growing across frames beyond any message size closes that connection', async () => {
    const { sender, ended } = await senderToRb();
    sender.once('sendable', () => {
      // rhea splits this into frames of the emulator's advertised max-frame-size, all but the last with more=true.
      sender.send({ body: Buffer.alloc(20 * 1024 * 1024) });
    });
    assert.equal(await ended, 'amqp:link:message-size-exceeded');
    await stillServes('after-endless-delivery');
  });

  /** Resolves when `sender`'s next message is accepted; fails with the condition if its connection ends first. */
  function acceptedOn(sender: rhea.Sender, ended: Promise<string>, body: string): Promise<void> {
    return new Promise((resolve, reject) => {
      sender.once('accepted', () => resolve());
      void ended.then((condition) => reject(new Error(`the connection ended: ${condition}`)));
      sender.send({ body });
    });
  }

  // rhea walks every id of a disposition's range; 0..0xFFFFFFFF held the event loop for a minute. The range is
  // narrowed to the ids the session holds, so the frame costs nothing and the connection stays up: the same
  // connection's next message is accepted and another client is served (a minute-long walk would time out).
  for (const role of [true, false]) {
    test(
      `a disposition naming four billion deliveries (role ${role}) is narrowed: that connection and others go on`,
      { timeout: 20_000 },
      async () => {
        const { sender, ended } = await senderToRb();
        await new Promise((resolve) => sender.once('sendable', resolve));
        const session = (sender as unknown as { session: { output(frame: unknown): void } }).session;
        // role true settles what the emulator sent (its outgoing side), false what it received.
        session.output(frames.disposition({ role, first: 0, last: 0xffffffff, settled: true }));
        await acceptedOn(sender, ended, `same-connection-${role}`);
        // Another client takes that message off 'rb' (so later tests start empty), then sends and receives.
        const drain = h.client.createReceiver('rb', 's', { receiveMode: 'receiveAndDelete' });
        const [m] = await drain.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
        assert.equal(m?.body, `same-connection-${role}`);
        await drain.close();
        await stillServes(`after-wide-disposition-${role}`);
        // A close the emulator sent would have come before the answer to the later message (frames are in order).
        assert.ok(sender.connection.is_remote_open(), 'the emulator kept the connection open');
        sender.connection.close();
      },
    );
  }

  // AMQP lets one disposition cover ids already settled. Before, a range wider than the session's buffer (2,048)
  // closed the connection with a framing error although it named only one delivery still held.
  test(
    'a disposition settling the last held delivery with a range over 2,050 settled ids is accepted',
    { timeout: 30_000 },
    async () => {
      const count = 2_050;
      h.emulator.broker.createTopic({ name: 'wide' });
      h.emulator.broker.createSubscription({ topicName: 'wide', subscriptionName: 's' });
      h.emulator.broker.send(
        'wide',
        Array.from({ length: count }, (_, i) => ({ body: `w${i}` })),
      );
      const connection = rhea
        .create_container()
        .connect({ host: '127.0.0.1', port: h.emulator.port, reconnect: false });
      const ended = new Promise<string>((resolve) => {
        connection.on('connection_close', (ctx) => resolve(ctx.connection.error?.condition ?? 'closed'));
        connection.on('disconnected', () => resolve('disconnected'));
      });
      await putToken(connection, h.emulator, 'wide');
      const receiver = connection.open_receiver({
        source: { address: 'wide/subscriptions/s' },
        autoaccept: false,
      });
      // Every delivery but the last is accepted one by one (each answered settled); the last is left held.
      const last = await new Promise<rhea.Delivery>((resolve) => {
        let seen = 0;
        receiver.on('message', (ctx) => {
          if (++seen < count) ctx.delivery!.accept();
          else resolve(ctx.delivery!);
        });
      });
      assert.ok(last.id >= count - 1, `delivery ids reach ${last.id}`);
      // One frame from id 0 to the held one, accepted. Frames are handled in order and a settlement at once, so
      // the answer to a later $cbs request on the same connection shows the frame was taken (before, it closed).
      const session = (receiver as unknown as { session: { output(frame: unknown): void } }).session;
      session.output(
        frames.disposition({
          role: true,
          first: 0,
          last: last.id,
          settled: true,
          state: accepted,
        }),
      );
      const next = await Promise.race([
        putToken(connection, h.emulator, 'wide').then(() => 'answered'),
        ended,
      ]);
      assert.equal(next, 'answered');
      assert.equal(h.emulator.broker.getSubscriptionRuntime('wide', 's').activeMessageCount, 0);
      connection.close();
    },
  );

  test('an unsupported AMQP protocol id closes that connection', async () => {
    await exchange(h.emulator.port, Buffer.from('AMQP\x09\x01\x00\x00', 'latin1'));
    await stillServes('after-bad-protocol');
  });

  test('a connection that never speaks, or stops after the header, is closed', async () => {
    const silent = await exchange(h.emulator.port, Buffer.alloc(0));
    assert.equal(silent.length, 0);
    const headerOnly = await exchange(h.emulator.port, Buffer.from('AMQP\x00\x01\x00\x00', 'latin1'));
    assert.equal(headerOnly.toString('latin1'), 'AMQP\x00\x01\x00\x00');
  });

  test('an unknown $management operation gets an error reply, not a dropped connection', async () => {
    const container = rhea.create_container();
    const connection = container.connect({ host: '127.0.0.1', port: h.emulator.port, reconnect: false });
    const replyTo = 'mgmt-reply';
    await putToken(connection, h.emulator, 'rb/$management');
    const reply = await new Promise<Message>((resolve, reject) => {
      const receiver = connection.open_receiver({
        source: { address: 'rb/$management' },
        target: { address: replyTo },
      });
      receiver.on('message', (ctx) => resolve(ctx.message!));
      const sender = connection.open_sender({ target: { address: 'rb/$management' } });
      let sent = false;
      sender.on('sendable', () => {
        if (sent) return;
        sent = true;
        sender.send({
          message_id: 'req-1',
          reply_to: replyTo,
          application_properties: { operation: 'com.microsoft:bogus' },
          body: {},
        });
      });
      connection.on('connection_error', () => reject(new Error('connection failed')));
    });
    assert.equal(reply.correlation_id, 'req-1');
    assert.equal(reply.application_properties?.statusCode, 501);
    assert.equal(reply.application_properties?.errorCondition, 'amqp:not-implemented');
    connection.close();
    await new Promise<void>((resolve) => connection.once('connection_close', () => resolve()));
    await stillServes('after-bogus-operation');
  });
});

test('startEmulator refuses a non-loopback host', async () => {
  await assert.rejects(startEmulator({ port: 0, host: '0.0.0.0' }), /loopback only/);
});
