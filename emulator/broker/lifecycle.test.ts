import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerError } from './api.ts';
import { brokerWithClock, msg, props, tick } from './test-helpers.ts';

const src = { topic: 't', subscription: 's' };

function code(err: unknown): string | undefined {
  return err instanceof BrokerError ? err.code : undefined;
}

describe('scheduled messages', () => {
  test('are held at the topic until due, can be cancelled, and a past time means now', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    const [later, cancelled] = broker.schedule(
      't',
      [msg({ message_id: 'later' }), msg({ message_id: 'cancelled' })],
      [clock.t + 1000, clock.t + 1000],
    );
    const [past] = broker.schedule('t', [msg({ message_id: 'past' })], [clock.t - 5000]);
    assert.equal(broker.getTopicRuntime('t').scheduledMessageCount, 2);
    broker.cancelScheduled('t', [cancelled!]);
    assert.throws(
      () => broker.cancelScheduled('t', [cancelled!]),
      (e) => code(e) === 'MessageNotFound',
    );
    assert.throws(
      () => broker.cancelScheduled('t', [past!]),
      (e) => code(e) === 'MessageNotFound',
    );
    const r = await broker.openReceiver({ source: src, mode: 'receiveAndDelete' });
    assert.deepEqual(
      r.take(5).map((d) => d.message.message_id),
      ['past'],
    );
    tick(broker, clock, 999);
    assert.equal(r.take(5).length, 0);
    tick(broker, clock, 1);
    const [due] = r.take(5);
    assert.equal(due?.message.message_id, 'later');
    assert.equal(due?.scheduledEnqueueTime, clock.t);
    assert.equal(broker.getTopicRuntime('t').scheduledMessageCount, 0);
    assert.ok(later! > 0);
    await broker.close();
  });

  test('a message whose time has come cannot be cancelled, even before its timer ran', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    const [seq] = broker.schedule('t', [msg({ message_id: 'due' })], [clock.t + 1000]);
    clock.advance(1000); // due now; runDueWork is not called, as when the timer is late
    assert.throws(
      () => broker.cancelScheduled('t', [seq!]),
      (e) => code(e) === 'MessageNotFound',
    );
    assert.equal(broker.getTopicRuntime('t').scheduledMessageCount, 0);
    const peeked = broker.peek(src, { maxCount: 5 });
    assert.deepEqual(
      peeked.map((d) => [d.message.message_id, d.sequenceNumber]),
      [['due', seq]],
    );
    await broker.close();
  });

  test('a scheduled message keeps the sequence number it got when scheduled, so it is ordered by it', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    const [seq] = broker.schedule('t', [msg({ message_id: 'early' })], [clock.t + 100]);
    broker.send('t', [msg({ message_id: 'later' })]);
    tick(broker, clock, 100);
    const peeked = broker.peek(src, { fromSequenceNumber: 0, maxCount: 5 });
    assert.deepEqual(
      peeked.map((d) => [d.message.message_id, d.sequenceNumber]),
      [
        ['early', seq],
        ['later', (seq ?? 0) + 1],
      ],
    );
    const r = await broker.openReceiver({ source: src, mode: 'receiveAndDelete' });
    assert.deepEqual(
      r.take(5).map((d) => d.message.message_id),
      ['early', 'later'],
    );
    await broker.close();
  });

  test('a sent message with a future ScheduledEnqueueTimeUtc annotation is scheduled', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    broker.send('t', [
      msg({
        message_id: 'at',
        message_annotations: { 'x-opt-scheduled-enqueue-time': new Date(clock.t + 500) },
      }),
      msg({
        message_id: 'now',
        message_annotations: { 'x-opt-scheduled-enqueue-time': new Date(clock.t - 1) },
      }),
    ]);
    assert.equal(broker.getTopicRuntime('t').scheduledMessageCount, 1);
    const r = await broker.openReceiver({ source: src, mode: 'receiveAndDelete' });
    assert.deepEqual(
      r.take(5).map((d) => d.message.message_id),
      ['now'],
    );
    tick(broker, clock, 500);
    assert.deepEqual(
      r.take(5).map((d) => d.message.message_id),
      ['at'],
    );
    await broker.close();
  });

  test('a due scheduled message is forwarded like a sent one', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 'a' });
    broker.createTopic({ name: 'b' });
    broker.createSubscription({ topicName: 'a', subscriptionName: 'fwd', forwardTo: 'b' });
    broker.createSubscription({ topicName: 'b', subscriptionName: 'in' });
    broker.schedule('a', [msg({ message_id: 'x' })], [clock.t + 10]);
    assert.equal(broker.getSubscriptionRuntime('b', 'in').activeMessageCount, 0);
    tick(broker, clock, 10);
    assert.equal(broker.getSubscriptionRuntime('b', 'in').activeMessageCount, 1);
    await broker.close();
  });
});

