// A terminal write over a status row that no longer parses whose reply is lost (docs/store.md, "A terminal write over
// an unreadable row" and "A row write whose reply is lost"): the write may have landed, so it is kept in doubt, and
// whoever reads the row next settles it. Its own success would have recounted the endpoint (the old version's bucket
// is unknown); when a settle finds it landed, the same recount must run then, or the unreadable row's old bucket stays
// counted. Before, the settle counted the new bucket only and nothing recounted or warned: counters `Pending: 2`
// against a recount's 1 until someone ran `npm run recount`. On the embedded Cosmos server through the real
// @azure/cosmos client, a fault proxy in front of it losing or holding the replies; rows are broken past the store.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID, counterDocSchema } from './index.ts';
import { CorruptDocumentError, StoreTransientError } from './errors.ts';
import { statusRowId } from './ids.ts';
import type { MessageStore } from './store.ts';
import { msg, startProxiedStoreFixture, uniq, type ProxiedStoreFixture } from './testing/fixtures.ts';
import type { FaultProxy } from './testing/faultProxy.ts';

let wire: ProxiedStoreFixture;
let proxy: FaultProxy;
// `store` reads the truth straight from the server, past the proxy, and writes the rows the tests start from.
let store: MessageStore;

before(async () => {
  wire = await startProxiedStoreFixture({ storeVia: 'server' });
  ({ proxy, store } = wire);
});
after(() => wire.close());

const events = () => wire.raw.database(wire.database).container(CONTAINERS.events);
const counters = () => wire.raw.database(wire.database).container(CONTAINERS.counters);
const isRowReplace = (r: { method: string; path: string }) => r.method === 'PUT' && r.path.includes('/colls/events/docs/');

/** Gives the stored row an unknown status, past the store (which never writes one). */
async function breakRow(endpointId: string, eventId: string): Promise<void> {
  const item = events().item(statusRowId(eventId, 's-1'), [endpointId, eventId]);
  const { resource } = await item.read<Record<string, unknown>>();
  assert.ok(resource, 'the row exists');
  await item.replace({ ...resource, status: 'Exploded' });
}

/** The counters as stored now, then what a recount of the rows makes of them (the recount rewrites the document). */
async function storedAndRecounted(endpointId: string) {
  const stored = (await store.getCounts(endpointId)).buckets;
  const recounted = (await store.recountEndpoint(endpointId)).buckets;
  return { stored, recounted };
}

const request = (endpointId: string, eventId: string, over: { payload?: unknown } = {}) => msg(T.EventRequest, { endpointId, eventId, ...over });
const resolved = (endpointId: string, eventId: string) => msg(T.ResolutionResponse, { endpointId, eventId });
const failed = (endpointId: string, eventId: string) => msg(T.ErrorResponse, { endpointId, eventId, errorType: 'E', errorText: 'boom' });

/** The store's warnings, as its `warn` option receives them. */
type Warned = Array<{ fields: Record<string, unknown>; message: string }>;
const warnInto = (warned: Warned) => (fields: Record<string, unknown>, message: string) => void warned.push({ fields, message });

/**
 * Endpoint `ep` with two requests (`a`, `b`; Pending 2), `a`'s row then broken, and `s`'s response over it landing
 * with its reply lost: in doubt, the row Completed on the server.
 */
async function landedInDoubtOverUnreadable(s: MessageStore, ep: string, a: string, b: string): Promise<void> {
  await store.writeStatus(request(ep, a));
  await store.writeStatus(request(ep, b));
  await breakRow(ep, a);
  proxy.inject({ status: 503, afterForward: true, times: 1, match: isRowReplace });
  try {
    await assert.rejects(s.writeStatus(resolved(ep, a)), StoreTransientError);
  } finally {
    proxy.clear();
  }
  assert.equal(s.writesInDoubt, 1);
  assert.equal((await store.getStatusRow(ep, a, 's-1'))?.status, 'Completed', 'the write landed');
}

