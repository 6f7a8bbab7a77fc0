// The overview's oldest failure (GET /api/endpoints, the Endpoints page's "Oldest failure"), counted at the wire: the
// store goes through a recording proxy in front of the embedded Cosmos server. Under traffic the failed count moves
// on almost every read; a new failure cannot be older than the one remembered, so the overview checks the remembered
// row with one point read instead of sending the ordered query over the endpoint's partition again, and sends the
// query only when that row has left the failed statuses. A throttled query is the store's StoreThrottledError.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, type Catalog } from '@nimbus/sdk/contract';
import { msg, startProxiedStoreFixture, uniq, type ProxiedStoreFixture } from '../lib/store/testing/fixtures.ts';
import { endpointsOverview } from './queries.ts';

let f: ProxiedStoreFixture;
const ep = uniq('oldest-failure');
const catalog = { endpoints: [{ id: ep, owner: 'team', description: null, produces: [], consumes: [] }] } as unknown as Catalog;

/** A request, then its error response: a Failed row. Returns the request's message id. */
async function fail(eventId: string): Promise<string> {
  const request = msg(MessageType.EventRequest, { endpointId: ep, eventId, payload: { n: 1 } });
  await f.store.writeStatus(request);
  await f.store.writeStatus(msg(MessageType.ErrorResponse, { endpointId: ep, eventId, parentMessageId: request.messageId, errorText: 'boom', errorType: 'TestError' }));
  return request.messageId;
}

const updatedAtOf = async (eventId: string) => (await f.store.getStatusRow(ep, eventId, 's-1'))!.updatedAt;
const oldest = async () => (await endpointsOverview(f.store, catalog)).find((e) => e.endpointId === ep)!.oldestFailureAt;

/** The requests to the events container that `read` sent: `POST` a query, `GET` a point read. */
async function eventsRequests(read: () => Promise<unknown>): Promise<string[]> {
  const from = f.proxy.seen.length;
  await read();
  return f.proxy.seen
    .slice(from)
    .filter((r) => /\/colls\/events\//.test(r.path))
    .map((r) => r.method);
}

before(async () => {
  f = await startProxiedStoreFixture({ storeVia: 'proxy' });
});

after(async () => {
  await f?.close();
});

test('a new failure: the remembered oldest is checked with a point read, no ordered query; a resolved oldest is queried again', async () => {
  const first = await fail('evt-1');
  await fail('evt-2');
  assert.equal(await oldest(), await updatedAtOf('evt-1'));

  await fail('evt-3');
  const sent = await eventsRequests(oldest);
  assert.deepEqual(sent, ['GET'], `one point read of the remembered row and no query, got: ${sent.join(', ')}`);
  assert.equal(await oldest(), await updatedAtOf('evt-1'), 'a newer failure does not move the oldest');

  // The oldest leaves the failed statuses: the next oldest is found by the query.
  await f.store.writeStatus(msg(MessageType.ResolutionResponse, { endpointId: ep, eventId: 'evt-1', parentMessageId: first }));
  const after = await eventsRequests(async () => assert.equal(await oldest(), await updatedAtOf('evt-2')));
  assert.ok(after.includes('POST'), `the query ran again, got: ${after.join(', ')}`);
});

test('a throttled oldest-failure query is the store\'s StoreThrottledError (a 503 "busy"), not a raw SDK error (a 500)', async () => {
  const throttledEp = uniq('throttled-oldest');
  const request = msg(MessageType.EventRequest, { endpointId: throttledEp, eventId: 'evt-1', payload: { n: 1 } });
  await f.store.writeStatus(request);
  await f.store.writeStatus(msg(MessageType.ErrorResponse, { endpointId: throttledEp, eventId: 'evt-1', parentMessageId: request.messageId, errorText: 'boom', errorType: 'TestError' }));
  const only = { endpoints: [{ id: throttledEp, owner: 'team', description: null, produces: [], consumes: [] }] } as unknown as Catalog;
  // The queries of its partition in the events container: the ordered TOP 1 (a new endpoint: nothing cached).
  f.proxy.inject({ status: 429, retryAfterMs: 40, match: (r) => r.method === 'POST' && r.path.endsWith('/colls/events/docs') && (r.partitionKey ?? '').includes(throttledEp) });
  try {
    await assert.rejects(endpointsOverview(f.store, only), (e: unknown) => e instanceof Error && e.name === 'StoreThrottledError');
  } finally {
    f.proxy.clear();
  }
});
