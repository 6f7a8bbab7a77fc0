// A writer taken for dead that was only late (docs/store.md, "A writer taken for dead that was only late"): its
// flush can land between a survivor's read of its `flushed` entry and the survivor's conditional patch. The patch
// is refused (the entry moved) and the recovery reads again, applying only the stamps above the flushed window:
// before, it took the refusal for "another survivor recovered it" and applied nothing, so a row the writer stamped
// after that flush, before it died for good, stayed uncounted. After the recovery, the writer's flush is refused.
// On the embedded Cosmos server, behind the fault proxy that holds the survivor's patch to order the race.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS } from './index.ts';
import type { MessageStore } from './store.ts';
import { msg, startProxiedStoreFixture, steppingClock, uniq, type ProxiedStoreFixture } from './testing/fixtures.ts';

let f: ProxiedStoreFixture;
before(async () => {
  f = await startProxiedStoreFixture({ storeVia: 'server' });
});
after(async () => {
  await f?.close();
});

const row = async (store: MessageStore, endpointId: string) => {
  const eventId = randomUUID();
  await store.writeStatus(msg(T.EventRequest, { endpointId, eventId, sessionId: eventId }));
};

test('a late writer\'s flush landing inside a recovery: the recovery reads again and applies the stamps above it, once', async () => {
  const owner = uniq('late');
  const endpointId = uniq('endpoint');
  const late = await f.openOnServer({ now: steppingClock(), counterFlushMs: 3_600_000, counterOwner: owner });
  await row(late, endpointId);
  await late.flushCounters();
  await row(late, endpointId); // its window not flushed yet when the survivor reads
  const survivor = await f.openThroughProxy({ now: steppingClock() });
  try {
    const hold = f.proxy.hold((r) => r.method === 'PATCH' && r.path.includes(`/colls/${CONTAINERS.counters}/`), 'request');
    const recovery = survivor.recoverCounters(owner);
    await Promise.race([hold.held, recovery.then((n) => assert.fail(`recovered ${n} stamps without a patch`))]);
    // Meanwhile the writer wakes up: its flush lands (nothing is recovered yet), it stamps one more row, and dies.
    await late.flushCounters();
    await row(late, endpointId);
    assert.equal((await f.store.getCounts(endpointId)).pending, 2);
    hold.release();
    assert.equal(await recovery, 1, 'the stamp above the window the late flush applied');
    assert.equal((await f.store.getCounts(endpointId)).pending, 3);
    assert.equal((await f.store.recountEndpoint(endpointId)).pending, 3);
    // Recovered here: the writer's next flush is refused, not added again.
    await assert.rejects(late.flushCounters(), { name: 'CountsRecoveredError' });
    assert.equal((await f.store.getCounts(endpointId)).pending, 3);
  } finally {
    f.proxy.clear();
    await survivor.close();
  }
});
