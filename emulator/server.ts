// One loopback TCP port for both planes. The first bytes of each connection decide: an AMQP protocol header
// ("AMQP" followed by the protocol id and version) goes to the AMQP plane, anything else to the HTTP server
// (the ATOM admin plane, /health, and AMQP over WebSockets at /$servicebus/websocket). The peeked bytes are put back before the socket is handed over.
// Every HTTP request must name a loopback Host and carry no forwarding header (loopback-host.ts): binding
// 127.0.0.1 does not stop a browser page reaching us through DNS rebinding, nor a local proxy or tunnel.

import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import type { AmqpPlane } from './amqp/plane.ts';
import type { PlaneLog } from './amqp/log.ts';
import { refuseNonLoopback } from './loopback-host.ts';
import { acceptUpgrade, refuseUpgrade, WebSocketStream } from './websocket.ts';

export type HttpHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface EmulatorServerOptions {
  host: string;
  port: number;
  amqp: AmqpPlane;
  /** Admin plane handler; absent = admin paths answer 503. */
  admin?: HttpHandler;
  log: PlaneLog;
  /** A connection that sends nothing within this time is closed. Default 5 s. */
  firstBytesTimeoutMs?: number;
  /** Open sockets (AMQP and HTTP) beyond which new ones are closed at once. Default 1100. */
  maxSockets?: number;
  /**
   * A second, TLS listener (AMQPS, Azure's 5671) serving the same planes: for clients that always use TLS,
   * such as the uAMQP-based ones (azure-servicebus for Python 7.x), which have no plain-AMQP mode.
   */
  tls?: { port: number; cert: string | Buffer; key: string | Buffer };
}

export interface EmulatorServer {
  readonly port: number;
  /** The TLS listener's port, when one was asked for. */
  readonly tlsPort?: number;
  readonly host: string;
  /** Replace the admin handler (it may be wired after the server started). */
  setAdminHandler(handler: HttpHandler | undefined): void;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export function assertLoopback(host: string): void {
  if (!LOOPBACK.has(host)) {
    throw new Error(
      `The emulator binds to loopback only (127.0.0.1, ::1 or localhost); refusing '${host}'. ` +
        'It is a development server (one key, a self-signed certificate at most), so it must never be reachable from another machine.',
    );
  }
}

const AMQP_MAGIC = Buffer.from('AMQP', 'ascii');

export async function startEmulatorServer(options: EmulatorServerOptions): Promise<EmulatorServer> {
  assertLoopback(options.host);
  const { amqp, log } = options;
  const firstBytesTimeoutMs = options.firstBytesTimeoutMs ?? 5_000;
  let admin = options.admin;
  let ready = false;
  const sockets = new Set<net.Socket>();

  const httpServer = http.createServer((req, res) => {
    try {
      const refusal = refuseNonLoopback(req);
      if (refusal) {
        req.resume();
        res.writeHead(refusal.status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
        res.end(`${refusal.reason}\n`);
        return;
      }
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === '/health') {
        res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: ready ? 'ok' : 'starting' }));
        return;
      }
      if (!admin) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'The admin plane is not available.' }));
        return;
      }
      admin(req, res);
    } catch (err) {
      log.error({ err: err instanceof Error ? err.message : String(err) }, 'http handler failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'Internal error' }));
    }
  });
  // AMQP over WebSockets (websocket.ts): the upgraded connection is one more byte stream for the AMQP plane.
  httpServer.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const refusal = refuseNonLoopback(req) ?? refuseUpgrade(req);
    if (refusal) {
      const body = `${refusal.reason}\n`;
      socket.end(
        `HTTP/1.1 ${refusal.status} ${http.STATUS_CODES[refusal.status] ?? 'Refused'}\r\n` +
          `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      return;
    }
    try {
      acceptUpgrade(req, socket);
      amqp.accept(new WebSocketStream(socket, head) as unknown as net.Socket);
    } catch (err) {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'websocket hand-over failed');
      socket.destroy();
    }
  });
  httpServer.on('clientError', (_err, socket) => {
    // Malformed HTTP (including random bytes): answer 400 if we still can, and drop only this socket.
    if (socket.writable)
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    socket.destroy();
  });

  const maxSockets = options.maxSockets ?? 1_100;
  const onConnection = (socket: net.Socket): void => {
    if (sockets.size >= maxSockets) {
      socket.destroy();
      return;
    }
    // AMQP is request/response over small frames (dispositions, flow, management replies): Nagle's algorithm
    // holds each of them back waiting for an ACK, which cost ~45 ms per send->receive round trip. The client
    // relied on that delay in one place (refused session attaches); plane.ts now orders those frames itself.
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {
      // Resets and broken pipes from one client concern that client only.
    });
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), firstBytesTimeoutMs);
    timer.unref();
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      // Four bytes decide; a shorter first read that is still a prefix of "AMQP" waits for more.
      if (buffered.length < AMQP_MAGIC.length && AMQP_MAGIC.subarray(0, buffered.length).equals(buffered))
        return;
      clearTimeout(timer);
      socket.removeListener('data', onData);
      socket.pause();
      socket.unshift(buffered);
      try {
        if (buffered.subarray(0, 4).equals(AMQP_MAGIC)) {
          amqp.accept(socket);
        } else {
          httpServer.emit('connection', socket);
        }
        socket.resume();
      } catch (err) {
        log.warn({ err: err instanceof Error ? err.message : String(err) }, 'connection hand-over failed');
        socket.destroy();
      }
    };
    socket.on('data', onData);
  };
  const tcp = net.createServer(onConnection);
  tcp.on('error', (err) => log.error({ err: err.message }, 'listener error'));
  const listen = (server: net.Server, port: number): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      server.once('error', onError);
      server.listen({ host: options.host, port }, () => {
        server.removeListener('error', onError);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  const port = await listen(tcp, options.port);
  // The TLS listener hands its decrypted sockets to the same sniffing handler: AMQP or HTTP alike.
  let tlsServer: tls.Server | undefined;
  let tlsPort: number | undefined;
  if (options.tls) {
    tlsServer = tls.createServer({ cert: options.tls.cert, key: options.tls.key }, onConnection);
    tlsServer.on('tlsClientError', () => {
      // A failed handshake concerns that client only.
    });
    tlsServer.on('error', (err) => log.error({ err: err.message }, 'TLS listener error'));
    try {
      tlsPort = await listen(tlsServer, options.tls.port);
    } catch (err) {
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
      throw err;
    }
  }
  ready = true;

  return {
    port,
    ...(tlsPort !== undefined ? { tlsPort } : {}),
    host: options.host,
    setAdminHandler(handler) {
      admin = handler;
    },
    async close(): Promise<void> {
      ready = false;
      const closed = Promise.all([
        new Promise<void>((resolve) => tcp.close(() => resolve())),
        tlsServer ? new Promise<void>((resolve) => tlsServer.close(() => resolve())) : undefined,
      ]);
      await amqp.close();
      httpServer.closeAllConnections();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
