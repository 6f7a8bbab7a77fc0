// AMQP over WebSockets (`/$servicebus/websocket`, subprotocol AMQPWSB10), as Service Bus offers it on 443 for
// clients behind proxies that pass HTTPS only. The design allows it cheaply: the AMQP plane takes any Duplex
// as its socket, so a WebSocket connection becomes one more byte stream for rhea. No npm package: Node 20 has
// no WebSocket server and `ws` is not a dependency, and the server half of RFC 6455 that AMQP needs is small
// (one handshake; binary frames in, binary frames out; ping, pong and close). Not supported, since no AMQP
// client uses them: extensions (permessage-deflate is never accepted) and text frames (closed with 1003).
//
// What arrives is streamed: a data frame's payload is unmasked and passed on as its bytes come in, so a large
// frame is never buffered here (the AMQP plane's frame guard and byte budget then apply as on TCP). Control
// frames are at most 125 bytes by the RFC. Backpressure goes both ways: the TCP socket is paused while rhea's
// side does not read, and writes complete when the TCP socket has drained.

import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { isLoopbackHost } from './loopback-host.ts';

export const WEBSOCKET_PATH = '/$servicebus/websocket';
export const AMQP_SUBPROTOCOL = 'AMQPWSB10';
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

/** A refused upgrade: the HTTP status and a one-line reason. */
export interface UpgradeRefusal {
  status: number;
  reason: string;
}

/**
 * Checks an upgrade request; undefined = acceptable. A browser always sends Origin on a WebSocket, and a page
 * on any site may open ws://127.0.0.1 (the Host check does not stop that, the page names our real address),
 * so an Origin that is not loopback is refused: no web page gets even as far as the SASL handshake.
 */
export function refuseUpgrade(req: IncomingMessage): UpgradeRefusal | undefined {
  const path = (req.url ?? '').split('?')[0];
  // uAMQP (the Python and C clients) asks for the path with a trailing slash.
  if (path !== WEBSOCKET_PATH && path !== `${WEBSOCKET_PATH}/`)
    return { status: 404, reason: `WebSockets are served at ${WEBSOCKET_PATH} only.` };
  if (req.method !== 'GET') return { status: 405, reason: 'A WebSocket upgrade is a GET.' };
  if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket')
    return { status: 400, reason: 'Upgrade: websocket expected.' };
  if (req.headers['sec-websocket-version'] !== '13')
    return { status: 426, reason: 'Sec-WebSocket-Version 13 expected.' };
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string' || Buffer.from(key, 'base64').length !== 16)
    return { status: 400, reason: 'A Sec-WebSocket-Key of 16 bytes expected.' };
  const protocols = String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim());
  if (!protocols.includes(AMQP_SUBPROTOCOL))
    return { status: 400, reason: `The ${AMQP_SUBPROTOCOL} subprotocol is required.` };
  const origin = req.headers.origin;
  if (origin !== undefined) {
    let host: string;
    try {
      host = new URL(origin).host;
    } catch {
      return { status: 403, reason: 'Origin is not a URL.' };
    }
    if (!isLoopbackHost(host)) return { status: 403, reason: 'WebSockets from web pages are refused.' };
  }
  return undefined;
}

/** The 101 answer that completes the handshake of an accepted request. */
export function acceptUpgrade(req: IncomingMessage, socket: Socket): void {
  const accept = createHash('sha1')
    .update(`${String(req.headers['sec-websocket-key'])}${GUID}`)
    .digest('base64');
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\n' +
      'Upgrade: websocket\r\n' +
      'Connection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${accept}\r\n` +
      `Sec-WebSocket-Protocol: ${AMQP_SUBPROTOCOL}\r\n\r\n`,
  );
}

/** Encodes one unmasked server frame (servers never mask). */
function frame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const header = n < 126 ? Buffer.alloc(2) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  header[0] = 0x80 | opcode;
  if (n < 126) header[1] = n;
  else if (n < 65536) {
    header[1] = 126;
    header.writeUInt16BE(n, 2);
  } else {
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(n), 2);
  }
  return Buffer.concat([header, payload]);
}

function closePayload(code: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(code, 0);
  return b;
}

/**
 * The byte stream inside a WebSocket: what the client sends in binary frames comes out as data, what is
 * written goes out as binary frames. Give it the socket after acceptUpgrade (and `head`, the bytes the HTTP
 * parser read past the request).
 */
export class WebSocketStream extends Duplex {
  private readonly socket: Socket;
  private pending = Buffer.alloc(0);
  /** The data frame being streamed: bytes left, its mask, and how far into the mask we are. */
  private payloadLeft = 0;
  private mask = Buffer.alloc(4);
  private maskOffset = 0;
  private inData = false;
  private closeSent = false;
  /** The peer's data has ended (close frame or TCP end): nothing more is pushed. */
  private ended = false;
  readonly remoteAddress: string | undefined;

  constructor(socket: Socket, head: Buffer) {
    super({ allowHalfOpen: false });
    this.socket = socket;
    this.remoteAddress = socket.remoteAddress;
    socket.on('data', (chunk: Buffer) => this.input(chunk));
    socket.on('end', () => this.endInput());
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
    socket.on('drain', () => this.emit('socketDrain'));
    if (head.length > 0) this.input(head);
  }

