// Resolver instances' liveness watches on one embedded Cosmos server: an instance that dies (its lease lapses
// unreleased) after losing buffered counter deltas gets exactly those deltas applied by one survivor, within the
// lease's TTL, while a survivor still holds deltas of its own (a recount there counted a row twice); an instance
// that stops cleanly (released) causes no recovery. The survivor claims the death before recovering it: a recovery
// refused with a 429 is tried again; an instance that was only late cannot flush over the recovery; a claim whose
// holder died is claimed again and applied once; a death that keeps failing gives up with a recount warning and
// holds back neither another death nor the survivor's own lease (faults from a proxy in front of the server).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { MessageType, SELF } from '@nimbus/sdk/contract';
import { createStore, LeaseStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { startFaultProxy, type FaultProxy, type ProxiedRequest } from '../lib/store/testing/faultProxy.ts';
import { INSTANCE_LEASE_PREFIX, startInstanceWatch } from './liveness.ts';
import { waitFor } from '../lib/testing/waitFor.ts';

let cosmos: EmbeddedCosmos;
// Real faults at the wire: a survivor's store can reach the server through a fault proxy (429s from Cosmos).
let proxy: FaultProxy;
const stores: MessageStore[] = [];
const open = async (counterFlushMs: number, counterOwner: string) => {
  const s = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'liveness', counterFlushMs, counterOwner });
  stores.push(s);
  return s;
};
before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  proxy = await startFaultProxy(cosmos.endpoint);
});
after(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  await proxy.close();
  await cosmos.close();
});

test('a dead instance\'s lost counter deltas are applied exactly once by one survivor within the TTL, while survivors hold deltas of their own; a clean stop needs nothing', async () => {
  const log = pino({ level: 'silent' });
  const endpointId = `ep${randomUUID().slice(0, 6)}`;
  // Survivors that flush only when told: a delta of theirs is in flight for as long as the test wants.
  const a = await open(3_600_000, 'a');
  const b = await open(3_600_000, 'b');
  const ttlMs = 1000;
  const watchA = await startInstanceWatch({ store: a, leases: new LeaseStore(a.database), owner: 'a', log, ttlMs, checkEveryMs: 100 });
  const watchB = await startInstanceWatch({ store: b, leases: new LeaseStore(b.database), owner: 'b', log, ttlMs, checkEveryMs: 100 });
  const write = (store: MessageStore, eventId: string) =>
    store.recordOutcome({
      history: { endpointId, eventId, sessionId: eventId, messageId: randomUUID(), messageType: MessageType.EventRequest, parentMessageId: SELF, from: 'shop', to: endpointId, enqueuedAt: new Date().toISOString(), eventTypeId: 'OrderPlaced' },
      status: { endpointId, eventId, sessionId: eventId, messageId: randomUUID(), messageType: MessageType.EventRequest, parentMessageId: SELF, from: 'shop', to: endpointId, enqueuedAt: new Date().toISOString(), eventTypeId: 'OrderPlaced' },
    });
  const pending = async () => (await a.getAllCounts()).endpoints.find((e) => e.endpointId === endpointId)?.pending ?? 0;
  try {
    // A counted row first, so the endpoint has a counter document.
    await write(a, 'e1');
    await a.flushCounters();
    assert.equal(await pending(), 1);
    // A survivor's delta still in its buffer when the other instance dies.
    await write(a, 'e3');

    // The instance that dies: its row is written, its counter delta sits in a buffer that is never flushed.
    const doomed = await open(3_600_000, 'doomed');
    await write(doomed, 'e2');
    const deadLeases = new LeaseStore(doomed.database);
    assert.ok(await deadLeases.acquire(`${INSTANCE_LEASE_PREFIX}doomed`, 'doomed', ttlMs));
    const diedAt = Date.now();
    assert.equal(await pending(), 1, 'the dead instance\'s delta is lost: the counters say 1, the rows 3');

    await waitFor('a survivor repairs the counters', async () => (await pending()) !== 1);
    const took = Date.now() - diedAt;
    assert.ok(took >= ttlMs - 100, `repaired after ${took} ms, before the lease lapsed`);
    assert.ok(took < ttlMs + 10_000, `repaired after ${took} ms`);
    assert.equal(await deadLeases.holder(`${INSTANCE_LEASE_PREFIX}doomed`), undefined);
    // Now the survivor's own delta lands: the counters must equal the rows, with no quiet moment needed.
    await a.flushCounters();
    await new Promise((r) => setTimeout(r, 300)); // anything else still to land would land now
    const counted = await pending();
    const rows = (await a.recountEndpoint(endpointId)).pending;
    assert.equal(rows, 3);
    assert.equal(counted, rows, `counters ${counted}, rows ${rows}`);
    // One survivor handled the death (the lapsed lease is claimed by exactly one), and a second recovery of the
    // same instance applies nothing.
    assert.equal(watchA.recoveries + watchB.recoveries, 1);
    assert.equal(await b.recoverCounters('doomed'), 0);
    assert.equal(await pending(), 3);

    // A clean stop: released, not lapsed; nobody recovers anything for it.
    const clean = await startInstanceWatch({ store: b, leases: new LeaseStore(b.database), owner: 'clean', log, ttlMs, checkEveryMs: 100 });
    await clean.stop();
    await new Promise((r) => setTimeout(r, ttlMs * 3));
    assert.equal(watchA.recoveries + watchB.recoveries, 1, 'a clean stop caused a recovery');
  } finally {
    await watchA.stop();
    await watchB.stop();
  }
});

