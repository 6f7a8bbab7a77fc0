// Scheduled messages and time to live.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  createTopicWithSubscriptions,
  expectNoMessage,
  idsOf,
  receiveNotBefore,
  receiveUntil,
  sleep,
  uniqueName,
  useHarness,
} from './helpers.ts';

const h = useHarness();

describe('scheduled messages', () => {
  test('a scheduled message is delivered at its time, not before', async () => {
    const topic = uniqueName('sch');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub' }]);
    const sender = h.client.createSender(topic);
    const receiver = h.client.createReceiver(topic, 'sub');
    try {
      const at = new Date(Date.now() + 2_000);
      const seqs = await sender.scheduleMessages({ body: 'later', messageId: 'sch1' }, at);
      assert.equal(seqs.length, 1);
      const m = await receiveNotBefore(receiver, at);
      assert.equal(m.messageId, 'sch1');
      assert.ok(
        m.enqueuedTimeUtc && m.enqueuedTimeUtc.getTime() >= at.getTime() - 1_000,
        'enqueued at the scheduled time',
      );
      await receiver.completeMessage(m);
    } finally {
      await receiver.close();
      await sender.close();
    }
  });

  test('cancelScheduledMessages stops a scheduled message; the others still arrive', async () => {
    const topic = uniqueName('sch');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub' }]);
    const sender = h.client.createSender(topic);
    const receiver = h.client.createReceiver(topic, 'sub');
    try {
      const at = new Date(Date.now() + 1_500);
      const seqs = await sender.scheduleMessages(
        [
          { body: 'keep', messageId: 'keep' },
          { body: 'drop', messageId: 'drop' },
        ],
        at,
      );
      assert.equal(seqs.length, 2);
      await sender.cancelScheduledMessages([seqs[1]!]);
      const got = await receiveUntil(receiver, 1, { timeoutMs: 6_000, settle: 'complete' });
      assert.deepEqual(idsOf(got), ['keep']);
      await expectNoMessage(receiver, 1_000);
    } finally {
      await receiver.close();
      await sender.close();
    }
  });

  test('a scheduled time in the past means now', async () => {
    const topic = uniqueName('sch');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub' }]);
    const sender = h.client.createSender(topic);
    const receiver = h.client.createReceiver(topic, 'sub');
    try {
      await sender.scheduleMessages({ body: 'past', messageId: 'past1' }, new Date(Date.now() - 60_000));
      const got = await receiveUntil(receiver, 1, { timeoutMs: 3_000, settle: 'complete' });
      assert.deepEqual(idsOf(got), ['past1']);
    } finally {
      await receiver.close();
      await sender.close();
    }
  });

  test('scheduledEnqueueTimeUtc on a sent message schedules it too', async () => {
    const topic = uniqueName('sch');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub' }]);
    const sender = h.client.createSender(topic);
    const receiver = h.client.createReceiver(topic, 'sub');
    try {
      const at = new Date(Date.now() + 1_500);
      await sender.sendMessages({ body: 'x', messageId: 'set1', scheduledEnqueueTimeUtc: at });
      const m = await receiveNotBefore(receiver, at);
      assert.equal(m.messageId, 'set1');
      await receiver.completeMessage(m);
    } finally {
      await receiver.close();
      await sender.close();
    }
  });

  test('the topic runtime counts scheduled messages until they are enqueued', async () => {
    const topic = uniqueName('sch');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub' }]);
    const sender = h.client.createSender(topic);
    try {
      const seqs = await sender.scheduleMessages(
        { body: 'far', messageId: 'far1' },
        new Date(Date.now() + 600_000),
      );
      const rt = await h.admin.getTopicRuntimeProperties(topic);
      assert.equal(rt.scheduledMessageCount, 1);
      await sender.cancelScheduledMessages(seqs);
      const rt2 = await h.admin.getTopicRuntimeProperties(topic);
      assert.equal(rt2.scheduledMessageCount, 0);
    } finally {
      await sender.close();
    }
  });
});

describe('time to live', () => {
  test('an expired message is not delivered and goes to the DLQ when dead-lettering on expiration is on', async () => {
    const topic = uniqueName('ttl');
    await createTopicWithSubscriptions(h.admin, topic, [
      { name: 'dl', options: { deadLetteringOnMessageExpiration: true } },
      { name: 'drop', options: { deadLetteringOnMessageExpiration: false } },
    ]);
    const sender = h.client.createSender(topic);
    const dl = h.client.createReceiver(topic, 'dl');
    const drop = h.client.createReceiver(topic, 'drop');
    const dlq = h.client.createReceiver(topic, 'dl', { subQueueType: 'deadLetter' });
    const dropDlq = h.client.createReceiver(topic, 'drop', { subQueueType: 'deadLetter' });
    try {
      await sender.sendMessages([
        { body: 'short', messageId: 'short', timeToLive: 1_000 },
        { body: 'long', messageId: 'long', timeToLive: 600_000 },
      ]);
      await sleep(1_600);
      assert.deepEqual(idsOf(await receiveUntil(dl, 1, { settle: 'complete' })), ['long']);
      assert.deepEqual(idsOf(await receiveUntil(drop, 1, { settle: 'complete' })), ['long']);
      await expectNoMessage(dl, 300);
      const [d] = await receiveUntil(dlq, 1);
      assert.ok(d, 'expired message dead-lettered');
      assert.equal(d.messageId, 'short');
      assert.equal(d.deadLetterReason, 'TTLExpiredException');
      await dlq.completeMessage(d);
      await expectNoMessage(dropDlq, 300);
    } finally {
      await Promise.all([dl.close(), drop.close(), dlq.close(), dropDlq.close()]);
      await sender.close();
    }
  });

  test("the subscription's default message TTL applies to messages without their own", async () => {
    const topic = uniqueName('ttl');
    await createTopicWithSubscriptions(h.admin, topic, [
      { name: 'sub', options: { defaultMessageTimeToLive: 'PT1S', deadLetteringOnMessageExpiration: true } },
    ]);
    const sender = h.client.createSender(topic);
    const receiver = h.client.createReceiver(topic, 'sub');
    const dlq = h.client.createReceiver(topic, 'sub', { subQueueType: 'deadLetter' });
    try {
      await sender.sendMessages({ body: 'x', messageId: 'dttl1' });
      await sleep(1_600);
      await expectNoMessage(receiver, 300);
      const got = await receiveUntil(dlq, 1, { settle: 'complete' });
      assert.deepEqual(idsOf(got), ['dttl1']);
    } finally {
      await dlq.close();
      await receiver.close();
      await sender.close();
    }
  });

  test('expiresAtUtc is enqueued time plus time to live', async () => {
    const topic = uniqueName('ttl');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub' }]);
    const sender = h.client.createSender(topic);
    const receiver = h.client.createReceiver(topic, 'sub');
    try {
      await sender.sendMessages({ body: 'x', messageId: 'exp1', timeToLive: 60_000 });
      const [m] = await receiveUntil(receiver, 1);
      assert.ok(m?.enqueuedTimeUtc && m.expiresAtUtc);
      assert.equal(m.expiresAtUtc.getTime() - m.enqueuedTimeUtc.getTime(), 60_000);
      await receiver.completeMessage(m);
    } finally {
      await receiver.close();
      await sender.close();
    }
  });
});
