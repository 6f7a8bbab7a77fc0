import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerError } from './api.ts';
import { brokerWithClock, msg, props, tick } from './test-helpers.ts';

function code(err: unknown): string | undefined {
  return err instanceof BrokerError ? err.code : undefined;
}

describe('admin CRUD', () => {
  test('topics, subscriptions and rules are created, read, updated, listed and deleted', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 'orders' });
    assert.throws(
      () => broker.createTopic({ name: 'orders' }),
      (e) => code(e) === 'EntityAlreadyExists',
    );
    assert.throws(
      () => broker.getTopic('nope'),
      (e) => code(e) === 'EntityNotFound',
    );
    assert.throws(
      () => broker.createTopic({ name: 'bad name!' }),
      (e) => code(e) === 'BadRequest',
    );
    assert.throws(
      () => broker.createTopic({ name: 'x'.repeat(261) }),
      (e) => code(e) === 'BadRequest',
    );
    broker.createTopic({ name: 'a/b.c-d_e' });
    assert.deepEqual(
      broker.listTopics().map((t) => t.name),
      ['a/b.c-d_e', 'orders'],
    );
    const updated = broker.updateTopic({ name: 'orders', status: 'SendDisabled' });
    assert.equal(updated.status, 'SendDisabled');
    assert.equal(updated.maxSizeInMegabytes, 1024, 'other fields keep their values');

    const sub = broker.createSubscription({
      topicName: 'orders',
      subscriptionName: 's1',
      lockDurationMs: 5000,
    });
    assert.equal(sub.lockDurationMs, 5000);
    assert.equal(sub.maxDeliveryCount, 10);
    assert.throws(
      () => broker.createSubscription({ topicName: 'orders', subscriptionName: 's1' }),
      (e) => code(e) === 'EntityAlreadyExists',
    );
    assert.throws(
      () => broker.createSubscription({ topicName: 'missing', subscriptionName: 's1' }),
      (e) => code(e) === 'EntityNotFound',
    );
    assert.throws(
      () => broker.createSubscription({ topicName: 'orders', subscriptionName: 'x'.repeat(51) }),
      (e) => code(e) === 'BadRequest',
    );
    assert.deepEqual(
      broker.listRules('orders', 's1').map((r) => [r.name, r.filter.kind]),
      [['$Default', 'true']],
    );
    broker.createRule('orders', 's1', { name: 'none', filter: { kind: 'false' } });
    assert.throws(
      () => broker.createRule('orders', 's1', { name: 'none', filter: { kind: 'false' } }),
      (e) => code(e) === 'EntityAlreadyExists',
    );
    assert.equal(broker.getRule('orders', 's1', 'none').filter.kind, 'false');
    broker.updateRule('orders', 's1', { name: 'none', filter: { kind: 'true' } });
    assert.equal(broker.getRule('orders', 's1', 'none').filter.kind, 'true');
    broker.deleteRule('orders', 's1', 'none');
    assert.throws(
      () => broker.getRule('orders', 's1', 'none'),
      (e) => code(e) === 'EntityNotFound',
    );

    const withRule = broker.createSubscription(
      { topicName: 'orders', subscriptionName: 's2' },
      { name: 'only', filter: { kind: 'correlation', subject: 'x' } },
    );
    assert.equal(withRule.subscriptionName, 's2');
    assert.deepEqual(
      broker.listRules('orders', 's2').map((r) => r.name),
      ['only'],
    );
    assert.deepEqual(
      broker.listSubscriptions('orders').map((s) => s.subscriptionName),
      ['s1', 's2'],
    );
    broker.updateSubscription({ topicName: 'orders', subscriptionName: 's1', maxDeliveryCount: 3 });
    assert.equal(broker.getSubscription('orders', 's1').maxDeliveryCount, 3);
    assert.equal(broker.getSubscription('orders', 's1').lockDurationMs, 5000);
    broker.deleteSubscription('orders', 's2');
    assert.throws(
      () => broker.getSubscription('orders', 's2'),
      (e) => code(e) === 'EntityNotFound',
    );
    broker.deleteTopic('orders');
    assert.throws(
      () => broker.getSubscription('orders', 's1'),
      (e) => code(e) === 'EntityNotFound',
    );
    await broker.close();
  });
});