/** A store on its own database (its own leases: one test's lapsed leases are not another's), direct or proxied. */
async function openOn(database: string, counterOwner: string, via: 'server' | 'proxy' = 'server'): Promise<MessageStore> {
  const s = await createStore({ endpoint: via === 'proxy' ? proxy.endpoint : cosmos.endpoint, key: cosmos.key, database, counterFlushMs: 3_600_000, counterOwner });
  stores.push(s);
  return s;
}

const rowOn = (store: MessageStore, endpointId: string, eventId: string) => {
  const m = { endpointId, eventId, sessionId: eventId, messageId: randomUUID(), messageType: MessageType.EventRequest, parentMessageId: SELF, from: 'shop', to: endpointId, enqueuedAt: new Date().toISOString(), eventTypeId: 'OrderPlaced' };
  return store.recordOutcome({ history: m, status: { ...m } });
};

const pendingOn = async (store: MessageStore, endpointId: string) => (await store.getAllCounts()).endpoints.find((e) => e.endpointId === endpointId)?.pending ?? 0;

type WatchLog = Parameters<typeof startInstanceWatch>[0]['log'];

/** A logger that keeps what it is told, for the warnings a test expects. */
function captureLog(): { lines: Array<{ level: string; obj: unknown; msg: string }>; log: WatchLog } {
  const lines: Array<{ level: string; obj: unknown; msg: string }> = [];
  const at = (level: string) => (obj: unknown, msg: string) => void lines.push({ level, obj, msg });
  return { lines, log: { info: at('info'), warn: at('warn'), error: at('error') } as unknown as WatchLog };
}

/** An instance that dies with one counted row on `endpointId` and one whose delta it never flushed. */
async function deadInstance(database: string, owner: string, endpointId: string, ttlMs: number): Promise<MessageStore> {
  const s = await openOn(database, owner);
  await rowOn(s, endpointId, `${owner}-1`);
  await s.flushCounters();
  await rowOn(s, endpointId, `${owner}-2`);
  assert.ok(await new LeaseStore(s.database).acquire(`${INSTANCE_LEASE_PREFIX}${owner}`, owner, ttlMs));
  return s;
}

const isCounterPatch = (r: ProxiedRequest) => r.method === 'PATCH' && r.path.includes('/colls/counters/');
const onEndpoint = (endpointId: string) => (r: ProxiedRequest) => (r.partitionKey ?? '').includes(endpointId);

test('a recovery refused once with a 429 is tried again and applies the lost delta, once', async () => {
  const database = `lv-${randomUUID().slice(0, 8)}`;
  const endpointId = `ep${randomUUID().slice(0, 6)}`;
  const ttlMs = 1000;
  const survivor = await openOn(database, 'survivor', 'proxy');
  // The recovery's counter patch is throttled once (the store's client does not retry a 429 by itself).
  const before = proxy.injected;
  proxy.inject({ status: 429, retryAfterMs: 1, times: 1, match: isCounterPatch });
  const watch = await startInstanceWatch({ store: survivor, leases: new LeaseStore(survivor.database), owner: 'survivor', log: pino({ level: 'silent' }), ttlMs, checkEveryMs: 100, retryBaseMs: 100 });
  try {
    await deadInstance(database, 'throttled-death', endpointId, ttlMs);
    assert.equal(await pendingOn(survivor, endpointId), 1);
    await waitFor('the first recovery refused with a 429', async () => proxy.injected > before);
    await waitFor('the recovery tried again and applied the lost delta', async () => (await pendingOn(survivor, endpointId)) === 2);
    await waitFor('the death counted as recovered', async () => watch.recoveries === 1);
    assert.equal(await pendingOn(survivor, endpointId), 2);
    assert.equal((await survivor.recountEndpoint(endpointId)).pending, 2);
    assert.equal(await new LeaseStore(survivor.database).holder(`${INSTANCE_LEASE_PREFIX}throttled-death`), undefined, 'the claim is deleted once recovered');
  } finally {
    proxy.clear();
    await watch.stop();
  }
});

