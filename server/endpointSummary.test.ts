// What the Endpoint and Event pages read of their endpoint (GET /api/endpoints/{E}, readEndpoint), counted at the
// wire: the console's Cosmos client goes through a recording proxy in front of the embedded server, so the test sees
// every request the read sends. Under demo load the overview's per-endpoint queries (heartbeat records, ordered
// scans for the oldest failure and the last answer) were most of those pages' time (docs/console.md, Performance);
// the summary must not send any of them. And a throttled counters query answers the overview "busy" (503, retry-after).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFaultProxy, type FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { startConsoleTestStack, type ConsoleTestStack } from './testing/stack.ts';
import { seedConsoleData } from './testing/seed.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
let proxy: FaultProxy;
let closeContext: (() => Promise<void>) | undefined;

const get = (path: string) => new Request(`http://127.0.0.1${path}`);
const params = <P>(p: P) => ({ params: Promise.resolve(p) });

/** The paths of the requests `read` sent to Cosmos. */
async function pathsOf(read: () => Promise<Response>): Promise<string[]> {
  const from = proxy.seen.length;
  const res = await read();
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  return proxy.seen.slice(from).map((r) => `${r.method} ${r.path}`);
}

before(async () => {
  stack = await startConsoleTestStack('nimbus-endpoint-summary');
  await seedConsoleData(stack.store);
  proxy = await startFaultProxy(stack.cosmos.endpoint);
  Object.assign(process.env, stack.env, { NIMBUS_COSMOS_ENDPOINT: proxy.endpoint });
  ({ closeContext } = await import('./context.ts'));
});

after(async () => {
  await closeContext?.();
  await proxy?.close();
  await stack?.close();
});

describe("an endpoint's summary (the Endpoint and Event pages' read of their endpoint)", () => {
  test('is one point read of its counters: no query of events or heartbeats, as the overview sends', async () => {
    const summary = await import('../app/api/endpoints/[endpointId]/route.ts');
    const overview = await import('../app/api/endpoints/route.ts');
    const read = () => summary.GET(get('/api/endpoints/billingendpoint'), params({ endpointId: 'billingendpoint' }));
    await read(); // the console's first store use opens its containers: not part of a page's read
    const sent = await pathsOf(read);
    assert.deepEqual(
      sent.filter((p) => /\/colls\/(events|heartbeats)\b/.test(p)),
      [],
      `the summary read sent: ${sent.join(', ')}`,
    );
    assert.ok(
      sent.some((p) => p.startsWith('GET ') && p.includes('/colls/counters/docs/')),
      `a point read of the counters document, got: ${sent.join(', ')}`,
    );
    // The contrast that made the pages slow: the overview queries every endpoint's heartbeat records.
    const all = await pathsOf(() => overview.GET(get('/api/endpoints')));
    assert.ok(all.filter((p) => p.includes('/colls/heartbeats')).length >= stack.catalog.endpoints.length, all.join(', '));
  });
});

describe('the overview (GET /api/endpoints) when the store throttles its counters query', () => {
  test('answers 503 "busy" with retry-after, as every store read does, not a 500', async () => {
    const overview = await import('../app/api/endpoints/route.ts');
    // Every query of the counters container (the SDK's query plan and the query itself are both POSTs to its docs;
    // the console's client retries a 429 three times itself): answered 429, so the overview's read ends throttled.
    proxy.inject({ status: 429, retryAfterMs: 20, match: (r) => r.method === 'POST' && r.path.endsWith('/colls/counters/docs') });
    try {
      const res = await overview.GET(get('/api/endpoints'));
      const body = await res.text();
      assert.equal(res.status, 503, body);
      assert.equal(JSON.parse(body).error, 'busy');
      assert.equal(res.headers.get('retry-after'), '1');
    } finally {
      proxy.clear();
    }
    const again = await overview.GET(get('/api/endpoints'));
    assert.equal(again.status, 200, 'the next poll, unthrottled, answers');
    await again.text();
  });
});
