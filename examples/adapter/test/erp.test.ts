// The ERP handlers on a real Service Bus (the emulator, or any namespace in NIMBUS_SERVICEBUS_CONNECTION_STRING)
// through the SDK's harness: what the Resolver records for a plain import, an ERP outage that is retried, a large
// order handed off to an import job and settled, and a payload the schema refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestHarness } from '@nimbus/sdk/testing';
import { readCatalog } from '../src/catalog.ts';
import { erpHandlers, erpRetryPolicies, ErpUnavailableError, type Erp } from '../src/erp.ts';

const catalog = readCatalog();

test('the ERP endpoint imports, retries an outage, hands off large orders', async () => {
  await using harness = await createTestHarness({ catalog });
  let erpDown = true;
  const imported: string[] = [];
  const erp: Erp = {
    async importOrder(order) {
      if (order.orderId === 'o-down' && erpDown) {
        erpDown = false;
        throw new ErpUnavailableError('ERP answered 503');
      }
      imported.push(order.orderId);
      return order.lines > 10 ? { kind: 'queued', jobId: `job-${order.orderId}` } : { kind: 'imported' };
    },
  };
  await harness.host('erp', erpHandlers(erp), { retryPolicies: erpRetryPolicies });

  const plain = await harness.publish('webshop', 'OrderPlaced', { orderId: 'o-1', total: 10, lines: 2 });
  assert.equal((await harness.outcome(plain)).status, 'Completed');

  const down = await harness.publish('webshop', 'OrderPlaced', { orderId: 'o-down', total: 10, lines: 2 });
  const failed = await harness.outcome(down, { status: 'Failed' });
  assert.match(failed.errorText ?? '', /ERP answered 503/);
  await harness.advanceRetries({ expect: 1 }); // the policy's 10 s, now
  assert.equal((await harness.outcome(down, { status: 'Completed' })).status, 'Completed');

  const large = await harness.publish('webshop', 'OrderPlaced', { orderId: 'o-big', total: 990, lines: 40 });
  const pending = await harness.outcome(large);
  assert.equal(pending.status, 'Pending');
  assert.equal(pending.handoff?.externalJobId, 'job-o-big');
  await harness.completeHandoff(large);
  assert.equal((await harness.outcome(large, { status: 'Completed' })).status, 'Completed');

  assert.deepEqual(imported, ['o-1', 'o-down', 'o-big']);
});

test('a payload that fails the handler schema is dead-lettered, not retried', async () => {
  await using harness = await createTestHarness({ catalog });
  await harness.host('erp', erpHandlers({ importOrder: async () => ({ kind: 'imported' }) }));
  // Sent past the publisher's own catalog check, as a producer on an older contract might.
  const bad = await harness.publisher('webshop').publish('OrderPlaced', { orderId: 'o-bad', total: -1, lines: 0 });
  const row = await harness.outcome(bad);
  assert.equal(row.status, 'DeadLettered');
});