describe('send and receive', () => {
  test('every subscription gets its own copy under the topic sequence number; receive-and-delete removes', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'a' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'b' });
    broker.send('t', [msg({ message_id: 'm1' }), msg({ message_id: 'm2' })]);
    const ra = await broker.openReceiver({ source: { topic: 't', subscription: 'a' }, mode: 'peekLock' });
    const rb = await broker.openReceiver({
      source: { topic: 't', subscription: 'b' },
      mode: 'receiveAndDelete',
    });
    const got = ra.take(10);
    assert.deepEqual(
      got.map((d) => [d.message.message_id, d.sequenceNumber, d.deliveryCount, typeof d.lockToken]),
      [
        ['m1', 1, 0, 'string'],
        ['m2', 2, 0, 'string'],
      ],
    );
    assert.equal(ra.take(10).length, 0, 'locked messages are not handed out twice');
    const del = rb.take(1);
    assert.equal(del[0]?.lockToken, undefined);
    assert.equal(broker.getSubscriptionRuntime('t', 'b').activeMessageCount, 1);
    assert.equal(broker.getSubscriptionRuntime('t', 'a').activeMessageCount, 2);
    for (const d of got)
      broker.settle({ topic: 't', subscription: 'a' }, d.lockToken ?? '', { kind: 'complete' });
    assert.equal(broker.getSubscriptionRuntime('t', 'a').activeMessageCount, 0);
    assert.throws(
      () => broker.settle({ topic: 't', subscription: 'a' }, got[0]?.lockToken ?? '', { kind: 'complete' }),
      (e) => code(e) === 'MessageLockLost',
    );
    await broker.close();
  });

  test('a message without a message id gets one; the sender is told about missing and disabled entities', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'a' });
    broker.send('t', [msg()]);
    const r = await broker.openReceiver({
      source: { topic: 't', subscription: 'a' },
      mode: 'receiveAndDelete',
    });
    const [d] = r.take(1);
    assert.match(String(d?.message.message_id), /^[0-9a-f]{32}$/);
    assert.throws(
      () => broker.send('missing', [msg()]),
      (e) => code(e) === 'EntityNotFound',
    );
    broker.updateTopic({ name: 't', status: 'SendDisabled' });
    assert.throws(
      () => broker.send('t', [msg()]),
      (e) => code(e) === 'SendDisabled',
    );
    await broker.close();
  });

  test('a receive-disabled subscription refuses receivers but keeps accumulating messages', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'a', status: 'ReceiveDisabled' });
    broker.send('t', [msg(), msg()]);
    await assert.rejects(
      broker.openReceiver({ source: { topic: 't', subscription: 'a' }, mode: 'peekLock' }),
      (e) => code(e) === 'ReceiveDisabled',
    );
    assert.equal(broker.getSubscriptionRuntime('t', 'a').activeMessageCount, 2);
    await broker.close();
  });

  test('onAvailable fires after a send reaches the receiver', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'a' });
    const r = await broker.openReceiver({ source: { topic: 't', subscription: 'a' }, mode: 'peekLock' });
    let calls = 0;
    r.onAvailable(() => calls++);
    broker.send('t', [msg(), msg(), msg()]);
    await new Promise((res) => setImmediate(res));
    assert.equal(calls, 1, 'a burst wakes the receiver once');
    assert.equal(r.take(5).length, 3);
    await broker.close();
  });

  test('deleting a topic ends its receivers', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'a' });
    const r = await broker.openReceiver({ source: { topic: 't', subscription: 'a' }, mode: 'peekLock' });
    let ended: string | undefined;
    r.onClosedByBroker((e) => (ended = e.code));
    broker.deleteTopic('t');
    assert.equal(ended, 'EntityNotFound');
    await broker.close();
  });
});

