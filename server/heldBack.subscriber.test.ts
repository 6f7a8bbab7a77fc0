// "holds back N" from rows parked by the real subscriber, not from a hand-written park reason: an SDK host fails an
// event (its session blocks) and parks the session's next events, the Resolver records them into the embedded
// Cosmos store, and the Endpoint page's list (endpointEventsPage) counts them against the failure. The subscriber
// writes the park reason and heldBack.ts reads it; if the two ever disagreed on the text, the count here would be
// missing. The session id has spaces and odd characters, as a session key taken from a payload may.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HandlerRegistry } from '@nimbus/sdk';
import { ResolutionStatus } from '@nimbus/sdk/contract';
import { eventually, withHarness } from '../packages/sdk/e2e/harness.ts';
import { startStoreAndResolver } from '../resolver-worker/testHarness.ts';
import { endpointEventsPage } from './heldBack.ts';
import { eventListQuerySchema } from './queries.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

type Customer = { customerId: string; n: number };
const customerId = 'CUST 7 · "blocked" by x?';

test('the failure that blocks its session holds back the events the subscriber parked behind it', async () => {
  await withHarness(async (h) => {
    const { store, close } = await startStoreAndResolver(h.client, 'heldbacksubscriber');
    try {
      // The first event fails (no retry policy: Failed, and its session blocks); the two after it are parked.
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          if (e.n === 1) throw new Error('rejected by the partner');
        }),
      });
      const shop = h.publisher('shop');
      const failed = await shop.publish('CustomerUpdated', { customerId, n: 1 });
      await shop.publish('CustomerUpdated', { customerId, n: 2 });
      await shop.publish('CustomerUpdated', { customerId, n: 3 });

      const rows = await eventually(async () => {
        const { items } = await store.listEvents({ endpointId: 'crm', sessionId: failed.sessionId });
        const parked = items.filter((r) => r.status === ResolutionStatus.Deferred);
        const failure = items.find((r) => r.status === ResolutionStatus.Failed);
        return failure && parked.length === 2 ? { failure, parked } : undefined;
      }, 'one Failed and two Deferred rows in the session', 30_000);
      assert.equal(rows.failure.sessionId, customerId);

      const page = await endpointEventsPage(store, 'crm', eventListQuerySchema.parse({ sessionId: customerId }));
      const failure = page.items.find((i) => i.eventId === rows.failure.eventId);
      assert.ok(failure, `the failure is listed: ${page.items.map((i) => `${i.eventId} ${i.status}`).join(', ')}`);
      assert.deepEqual(
        failure.holdsBack,
        { count: 2, atLeast: false },
        `parked rows' reasons: ${rows.parked.map((r) => JSON.stringify(r.errorText)).join(', ')}`,
      );
    } finally {
      await close();
    }
  });
});
