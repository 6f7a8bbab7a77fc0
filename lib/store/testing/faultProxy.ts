// An HTTP fault proxy for tests: sits in front of the embedded Cosmos server and answers chosen requests itself
// (429 with x-ms-retry-after-ms, 503…), so throttling is injected at the wire and the real SDK sees real answers.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  method: string;
  path: string;
  /** A transactional batch (x-ms-cosmos-is-batch-request). */
  batch: boolean;
  /** A query (x-ms-documentdb-isquery), as opposed to a point read or a write on the same path. */
  query: boolean;
  /** The SDK's query-plan request that goes beside a query (the embedded server refuses it at once). */
  queryPlan: boolean;
  /** The partition key the request names (x-ms-documentdb-partitionkey, JSON such as `["billingendpoint"]`), if any. */
  partitionKey?: string;
}

export interface Fault {
  status: number;
  /** Sent as x-ms-retry-after-ms (Cosmos's throttle hint). */
  retryAfterMs?: number;
  /** Which requests to fail (default: every request while the fault is armed). */
  match?: (req: ProxiedRequest) => boolean;
  /** How many matching requests to fail before the fault disarms itself (default: unlimited). */
  times?: number;
  /**
   * Forward the request first (it takes effect on the server) and answer with the fault instead of the server's
   * reply: a reply lost on the way back, the case where a client cannot tell whether its write happened.
   */
  afterForward?: boolean;
}

/** How a held request is let go (see Hold.release). */
export type Release = 'lost' | Pick<Fault, 'status' | 'retryAfterMs'>;

/** A request held at the proxy (see FaultProxy.hold). */
export interface Hold {
  /** Resolves once a matching request has arrived (phase 'request') or been answered by the server ('response'). */
  held: Promise<void>;
  /**
   * Lets the held request go on (to the server, or its answer back to the client). `lost`: the server applies it
   * but the client is answered 503 instead of its reply (a reply lost, as Fault.afterForward). A fault: the client
   * is answered with it instead (a request held at 'request' then never reaches the server; one held at
   * 'response' was applied), so a refusal such as a 429 can arrive after whatever the test did meanwhile.
   */
  release(how?: Release): void;
  /**
   * Resolves once the held request's answer (the server's, or the fault it was released with) has been sent whole;
   * rejects when its connection closed before that (the client gave up, the upstream failed).
   */
  answered: Promise<void>;
}

export interface FaultProxy {
  endpoint: string;
  /** Arms a fault (replacing any armed one). */
  inject(fault: Fault): void;
  /**
   * Holds the next request matching `match`: before it reaches the server ('request'), or after the server has
   * answered it, with its answer kept from the client ('response': served, but slow to come back). One at a time;
   * faults are not applied to the held request.
   */
  hold(match: (req: ProxiedRequest) => boolean, phase: 'request' | 'response'): Hold;
  /**
   * A store that stops answering: from now on every new request is held, never forwarded and never answered, until
   * close() drops its connection (the client sees only its own time-out). A request already held stays held.
   */
  stall(): void;
  clear(): void;
  /** Requests the proxy answered with a fault so far. */
  readonly injected: number;
  /** Every request the proxy received, in order (faulted or not), for tests that count round trips. */
  readonly seen: readonly ProxiedRequest[];
  /** How many requests the proxy received so far (counted even when `record` is off). */
  readonly received: number;
  close(): Promise<void>;
}

export interface FaultProxyOptions {
  /**
   * Holds every request this long before forwarding it: a store with a realistic round trip (Azure Cosmos DB in
   * the same region answers a point write in roughly 5-20 ms), where the embedded server answers in well under one.
   */
  latencyMs?: number;
  /** Keep the list of requests seen (default true; a long benchmark turns it off). */
  record?: boolean;
}

