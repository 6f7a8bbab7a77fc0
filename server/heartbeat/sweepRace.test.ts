// Review 44-e: the sweep's Off write is not conditional on the probe still being Pending, so a reply the Resolver
// records between the sweep's re-read and its Off write is overwritten (the code comment says "the reply then wins").
// Same for the Resolver's own liveness probe: the sweep writes Off from a snapshot read before the Resolver's answer.
// Real Cosmos (embedded stack); the store is wrapped only to place the reply's real write in the race window.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Address } from '@nimbus/sdk/contract';
import type { MessageStore } from '../../lib/store/index.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { PlatformDocs } from './platformDocs.ts';
import { HeartbeatService } from './scheduler.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
let docs: PlatformDocs;
before(async () => {
  stack = await startConsoleTestStack('rv44esweep');
  docs = new PlatformDocs({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'rv44esweep' });
});
after(async () => {
  docs?.close();
  await stack?.close();
});

const agoIso = (ms: number) => new Date(Date.now() - ms).toISOString();
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

function wrapped(store: MessageStore, hooks: Partial<Record<'listHeartbeats' | 'getServiceHealth', (real: (...a: unknown[]) => Promise<unknown>, args: unknown[]) => Promise<unknown>>>): MessageStore {
  return new Proxy(store, {
    get: (target, prop) => {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const real = (v as (...a: unknown[]) => Promise<unknown>).bind(target);
      const hook = hooks[prop as keyof typeof hooks];
      return hook ? (...args: unknown[]) => hook(real, args) : real;
    },
  });
}

describe('sweep vs a reply landing in its window', () => {
  test('an endpoint reply recorded after the sweep re-read its probe is not overwritten by Off', async () => {
    const ep = 'billingendpoint';
    const probeId = randomUUID();
    await stack.store.recordHeartbeat({ endpointId: ep, probeId, status: 'Pending', sentAt: agoIso(65_000), intervalSeconds: 300 });
    let reads = 0;
    const store = wrapped(stack.store, {
      listHeartbeats: async (real, args) => {
        const r = await real(...args);
        // The sweep's second read of billing is the re-read "just before writing": the reply lands right after it.
        if (args[0] === ep && ++reads === 2) {
          const now = new Date().toISOString();
          await stack.store.recordHeartbeat({ endpointId: ep, probeId, status: 'On', receivedAt: now, answeredAt: now, sdkVersion: '1.0.0' });
        }
        return r;
      },
    });
    const service = new HeartbeatService({ store, client: stack.serviceBus.client, catalog: stack.catalog, docs, log: quiet as never });
    await service.sweep();
    const rec = (await stack.store.listHeartbeats(ep, 20)).find((r) => r.probeId === probeId)!;
    assert.ok(rec.answeredAt, 'the reply was recorded');
    assert.equal(rec.status, 'On', 'the answered probe keeps the reply\'s On (the reply wins)');
  });

  test('the Resolver\'s answer recorded after the sweep read its health is not overwritten by Off', async () => {
    const sentAt = agoIso(65_000);
    await stack.store.setServiceHealth({ serviceId: Address.Resolver, status: 'On', version: '1', lastSeenAt: agoIso(400_000), lastProbeSentAt: sentAt, lastProbeMessageId: randomUUID(), roundTripMs: 10 });
    let answeredAt: string | null = null;
    const store = wrapped(stack.store, {
      getServiceHealth: async (real, args) => {
        const r = await real(...args);
        if (args[0] === Address.Resolver && answeredAt === null) {
          // What resolver-worker/resolve.ts writes when it settles its liveness probe, landing right after the sweep's read.
          answeredAt = new Date().toISOString();
          await stack.store.setServiceHealth({ serviceId: Address.Resolver, status: 'On', version: '1', lastSeenAt: answeredAt, lastProbeSentAt: sentAt, lastProbeMessageId: null, roundTripMs: 64_000 });
        }
        return r;
      },
    });
    const service = new HeartbeatService({ store, client: stack.serviceBus.client, catalog: stack.catalog, docs, log: quiet as never });
    await service.sweep();
    const h = (await stack.store.getServiceHealth(Address.Resolver))!;
    assert.equal(h.lastSeenAt, answeredAt, 'the Resolver\'s answer is kept');
    assert.equal(h.status, 'On');
  });
});