test('settled by the settle pass: the endpoint is recounted, the counters equal a recount, no warning', async () => {
  const warned: Warned = [];
  const s = await wire.openThroughProxy({ settleIntervalMs: 0, warn: warnInto(warned) });
  const ep = uniq('ep');
  try {
    await landedInDoubtOverUnreadable(s, ep, randomUUID(), randomUUID());
    await s.flushCounters(); // runs the settle pass
    assert.equal(s.writesInDoubt, 0);
  } finally {
    await s.close();
  }
  // Before: stored Pending 2, Completed 1 (the broken row's Pending never taken) against a recount's 1 / 1.
  const { stored, recounted } = await storedAndRecounted(ep);
  assert.deepEqual(stored, recounted);
  assert.deepEqual([recounted.Pending, recounted.Completed], [1, 1]);
  assert.deepEqual(warned, []);
});

test('a buffering writer (as the Resolver) settling it: the recount leaves its windows not yet flushed to its flush, which makes the counts exact', async () => {
  const s = await wire.openThroughProxy({ settleIntervalMs: 0, counterFlushMs: 3_600_000, counterOwner: uniq('writer') });
  const ep = uniq('ep');
  try {
    const c = randomUUID();
    // Buffered, not flushed: a recount that counted this row as it is would have it counted again by the flush.
    await s.writeStatus(request(ep, c));
    await landedInDoubtOverUnreadable(s, ep, randomUUID(), randomUUID());
    await s.flushCounters(); // the settle pass (the landed write's delta into its pinned window, then the recount), the flush
    assert.equal(s.writesInDoubt, 0);
  } finally {
    assert.equal(await s.close(), true);
  }
  const { stored, recounted } = await storedAndRecounted(ep);
  assert.deepEqual(stored, recounted);
  assert.deepEqual([recounted.Pending, recounted.Completed], [2, 1]);
});

test("settled by the row's next write through the same store (the response's redelivered copy): recounted before it", async () => {
  const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
  const ep = uniq('ep');
  const [a, b] = [randomUUID(), randomUUID()];
  try {
    await landedInDoubtOverUnreadable(s, ep, a, b);
    const row = await store.getStatusRow(ep, a, 's-1');
    const copy = await s.writeStatus({ ...resolved(ep, a), messageId: row!.lastMessageId });
    assert.equal(copy.outcome, 'written');
    assert.equal(s.writesInDoubt, 0, "settled from the copy's own read");
    assert.notEqual(copy.outcome === 'written' && copy.counters, 'failed');
  } finally {
    await s.close();
  }
  const { stored, recounted } = await storedAndRecounted(ep);
  assert.deepEqual(stored, recounted);
  assert.deepEqual([recounted.Pending, recounted.Completed], [1, 1]);
});

test('settled late by a later write of the same store that read its version: recounted once that write is counted too', async () => {
  const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
  const ep = uniq('ep');
  const [a, b] = [randomUUID(), randomUUID()];
  try {
    await store.writeStatus(request(ep, a));
    await store.writeStatus(request(ep, b));
    await breakRow(ep, a);
    // W1, a response over the broken row: it lands, its reply held.
    const held1 = proxy.hold(isRowReplace, 'response');
    const w1 = s.writeStatus(resolved(ep, a));
    w1.catch(() => undefined); // observed below
    await held1.held;
    // W2 of the same store, a failure: reads W1's version (Completed); its replace is held before the server.
    const held2 = proxy.hold(isRowReplace, 'request');
    const w2 = s.writeStatus(failed(ep, a));
    w2.catch(() => undefined); // observed below
    await held2.held;
    held1.release('lost'); // W1 in doubt only now, while W2 is in flight
    await assert.rejects(w1, StoreTransientError);
    assert.equal(s.writesInDoubt, 1);
    held2.release();
    const r2 = await w2;
    assert.equal(r2.outcome === 'written' && r2.previousStatus, 'Completed', "W2 read W1's version");
    assert.equal(s.writesInDoubt, 0, 'W1 settled by W2, which replaced its version');
    assert.notEqual(r2.outcome === 'written' && r2.counters, 'failed');
  } finally {
    await s.close();
  }
  // A recount before W2's own delta (Completed -> Failed) would have counted W2's row already: Failed 2, Completed -1.
  const { stored, recounted } = await storedAndRecounted(ep);
  assert.deepEqual(stored, recounted);
  assert.deepEqual([recounted.Pending, recounted.Completed, recounted.Failed], [1, 0, 1]);
});

