// A loopback TCP proxy that a test can switch off and on, to make a server unreachable at the network level while
// the unmodified clients (@azure/service-bus over AMQP, @azure/cosmos over HTTP) keep their own connection and
// retry logic. Down: the listening socket is closed, so new connections are refused (ECONNREFUSED), and every
// open connection is reset (ECONNRESET) - what a client sees when a server process dies or a firewall rejects it.
// Up: the proxy listens again on the same port and forwards bytes untouched. Nothing is parsed or answered by the
// proxy itself (unlike lib/store/testing/faultProxy.ts, which answers HTTP requests with chosen status codes).
// Silent: the connections stay open but nothing more is forwarded either way - what a client sees when the path dies
// without an RST (a dropped NAT entry, a pulled cable): it learns of nothing until its own timers fire.
import net from 'node:net';

export interface TcpFaultProxy {
  /** The proxy's loopback port (stable across down/up, so connection strings stay valid). */
  readonly port: number;
  /** True while the proxy forwards. */
  readonly up: boolean;
  /** Connections accepted and forwarded so far (a reconnect after an outage counts again). */
  readonly accepted: number;
  /**
   * Bytes the clients sent on silenced connections, held unread by the proxy and never forwarded: the positive signal
   * that a client wrote something (a detach, a settlement) that will not be answered.
   */
  readonly silencedBytes: number;
  /** Refuses new connections and resets the open ones until `restore()`. */
  cut(): Promise<void>;
  /**
   * Stops forwarding on every connection, open and new, without closing any, until `restore()` (which resets the
   * silenced ones).
   */
  silence(): void;
  /** Listens on the same port again and forwards; connections silenced meanwhile are reset. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

const listen = (server: net.Server, port: number) =>
  new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, '127.0.0.1');
  });

/**
 * Listens on a port below Linux's ephemeral range (32768-60999 by default). While the proxy is down its port is
 * free, and a port from the ephemeral range can be taken in the meantime as the local end of any outgoing
 * connection of any process on the machine, for as long as that connection lives: a chaos run on CI failed with
 * EADDRINUSE when the store came back. Below the range only another listener can take it.
 */
async function listenOutsideEphemeralRange(server: net.Server): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    try {
      await listen(server, port);
      return port;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 50) throw error;
    }
  }
}

export async function startTcpFaultProxy(target: { host?: string; port: number }): Promise<TcpFaultProxy> {
  const host = target.host ?? '127.0.0.1';
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  let up = true;
  let silent = false;
  const silencers = new Set<() => void>();
  /** The client ends of silenced connections: a paused socket still buffers what arrives (up to its high-water mark). */
  const silencedClients = new Set<net.Socket>();

  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect({ host, port: target.port });
    sockets.add(client);
    sockets.add(upstream);
    // Unpiped and paused: bytes stay unread in the kernel's buffers, and nothing reaches the other side.
    const silenceThis = () => {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
      silencedClients.add(client);
    };
    // Either side failing ends both, as a real broken path would; errors are expected here, not test failures.
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', () => {
      sockets.delete(client);
      silencers.delete(silenceThis);
      silencedClients.delete(client);
      end();
    });
    upstream.on('error', end).on('close', () => {
      sockets.delete(upstream);
      end();
    });
    silencers.add(silenceThis);
    if (silent) return silenceThis();
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const port = await listenOutsideEphemeralRange(server);

  const resetAll = () => {
    // An RST rather than a FIN: the client must see a broken connection, not a polite close.
    // A socket whose writing side has ended (the other side's FIN, passed on by pipe) is being shut down, and libuv
    // refuses to reset it (EINVAL): Node then drops the handle unclosed, and it holds the process open for good.
    for (const s of sockets) {
      if (s.writableEnded) s.destroy();
      else s.resetAndDestroy();
    }
    sockets.clear();
  };

  return {
    port,
    get up() {
      return up;
    },
    get accepted() {
      return accepted;
    },
    get silencedBytes() {
      let held = 0;
      for (const s of silencedClients) held += s.readableLength;
      return held;
    },
    async cut() {
      if (!up) return;
      up = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      resetAll();
      await closed;
    },
    silence() {
      silent = true;
      for (const silenceThis of silencers) silenceThis();
    },
    async restore() {
      if (silent) {
        silent = false;
        resetAll();
      }
      if (up) return;
      // The port was released while down; another listener may briefly hold it (EADDRINUSE): try again shortly.
      for (let attempt = 1; ; attempt++) {
        try {
          await listen(server, port);
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 50) throw error;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      up = true;
    },
    async close() {
      up = false;
      resetAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
