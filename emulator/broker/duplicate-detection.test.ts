// Duplicate detection (RequiresDuplicateDetection): a MessageId an entity accepted within its
// DuplicateDetectionHistoryTimeWindow is accepted again by the send and silently dropped, on every send path.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrokerError, QUEUE_STORE } from './api.ts';
import type { BrokerOptions, ReceiveSource } from './api.ts';
import type { ServiceBusBroker } from './broker.ts';
import { createServiceBusBroker } from './index.ts';
import { brokerWithClock, FakeClock, msg, tick } from './test-helpers.ts';

const MINUTE = 60_000;
const queueSrc = (name: string): ReceiveSource => ({ topic: name, subscription: QUEUE_STORE });

/** Message ids stored in a queue or subscription, in sequence order. */
function ids(b: ServiceBusBroker, source: ReceiveSource): unknown[] {
  return b.peek(source, { fromSequenceNumber: 0, maxCount: 1_000 }).map((d) => d.message.message_id);
}

function isBadRequest(pattern: RegExp): (err: unknown) => boolean {
  return (err) => err instanceof BrokerError && err.code === 'BadRequest' && pattern.test(err.message);
}

describe('duplicate detection', () => {
  test('a queue drops a repeated MessageId from single and batch sends; the sends succeed', async () => {
    const { broker } = await brokerWithClock();
    broker.createQueue({ name: 'q', requiresDuplicateDetection: true });
    broker.send('q', [msg({ message_id: 'a' })]);
    broker.send('q', [msg({ message_id: 'a', body: 'again' })]); // no error: the sender sees success
    broker.send('q', [msg({ message_id: 'b' }), msg({ message_id: 'a' }), msg({ message_id: 'b' })]);
    assert.deepEqual(ids(broker, queueSrc('q')), ['a', 'b']);
    assert.equal(
      broker.peek(queueSrc('q'), { fromSequenceNumber: 0, maxCount: 1 })[0]?.message.body,
      'payload',
    );
    assert.equal(broker.getQueueRuntime('q').activeMessageCount, 2);
    await broker.close();
  });

  test('an entity without detection delivers every copy; detection is per entity', async () => {
    const { broker } = await brokerWithClock();
    broker.createQueue({ name: 'plain' });
    broker.createQueue({ name: 'dd1', requiresDuplicateDetection: true });
    broker.createQueue({ name: 'dd2', requiresDuplicateDetection: true });
    for (const q of ['plain', 'dd1', 'dd2']) {
      broker.send(q, [msg({ message_id: 'same' })]);
      broker.send(q, [msg({ message_id: 'same' })]);
    }
    assert.deepEqual(ids(broker, queueSrc('plain')), ['same', 'same']);
    assert.deepEqual(ids(broker, queueSrc('dd1')), ['same']);
    assert.deepEqual(ids(broker, queueSrc('dd2')), ['same'], 'another entity keeps its own history');
    await broker.close();
  });

  test('a topic drops the duplicate for all of its subscriptions', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't', requiresDuplicateDetection: true });
    broker.createSubscription({ topicName: 't', subscriptionName: 's1' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's2' });
    broker.send('t', [msg({ message_id: 'x' })]);
    broker.send('t', [msg({ message_id: 'x' }), msg({ message_id: 'y' })]);
    assert.deepEqual(ids(broker, { topic: 't', subscription: 's1' }), ['x', 'y']);
    assert.deepEqual(ids(broker, { topic: 't', subscription: 's2' }), ['x', 'y']);
    await broker.close();
  });

  test('messages without a MessageId get one of their own and are never duplicates', async () => {
    const { broker } = await brokerWithClock();
    broker.createQueue({ name: 'q', requiresDuplicateDetection: true });
    broker.send('q', [msg(), msg()]);
    broker.send('q', [msg()]);
    assert.equal(ids(broker, queueSrc('q')).length, 3);
    await broker.close();
  });

  test('the window counts from the accepted message; after it the MessageId is new again', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createQueue({
      name: 'q',
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindowMs: MINUTE,
    });
    broker.send('q', [msg({ message_id: 'a' })]);
    clock.advance(MINUTE - 1_000);
    broker.send('q', [msg({ message_id: 'a' })]); // dropped, and does not extend the window
    assert.deepEqual(ids(broker, queueSrc('q')), ['a']);
    clock.advance(1_000);
    broker.send('q', [msg({ message_id: 'a' })]);
    assert.deepEqual(ids(broker, queueSrc('q')), ['a', 'a']);
    await broker.close();
  });

  test('scheduled messages take part: the MessageId is recorded when the message is scheduled', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createQueue({ name: 'q', requiresDuplicateDetection: true });
    // Scheduled first, then a plain send of the same id: the plain one is dropped.
    const [seq] = broker.schedule('q', [msg({ message_id: 's' })], [clock.t + 30_000]);
    broker.send('q', [msg({ message_id: 's' })]);
    assert.deepEqual(ids(broker, queueSrc('q')), []);
    // A scheduled duplicate answers with the sequence number of the message it duplicates, so a sender that
    // retried a schedule call can still cancel what the first call scheduled.
    assert.deepEqual(broker.schedule('q', [msg({ message_id: 's' })], [clock.t + 40_000]), [seq]);
    assert.equal(broker.getQueueRuntime('q').scheduledMessageCount, 1);
    // Plain first, then a scheduled one (both ways Azure offers: schedule() and ScheduledEnqueueTimeUtc).
    broker.send('q', [msg({ message_id: 'p' })]);
    broker.schedule('q', [msg({ message_id: 'p' })], [clock.t + 10_000]);
    broker.send('q', [
      msg({
        message_id: 'p',
        message_annotations: { 'x-opt-scheduled-enqueue-time': new Date(clock.t + 10_000) },
      }),
    ]);
    assert.equal(broker.getQueueRuntime('q').scheduledMessageCount, 1);
    tick(broker, clock, 40_000);
    // 's' keeps the sequence number reserved when it was scheduled, so it comes first in sequence order.
    assert.deepEqual(ids(broker, queueSrc('q')), ['s', 'p'], 'the scheduled message arrives once, when due');
    // Cancelling a scheduled message does not forget its MessageId (Azure logged it when it was scheduled).
    const [cancelled] = broker.schedule('q', [msg({ message_id: 'c' })], [clock.t + 10_000]);
    broker.cancelScheduled('q', [cancelled ?? 0]);
    broker.send('q', [msg({ message_id: 'c' })]);
    assert.deepEqual(ids(broker, queueSrc('q')), ['s', 'p']);
    await broker.close();
  });

  test('auto-forwarding into an entity with detection drops the repeated MessageId there', async () => {
    const { broker } = await brokerWithClock();
    broker.createQueue({ name: 'target', requiresDuplicateDetection: true });
    for (const t of ['src1', 'src2']) {
      broker.createTopic({ name: t });
      broker.createSubscription({ topicName: t, subscriptionName: 'fwd', forwardTo: 'target' });
    }
    broker.send('src1', [msg({ message_id: 'f' })]);
    broker.send('src2', [msg({ message_id: 'f' }), msg({ message_id: 'g' })]);
    assert.deepEqual(ids(broker, queueSrc('target')), ['f', 'g']);
    // Two subscriptions of one topic forwarding the same message: the second copy is a duplicate too.
    broker.createTopic({ name: 'fan' });
    broker.createSubscription({ topicName: 'fan', subscriptionName: 'a', forwardTo: 'target' });
    broker.createSubscription({ topicName: 'fan', subscriptionName: 'b', forwardTo: 'target' });
    broker.send('fan', [msg({ message_id: 'h' })]);
    assert.deepEqual(ids(broker, queueSrc('target')), ['f', 'g', 'h']);
    // A queue forwarding into a topic with detection, and a message sent there directly afterwards.
    broker.createTopic({ name: 'ddt', requiresDuplicateDetection: true });
    broker.createSubscription({ topicName: 'ddt', subscriptionName: 's' });
    broker.createQueue({ name: 'fq', forwardTo: 'ddt' });
    broker.send('fq', [msg({ message_id: 'k' })]);
    broker.send('ddt', [msg({ message_id: 'k' })]);
    assert.deepEqual(ids(broker, { topic: 'ddt', subscription: 's' }), ['k']);
    await broker.close();
  });

  test('with partitioning, MessageId and PartitionKey together decide', async () => {
    const { broker } = await brokerWithClock();
    broker.createQueue({ name: 'q', requiresDuplicateDetection: true, enablePartitioning: true });
    const withKey = (id: string, pk: string) =>
      msg({ message_id: id, message_annotations: { 'x-opt-partition-key': pk } });
    broker.send('q', [withKey('a', 'p1'), withKey('a', 'p2'), withKey('a', 'p1')]);
    assert.deepEqual(ids(broker, queueSrc('q')), ['a', 'a']);
    await broker.close();
  });

  test('the history forgets what left the window, also on an idle entity', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createQueue({
      name: 'q',
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindowMs: 20_000,
    });
    broker.send(
      'q',
      Array.from({ length: 50 }, (_, i) => msg({ message_id: `m${i}` })),
    );
    assert.equal(broker.duplicateHistorySize('q'), 50);
    tick(broker, clock, 20_000); // the periodic sweep, no send
    assert.equal(broker.duplicateHistorySize('q'), 0);
    await broker.close();
  });

  test("the window bounds are Azure's (20 s to 7 days); the flag cannot change after creation", async () => {
    const { broker, clock } = await brokerWithClock();
    const window = /DuplicateDetectionHistoryTimeWindow.*00:00:20.*7\.00:00:00/;
    assert.throws(
      () => broker.createQueue({ name: 'q1', duplicateDetectionHistoryTimeWindowMs: 19_999 }),
      isBadRequest(window),
    );
    assert.throws(
      () => broker.createTopic({ name: 't1', duplicateDetectionHistoryTimeWindowMs: 7 * 24 * 3_600_000 + 1 }),
      isBadRequest(window),
    );
    broker.createQueue({
      name: 'q',
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindowMs: 20_000,
    });
    broker.createTopic({ name: 't', duplicateDetectionHistoryTimeWindowMs: 7 * 24 * 3_600_000 });
    assert.throws(
      () => broker.updateQueue({ name: 'q', duplicateDetectionHistoryTimeWindowMs: 0 }),
      isBadRequest(window),
    );
    const flag = /RequiresDuplicateDetection.*cannot be changed/;
    assert.throws(
      () => broker.updateQueue({ name: 'q', requiresDuplicateDetection: false }),
      isBadRequest(flag),
    );
    assert.throws(
      () => broker.updateTopic({ name: 't', requiresDuplicateDetection: true }),
      isBadRequest(flag),
    );
    // Sending the value it already has is fine (the admin client's update sends the whole description).
    broker.updateTopic({ name: 't', requiresDuplicateDetection: false, status: 'Active' });
    // The window itself may change, and the new one applies to what is already recorded.
    broker.createQueue({
      name: 'w',
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindowMs: MINUTE,
    });
    broker.send('w', [msg({ message_id: 'a' })]);
    clock.advance(30_000);
    broker.send('w', [msg({ message_id: 'a' })]);
    broker.updateQueue({
      name: 'w',
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindowMs: 20_000,
    });
    broker.send('w', [msg({ message_id: 'a' })]);
    assert.deepEqual(ids(broker, queueSrc('w')), ['a', 'a']);
    await broker.close();
  });
});

