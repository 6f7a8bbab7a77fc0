import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerError } from './api.ts';
import type { ServiceBusBroker } from './broker.ts';
import { brokerWithClock, msg, props } from './test-helpers.ts';

function code(err: unknown): string | undefined {
  return err instanceof BrokerError ? err.code : undefined;
}

async function drain(
  broker: ServiceBusBroker,
  topic: string,
  subscription: string,
  subQueue?: 'deadLetter' | 'transferDeadLetter',
) {
  const source = subQueue ? { topic, subscription, subQueue } : { topic, subscription };
  const r = await broker.openReceiver({ source, mode: 'receiveAndDelete' });
  const out = r.take(1000);
  r.close();
  return out;
}

describe('rules', () => {
  test('SQL filters select subscriptions and each action changes only its own copy', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 'E1' });
    broker.createSubscription(
      { topicName: 'E1', subscriptionName: 'main' },
      { name: 'to', filter: { kind: 'sql', sqlExpression: "user.To = 'E1'" } },
    );
    broker.createSubscription(
      { topicName: 'E1', subscriptionName: 'stamp' },
      {
        name: 'to',
        filter: { kind: 'sql', sqlExpression: "user.To = 'E1'" },
        action: { sqlExpression: "SET user.From = 'Manager'" },
      },
    );
    broker.createSubscription(
      { topicName: 'E1', subscriptionName: 'other' },
      { name: 'to', filter: { kind: 'sql', sqlExpression: "user.To = 'Elsewhere'" } },
    );
    broker.send('E1', [msg({ message_id: 'm', props: { To: 'E1' } })]);
    const main = await drain(broker, 'E1', 'main');
    const stamped = await drain(broker, 'E1', 'stamp');
    assert.deepEqual(main.map(props), [{ To: 'E1' }]);
    assert.deepEqual(stamped.map(props), [{ To: 'E1', From: 'Manager' }]);
    assert.equal((await drain(broker, 'E1', 'other')).length, 0);
    await broker.close();
  });

  test('one copy per matching rule with an action; matching rules without actions give one copy', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    broker.createRule('t', 's', { name: 'also-true', filter: { kind: 'sql', sqlExpression: '1=1' } });
    broker.createRule('t', 's', {
      name: 'a1',
      filter: { kind: 'sql', sqlExpression: 'user.n > 1' },
      action: { sqlExpression: "SET user.tag = 'a1'" },
    });
    broker.createRule('t', 's', {
      name: 'a2',
      filter: { kind: 'sql', sqlExpression: 'user.n > 2' },
      action: { sqlExpression: "SET user.tag = 'a2'" },
    });
    broker.send('t', [msg({ props: { n: 3 } })]);
    const got = (await drain(broker, 't', 's')).map((d) => props(d).tag ?? 'plain');
    assert.deepEqual(got.sort(), ['a1', 'a2', 'plain']);
    await broker.close();
  });

  test('correlation filters match system properties and application properties exactly', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription(
      { topicName: 't', subscriptionName: 's' },
      {
        name: 'c',
        filter: { kind: 'correlation', subject: 'order', applicationProperties: { region: 'eu', n: 1 } },
      },
    );
    broker.send('t', [
      msg({ message_id: 'yes', subject: 'order', props: { region: 'eu', n: 1 } }),
      msg({ message_id: 'no1', subject: 'order', props: { region: 'us', n: 1 } }),
      msg({ message_id: 'no2', subject: 'invoice', props: { region: 'eu', n: 1 } }),
      msg({ message_id: 'no3', subject: 'order', props: { region: 'eu' } }),
    ]);
    assert.deepEqual(
      (await drain(broker, 't', 's')).map((d) => d.message.message_id),
      ['yes'],
    );
    await broker.close();
  });

  test('invalid SQL is refused with BadRequest and the engine message', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    assert.throws(
      () =>
        broker.createRule('t', 's', { name: 'bad', filter: { kind: 'sql', sqlExpression: 'user.a = = 1' } }),
      (e) => code(e) === 'BadRequest' && e instanceof Error && e.message.length > 10,
    );
    assert.throws(
      () =>
        broker.createSubscription(
          { topicName: 't', subscriptionName: 's2' },
          { name: 'bad', filter: { kind: 'sql', sqlExpression: 'user.a IN (' } },
        ),
      (e) => code(e) === 'BadRequest',
    );
    assert.throws(
      () => broker.getSubscription('t', 's2'),
      (e) => code(e) === 'EntityNotFound',
    );
    await broker.close();
  });
});

