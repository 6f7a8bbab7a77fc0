// AMQP over WebSockets at /$servicebus/websocket. The unmodified @azure/service-bus client with
// `webSocketOptions: { webSocket }` (which always dials wss://host:port/$servicebus/websocket) runs in a child
// process: the WebSocket implementation is Node's own (undici, behind --experimental-websocket on Node 20; no
// `ws` package is installed), and it trusts the emulator's certificate through NODE_EXTRA_CA_CERTS. The
// child counts the WebSockets it opened, so a client that fell back to plain AMQPS on the same port would
// fail the test. The refusals and the control frames are checked with raw bytes on the plain port.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { startEmulator, type RunningEmulator } from './index.ts';
import { tempDir } from './conformance/helpers.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function runNode(script: string, env: NodeJS.ProcessEnv, nodeArgs: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...nodeArgs, '--input-type=module', '-e', script],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 90_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${err.message}\n${stdout}\n${stderr.slice(-3000)}`));
        else resolve(stdout);
      },
    );
  });
}

/** Sends an upgrade request on a raw TCP socket; resolves with the socket and the response head. */
function upgrade(
  port: number,
  headers: Record<string, string>,
  path = '/$servicebus/websocket',
): Promise<{ socket: net.Socket; head: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      const all: Record<string, string> = {
        Host: `127.0.0.1:${port}`,
        Upgrade: 'websocket',
        Connection: 'Upgrade',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
        'Sec-WebSocket-Protocol': 'AMQPWSB10',
        ...headers,
      };
      const lines = Object.entries(all)
        .filter(([, v]) => v !== '')
        .map(([k, v]) => `${k}: ${v}`);
      socket.write(`GET ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
    });
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.removeListener('data', onData);
      resolve({ socket, head: buf.subarray(0, end).toString(), rest: buf.subarray(end + 4) });
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

/** A masked client frame. */
function clientFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i & 3]!));
  const len = payload.length;
  const head =
    len < 126
      ? Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | len])
      : Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | 126, len >> 8, len & 0xff]);
  return Buffer.concat([head, mask, masked]);
}

/** Reads bytes until `n` are there (after what the handshake read past its head). */
function readBytes(socket: net.Socket, first: Buffer, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buf = first;
    if (buf.length >= n) {
      resolve(buf);
      return;
    }
    const timer = setTimeout(() => reject(new Error(`only ${buf.length} of ${n} bytes`)), 10_000);
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= n) {
        clearTimeout(timer);
        resolve(buf);
      }
    });
  });
}

describe('AMQP over WebSockets (/$servicebus/websocket)', () => {
  let emulator: RunningEmulator;
  let removeDir: () => Promise<void>;

  before(async () => {
    const dir = await tempDir('websocket');
    removeDir = dir.remove;
    emulator = await startEmulator({ port: 0, tlsPort: 0, dataDir: dir.dir });
    emulator.broker.createQueue({ name: 'over-ws' });
    emulator.broker.createQueue({ name: 'over-ws-sessions', requiresSession: true });
  });
  after(async () => {
    await emulator.close();
    await removeDir();
  });

  test('@azure/service-bus with webSocketOptions sends, receives, settles and uses sessions over wss', async () => {
    const cs = `Endpoint=sb://localhost:${emulator.tls!.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${emulator.key}`;
    const out = await runNode(
      `
      import { ServiceBusClient } from '@azure/service-bus';
      const urls = [];
      class CountingWebSocket extends WebSocket {
        constructor(url, protocols, options) { super(url, protocols); urls.push(String(url)); }
      }
      const client = new ServiceBusClient(process.env.SB_CS, {
        webSocketOptions: { webSocket: CountingWebSocket },
        retryOptions: { maxRetries: 0, timeoutInMs: 20000 },
      });
      const sender = client.createSender('over-ws');
      await sender.sendMessages([{ body: 'a', messageId: 'ws-a' }, { body: 'b', messageId: 'ws-b' }]);
      const receiver = client.createReceiver('over-ws');
      const got = [];
      while (got.length < 2) got.push(...(await receiver.receiveMessages(2 - got.length, { maxWaitTimeInMs: 5000 })));
      await receiver.completeMessage(got[0]);
      await receiver.deadLetterMessage(got[1], { deadLetterReason: 'ws', deadLetterErrorDescription: 'over ws' });
      const dlq = client.createReceiver('over-ws', { subQueueType: 'deadLetter', receiveMode: 'receiveAndDelete' });
      const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 5000 });
      await client.createSender('over-ws-sessions').sendMessages({ body: 's', sessionId: 'ws-session' });
      const session = await client.acceptNextSession('over-ws-sessions');
      await session.setSessionState('state');
      const [inSession] = await session.receiveMessages(1, { maxWaitTimeInMs: 5000 });
      await session.completeMessage(inSession);
      const state = String(await session.getSessionState());
      await client.close();
      console.log(JSON.stringify({
        ids: got.map((m) => m.messageId), dead: dead?.messageId, reason: dead?.deadLetterReason,
        session: session.sessionId, state, sessionBody: inSession.body, urls,
      }));
      `,
      { SB_CS: cs, NODE_EXTRA_CA_CERTS: emulator.tls!.certPath },
      // Node 20 keeps its WebSocket behind a flag; Node 22 has it by default.
      typeof WebSocket === 'undefined' ? ['--experimental-websocket', '--no-warnings'] : [],
    );
    const r = JSON.parse(out.trim().split('\n').pop()!) as {
      ids: string[];
      dead: string;
      reason: string;
      session: string;
      state: string;
      sessionBody: string;
      urls: string[];
    };
    assert.deepEqual(r.ids, ['ws-a', 'ws-b']);
    assert.equal(r.dead, 'ws-b');
    assert.equal(r.reason, 'ws');
    assert.equal(r.session, 'ws-session');
    assert.equal(r.state, 'state');
    assert.equal(r.sessionBody, 's');
    assert.ok(r.urls.length >= 1, 'the client opened WebSockets');
    for (const url of r.urls)
      assert.equal(url, `wss://localhost:${emulator.tls!.port}/$servicebus/websocket`);
    assert.equal(emulator.broker.getQueueRuntime('over-ws').totalMessageCount, 0);
  });

  test('refusals: wrong path, missing subprotocol, a web page Origin, a non-loopback Host', async () => {
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [{}, '/elsewhere', / 404 /],
      [{ 'Sec-WebSocket-Protocol': 'chat' }, '/$servicebus/websocket', / 400 /],
      [{ Origin: 'https://attacker.test' }, '/$servicebus/websocket', / 403 /],
      [{ Host: 'attacker.test' }, '/$servicebus/websocket', / 421 /],
    ];
    for (const [headers, path, status] of cases) {
      const { socket, head } = await upgrade(emulator.port, headers, path);
      socket.destroy();
      assert.match(head.split('\r\n')[0]!, status, `${JSON.stringify(headers)} ${path}`);
    }
    // A loopback Origin (a local tool) is fine.
    const ok = await upgrade(emulator.port, { Origin: 'http://localhost:3000' });
    ok.socket.destroy();
    assert.match(ok.head, /^HTTP\/1\.1 101 /);
    assert.match(ok.head, /Sec-WebSocket-Protocol: AMQPWSB10/i);
    // uAMQP asks for the path with a trailing slash.
    const slash = await upgrade(emulator.port, {}, '/$servicebus/websocket/');
    slash.socket.destroy();
    assert.match(slash.head, /^HTTP\/1\.1 101 /);
  });

  test('ping is answered with pong, AMQP bytes get the AMQP header back, a text frame is closed with 1003', async () => {
    const { socket, head, rest } = await upgrade(emulator.port, {});
    assert.match(head, /^HTTP\/1\.1 101 /);
    socket.write(clientFrame(0x9, Buffer.from('hi')));
    const pong = await readBytes(socket, rest, 4);
    assert.deepEqual([...pong.subarray(0, 4)], [0x8a, 2, 0x68, 0x69]);
    // The SASL protocol header, split across a fragmented message: the server answers with its own header.
    const sasl = Buffer.from([0x41, 0x4d, 0x51, 0x50, 3, 1, 0, 0]);
    socket.write(
      Buffer.concat([clientFrame(0x2, sasl.subarray(0, 3), false), clientFrame(0x0, sasl.subarray(3))]),
    );
    const answer = await readBytes(socket, pong.subarray(4), 10);
    assert.equal(answer[0], 0x82, 'a binary frame');
    assert.deepEqual([...answer.subarray(2, 10)], [...sasl]);
    socket.destroy();

    const text = await upgrade(emulator.port, {});
    text.socket.write(clientFrame(0x1, Buffer.from('AMQP')));
    const closed = await readBytes(text.socket, text.rest, 4);
    assert.equal(closed[0], 0x88, 'a close frame');
    assert.equal(closed.readUInt16BE(2), 1003);
    text.socket.destroy();
  });
});