  /** rhea names connections in its logs by this. */
  get_id_string(): string {
    return `websocket ${this.remoteAddress ?? ''}`;
  }

  private endInput(): void {
    if (this.ended) return;
    this.ended = true;
    this.push(null);
  }

  private input(chunk: Buffer): void {
    let buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    while (buf.length > 0 && !this.destroyed && !this.ended) {
      if (this.payloadLeft > 0) {
        const n = Math.min(this.payloadLeft, buf.length);
        const out = Buffer.allocUnsafe(n);
        for (let i = 0; i < n; i++) out[i] = buf[i]! ^ this.mask[(this.maskOffset + i) & 3]!;
        this.maskOffset = (this.maskOffset + n) & 3;
        this.payloadLeft -= n;
        buf = buf.subarray(n);
        if (!this.push(out)) this.socket.pause();
        continue;
      }
      const parsed = this.header(buf);
      if (parsed === undefined) {
        this.pending = Buffer.from(buf); // an incomplete header (or control frame): wait for more
        return;
      }
      if (parsed === null) return; // refused; the connection is closing
      buf = buf.subarray(parsed);
    }
  }

  /** Reads one frame header (and a whole control frame); the bytes used, undefined = need more, null = closed. */
  private header(buf: Buffer): number | undefined | null {
    if (buf.length < 2) return undefined;
    const fin = (buf[0]! & 0x80) !== 0;
    const opcode = buf[0]! & 0x0f;
    const masked = (buf[1]! & 0x80) !== 0;
    let len = buf[1]! & 0x7f;
    let offset = 2;
    if (len === 126) {
      if (buf.length < 4) return undefined;
      len = buf.readUInt16BE(2);
      offset = 4;
    } else if (len === 127) {
      if (buf.length < 10) return undefined;
      const big = buf.readBigUInt64BE(2);
      if (big > BigInt(Number.MAX_SAFE_INTEGER)) return this.fail(1009, 'frame too large');
      len = Number(big);
      offset = 10;
    }
    if (buf.length < offset + 4) return undefined;
    if (!masked) return this.fail(1002, 'client frames must be masked');
    if ((buf[0]! & 0x70) !== 0) return this.fail(1002, 'no extension was negotiated');
    const mask = buf.subarray(offset, offset + 4);
    offset += 4;
    if (opcode >= 0x8) {
      if (!fin || len > 125) return this.fail(1002, 'invalid control frame');
      if (buf.length < offset + len) return undefined;
      const payload = Buffer.from(buf.subarray(offset, offset + len));
      for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ mask[i & 3]!;
      this.control(opcode, payload);
      return offset + len;
    }
    if (opcode === OP_TEXT) return this.fail(1003, 'AMQP travels in binary frames');
    if (opcode === OP_BINARY) {
      if (this.inData) return this.fail(1002, 'a new message inside a fragmented one');
    } else if (opcode === OP_CONTINUATION) {
      if (!this.inData) return this.fail(1002, 'a continuation without a message');
    } else {
      return this.fail(1002, 'unknown opcode');
    }
    this.inData = !fin;
    this.mask = Buffer.from(mask);
    this.maskOffset = 0;
    this.payloadLeft = len;
    return offset;
  }

  private control(opcode: number, payload: Buffer): void {
    if (opcode === OP_PING) this.socket.write(frame(OP_PONG, payload));
    else if (opcode === OP_CLOSE) {
      // Answer with the peer's code (or 1000) and finish: no more data either way.
      const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1000;
      this.sendClose(code);
      this.socket.end();
      this.endInput();
    } else if (opcode !== OP_PONG) {
      this.fail(1002, 'unknown control opcode');
    }
  }

  private sendClose(code: number): void {
    if (this.closeSent || this.socket.destroyed || this.socket.writableEnded) return;
    this.closeSent = true;
    this.socket.write(frame(OP_CLOSE, closePayload(code)));
  }

  private fail(code: number, _reason: string): null {
    this.sendClose(code);
    this.socket.end();
    this.destroy();
    return null;
  }

  override _read(): void {
    if (this.socket.isPaused()) this.socket.resume();
  }

  private sendFrames(payloads: Buffer[], callback: (err?: Error | null) => void): void {
    if (this.socket.destroyed || this.closeSent) {
      callback(new Error('The WebSocket is closed.'));
      return;
    }
    const bytes = Buffer.concat(payloads.map((p) => frame(OP_BINARY, p)));
    if (this.socket.write(bytes)) callback();
    else this.once('socketDrain', () => callback());
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.sendFrames([chunk], callback);
  }

  override _writev(
    chunks: Array<{ chunk: Buffer; encoding: BufferEncoding }>,
    callback: (err?: Error | null) => void,
  ): void {
    // The AMQP plane corks its socket for a tick: what rhea wrote in that tick leaves in one TCP write.
    this.sendFrames(
      chunks.map((c) => c.chunk),
      callback,
    );
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.sendClose(1000);
    this.socket.end();
    callback();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (!this.socket.destroyed) this.socket.destroy();
    callback(err);
  }
}
