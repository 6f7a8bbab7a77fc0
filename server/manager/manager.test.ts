// The Manager's no-double-send rule on the real stack: a send that fails leaves the claim without a receipt, and
// the retry sends (once) and writes the receipt; a repeat after that sends nothing. The send is made to fail by
// removing the Manager topic through the admin client, and repaired by provisioning it again.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop, Topic } from '../../lib/contract/index.ts';
import { deriveTopology, provisionTopology } from '../../lib/topology/index.ts';
import { HttpError } from '../http.ts';
import { seedConsoleData } from '../testing/seed.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { Manager } from './manager.ts';

let stack: ConsoleTestStack;
let manager: Manager;

before(async () => {
  stack = await startConsoleTestStack();
  await seedConsoleData(stack.store);
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});

after(async () => {
  await manager?.close();
  await stack?.close();
});

describe('Manager on the real stack', () => {
  test('a failed send is answered 503 and its retry sends once; a later repeat sends nothing', async () => {
    await stack.serviceBus.admin.deleteTopic(Topic.Manager);
    await assert.rejects(
      manager.execute('billingendpoint', 'evt-failed-1', { kind: 'skip' }, 'tester'),
      (e: unknown) => e instanceof HttpError && e.status === 503,
    );
    const claimed = await stack.store.getStatusRow('billingendpoint', 'evt-failed-1', 'ORD-200');
    assert.equal(claimed?.status, 'Pending', 'the claim stays');
    assert.equal((await stack.store.listAudits('evt-failed-1')).items.length, 0, 'no receipt for an unsent command');

    await provisionTopology(stack.serviceBus.admin, deriveTopology(stack.catalog), { subscriptionDefaults: { lockDuration: 'PT5S' } });
    const retried = await manager.execute('billingendpoint', 'evt-failed-1', { kind: 'skip' }, 'tester');
    assert.equal(retried.outcome, 'sent');
    const repeated = await manager.execute('billingendpoint', 'evt-failed-1', { kind: 'skip' }, 'tester');
    assert.equal(repeated.outcome, 'duplicate');
    assert.equal(repeated.messageId, retried.messageId);

    const audits = (await stack.store.listAudits('evt-failed-1')).items;
    assert.deepEqual(audits.map((a) => [a.type, a.auditor]), [['Skip', 'tester']]);
    const receiver = await stack.serviceBus.client.acceptSession('billingendpoint', 'billingendpoint', 'ORD-200');
    try {
      const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 3000 });
      assert.deepEqual(got.map((m) => m.applicationProperties?.[Prop.MessageType]), [MessageType.SkipRequest]);
      for (const m of got) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
  });

  test('two consoles racing on one event: exactly one sends; the other is refused while the send may be under way', async () => {
    const [a, b] = await Promise.allSettled([
      manager.execute('billingendpoint', 'evt-dead-1', { kind: 'resubmit' }, 'one'),
      new Manager({ store: stack.store, client: stack.serviceBus.client }).execute('billingendpoint', 'evt-dead-1', { kind: 'resubmit' }, 'two'),
    ]);
    const outcomes = [a, b].map((r) => (r.status === 'fulfilled' ? r.value.outcome : r.reason instanceof HttpError ? r.reason.status : 'error'));
    assert.equal(outcomes.filter((o) => o === 'sent').length, 1, `outcomes: ${outcomes.join(', ')}`);
    const receiver = await stack.serviceBus.client.acceptSession('billingendpoint', 'billingendpoint', 'ORD-300');
    try {
      const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 3000 });
      assert.equal(got.length, 1);
      for (const m of got) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
  });
});
