// The seeders' bulk creates against the real SDK and the embedded Cosmos server, behind the fault proxy: a throttled
// batch and a batch whose reply is lost, answered at the wire, reach bulkCreate as the SDK really reports them (an
// operation's `error` with its status in `code`, the hint in `retryAfterInMs`). The store on the proxy has no SDK
// throttle retries (its default, as the benchmark's store), so every 429 reaches the caller.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { OperationInput } from '@azure/cosmos';
import { CONTAINERS, type MessageStore } from '../lib/store/index.ts';
import { startProxiedStoreFixture, uniq, type ProxiedStoreFixture } from '../lib/store/testing/fixtures.ts';
import { bulkCreate } from './bulkRetry.ts';

let f: ProxiedStoreFixture;
let store: MessageStore;
before(async () => {
  f = await startProxiedStoreFixture({ storeVia: 'server' });
  store = await f.openThroughProxy();
});
after(async () => {
  await store?.close();
  await f?.close();
});

/** `n` history documents of one new event (one partition: one batch request). */
function historyOps(n: number): { eventId: string; ops: OperationInput[] } {
  const eventId = uniq('event');
  const ops = Array.from({ length: n }, (_, i) => ({
    operationType: 'Create' as const,
    partitionKey: eventId,
    resourceBody: { id: `${eventId}-${i}`, eventId },
  }));
  return { eventId, ops };
}

async function stored(eventId: string): Promise<number> {
  const { resources } = await f.raw
    .database(f.database)
    .container(CONTAINERS.history)
    .items.query<number>({ query: 'SELECT VALUE COUNT(1) FROM c WHERE c.eventId = @e', parameters: [{ name: '@e', value: eventId }] })
    .fetchAll();
  return resources[0] ?? 0;
}

test('a throttled batch is sent again after the retry-after the server gave', async () => {
  const { eventId, ops } = historyOps(3);
  f.proxy.inject({ status: 429, retryAfterMs: 700, times: 2, match: (r) => r.batch });
  const waits: number[] = [];
  const r = await bulkCreate(store.database.container(CONTAINERS.history), ops, { sleep: async (ms) => void waits.push(ms) });
  assert.deepEqual(r, { attempts: 3, waits: [700, 700] });
  assert.equal(await stored(eventId), 3);
});

test('a batch that landed but whose reply was lost: sent again, its 409s count as written', async () => {
  const { eventId, ops } = historyOps(3);
  f.proxy.inject({ status: 503, times: 1, afterForward: true, match: (r) => r.batch });
  const waits: number[] = [];
  const r = await bulkCreate(store.database.container(CONTAINERS.history), ops, { sleep: async (ms) => void waits.push(ms) });
  assert.deepEqual(r, { attempts: 2, waits: [200] });
  assert.equal(await stored(eventId), 3);
});