test('an instance that was late, not dead: its renewal after the claim fails, and its flush does not count again what the survivor recovered', async () => {
  const database = `lv-${randomUUID().slice(0, 8)}`;
  const endpointId = `ep${randomUUID().slice(0, 6)}`;
  const ttlMs = 1000;
  const survivor = await openOn(database, 'survivor');
  const watch = await startInstanceWatch({ store: survivor, leases: new LeaseStore(survivor.database), owner: 'survivor', log: pino({ level: 'silent' }), ttlMs, checkEveryMs: 100 });
  try {
    // The late instance: a counted row, then a row whose delta is still in its buffer when it stalls past its TTL.
    const late = await openOn(database, 'late');
    await rowOn(late, endpointId, 'l1');
    await late.flushCounters();
    await rowOn(late, endpointId, 'l2');
    const leases = new LeaseStore(late.database);
    const lease = await leases.acquire(`${INSTANCE_LEASE_PREFIX}late`, 'late', ttlMs);
    assert.ok(lease);
    await waitFor('the survivor recovered the late instance\'s delta', async () => (await pendingOn(survivor, endpointId)) === 2);
    // It wakes up: its renewal is refused (the lease is no longer the version it holds)...
    assert.equal(await leases.renew(lease, ttlMs), undefined);
    // ...nor take it back...
    assert.equal(await leases.resume(`${INSTANCE_LEASE_PREFIX}late`, 'late', ttlMs), undefined);
    // ...and its flush of the window the survivor applied is refused by the store.
    await assert.rejects(late.flushCounters(), { name: 'CountsRecoveredError' });
    assert.deepEqual(late.countsRefusedEndpoints, [endpointId], 'the late store names where its deltas were dropped');
    assert.deepEqual(survivor.countsRefusedEndpoints, []);
    assert.equal(await pendingOn(survivor, endpointId), 2, 'the late flush counted the recovered row again');
    assert.equal((await survivor.recountEndpoint(endpointId)).pending, 2);
  } finally {
    await watch.stop();
  }
});

test('two survivors and a claim whose holder died: the claim lapses, is claimed again, and the deltas are applied exactly once', async () => {
  const database = `lv-${randomUUID().slice(0, 8)}`;
  const endpointId = `ep${randomUUID().slice(0, 6)}`;
  const ttlMs = 1000;
  const a = await openOn(database, 'a');
  const b = await openOn(database, 'b');
  const dead = await deadInstance(database, 'doomed', endpointId, 3_600_000);
  // A survivor ('ghost') claimed the death and died before recovering anything: its claim, lapsed, is the lease
  // document now. Written as stored, so the test reads the same on code that has no claims.
  const name = `${INSTANCE_LEASE_PREFIX}doomed`;
  await dead.database.container('leases').items.upsert({ id: name, owner: 'ghost', recovering: 'doomed', expiresAt: Date.now() - 1, acquiredAt: Date.now() - ttlMs });
  assert.equal(await pendingOn(a, endpointId), 1);
  const watchA = await startInstanceWatch({ store: a, leases: new LeaseStore(a.database), owner: 'a', log: pino({ level: 'silent' }), ttlMs, checkEveryMs: 50 });
  const watchB = await startInstanceWatch({ store: b, leases: new LeaseStore(b.database), owner: 'b', log: pino({ level: 'silent' }), ttlMs, checkEveryMs: 50 });
  try {
    await waitFor('one survivor handled the lapsed claim', async () => watchA.recoveries + watchB.recoveries >= 1);
    await waitFor('the claim deleted', async () => (await a.database.container('leases').item(name, name).read()).statusCode === 404);
    assert.equal(watchA.recoveries + watchB.recoveries, 1);
    assert.equal(await pendingOn(a, endpointId), 2, 'the dead instance\'s delta applied once');
    // Running the recovery again (a claim taken over from a holder that died after applying) applies nothing.
    assert.equal(await b.recoverCounters('doomed'), 0);
    assert.equal(await pendingOn(a, endpointId), 2);
    assert.equal((await a.recountEndpoint(endpointId)).pending, 2);
  } finally {
    await watchA.stop();
    await watchB.stop();
  }
});

