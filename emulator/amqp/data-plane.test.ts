// End-to-end: the unmodified @azure/service-bus client against the emulator's AMQP plane.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Harness } from './test-support.ts';
import { errorCode, sleep, startHarness } from './test-support.ts';

describe('AMQP data plane with the real ServiceBusClient', () => {
  let h: Harness;
  let n = 0;
  // Every test gets its own subscription filtered on a property, so tests never see each other's messages.
  const subscriptionFor = (
    opts: { lockDurationMs?: number } = {},
  ): { topic: string; sub: string; tag: string } => {
    const tag = `t${++n}`;
    h.emulator.broker.createSubscription(
      { topicName: 'orders', subscriptionName: tag, lockDurationMs: opts.lockDurationMs ?? 30_000 },
      { name: '$Default', filter: { kind: 'sql', sqlExpression: `test = '${tag}'` } },
    );
    return { topic: 'orders', sub: tag, tag };
  };

  before(async () => {
    h = await startHarness((em) => {
      em.broker.createTopic({ name: 'orders' });
    });
  });
  after(async () => {
    await h.close();
  });

  test('send, receive in peek-lock with broker annotations, complete', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    await sender.sendMessages({
      body: { hello: 'world' },
      subject: 'greeting',
      messageId: 'm-1',
      correlationId: 'c-1',
      applicationProperties: { test: tag, n: 7 },
    });
    const receiver = h.client.createReceiver(topic, sub);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.ok(m);
    assert.deepEqual(m.body, { hello: 'world' });
    assert.equal(m.subject, 'greeting');
    assert.equal(m.messageId, 'm-1');
    assert.equal(m.correlationId, 'c-1');
    assert.equal(m.applicationProperties?.n, 7);
    assert.equal(m.deliveryCount, 0);
    assert.ok(m.sequenceNumber !== undefined && m.sequenceNumber.toNumber() > 0);
    assert.ok(m.enqueuedTimeUtc instanceof Date);
    assert.ok(m.lockedUntilUtc instanceof Date && m.lockedUntilUtc.getTime() > m.enqueuedTimeUtc.getTime());
    assert.match(m.lockToken ?? '', /^[0-9a-f-]{36}$/);
    await receiver.completeMessage(m);
    assert.equal(h.emulator.broker.getSubscriptionRuntime(topic, sub).activeMessageCount, 0);
    await receiver.close();
    await sender.close();
  });

  test('a batch send arrives as separate messages, each with a message id', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    const batch = await sender.createMessageBatch();
    for (const body of ['a', 'b', 'c'])
      assert.ok(batch.tryAddMessage({ body, applicationProperties: { test: tag } }));
    await sender.sendMessages(batch);
    await sender.sendMessages([{ body: 'd', applicationProperties: { test: tag } }]);
    const receiver = h.client.createReceiver(topic, sub, { receiveMode: 'receiveAndDelete' });
    const got = [];
    while (got.length < 4) {
      const page = await receiver.receiveMessages(4 - got.length, { maxWaitTimeInMs: 2_000 });
      assert.ok(page.length > 0, 'messages should keep arriving');
      got.push(...page);
    }
    assert.deepEqual(
      got.map((m) => m.body),
      ['a', 'b', 'c', 'd'],
    );
    assert.ok(got.every((m) => typeof m.messageId === 'string' && m.messageId.length > 0));
    assert.equal(h.emulator.broker.getSubscriptionRuntime(topic, sub).activeMessageCount, 0);
    await receiver.close();
    await sender.close();
  });

  test('abandon with properties redelivers; renew, defer, peek and receive the deferred message', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'x', applicationProperties: { test: tag } });
    const receiver = h.client.createReceiver(topic, sub);
    const [first] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.ok(first);
    await receiver.abandonMessage(first, { reason: 'retry' });
    const [again] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.ok(again);
    assert.equal(again.deliveryCount, 1);
    assert.equal(again.applicationProperties?.reason, 'retry');
    const renewed = await receiver.renewMessageLock(again);
    assert.ok(renewed instanceof Date);
    await receiver.deferMessage(again);
    const peeked = await receiver.peekMessages(5, { fromSequenceNumber: again.sequenceNumber });
    assert.deepEqual(
      peeked.map((p) => [p.body, p.state]),
      [['x', 'deferred']],
    );
    const [deferred] = await receiver.receiveDeferredMessages(again.sequenceNumber!);
    assert.ok(deferred);
    assert.equal(deferred.state, 'deferred');
    await receiver.completeMessage(deferred);
    assert.equal(h.emulator.broker.getSubscriptionRuntime(topic, sub).activeMessageCount, 0);
    await receiver.close();
    await sender.close();
  });

  test('dead-letter with reason and description, then read it from $DeadLetterQueue', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'poison', applicationProperties: { test: tag } });
    const receiver = h.client.createReceiver(topic, sub);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.ok(m);
    await receiver.deadLetterMessage(m, {
      deadLetterReason: 'Invalid',
      deadLetterErrorDescription: 'Bad body',
    });
    const dlq = h.client.createReceiver(topic, sub, { subQueueType: 'deadLetter' });
    const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.ok(dead);
    assert.equal(dead.body, 'poison');
    assert.equal(dead.deadLetterReason, 'Invalid');
    assert.equal(dead.deadLetterErrorDescription, 'Bad body');
    await dlq.completeMessage(dead);
    assert.equal(h.emulator.broker.getSubscriptionRuntime(topic, sub).deadLetterMessageCount, 0);
    await dlq.close();
    await receiver.close();
    await sender.close();
  });

  test('schedule delivers later; a cancelled schedule never arrives', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    const at = new Date(Date.now() + 300);
    // The cancelled one is due much later, so that cancelling it never races its own delivery on a slow machine.
    const [kept] = await sender.scheduleMessages({ body: 'kept', applicationProperties: { test: tag } }, at);
    const [dropped] = await sender.scheduleMessages(
      { body: 'dropped', applicationProperties: { test: tag } },
      new Date(Date.now() + 3_600_000),
    );
    assert.ok(kept && dropped && !kept.equals(dropped));
    await sender.cancelScheduledMessages(dropped);
    const receiver = h.client.createReceiver(topic, sub, { receiveMode: 'receiveAndDelete' });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.equal(m?.body, 'kept');
    assert.ok(m.scheduledEnqueueTimeUtc instanceof Date);
    // A little slack for clock reads on either side of the loopback connection.
    assert.ok(Date.now() >= at.getTime() - 50, 'delivered before its scheduled time');
    // Nothing is left scheduled: the cancelled message is gone, not merely not yet due.
    assert.equal(h.emulator.broker.getTopicRuntime(topic).scheduledMessageCount, 0);
    await receiver.close();
    await sender.close();
  });

  test('settling after the receive link closed goes through $management update-disposition', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'late', applicationProperties: { test: tag } });
    const receiver = h.client.createReceiver(topic, sub);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.ok(m);
    await receiver.close();
    const other = h.client.createReceiver(topic, sub);
    await other.completeMessage(m);
    assert.equal(h.emulator.broker.getSubscriptionRuntime(topic, sub).activeMessageCount, 0);
    await other.close();
    await sender.close();
  });

  test('settling after the lock expired raises MessageLockLost', async () => {
    const { topic, sub, tag } = subscriptionFor({ lockDurationMs: 300 });
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'slow', applicationProperties: { test: tag } });
    const receiver = h.client.createReceiver(topic, sub, { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.ok(m);
    await sleep(700);
    assert.equal(await errorCode(receiver.completeMessage(m)), 'MessageLockLost');
    await receiver.close();
    await sender.close();
  });

  test('streaming subscribe receives everything and credit keeps flowing', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    const total = 250;
    await sender.sendMessages(
      Array.from({ length: total }, (_, i) => ({ body: i, applicationProperties: { test: tag } })),
    );
    const receiver = h.client.createReceiver(topic, sub);
    const seen = new Set<number>();
    await new Promise<void>((resolve, reject) => {
      receiver.subscribe(
        {
          processMessage: async (m) => {
            seen.add(m.body as number);
            if (seen.size === total) resolve();
          },
          processError: async (args) => reject(args.error),
        },
        { maxConcurrentCalls: 20 },
      );
    });
    await receiver.close();
    assert.equal(seen.size, total);
    assert.equal(h.emulator.broker.getSubscriptionRuntime(topic, sub).activeMessageCount, 0);
    await sender.close();
  });

  test('a message close to the size limit round-trips, split across frames both ways', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    const body = Buffer.alloc(h.emulator.broker.maxMessageSizeBytes - 4096, 7);
    await sender.sendMessages({ body, applicationProperties: { test: tag } });
    const receiver = h.client.createReceiver(topic, sub, { receiveMode: 'receiveAndDelete' });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.ok(Buffer.isBuffer(m?.body));
    assert.ok(body.equals(m.body as Buffer));
    await receiver.close();
    await sender.close();
  });

  test('the rule manager adds, lists and removes rules over $management', async () => {
    const { topic, sub } = subscriptionFor();
    const rules = h.client.createRuleManager(topic, sub);
    await rules.createRule(
      'by-region',
      { sqlExpression: "region = 'EU'" },
      { sqlExpression: "SET via = 'rm'" },
    );
    await rules.createRule('by-corr', { correlationId: 'c-9', applicationProperties: { kind: 'x' } });
    const listed = [];
    for await (const r of rules.listRules()) listed.push(r);
    const byName = new Map(listed.map((r) => [r.name, r]));
    assert.deepEqual([...byName.keys()].sort(), ['$Default', 'by-corr', 'by-region']);
    assert.deepEqual(byName.get('by-region')?.filter, { sqlExpression: "region = 'EU'" });
    assert.equal(byName.get('by-region')?.action.sqlExpression, "SET via = 'rm'");
    const corr = byName.get('by-corr')?.filter as { correlationId?: string; applicationProperties?: object };
    assert.equal(corr.correlationId, 'c-9');
    assert.deepEqual(corr.applicationProperties, { kind: 'x' });
    await rules.deleteRule('by-corr');
    const after = [];
    for await (const r of rules.listRules()) after.push(r.name);
    assert.deepEqual(after.sort(), ['$Default', 'by-region']);
    await assert.rejects(rules.createRule('broken', { sqlExpression: 'a = = 1' }));
  });

  test('unknown entities raise MessagingEntityNotFound for senders and receivers', async () => {
    const sender = h.client.createSender('missing');
    assert.equal(await errorCode(sender.sendMessages({ body: 1 })), 'MessagingEntityNotFound');
    await sender.close();
    const receiver = h.client.createReceiver('orders', 'missing');
    assert.equal(
      await errorCode(receiver.receiveMessages(1, { maxWaitTimeInMs: 500 })),
      'MessagingEntityNotFound',
    );
    await receiver.close();
  });

  test('a message over the size limit raises MessageSizeExceeded and the sender keeps working', async () => {
    const { topic, sub, tag } = subscriptionFor();
    const sender = h.client.createSender(topic);
    const tooBig = Buffer.alloc(h.emulator.broker.maxMessageSizeBytes + 1024);
    assert.equal(
      await errorCode(sender.sendMessages({ body: tooBig, applicationProperties: { test: tag } })),
      'MessageSizeExceeded',
    );
    await sender.sendMessages({ body: 'small', applicationProperties: { test: tag } });
    assert.equal(h.emulator.broker.getSubscriptionRuntime(topic, sub).activeMessageCount, 1);
    await sender.close();
  });
});
