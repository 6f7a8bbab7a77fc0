// An event's rows read at the edge of EVENT_ROWS_LIMIT: `truncated` means at least one row was left out. Azure
// Cosmos DB may end a page with a continuation token though nothing follows it (the next page comes back empty);
// the embedded server never does, so here a small proxy in front of it answers as Cosmos may: every last query page
// that holds results gets a continuation, and that continuation an empty last page. The read asks for one row more
// than the limit, so at exactly the limit's rows its page is not full and still ends with a token: an event with
// exactly the limit's rows must then still read as whole - the Manager refuses a truncated set (409 "too many
// rows") and would refuse the event.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { createStore, EVENT_ROWS_LIMIT } from './store.ts';
import type { MessageStore } from './index.ts';
import { msg, steppingClock, uniq } from './testing/fixtures.ts';

const EP = 'billingendpoint';
/** The continuation the proxy hands out after a full page with none: asked for, it answers an empty last page. */
const TRAILING = JSON.stringify({ token: 'trailing-empty-page', range: { min: '', max: 'FF' } });

let cosmos: EmbeddedCosmos;
let proxy: http.Server;
let store: MessageStore;
/** Empty last pages the proxy served: proof the boundary case was exercised, not skipped. */
let trailingServed = 0;

/** Forwards to the embedded server; a last query page (no continuation) holding results gets TRAILING. */
function boundaryProxy(target: URL): http.Server {
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
  return server;
}

before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  proxy = boundaryProxy(new URL(cosmos.endpoint));
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  store = await createStore({ endpoint, key: cosmos.key, database: uniq('t'), now: steppingClock() });
});
after(async () => {
  await store?.close();
  proxy?.closeAllConnections();
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  await cosmos?.close();
});

/** An event with `n` rows (one Failed row per session). */
async function eventWithRows(n: number): Promise<string> {
  const eventId = uniq('rows');
  const w = await store.writeStatuses(
    Array.from({ length: n }, (_, i) => ({ input: msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: `S-${i}`, errorText: 'boom' }) })),
  );
  assert.ok(w.every((r) => r.ok && r.value.outcome === 'written'));
  return eventId;
}

describe('listEventRowsChecked at the rows limit (a last page may carry a continuation to nothing)', () => {
  test(`exactly ${EVENT_ROWS_LIMIT} rows: all of them, not truncated`, async () => {
    const served = trailingServed;
    const r = await store.listEventRowsChecked(EP, await eventWithRows(EVENT_ROWS_LIMIT));
    assert.equal(r.rows.length, EVENT_ROWS_LIMIT);
    assert.equal(r.corrupt.length, 0);
    assert.equal(r.truncated, false, 'a continuation followed by nothing is not a row left out');
    assert.ok(trailingServed > served, 'the empty last page was asked for');
  });

  test(`${EVENT_ROWS_LIMIT + 1} rows: the limit's worth, truncated`, async () => {
    const r = await store.listEventRowsChecked(EP, await eventWithRows(EVENT_ROWS_LIMIT + 1));
    assert.equal(r.rows.length, EVENT_ROWS_LIMIT);
    assert.equal(r.truncated, true);
  });

  test('fewer rows: whole', async () => {
    const r = await store.listEventRowsChecked(EP, await eventWithRows(3));
    assert.equal(r.rows.length, 3);
    assert.equal(r.truncated, false);
  });
});