export async function startFaultProxy(target: string, options: FaultProxyOptions = {}): Promise<FaultProxy> {
  const t = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  let fault: (Fault & { left: number }) | undefined;
  let holding:
    | {
        match: (req: ProxiedRequest) => boolean;
        phase: 'request' | 'response';
        onHeld: (release: (how?: Release) => void) => void;
        onAnswered: () => void;
        onLost: (err: Error) => void;
      }
    | undefined;
  let stalled = false;
  let injected = 0;
  let received = 0;
  const seen: ProxiedRequest[] = [];
  const server = http.createServer({ keepAlive: true }, (req, res) => {
    const info: ProxiedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      batch: String(req.headers['x-ms-cosmos-is-batch-request']).toLowerCase() === 'true',
      query: String(req.headers['x-ms-documentdb-isquery']).toLowerCase() === 'true',
      queryPlan: String(req.headers['x-ms-cosmos-is-query-plan-request']).toLowerCase() === 'true',
      ...(typeof req.headers['x-ms-documentdb-partitionkey'] === 'string' ? { partitionKey: req.headers['x-ms-documentdb-partitionkey'] } : {}),
    };
    received++;
    if (options.record !== false) seen.push(info);
    if (stalled) {
      req.resume(); // read and ignored: the connection stays open, unanswered, until close()
      return;
    }
    if (holding && holding.match(info)) {
      const h = holding;
      holding = undefined;
      res.on('finish', h.onAnswered);
      // The client gave up (its time-out) or the upstream failed before an answer was sent whole: a test awaiting
      // `answered` fails with a cause instead of hanging to its own time-out.
      res.on('close', () => {
        if (!res.writableFinished) h.onLost(new Error(`the held ${info.method} ${info.path} closed before its answer was sent`));
      });
      const answer = (up: http.IncomingMessage, how?: Release) => {
        if (how !== undefined) {
          up.resume();
          up.on('end', () => answerFault(res, how === 'lost' ? { status: 503 } : how));
          return;
        }
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      };
      if (h.phase === 'request') {
        req.pause();
        h.onHeld((how) => {
          if (how === undefined || how === 'lost') return forward(req, res, (up) => answer(up, how));
          req.resume(); // refused here: the server never sees it
          answerFault(res, how);
        });
      } else {
        forward(req, res, (up) => h.onHeld((how) => answer(up, how)));
      }
      return;
    }
    if (fault && fault.left > 0 && (fault.match?.(info) ?? true)) {
      fault.left--;
      injected++;
      const f = fault;
      if (f.afterForward) {
        forward(req, res, (up) => {
          up.resume();
          up.on('end', () => answerFault(res, f));
        });
        return;
      }
      req.resume();
      answerFault(res, f);
      return;
    }
    if (options.latencyMs) {
      // Paused until forwarded: the body waits in the socket, as it would on the wire.
      req.pause();
      setTimeout(() => forward(req, res), options.latencyMs);
      return;
    }
    forward(req, res);
  });
  const answerFault = (res: http.ServerResponse, fault: Fault) => {
    const body = JSON.stringify({ code: String(fault.status), message: `injected fault ${fault.status}` });
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    };
    if (fault.retryAfterMs !== undefined) headers['x-ms-retry-after-ms'] = fault.retryAfterMs;
    if (fault.status === 429) headers['x-ms-substatus'] = 3200;
    res.writeHead(fault.status, headers).end(body);
  };
  const forward = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    onReply?: (up: http.IncomingMessage) => void,
  ) => {
    const upstream = http.request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers, agent },
      (up) => {
        if (onReply) return onReply(up);
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    inject: (f) => {
      fault = { ...f, left: f.times ?? Number.POSITIVE_INFINITY };
    },
    clear: () => {
      fault = undefined;
    },
    stall: () => {
      stalled = true;
    },
    hold: (match, phase) => {
      let release: ((how?: Release) => void) | undefined;
      let released: { how?: Release } | undefined;
      let onHeld!: () => void;
      const held = new Promise<void>((resolve) => (onHeld = resolve));
      let onAnswered!: () => void;
      let onLost!: (err: Error) => void;
      const answered = new Promise<void>((resolve, reject) => {
        onAnswered = resolve;
        onLost = reject;
      });
      answered.catch(() => undefined); // only a test that awaits it sees the rejection
      holding = {
        match,
        phase,
        onAnswered,
        onLost,
        onHeld: (go) => {
          release = go;
          onHeld();
          if (released) go(released.how);
        },
      };
      return {
        held,
        release: (how) => {
          if (released) return;
          released = { how };
          release?.(how);
        },
        answered,
      };
    },
    get injected() {
      return injected;
    },
    get received() {
      return received;
    },
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