describe('duplicate detection with a data directory', () => {
  const withDir = async (f: (opts: BrokerOptions, clock: FakeClock) => Promise<void>): Promise<void> => {
    const dir = mkdtempSync(join(tmpdir(), 'nimbus-dd-'));
    const clock = new FakeClock();
    try {
      await f({ dataDir: dir, now: clock.now }, clock);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  test('the history survives a clean restart (snapshot) and a crash (journal)', () =>
    withDir(async (opts, clock) => {
      const b1 = await createServiceBusBroker(opts);
      b1.createQueue({
        name: 'q',
        requiresDuplicateDetection: true,
        duplicateDetectionHistoryTimeWindowMs: MINUTE,
      });
      b1.send('q', [msg({ message_id: 'a' })]);
      b1.schedule('q', [msg({ message_id: 'sch' })], [clock.t + 5 * MINUTE]);
      await b1.close();
      clock.advance(30_000);
      const b2 = await createServiceBusBroker(opts);
      b2.send('q', [msg({ message_id: 'a' }), msg({ message_id: 'sch' }), msg({ message_id: 'b' })]);
      assert.deepEqual(ids(b2, queueSrc('q')), ['a', 'b']);
      // No close(): the process "dies"; 'b' was recorded in the journal only.
      const b3 = await createServiceBusBroker(opts);
      b3.send('q', [msg({ message_id: 'b' })]);
      assert.deepEqual(ids(b3, queueSrc('q')), ['a', 'b']);
      // Past the window, the restored history has let go of 'a' (recorded a minute and more ago).
      clock.advance(31_000);
      await b3.close();
      const b4 = await createServiceBusBroker(opts);
      assert.equal(
        b4.duplicateHistorySize('q'),
        1,
        "only 'b' (recorded 31 s ago) is still inside the window",
      );
      b4.send('q', [msg({ message_id: 'a' }), msg({ message_id: 'b' })]);
      assert.deepEqual(ids(b4, queueSrc('q')), ['a', 'b', 'a']);
      await b4.close();
    }));

  test('a deleted and re-created entity starts with an empty history', () =>
    withDir(async (opts) => {
      const b1 = await createServiceBusBroker(opts);
      b1.createQueue({ name: 'q', requiresDuplicateDetection: true });
      b1.send('q', [msg({ message_id: 'a' })]);
      b1.deleteQueue('q');
      b1.createQueue({ name: 'q', requiresDuplicateDetection: true });
      await b1.close();
      const b2 = await createServiceBusBroker(opts);
      b2.send('q', [msg({ message_id: 'a' })]);
      assert.deepEqual(ids(b2, queueSrc('q')), ['a']);
      await b2.close();
    }));
});
