// A buffering writer that dies before its first flush on a brand-new endpoint leaves rows stamped with its windows
// and no counters document for that endpoint (docs/store.md, "Exact counters after a crash"). A survivor's recovery
// finds such endpoints from the stamps on the rows, not only from the counters documents that exist: it creates the
// document with the lost deltas and `flushed[owner] = RECOVERED`, once, however it races another survivor or a live
// writer creating the same document. On the embedded Cosmos server, behind the fault proxy to order the races.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID, counterDocSchema, RECOVERED } from './index.ts';
import { endpointsStampedBy } from './counters.ts';
import { msg, startProxiedStoreFixture, steppingClock, uniq, type ProxiedStoreFixture } from './testing/fixtures.ts';
import type { ProxiedRequest } from './testing/faultProxy.ts';

let f: ProxiedStoreFixture;
before(async () => {
  f = await startProxiedStoreFixture({ storeVia: 'server' });
});
after(async () => {
  await f?.close();
});

/** `n` Pending rows on a new endpoint by a buffering writer that never flushes them: then it is killed (never closed). */
async function diedBeforeFirstFlush(n: number): Promise<{ owner: string; endpointId: string }> {
  const owner = uniq('dead');
  const endpointId = uniq('new-endpoint');
  // On the shared client past the proxy (f.openOnServer): a writer never closed leaves nothing of its own behind.
  const dead = await f.openOnServer({ now: steppingClock(), counterFlushMs: 3_600_000, counterOwner: owner });
  for (let i = 0; i < n; i++) {
    const eventId = randomUUID();
    await dead.writeStatus(msg(T.EventRequest, { endpointId, eventId, sessionId: eventId }));
  }
  assert.equal(await storedDoc(endpointId), undefined, 'no counters document: the writer never flushed');
  return { owner, endpointId };
}

async function storedDoc(endpointId: string) {
  const counters = f.raw.database(f.database).container(CONTAINERS.counters);
  const { resource } = await counters.item(COUNTER_DOC_ID, endpointId).read();
  return resource === undefined ? undefined : counterDocSchema.parse(resource);
}

/** The create of a counters document (a POST to the container's documents that is neither a query nor a batch). */
const counterCreate = (req: ProxiedRequest): boolean =>
  req.method === 'POST' && !req.query && !req.queryPlan && !req.batch && req.path.includes(`/colls/${CONTAINERS.counters}/docs`);

/**
 * A survivor's recovery of `owner` whose counters create is held at the proxy, before the server sees it, while
 * `meanwhile` runs; then let go. Fails if the recovery ends without sending a create. Its result.
 */
async function recoveryWithCreateHeld(owner: string, meanwhile: () => Promise<void>): Promise<number> {
  const survivor = await f.openThroughProxy({ now: steppingClock() });
  try {
    const hold = f.proxy.hold(counterCreate, 'request');
    const recovery = survivor.recoverCounters(owner);
    await Promise.race([hold.held, recovery.then((n) => assert.fail(`recovered ${n} stamps without creating the counters document`))]);
    await meanwhile();
    hold.release();
    return await recovery;
  } finally {
    f.proxy.clear();
    await survivor.close();
  }
}

test('the endpoint of a writer that died before its first flush is recovered, once', async () => {
  const { owner, endpointId } = await diedBeforeFirstFlush(3);
  // The stamped-endpoints query leaves out endpoints that have a counters document (they are recovered through it),
  // so a long-lived writer's stamps on them are not read across the container.
  const events = f.raw.database(f.database).container(CONTAINERS.events);
  assert.deepEqual([...(await endpointsStampedBy(events, owner))], [endpointId]);
  assert.deepEqual([...(await endpointsStampedBy(events, owner, [endpointId, 'other']))], []);

  assert.equal(await f.store.recoverCounters(owner), 3, 'its three stamps applied');
  assert.equal((await f.store.getCounts(endpointId)).pending, 3);
  assert.equal((await storedDoc(endpointId))?.flushed?.[owner], RECOVERED);

  assert.equal(await f.store.recoverCounters(owner), 0, 'a second recovery applies nothing');
  assert.equal((await f.store.getCounts(endpointId)).pending, 3);
});

test('two survivors racing to create the document: the one refused (409) applies nothing', async () => {
  const { owner, endpointId } = await diedBeforeFirstFlush(2);
  const late = await recoveryWithCreateHeld(owner, async () => {
    assert.equal(await f.store.recoverCounters(owner), 2, 'the first survivor creates it with the deltas');
  });
  assert.equal(late, 0, 'the second finds it recovered');
  assert.equal((await f.store.getCounts(endpointId)).pending, 2);
});

test('a live writer creating the document first: the recovery falls back to the conditional patch and adds to it', async () => {
  const { owner, endpointId } = await diedBeforeFirstFlush(2);
  const recovered = await recoveryWithCreateHeld(owner, async () => {
    // A writer that patches before it returns creates the document for its own row meanwhile.
    const eventId = randomUUID();
    await f.store.writeStatus(msg(T.EventRequest, { endpointId, eventId, sessionId: eventId }));
    assert.equal((await f.store.getCounts(endpointId)).pending, 1, 'the live writer created it');
  });
  assert.equal(recovered, 2, 'refused the create, it patches');
  assert.equal((await f.store.getCounts(endpointId)).pending, 3, 'the live row and the two recovered ones');
  assert.equal((await storedDoc(endpointId))?.flushed?.[owner], RECOVERED);
});