test('a death whose recovery keeps failing gives up with a recount warning, and blocks neither another death\'s recovery nor the re-take of the survivor\'s own lease', async () => {
  const database = `lv-${randomUUID().slice(0, 8)}`;
  const stuck = `ep${randomUUID().slice(0, 6)}`;
  const fine = `ep${randomUUID().slice(0, 6)}`;
  const ttlMs = 1000;
  const survivor = await openOn(database, 'survivor', 'proxy');
  // Reads the leases past the proxy: what is stored, whatever the survivor is told.
  const observed = new LeaseStore((await openOn(database, 'observer')).database);
  const own = `${INSTANCE_LEASE_PREFIX}survivor`;
  const { lines, log } = captureLog();
  await deadInstance(database, 'dies-stuck', stuck, ttlMs);
  await deadInstance(database, 'dies-fine', fine, ttlMs);
  // The stuck endpoint's counters are throttled for good: every recovery of the first death fails there.
  const stuckPatch = (r: ProxiedRequest) => isCounterPatch(r) && onEndpoint(stuck)(r);
  proxy.inject({ status: 429, retryAfterMs: 1, match: stuckPatch });
  const watch = await startInstanceWatch({ store: survivor, leases: new LeaseStore(survivor.database), owner: 'survivor', log, ttlMs, checkEveryMs: 100, recoveryAttempts: 3, retryBaseMs: 50 });
  try {
    await waitFor('the other death recovered', async () => (await pendingOn(survivor, fine)) === 2);
    await waitFor('the stuck death given up, with a recount asked for', async () =>
      lines.some((l) => l.level === 'warn' && /recount/i.test(l.msg) && JSON.stringify(l.obj).includes(stuck)),
    );
    assert.equal(await pendingOn(survivor, stuck), 1, 'nothing applied on the throttled endpoint');
    // The survivor's own lease lost (the leases unreachable past its TTL) while another recovery keeps failing:
    // the watch takes it again.
    await deadInstance(database, 'dies-stuck-2', stuck, ttlMs);
    proxy.inject({ status: 503, match: (r) => r.path.includes('/colls/leases/') || stuckPatch(r) });
    await waitFor('the survivor\'s own lease lapsed', async () => (await observed.holder(own)) === undefined);
    proxy.inject({ status: 429, retryAfterMs: 1, match: stuckPatch });
    await waitFor('the survivor\'s own lease taken again', async () => (await observed.holder(own))?.owner === 'survivor');
  } finally {
    proxy.clear();
    await watch.stop();
  }
});

test('a check that waits on a store that does not answer holds no queue of checks behind it: none piles up to run after it, nor after stop()', async () => {
  const database = `lv-${randomUUID().slice(0, 8)}`;
  const survivor = await openOn(database, 'queued', 'proxy');
  const isLeaseQuery = (r: ProxiedRequest) => r.query && r.path.includes('/colls/leases/');
  const watch = await startInstanceWatch({ store: survivor, leases: new LeaseStore(survivor.database), owner: 'queued', log: captureLog().log, ttlMs: 60_000, checkEveryMs: 20 });
  // The next check's lapsed-leases query is held at the wire, as a store that stopped answering would hold it.
  const hold = proxy.hold(isLeaseQuery, 'request');
  await hold.held;
  // Ticks go on meanwhile (every 20 ms): before, each chained one more check behind the held one.
  const ticks = proxy.received;
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(proxy.received, ticks, 'nothing else was sent while the check waited');
  const before = proxy.seen.length;
  hold.release();
  await watch.stop();
  const after = proxy.seen.slice(before).filter((r) => r.path.includes('/colls/leases/')).length;
  // The held check ends, and at most one more tick's check may start before stop(): a few lease requests, not one
  // check per tick of the second it waited (about 50).
  assert.ok(after <= 6, `lease requests after the held one was answered, up to the end of stop(): ${after}`);
});
