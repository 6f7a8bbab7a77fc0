// Durability with a data directory: everything acknowledged before a restart is there after it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import {
  type Harness,
  createTopicWithSubscriptions,
  idsOf,
  receiveUntil,
  startHarness,
  tempDir,
} from './helpers.ts';

test('restart with a data directory loses nothing: topology, active, deferred, scheduled and dead-lettered messages, delivery counts, session state', async () => {
  const dir = await tempDir('durable');
  let h: Harness | undefined;
  try {
    // ---- before the restart ----
    h = await startHarness({ dataDir: dir.dir });
    await createTopicWithSubscriptions(h.admin, 'orders', [
      { name: 'plain', options: { lockDuration: 'PT5S', maxDeliveryCount: 10 } },
      {
        name: 'filtered',
        rules: [
          {
            name: 'eu',
            filter: { sqlExpression: "user.Region = 'EU'" },
            action: { sqlExpression: "SET user.Seen = 'yes'" },
          },
        ],
      },
    ]);
    await createTopicWithSubscriptions(h.admin, 'sessions', [
      { name: 'ses', options: { requiresSession: true, lockDuration: 'PT5S' } },
    ]);
    const sender = h.client.createSender('orders');
    await sender.sendMessages(
      [0, 1, 2, 3, 4].map((i) => ({
        messageId: `p${i}`,
        body: { i },
        applicationProperties: { Index: i, Region: i % 2 === 0 ? 'EU' : 'US' },
      })),
    );
    const farSeqs = await sender.scheduleMessages(
      { messageId: 'far', body: 'far' },
      new Date(Date.now() + 3_600_000),
    );
    await sender.scheduleMessages({ messageId: 'soon', body: 'soon' }, new Date(Date.now() + 3_000));
    await sender.close();
    const sessionSender = h.client.createSender('sessions');
    await sessionSender.sendMessages([
      { messageId: 's1-a', sessionId: 'S1', body: 'a' },
      { messageId: 's1-b', sessionId: 'S1', body: 'b' },
    ]);
    await sessionSender.close();

    // Plain subscription: p0 abandoned once (delivery count), p1 dead-lettered, p2 deferred, p3 left locked.
    const receiver = h.client.createReceiver('orders', 'plain', { maxAutoLockRenewalDurationInMs: 0 });
    const got = await receiveUntil(receiver, 4);
    assert.deepEqual(idsOf(got), ['p0', 'p1', 'p2', 'p3']);
    const byId = new Map(got.map((m) => [String(m.messageId), m]));
    const p0Count = byId.get('p0')!.deliveryCount!;
    await receiver.abandonMessage(byId.get('p0')!);
    await receiver.deadLetterMessage(byId.get('p1')!, {
      deadLetterReason: 'Broken',
      deadLetterErrorDescription: 'kept across restart',
    });
    await receiver.deferMessage(byId.get('p2')!);
    const p2Seq = byId.get('p2')!.sequenceNumber!;
    const maxSeqBefore = Math.max(...got.map((m) => m.sequenceNumber!.toNumber()));
    await receiver.close();

    // Session S1: first message completed, state set.
    const ses = await h.client.acceptSession('sessions', 'ses', 'S1');
    const [first] = await receiveUntil(ses, 1);
    assert.equal(first?.messageId, 's1-a');
    await ses.completeMessage(first!);
    await ses.setSessionState(Buffer.from('{"step":3}'));
    await ses.close();

    await h.close();
    h = undefined;

    // ---- after the restart ----
    h = await startHarness({ dataDir: dir.dir });
    const names: string[] = [];
    for await (const s of h.admin.listSubscriptions('orders')) names.push(s.subscriptionName);
    assert.deepEqual(names.sort(), ['filtered', 'plain']);
    const plainProps = await h.admin.getSubscription('orders', 'plain');
    assert.equal(plainProps.lockDuration, 'PT5S');
    assert.equal(plainProps.maxDeliveryCount, 10);

    const r2 = h.client.createReceiver('orders', 'plain');
    // p0, p3, p4 and the scheduled 'soon' (its time passes during or after the restart); p3's lock may persist.
    const after = await receiveUntil(r2, 4, { timeoutMs: 15_000 });
    assert.deepEqual(idsOf(after), ['p0', 'p3', 'p4', 'soon']);
    const back = new Map(after.map((m) => [String(m.messageId), m]));
    assert.equal(back.get('p0')!.deliveryCount, p0Count + 1, 'delivery count survived');
    assert.deepEqual(back.get('p4')!.body, { i: 4 });
    assert.equal(back.get('p4')!.applicationProperties?.Index, 4);
    for (const m of after) await r2.completeMessage(m);

    const [deferred] = await r2.receiveDeferredMessages([p2Seq]);
    assert.equal(deferred?.messageId, 'p2', 'deferred message survived');
    await r2.completeMessage(deferred!);

    const dlq = h.client.createReceiver('orders', 'plain', { subQueueType: 'deadLetter' });
    const [dead] = await receiveUntil(dlq, 1);
    assert.equal(dead?.messageId, 'p1');
    assert.equal(dead?.deadLetterReason, 'Broken');
    assert.equal(dead?.deadLetterErrorDescription, 'kept across restart');
    await dlq.completeMessage(dead!);
    await dlq.close();

    // The far scheduled message is still scheduled and can still be cancelled by its sequence number.
    assert.equal((await h.admin.getTopicRuntimeProperties('orders')).scheduledMessageCount, 1);
    const sender2 = h.client.createSender('orders');
    await sender2.cancelScheduledMessages(farSeqs);
    assert.equal((await h.admin.getTopicRuntimeProperties('orders')).scheduledMessageCount, 0);

    // Sequence numbers keep increasing across the restart.
    await sender2.sendMessages({ messageId: 'new', body: 'new', applicationProperties: { Region: 'US' } });
    await sender2.close();
    const [fresh] = await receiveUntil(r2, 1);
    assert.equal(fresh?.messageId, 'new');
    assert.ok(fresh!.sequenceNumber!.toNumber() > maxSeqBefore, 'sequence numbers did not restart');
    await r2.completeMessage(fresh!);
    await r2.close();

    // Session state and the remaining session message survived.
    const ses2 = await h.client.acceptSession('sessions', 'ses', 'S1');
    const state: unknown = await ses2.getSessionState(); // JSON-decoded by the client
    assert.deepEqual(state, { step: 3 });
    const rest: ServiceBusReceivedMessage[] = await receiveUntil(ses2, 1, { settle: 'complete' });
    assert.deepEqual(idsOf(rest), ['s1-b']);
    await ses2.close();

    // Rules survived: the filtered subscription holds the EU messages (with the action applied), not 'new'.
    const rf = h.client.createReceiver('orders', 'filtered', { receiveMode: 'receiveAndDelete' });
    const filtered = await receiveUntil(rf, 3);
    const more = await rf.receiveMessages(10, { maxWaitTimeInMs: 400 });
    await rf.close();
    assert.deepEqual(idsOf([...filtered, ...more]), ['p0', 'p2', 'p4']);
    assert.ok(filtered.every((m) => m.applicationProperties?.Seen === 'yes'));
  } finally {
    await h?.close();
    await dir.remove();
  }
});

test('a second restart after consuming everything comes back empty but with the topology', async () => {
  const dir = await tempDir('durable2');
  let h: Harness | undefined;
  try {
    h = await startHarness({ dataDir: dir.dir });
    await createTopicWithSubscriptions(h.admin, 't', [{ name: 's' }]);
    const sender = h.client.createSender('t');
    await sender.sendMessages([1, 2, 3].map((i) => ({ messageId: `m${i}`, body: i })));
    await sender.close();
    const r = h.client.createReceiver('t', 's');
    await receiveUntil(r, 3, { settle: 'complete' });
    await r.close();
    await h.close();
    h = await startHarness({ dataDir: dir.dir });
    const rt = await h.admin.getSubscriptionRuntimeProperties('t', 's');
    assert.equal(rt.activeMessageCount, 0, 'completed messages stay completed');
    assert.equal(rt.deadLetterMessageCount, 0);
    await h.close();
    h = await startHarness({ dataDir: dir.dir });
    assert.equal(await h.admin.subscriptionExists('t', 's'), true);
  } finally {
    await h?.close();
    await dir.remove();
  }
});
