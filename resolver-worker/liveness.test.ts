// Two Resolver instances' liveness watches on one embedded Cosmos server: an instance that dies (its lease lapses
// unreleased) after losing buffered counter deltas gets its counters repaired by exactly one survivor's recount,
// within the lease's TTL; an instance that stops cleanly (released) causes no recount.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { MessageType, SELF } from '@nimbus/sdk/contract';
import { createStore, LeaseStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { INSTANCE_LEASE_PREFIX, startInstanceWatch } from './liveness.ts';

let cosmos: EmbeddedCosmos;
const stores: MessageStore[] = [];
const open = async (counterFlushMs: number) => {
  const s = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'liveness', counterFlushMs });
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

test('a dead instance\'s lost counter deltas are recounted by one survivor within the TTL; a clean stop recounts nothing', async () => {
  const log = pino({ level: 'silent' });
  const endpointId = `ep${randomUUID().slice(0, 6)}`;
  const a = await open(250);
  const b = await open(250);
  const ttlMs = 1000;
  const watchA = await startInstanceWatch({ store: a, leases: new LeaseStore(a.database), owner: 'a', log, ttlMs, checkEveryMs: 100, quietMs: 500 });
  const watchB = await startInstanceWatch({ store: b, leases: new LeaseStore(b.database), owner: 'b', log, ttlMs, checkEveryMs: 100, quietMs: 500 });
  try {
    // A counted row first, so the endpoint has a counter document.
    const write = (store: MessageStore, eventId: string) =>
      store.recordOutcome({
        history: { endpointId, eventId, sessionId: eventId, messageId: randomUUID(), messageType: MessageType.EventRequest, parentMessageId: SELF, from: 'shop', to: endpointId, enqueuedAt: new Date().toISOString(), eventTypeId: 'OrderPlaced' },
        status: { endpointId, eventId, sessionId: eventId, messageId: randomUUID(), messageType: MessageType.EventRequest, parentMessageId: SELF, from: 'shop', to: endpointId, enqueuedAt: new Date().toISOString(), eventTypeId: 'OrderPlaced' },
      });
    await write(a, 'e1');
    await until('the first row counted', async () => ((await a.getAllCounts()).endpoints.find((e) => e.endpointId === endpointId)?.pending ?? 0) === 1);

    // The instance that dies: its row is written, its counter delta sits in a buffer that is never flushed.
    const doomed = await open(3_600_000);
    await write(doomed, 'e2');
    const deadLeases = new LeaseStore(doomed.database);
    assert.ok(await deadLeases.acquire(`${INSTANCE_LEASE_PREFIX}doomed`, 'doomed', ttlMs));
    const diedAt = Date.now();
    const pending = async () => (await a.getAllCounts()).endpoints.find((e) => e.endpointId === endpointId)?.pending ?? 0;
    assert.equal(await pending(), 1, 'the dead instance\'s delta is lost: the counters say 1, the rows 2');

    await until('the survivors recount', async () => (await pending()) === 2);
    const took = Date.now() - diedAt;
    assert.ok(took >= ttlMs - 100, `recounted after ${took} ms, before the lease lapsed`);
    assert.ok(took < ttlMs + 10_000, `recounted after ${took} ms`);
    assert.equal(await deadLeases.holder(`${INSTANCE_LEASE_PREFIX}doomed`), undefined);
    assert.ok(watchA.recounts + watchB.recounts >= 1);
    // One survivor handled the death (the lapsed lease document is deleted by exactly one).
    assert.ok(watchA.recounts === 0 || watchB.recounts === 0, `both recounted: a ${watchA.recounts}, b ${watchB.recounts}`);
    // ... and recounts once more when the counters have been quiet (exact, with nothing in flight), then stops.
    // (One endpoint in this database: each pass recounts 1. Counted from the total, so a fast follow-up is no race.)
    await until('the follow-up recount once quiet', async () => watchA.recounts + watchB.recounts >= 2, 10_000);
    const afterFollowUp = watchA.recounts + watchB.recounts;
    assert.equal(await pending(), 2);

    // A clean stop: released, not lapsed; nobody recounts for it.
    const clean = await startInstanceWatch({ store: b, leases: new LeaseStore(b.database), owner: 'clean', log, ttlMs, checkEveryMs: 100 });
    await clean.stop();
    await new Promise((r) => setTimeout(r, ttlMs * 3));
    assert.equal(watchA.recounts + watchB.recounts, afterFollowUp, 'a clean stop (or quiet alone) caused a recount');
  } finally {
    await watchA.stop();
    await watchB.stop();
  }
});
