// A proxy in front of the embedded Cosmos server that answers as Azure Cosmos DB may at the end of a query: a last
// page that holds results, without a continuation, gets one anyway, and that continuation leads to an empty last
// page. (Not only a full page: the store reads one row more than its limit, so at exactly the limit's rows its last
// page is not full, and the boundary must still be exercised there.)
// The embedded server never does this, so code that treats "a continuation" as "more rows" passes against it and
// fails in production; tests at a page-size boundary put this proxy in the way (lib/store/eventRowsLimit.test.ts,
// server/eventDetailsParked.test.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEmbeddedCosmos } from '../cosmos.ts';
import { createStore, type MessageStore } from '../store.ts';
import { steppingClock, uniq } from './fixtures.ts';

/** The continuation handed out after a last page with results: asked for, it answers an empty last page. */
const TRAILING = JSON.stringify({ token: 'trailing-empty-page', range: { min: '', max: 'FF' } });

export interface BoundaryProxy {
  /** http://127.0.0.1:port, to give the store as its Cosmos endpoint. */
  endpoint: string;
  /** Empty last pages served so far: proof the boundary case was exercised, not skipped. */
  trailingServed(): number;
  close(): Promise<void>;
}

/** Starts the proxy on 127.0.0.1 (a free port), forwarding to the embedded server at `target`. */
export async function startBoundaryProxy(target: URL): Promise<BoundaryProxy> {
  let trailingServed = 0;
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    if (req.headers['x-ms-continuation'] === TRAILING) {
      req.resume();
      trailingServed++;
      const body = JSON.stringify({ _rid: '', Documents: [], _count: 0 });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-ms-request-charge': '0' }).end(body);
      return;
    }
    const isQuery = String(req.headers['x-ms-documentdb-isquery']).toLowerCase() === 'true';
    const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (reply) => {
      const chunks: Buffer[] = [];
      reply.on('data', (c: Buffer) => chunks.push(c));
      reply.on('end', () => {
        const headers = { ...reply.headers };
        const body = Buffer.concat(chunks);
        if (isQuery && reply.statusCode === 200 && headers['x-ms-continuation'] === undefined) {
          const docs = (JSON.parse(body.toString('utf8')) as { Documents?: unknown[] }).Documents ?? [];
          if (docs.length > 0) headers['x-ms-continuation'] = TRAILING;
        }
        delete headers['transfer-encoding'];
        headers['content-length'] = String(body.length);
        res.writeHead(reply.statusCode ?? 502, headers).end(body);
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('close', () => agent.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    trailingServed: () => trailingServed,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface BoundaryStoreFixture {
  proxy: BoundaryProxy;
  /** A store on a fresh database (stepping clock), reaching the embedded server through the proxy. */
  store: MessageStore;
  close(): Promise<void>;
}

/** An embedded Cosmos server, the proxy in front of it and a store through the proxy. */
export async function startBoundaryStoreFixture(): Promise<BoundaryStoreFixture> {
  const cosmos = await startEmbeddedCosmos({ port: 0 });
  const proxy = await startBoundaryProxy(new URL(cosmos.endpoint));
  const store = await createStore({ endpoint: proxy.endpoint, key: cosmos.key, database: uniq('t'), now: steppingClock() });
  return {
    proxy,
    store,
    close: async () => {
      await store.close();
      await proxy.close();
      await cosmos.close();
    },
  };
}