describe('forwarding', () => {
  test('a forwarded copy is routed by the target topic rules (NimBus Manager → endpoint → Resolver)', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 'Manager' });
    broker.createTopic({ name: 'E1' });
    broker.createTopic({ name: 'Resolver' });
    broker.createSubscription(
      { topicName: 'Manager', subscriptionName: 'E1', forwardTo: 'E1' },
      {
        name: 'to',
        filter: { kind: 'sql', sqlExpression: "user.To = 'E1'" },
        action: { sqlExpression: "SET user.From = 'Manager'" },
      },
    );
    broker.createSubscription(
      { topicName: 'E1', subscriptionName: 'E1', requiresSession: true },
      { name: 'to', filter: { kind: 'sql', sqlExpression: "user.To = 'E1'" } },
    );
    broker.createSubscription(
      { topicName: 'E1', subscriptionName: 'Resolver', forwardTo: 'Resolver' },
      { name: 'to', filter: { kind: 'sql', sqlExpression: "user.To = 'E1'" } },
    );
    broker.createSubscription({ topicName: 'Resolver', subscriptionName: 'Resolver', requiresSession: true });
    broker.send('Manager', [msg({ message_id: 'cmd', group_id: 'sess', props: { To: 'E1' } })]);
    assert.equal(
      broker.getSubscriptionRuntime('Manager', 'E1').activeMessageCount,
      0,
      'forwarders keep nothing',
    );
    assert.equal(broker.getSubscriptionRuntime('E1', 'Resolver').activeMessageCount, 0);
    const r = await broker.openReceiver({
      source: { topic: 'E1', subscription: 'E1' },
      mode: 'receiveAndDelete',
      session: { sessionId: 'sess', timeoutMs: 0 },
    });
    assert.deepEqual(r.take(5).map(props), [{ To: 'E1', From: 'Manager' }]);
    const rr = await broker.openReceiver({
      source: { topic: 'Resolver', subscription: 'Resolver' },
      mode: 'receiveAndDelete',
      session: { sessionId: null, timeoutMs: 0 },
    });
    assert.deepEqual(
      rr.take(5).map((d) => d.message.message_id),
      ['cmd'],
    );
    await broker.close();
  });

  test('a forwarding loop ends in the transfer dead-letter queue after the hop limit', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 'loop' });
    broker.createSubscription({ topicName: 'loop', subscriptionName: 'again', forwardTo: 'loop' });
    broker.send('loop', [msg({ message_id: 'spin' })]);
    const rt = broker.getSubscriptionRuntime('loop', 'again');
    assert.equal(rt.activeMessageCount, 0);
    assert.equal(rt.transferDeadLetterMessageCount, 1);
    const [d] = await drain(broker, 'loop', 'again', 'transferDeadLetter');
    assert.equal(d?.message.message_id, 'spin');
    assert.equal(props(d!).DeadLetterReason, 'TransferHopCountExceeded');
    await broker.close();
  });

  test('a forward to a missing or send-disabled topic lands in the transfer dead-letter queue', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 'src' });
    broker.createTopic({ name: 'off', status: 'SendDisabled' });
    broker.createSubscription({ topicName: 'off', subscriptionName: 'x' });
    broker.createSubscription({ topicName: 'src', subscriptionName: 'toMissing', forwardTo: 'missing' });
    broker.createSubscription({ topicName: 'src', subscriptionName: 'toOff', forwardTo: 'off' });
    broker.send('src', [msg()]);
    const [missing] = await drain(broker, 'src', 'toMissing', 'transferDeadLetter');
    const [off] = await drain(broker, 'src', 'toOff', 'transferDeadLetter');
    assert.equal(props(missing!).DeadLetterReason, 'ForwardToEntityNotFound');
    assert.equal(props(off!).DeadLetterReason, 'ForwardToEntityDisabled');
    assert.equal(broker.getSubscriptionRuntime('off', 'x').activeMessageCount, 0);
    await broker.close();
  });

  test('dead letters of a subscription with forwardDeadLetteredMessagesTo go there with their source', async () => {
    const { broker } = await brokerWithClock();
    broker.createTopic({ name: 'src' });
    broker.createTopic({ name: 'dead' });
    broker.createSubscription({ topicName: 'dead', subscriptionName: 'all' });
    broker.createSubscription({
      topicName: 'src',
      subscriptionName: 's',
      forwardDeadLetteredMessagesTo: 'dead',
    });
    broker.send('src', [msg({ message_id: 'm' })]);
    const source = { topic: 'src', subscription: 's' };
    const r = await broker.openReceiver({ source, mode: 'peekLock' });
    const [d] = r.take(1);
    broker.settle(source, d?.lockToken ?? '', { kind: 'deadLetter', reason: 'Bad', description: 'why' });
    const [moved] = await drain(broker, 'dead', 'all');
    assert.equal(moved?.deadLetterSource, 'src/Subscriptions/s');
    assert.equal(props(moved!).DeadLetterReason, 'Bad');
    await broker.close();
  });
});