describe('locks and redelivery', () => {
  test('abandon makes the message available again with deliveryCount+1 and merged properties', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'a' });
    broker.send('t', [msg({ props: { keep: 1 } })]);
    const src = { topic: 't', subscription: 'a' };
    const r = await broker.openReceiver({ source: src, mode: 'peekLock' });
    const [first] = r.take(1);
    broker.settle(src, first?.lockToken ?? '', { kind: 'abandon', propertiesToModify: { note: 'x' } });
    const [again] = r.take(1);
    assert.equal(again?.deliveryCount, 1);
    assert.deepEqual(props(again!), { keep: 1, note: 'x' });
    assert.deepEqual(props(first!), { keep: 1 }, 'what was delivered before is not changed');
    await broker.close();
  });

  test('an expired lock makes the message available again; renewLock extends it', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'a', lockDurationMs: 1000 });
    broker.send('t', [msg()]);
    const src = { topic: 't', subscription: 'a' };
    const r = await broker.openReceiver({ source: src, mode: 'peekLock' });
    const [d] = r.take(1);
    assert.equal(d?.lockedUntil, clock.t + 1000);
    tick(broker, clock, 600);
    const renewed = broker.renewLock(src, d?.lockToken ?? '');
    assert.equal(renewed, clock.t + 1000);
    tick(broker, clock, 600);
    assert.equal(r.take(1).length, 0, 'the renewed lock still holds');
    tick(broker, clock, 500);
    const [again] = r.take(1);
    assert.equal(again?.deliveryCount, 1);
    assert.throws(
      () => broker.settle(src, d?.lockToken ?? '', { kind: 'complete' }),
      (e) => code(e) === 'MessageLockLost',
    );
    await broker.close();
  });

  test('exceeding maxDeliveryCount dead-letters with MaxDeliveryCountExceeded', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({
      topicName: 't',
      subscriptionName: 'a',
      maxDeliveryCount: 2,
      lockDurationMs: 1000,
    });
    broker.send('t', [msg({ message_id: 'poison' })]);
    const src = { topic: 't', subscription: 'a' };
    const r = await broker.openReceiver({ source: src, mode: 'peekLock' });
    const [d1] = r.take(1);
    broker.settle(src, d1?.lockToken ?? '', { kind: 'abandon' });
    const [d2] = r.take(1);
    assert.equal(d2?.deliveryCount, 1);
    tick(broker, clock, 1001); // the second lock expires: two deliveries used up
    assert.equal(r.take(1).length, 0);
    const rt = broker.getSubscriptionRuntime('t', 'a');
    assert.equal(rt.activeMessageCount, 0);
    assert.equal(rt.deadLetterMessageCount, 1);
    const dlq = await broker.openReceiver({ source: { ...src, subQueue: 'deadLetter' }, mode: 'peekLock' });
    const [dead] = dlq.take(1);
    assert.equal(dead?.message.message_id, 'poison');
    assert.equal(props(dead!).DeadLetterReason, 'MaxDeliveryCountExceeded');
    assert.equal(typeof props(dead!).DeadLetterErrorDescription, 'string');
    await broker.close();
  });
});

describe('entity status', () => {
  test('a Disabled topic refuses sends and receivers', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 'a' });
    broker.updateTopic({ name: 't', status: 'Disabled' });
    assert.throws(
      () => broker.send('t', [msg()]),
      (e) => code(e) === 'SendDisabled',
    );
    await assert.rejects(
      broker.openReceiver({ source: { topic: 't', subscription: 'a' }, mode: 'peekLock' }),
      (e) => code(e) === 'ReceiveDisabled',
    );
    await broker.close();
  });
});

describe('updates replace optional fields', () => {
  test('forwardTo, forwardDeadLetteredMessagesTo and userMetadata given as undefined are cleared', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't', userMetadata: 'meta' });
    broker.createTopic({ name: 'target' });
    broker.createSubscription({
      topicName: 't',
      subscriptionName: 's',
      forwardTo: 'target',
      forwardDeadLetteredMessagesTo: 'target',
      userMetadata: 'm',
    });
    broker.updateSubscription({ topicName: 't', subscriptionName: 's', maxDeliveryCount: 4 });
    assert.equal(broker.getSubscription('t', 's').forwardTo, 'target', 'absent keys keep their values');
    const cleared = broker.updateSubscription({
      topicName: 't',
      subscriptionName: 's',
      forwardTo: undefined,
      forwardDeadLetteredMessagesTo: undefined,
      userMetadata: undefined,
    });
    assert.deepEqual(
      [
        cleared.forwardTo,
        cleared.forwardDeadLetteredMessagesTo,
        cleared.userMetadata,
        cleared.maxDeliveryCount,
      ],
      [undefined, undefined, undefined, 4],
    );
    assert.equal(broker.updateTopic({ name: 't', userMetadata: undefined }).userMetadata, undefined);
    await broker.close();
  });
});

describe('deleting entities with locked messages', () => {
  test('frees their bytes and nothing comes back when locks would have expired', async () => {
    const { broker, clock } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({
      topicName: 't',
      subscriptionName: 'plain',
      lockDurationMs: 100,
      maxDeliveryCount: 1,
    });
    broker.createSubscription({
      topicName: 't',
      subscriptionName: 'ses',
      requiresSession: true,
      maxDeliveryCount: 1,
    });
    broker.send('t', [msg({ group_id: 'g' })]);
    (await broker.openReceiver({ source: { topic: 't', subscription: 'plain' }, mode: 'peekLock' })).take(1);
    const sr = await broker.openReceiver({
      source: { topic: 't', subscription: 'ses' },
      mode: 'peekLock',
      session: { sessionId: 'g', timeoutMs: 0 },
    });
    sr.take(1);
    broker.deleteTopic('t');
    tick(broker, clock, 1000);
    assert.equal(broker.totalStoredBytes, 0);
    await broker.close();
  });
});
