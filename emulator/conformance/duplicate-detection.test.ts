// Duplicate detection through the unmodified @azure/service-bus client: on a queue or topic created with
// requiresDuplicateDetection, a MessageId the entity accepted within duplicateDetectionHistoryTimeWindow is
// accepted again by the send (no error) and dropped, for single, batch and scheduled sends and for
// auto-forwarding; the admin plane refuses windows outside Azure's bounds and a change of the flag; and the
// history survives a restart with a data directory.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceiver } from '@azure/service-bus';
import {
  type Harness,
  assertRestError,
  expectNoMessage,
  idsOf,
  receiveUntil,
  startHarness,
  tempDir,
  uniqueName,
  useHarness,
} from './helpers.ts';

/** Receives (and completes) until `ids.length` messages came, then checks that nothing else follows. */
async function expectExactly(receiver: ServiceBusReceiver, ids: string[]): Promise<void> {
  const got = await receiveUntil(receiver, ids.length, { settle: 'complete' });
  assert.deepEqual(idsOf(got), [...ids].sort());
  await expectNoMessage(receiver, 700);
}

describe('duplicate detection', () => {
  const h = useHarness();

  test('a queue drops repeated MessageIds from single, batch and scheduled sends; every send succeeds', async () => {
    const name = uniqueName('dd-queue');
    const created = await h.admin.createQueue(name, {
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindow: 'PT20S',
    });
    assert.equal(created.requiresDuplicateDetection, true);
    assert.equal(created.duplicateDetectionHistoryTimeWindow, 'PT20S');
    const sender = h.client.createSender(name);
    await sender.sendMessages({ messageId: 'order-1', body: 'first' });
    await sender.sendMessages({ messageId: 'order-1', body: 'retry' });
    await sender.sendMessages([
      { messageId: 'order-2', body: 'b' },
      { messageId: 'order-1', body: 'in a batch' },
    ]);
    const batch = await sender.createMessageBatch();
    assert.ok(batch.tryAddMessage({ messageId: 'order-3', body: 'c' }));
    assert.ok(batch.tryAddMessage({ messageId: 'order-2', body: 'again' }));
    await sender.sendMessages(batch);
    // Scheduled messages are part of it: a scheduled copy of a sent id, and a sent copy of a scheduled id.
    const at = new Date(Date.now() + 1_500);
    await sender.scheduleMessages({ messageId: 'order-3', body: 'scheduled dup' }, at);
    await sender.scheduleMessages({ messageId: 'order-4', body: 'scheduled' }, at);
    await sender.sendMessages({ messageId: 'order-4', body: 'sent dup' });
    await sender.close();
    const receiver = h.client.createReceiver(name);
    const got = await receiveUntil(receiver, 4, { settle: 'complete' });
    assert.deepEqual(idsOf(got), ['order-1', 'order-2', 'order-3', 'order-4']);
    assert.equal(got.find((m) => m.messageId === 'order-1')?.body, 'first');
    assert.equal(got.find((m) => m.messageId === 'order-4')?.body, 'scheduled');
    await expectNoMessage(receiver, 2_000);
    await receiver.close();
  });

  test('a topic drops the duplicate for every subscription; a topic without detection delivers both', async () => {
    const dd = uniqueName('dd-topic');
    const plain = uniqueName('plain-topic');
    await h.admin.createTopic(dd, { requiresDuplicateDetection: true });
    await h.admin.createTopic(plain);
    for (const t of [dd, plain]) {
      await h.admin.createSubscription(t, 'a');
      await h.admin.createSubscription(t, 'b');
      const sender = h.client.createSender(t);
      await sender.sendMessages({ messageId: 'evt', body: 1 });
      await sender.sendMessages({ messageId: 'evt', body: 2 });
      await sender.close();
    }
    for (const sub of ['a', 'b']) {
      const r = h.client.createReceiver(dd, sub);
      await expectExactly(r, ['evt']);
      await r.close();
      const p = h.client.createReceiver(plain, sub);
      await expectExactly(p, ['evt', 'evt']);
      await p.close();
    }
  });

  test('auto-forwarding into a queue with detection drops the copy that repeats a MessageId', async () => {
    const target = uniqueName('dd-target');
    const source = uniqueName('fwd-source');
    await h.admin.createQueue(target, { requiresDuplicateDetection: true });
    await h.admin.createTopic(source);
    await h.admin.createSubscription(source, 'fwd', { forwardTo: target });
    await h.client.createSender(target).sendMessages({ messageId: 'direct', body: 'd' });
    const sender = h.client.createSender(source);
    await sender.sendMessages([
      { messageId: 'direct', body: 'forwarded copy of a sent id' },
      { messageId: 'fwd-1', body: 'f' },
    ]);
    await sender.sendMessages({ messageId: 'fwd-1', body: 'forwarded again' });
    await sender.close();
    const r = h.client.createReceiver(target);
    await expectExactly(r, ['direct', 'fwd-1']);
    await r.close();
  });

  test('the admin plane refuses windows outside 20 s .. 7 days and a change of requiresDuplicateDetection (400)', async () => {
    await assert.rejects(
      h.admin.createQueue(uniqueName('dd-short'), { duplicateDetectionHistoryTimeWindow: 'PT10S' }),
      (e: { statusCode?: number; message?: string }) =>
        e.statusCode === 400 &&
        /DuplicateDetectionHistoryTimeWindow must be between 00:00:20 and 7\.00:00:00/.test(e.message ?? ''),
    );
    await assertRestError(
      () =>
        h.admin.createTopic(uniqueName('dd-long'), {
          requiresDuplicateDetection: true,
          duplicateDetectionHistoryTimeWindow: 'P8D',
        }),
      400,
    );
    const name = uniqueName('dd-update');
    const q = await h.admin.createQueue(name, {
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindow: 'P7D',
    });
    await assert.rejects(
      h.admin.updateQueue({ ...q, requiresDuplicateDetection: false }),
      (e: { statusCode?: number; message?: string }) =>
        e.statusCode === 400 && /RequiresDuplicateDetection .* cannot be changed/.test(e.message ?? ''),
    );
    const t = await h.admin.createTopic(uniqueName('dd-update-t'));
    await assertRestError(() => h.admin.updateTopic({ ...t, requiresDuplicateDetection: true }), 400);
    // The window of an existing entity may change, as on Azure.
    const updated = await h.admin.updateQueue({ ...q, duplicateDetectionHistoryTimeWindow: 'PT1H' });
    assert.equal(updated.duplicateDetectionHistoryTimeWindow, 'PT1H');
    assert.equal((await h.admin.getQueue(name)).requiresDuplicateDetection, true);
  });
});

test('with a data directory the history survives a restart: a retry after it is still dropped', async () => {
  const dir = await tempDir('dd-restart');
  let h: Harness | undefined;
  try {
    h = await startHarness({ dataDir: dir.dir });
    await h.admin.createQueue('dd-durable', { requiresDuplicateDetection: true });
    await h.client.createSender('dd-durable').sendMessages({ messageId: 'once', body: 'before the restart' });
    await h.close();
    h = undefined;

    h = await startHarness({ dataDir: dir.dir });
    const sender = h.client.createSender('dd-durable');
    await sender.sendMessages({ messageId: 'once', body: 'retried after the restart' });
    await sender.sendMessages({ messageId: 'new', body: 'new' });
    await sender.close();
    const r = h.client.createReceiver('dd-durable');
    const got = await receiveUntil(r, 2, { settle: 'complete' });
    assert.deepEqual(idsOf(got), ['new', 'once']);
    assert.equal(got.find((m) => m.messageId === 'once')?.body, 'before the restart');
    await expectNoMessage(r, 700);
    await r.close();
  } finally {
    await h?.close();
    await dir.remove();
  }
});
