// What an endpoint's recent heartbeat records cost at the wire. Heartbeats are never pruned, so every endpoint soon
// has more records than the 20 the Endpoints, Monitor and Health pages (every 5 s) and the heartbeat sweep read:
// that read must stay one query, not a query plus a second one to learn whether a 21st record exists.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { createStore } from './store.ts';
import type { MessageStore } from './index.ts';
import { startFaultProxy, type FaultProxy } from './testing/faultProxy.ts';
import { steppingClock, uniq } from './testing/fixtures.ts';

let cosmos: EmbeddedCosmos;
let proxy: FaultProxy;
let store: MessageStore;

before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  proxy = await startFaultProxy(cosmos.endpoint);
  store = await createStore({ endpoint: proxy.endpoint, key: cosmos.key, database: uniq('t'), now: steppingClock() });
});
after(async () => {
  await store?.close();
  await proxy?.close();
  await cosmos?.close();
});

/** An endpoint with `n` probe records, sent a minute apart. */
async function endpointWithProbes(n: number): Promise<string> {
  const ep = uniq('ep');
  for (let i = 0; i < n; i++) {
    const sentAt = new Date(Date.UTC(2026, 11, 1, 10, i)).toISOString();
    await store.recordHeartbeat({ endpointId: ep, probeId: `p${i}`, status: 'Pending', sentAt, intervalSeconds: 300 });
  }
  return ep;
}

describe('listHeartbeats on an endpoint with more records than asked for', () => {
  test('25 records, the newest 20 asked for: 20 records, one query', async () => {
    const ep = await endpointWithProbes(25);
    const from = proxy.seen.length;
    const records = await store.listHeartbeats(ep, 20);
    const sent = proxy.seen.slice(from);
    assert.equal(records.length, 20);
    assert.deepEqual(
      records.map((r) => r.probeId),
      Array.from({ length: 20 }, (_, i) => `p${24 - i}`),
      'the newest 20, newest first',
    );
    // The SDK asks for a query plan before an ORDER BY query (a POST without the query header): not counted.
    const queries = sent.filter((r) => r.query);
    assert.equal(queries.length, 1, `one query, got: ${sent.map((r) => `${r.method} ${r.path}${r.query ? ' (query)' : ''}`).join(', ')}`);
  });
});