describe('time to live', () => {
  test('expired messages are never delivered; with dead-lettering on expiry they go to the DLQ', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's', defaultMessageTimeToLiveMs: 5000 });
    broker.createSubscription({
      topicName: 't',
      subscriptionName: 'dl',
      deadLetteringOnMessageExpiration: true,
    });
    broker.send('t', [msg({ message_id: 'short', ttl: 1000 }), msg({ message_id: 'long' })]);
    tick(broker, clock, 1000);
    const r = await broker.openReceiver({ source: src, mode: 'receiveAndDelete' });
    assert.deepEqual(
      r.take(5).map((d) => d.message.message_id),
      ['long'],
      'the header ttl was smaller',
    );
    broker.send('t', [msg({ message_id: 'default' })]);
    tick(broker, clock, 5000);
    assert.equal(broker.getSubscriptionRuntime('t', 's').activeMessageCount, 0, 'the sweep removed it');
    const rt = broker.getSubscriptionRuntime('t', 'dl');
    assert.equal(rt.activeMessageCount, 2, "'long' and 'default' have no ttl there");
    assert.equal(rt.deadLetterMessageCount, 1, "'short' expired");
    const dlq = await broker.openReceiver({
      source: { topic: 't', subscription: 'dl', subQueue: 'deadLetter' },
      mode: 'peekLock',
    });
    const dead = dlq.take(5);
    assert.deepEqual(
      dead.map((d) => [d.message.message_id, props(d).DeadLetterReason]),
      [['short', 'TTLExpiredException']],
    );
    await broker.close();
  });
});

