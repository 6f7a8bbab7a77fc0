// Two Resolver instances' liveness watches on one embedded Cosmos server: an instance that dies (its lease lapses
// unreleased) after losing buffered counter deltas gets exactly those deltas applied by one survivor, within the
// lease's TTL, while a survivor still holds deltas of its own (a recount there counted a row twice); an instance
// that stops cleanly (released) causes no recovery.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { MessageType, SELF } from '@nimbus/sdk/contract';
import { createStore, LeaseStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { INSTANCE_LEASE_PREFIX, startInstanceWatch } from './liveness.ts';

let cosmos: EmbeddedCosmos;
const stores: MessageStore[] = [];
const open = async (counterFlushMs: number, counterOwner: string) => {
  const s = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'liveness', counterFlushMs, counterOwner });
  stores.push(s);
  return s;
};
before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
});
after(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  await cosmos.close();
});

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<number> {
  const started = Date.now();
  while (!(await probe())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - started;
}

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

    await until('a survivor repairs the counters', async () => (await pending()) !== 1);
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
    // One survivor handled the death (the lapsed lease document is deleted by exactly one), and a second recovery
    // of the same instance applies nothing.
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