test('an in-doubt write over an unreadable row that did NOT land: no recount, the counters as they were', async () => {
  const warned: Warned = [];
  const s = await wire.openThroughProxy({ settleIntervalMs: 0, warn: warnInto(warned) });
  const ep = uniq('ep');
  const [a, b] = [randomUUID(), randomUUID()];
  try {
    await store.writeStatus(request(ep, a));
    await store.writeStatus(request(ep, b));
    await breakRow(ep, a);
    const before = await counters().item(COUNTER_DOC_ID, ep).read<Record<string, unknown>>();
    // A 503 in place of the server's answer, the request never forwarded: in doubt, and not landed.
    proxy.inject({ status: 503, times: 1, match: isRowReplace });
    try {
      await assert.rejects(s.writeStatus(resolved(ep, a)), StoreTransientError);
    } finally {
      proxy.clear();
    }
    assert.equal(s.writesInDoubt, 1);
    await s.flushCounters();
    assert.equal(s.writesInDoubt, 0, 'settled: the row is not its version');
    await assert.rejects(store.getStatusRow(ep, a, 's-1'), CorruptDocumentError, 'the broken row is still there');
    const afterSettle = await counters().item(COUNTER_DOC_ID, ep).read<Record<string, unknown>>();
    assert.equal(afterSettle.etag, before.etag, 'the counters document untouched: no delta, no recount');
    assert.equal(afterSettle.resource?.recountedAt, before.resource?.recountedAt, 'not recounted');
    assert.deepEqual(afterSettle.resource?.counts, before.resource?.counts);
  } finally {
    await s.close();
  }
  assert.deepEqual(warned, []);
});

// No write is left to answer `counters: 'failed'` (the one over the unreadable row lost its reply), so the store warns
// itself, whoever settles it: the settle pass, which has no caller, or the row's next write, whose own answer is about
// its own message (it may even be refused).
for (const by of ['the settle pass', "the row's next write"] as const) {
  test(`when the endpoint cannot be recounted (its counters document does not parse), settled by ${by}: the store warns, ids only, with the recount to run`, async () => {
    const warned: Warned = [];
    const s = await wire.openThroughProxy({ settleIntervalMs: 0, warn: warnInto(warned) });
    const ep = uniq('ep');
    const [a, b] = [randomUUID(), randomUUID()];
    const secret = `payload-${randomUUID()}`;
    const write = resolved(ep, a);
    try {
      await store.writeStatus(request(ep, a, { payload: { secret } }));
      await store.writeStatus(request(ep, b));
      await breakRow(ep, a);
      const { resource } = await counters().item(COUNTER_DOC_ID, ep).read<Record<string, unknown>>();
      await counters().item(COUNTER_DOC_ID, ep).replace({ ...resource, flushed: { someone: 'garbled' } });
      proxy.inject({ status: 503, afterForward: true, times: 1, match: isRowReplace });
      try {
        await assert.rejects(s.writeStatus(write), StoreTransientError);
      } finally {
        proxy.clear();
      }
      if (by === 'the settle pass') await s.flushCounters();
      else assert.equal((await s.writeStatus(write)).outcome, 'written', 'the copy rewrites its own row');
      assert.equal(s.writesInDoubt, 0);
    } finally {
      await s.close();
    }
    // Before: no warning at all, and the broken row's Pending stayed counted until someone happened to recount.
    assert.equal(warned.length, 1, JSON.stringify(warned));
    const [w] = warned;
    assert.match(w!.message, /counters may be off/);
    assert.match(w!.message, new RegExp(`npm run recount -- ${ep}`));
    assert.match(w!.message, new RegExp(write.messageId));
    assert.deepEqual(w!.fields, { endpointId: ep, eventId: a, sessionId: 's-1', messageId: write.messageId, messageType: T.ResolutionResponse });
    assert.ok(!JSON.stringify(warned).includes(secret), 'no payload in the warning');
    const doc = await counters().item(COUNTER_DOC_ID, ep).read();
    assert.equal(counterDocSchema.safeParse(doc.resource).success, false, "left as it was, for the operator's recount");
    assert.equal((await store.recountEndpoint(ep)).completed, 1);
  });
}