describe('defer, dead-letter and peek', () => {
  test('a deferred message is only reachable by sequence number and is settled by its lock token', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    broker.send('t', [msg({ message_id: 'd' }), msg({ message_id: 'n' })]);
    const r = await broker.openReceiver({ source: src, mode: 'peekLock' });
    const [first] = r.take(1);
    broker.settle(src, first?.lockToken ?? '', { kind: 'defer', propertiesToModify: { parked: true } });
    const rest = r.take(5);
    assert.deepEqual(
      rest.map((d) => d.message.message_id),
      ['n'],
    );
    const peeked = broker.peek(src, { fromSequenceNumber: 1, maxCount: 10 });
    assert.deepEqual(
      peeked.map((d) => [d.message.message_id, d.state]),
      [
        ['d', 'deferred'],
        ['n', 'active'],
      ],
    );
    assert.equal(peeked[0]?.lockToken, undefined, 'peek does not lock');
    assert.throws(
      () => broker.receiveDeferred(src, [999], 'peekLock'),
      (e) => code(e) === 'MessageNotFound',
    );
    const [back] = broker.receiveDeferred(src, [first!.sequenceNumber], 'peekLock');
    assert.equal(back?.state, 'deferred');
    assert.deepEqual(props(back!), { parked: true });
    broker.settle(src, back?.lockToken ?? '', { kind: 'complete' });
    assert.throws(
      () => broker.receiveDeferred(src, [first!.sequenceNumber], 'peekLock'),
      (e) => code(e) === 'MessageNotFound',
    );
    await broker.close();
  });

  test('a deferred message whose lock is held is not handed out again, until that lock lapses', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's', lockDurationMs: 30_000 });
    broker.send('t', [msg({ message_id: 'd' })]);
    const r = await broker.openReceiver({ source: src, mode: 'peekLock' });
    const [first] = r.take(1);
    const seq = first!.sequenceNumber;
    broker.settle(src, first?.lockToken ?? '', { kind: 'defer' });
    const once = broker.receiveDeferred(src, [seq, seq], 'peekLock');
    assert.equal(once.length, 1, 'a number asked for twice is one message');
    for (const mode of ['peekLock', 'receiveAndDelete'] as const) {
      assert.throws(
        () => broker.receiveDeferred(src, [seq], mode),
        (e) => code(e) === 'MessageNotFound' && /already locked/.test((e as Error).message),
      );
    }
    // The lock was not taken from its holder: it lapses, and then the message can be received again.
    tick(broker, clock, 30_000);
    const [again] = broker.receiveDeferred(src, [seq], 'peekLock');
    assert.equal(again?.deliveryCount, 1, 'the lapsed lock counted a delivery');
    assert.throws(
      () => broker.settle(src, once[0]?.lockToken ?? '', { kind: 'complete' }),
      (e) => code(e) === 'MessageLockLost',
    );
    // A lapsed lock whose timer has not run yet is ended by the request itself.
    clock.advance(30_000);
    const [third] = broker.receiveDeferred(src, [seq], 'peekLock');
    assert.equal(third?.deliveryCount, 2);
    broker.settle(src, third?.lockToken ?? '', { kind: 'complete' });
    assert.equal(broker.getSubscriptionRuntime('t', 's').activeMessageCount, 0);
    await broker.close();
  });

  test('dead-lettering sets the reason properties; the DLQ is received like a queue but not dead-lettered again', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    broker.send('t', [msg({ message_id: 'm', props: { a: 1 } })]);
    const r = await broker.openReceiver({ source: src, mode: 'peekLock' });
    const [d] = r.take(1);
    broker.settle(src, d?.lockToken ?? '', {
      kind: 'deadLetter',
      reason: 'Invalid',
      description: 'Bad payload',
      propertiesToModify: { extra: 'x' },
    });
    const dlqSrc = { ...src, subQueue: 'deadLetter' as const };
    assert.equal(broker.peek(dlqSrc, { maxCount: 5 }).length, 1);
    const dlq = await broker.openReceiver({ source: dlqSrc, mode: 'peekLock' });
    const [dead] = dlq.take(1);
    assert.deepEqual(props(dead!), {
      a: 1,
      DeadLetterReason: 'Invalid',
      DeadLetterErrorDescription: 'Bad payload',
      extra: 'x',
    });
    assert.equal(dead?.sequenceNumber, d?.sequenceNumber, 'the sequence number is kept');
    assert.throws(
      () => broker.settle(dlqSrc, dead?.lockToken ?? '', { kind: 'deadLetter' }),
      (e) => code(e) === 'InvalidOperation',
    );
    broker.settle(dlqSrc, dead?.lockToken ?? '', { kind: 'complete' });
    assert.equal(broker.getSubscriptionRuntime('t', 's').deadLetterMessageCount, 0);
    await broker.close();
  });

  test('peek pages by sequence number and filters by session without changing delivery counts', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's', requiresSession: true });
    broker.send(
      't',
      [1, 2, 3, 4].map((i) => msg({ message_id: `m${i}`, group_id: i % 2 ? 'odd' : 'even' })),
    );
    assert.deepEqual(
      broker.peek(src, { fromSequenceNumber: 2, maxCount: 2 }).map((d) => d.sequenceNumber),
      [2, 3],
    );
    assert.deepEqual(
      broker
        .peek(src, { fromSequenceNumber: 1, maxCount: 10, sessionId: 'even' })
        .map((d) => d.message.message_id),
      ['m2', 'm4'],
    );
    const r = await broker.openReceiver({
      source: src,
      mode: 'peekLock',
      session: { sessionId: 'odd', timeoutMs: 0 },
    });
    assert.equal(r.take(1)[0]?.deliveryCount, 0);
    await broker.close();
  });
});

describe('limits', () => {
  test('a batch over the memory budget is refused whole; oversized messages are refused', async () => {
    const { broker } = await brokerWithClock({ memoryBudgetBytes: 2000, maxMessageSizeBytes: 1500 });
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    const body = 'x'.repeat(600);
    broker.send('t', [msg({ body }), msg({ body })]);
    assert.throws(
      () => broker.send('t', [msg({ body }), msg({ body })]),
      (e) => code(e) === 'QuotaExceeded',
    );
    assert.equal(
      broker.getSubscriptionRuntime('t', 's').activeMessageCount,
      2,
      'nothing of the batch was stored',
    );
    assert.throws(
      () => broker.send('t', [msg({ body: 'y'.repeat(1600) })]),
      (e) => code(e) === 'MessageSizeExceeded',
    );
    assert.ok(broker.getTopicRuntime('t').sizeInBytes > 1200);
    await broker.close();
  });
});
