// Auto-forwarding between topics, forwarding loops, forwards to missing or disabled targets, and the
// dead-letter / transfer dead-letter sub-queues (receive and peek).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  createSubscriptionWithRules,
  createTopicWithSubscriptions,
  expectNoMessage,
  idsOf,
  receiveAll,
  receiveUntil,
  uniqueName,
  useHarness,
  waitFor,
} from './helpers.ts';

const h = useHarness();

describe('auto-forwarding', () => {
  test('a chain of forwards delivers the message at the end of the chain, with each hop applying its rules', async () => {
    const a = uniqueName('fa');
    const b = uniqueName('fb');
    const c = uniqueName('fc');
    await createTopicWithSubscriptions(h.admin, c, [{ name: 'end' }]);
    await createTopicWithSubscriptions(h.admin, b, [
      {
        name: 'hop',
        options: { forwardTo: c },
        rules: [{ name: 'r', filter: true, action: { sqlExpression: "SET user.HopB = 'yes'" } }],
      },
    ]);
    await createTopicWithSubscriptions(h.admin, a, [
      {
        name: 'hop',
        options: { forwardTo: b },
        rules: [{ name: 'r', filter: true, action: { sqlExpression: "SET user.HopA = 'yes'" } }],
      },
      { name: 'local' },
    ]);
    const sender = h.client.createSender(a);
    const end = h.client.createReceiver(c, 'end');
    const local = h.client.createReceiver(a, 'local');
    try {
      await sender.sendMessages({ body: { x: 1 }, messageId: 'chain-1', applicationProperties: { Orig: 1 } });
      const [m] = await receiveUntil(end, 1);
      assert.ok(m, 'message reached the end of the chain');
      assert.equal(m.messageId, 'chain-1');
      assert.deepEqual(m.body, { x: 1 });
      assert.equal(m.applicationProperties?.Orig, 1);
      assert.equal(m.applicationProperties?.HopA, 'yes');
      assert.equal(m.applicationProperties?.HopB, 'yes');
      await end.completeMessage(m);
      // The forwarding subscriptions hold nothing; the other subscription of A got its own copy, unchanged.
      const [l] = await receiveUntil(local, 1);
      assert.ok(l);
      assert.equal(l.applicationProperties?.HopA, undefined);
      await local.completeMessage(l);
      const hopA = h.client.createReceiver(a, 'hop');
      await expectNoMessage(hopA, 300);
      await hopA.close();
    } finally {
      await Promise.all([end.close(), local.close()]);
      await sender.close();
    }
  });

  test('a subscription forwarding back to its own topic, with an action that ends the loop, delivers once', async () => {
    // The NimBus Retry/Continuation pattern: To='Retry' is rewritten to To='E' and forwarded back to E.
    const e = uniqueName('self');
    await h.admin.createTopic(e);
    await createSubscriptionWithRules(h.admin, e, {
      name: 'main',
      rules: [{ name: 'r', filter: { sqlExpression: `user.To = '${e}'` } }],
    });
    await createSubscriptionWithRules(h.admin, e, {
      name: 'retry',
      options: { forwardTo: e },
      rules: [
        {
          name: 'r',
          filter: { sqlExpression: "user.To = 'Retry'" },
          action: { sqlExpression: `SET user.To = '${e}'; SET user.From = 'Retry'` },
        },
      ],
    });
    const sender = h.client.createSender(e);
    const main = h.client.createReceiver(e, 'main', { receiveMode: 'receiveAndDelete' });
    try {
      await sender.sendMessages({ body: 'r', messageId: 'retry-1', applicationProperties: { To: 'Retry' } });
      const got = await receiveAll(main, { expected: 1 });
      assert.deepEqual(idsOf(got), ['retry-1']);
      assert.equal(got[0]!.applicationProperties?.From, 'Retry');
      assert.equal(got[0]!.applicationProperties?.To, e);
    } finally {
      await main.close();
      await sender.close();
    }
  });

  test('a forwarding loop ends after a bounded number of hops in the transfer dead-letter queue', async () => {
    const t = uniqueName('loop');
    await h.admin.createTopic(t);
    await h.admin.createSubscription(t, 'loop', { forwardTo: t });
    const sender = h.client.createSender(t);
    const tdlq = h.client.createReceiver(t, 'loop', { subQueueType: 'transferDeadLetter' });
    try {
      await sender.sendMessages({ body: 'around', messageId: 'loop-1' });
      const [m] = await receiveUntil(tdlq, 1);
      assert.ok(m, 'looping message ended in the transfer dead-letter queue');
      assert.equal(m.messageId, 'loop-1');
      assert.equal(m.body, 'around');
      assert.ok(m.deadLetterReason, 'a dead-letter reason is given');
      await tdlq.completeMessage(m);
      await expectNoMessage(tdlq, 500);
      // The loop stopped: the forwarding subscription holds nothing.
      const rt = await h.admin.getSubscriptionRuntimeProperties(t, 'loop');
      assert.equal(rt.activeMessageCount, 0);
      assert.equal(rt.transferDeadLetterMessageCount, 0);
    } finally {
      await tdlq.close();
      await sender.close();
    }
  });

  test('a two-topic loop also ends in a transfer dead-letter queue', async () => {
    const x = uniqueName('lx');
    const y = uniqueName('ly');
    await h.admin.createTopic(x);
    await h.admin.createTopic(y);
    await h.admin.createSubscription(x, 'to-y', { forwardTo: y });
    await h.admin.createSubscription(y, 'to-x', { forwardTo: x });
    const sender = h.client.createSender(x);
    try {
      await sender.sendMessages({ body: 'pingpong', messageId: 'pp-1' });
      const counts = await waitFor(async () => {
        const cx = (await h.admin.getSubscriptionRuntimeProperties(x, 'to-y')).transferDeadLetterMessageCount;
        const cy = (await h.admin.getSubscriptionRuntimeProperties(y, 'to-x')).transferDeadLetterMessageCount;
        return cx + cy > 0 ? { cx, cy } : undefined;
      }, 'the loop to end in a transfer dead-letter queue');
      assert.equal(counts.cx + counts.cy, 1, 'exactly one copy dead-lettered');
    } finally {
      await sender.close();
    }
  });

  test('a forward to a deleted topic goes to the transfer dead-letter queue', async () => {
    const src = uniqueName('fsrc');
    const dst = uniqueName('fdst');
    await h.admin.createTopic(dst);
    await createTopicWithSubscriptions(h.admin, src, [{ name: 'fwd', options: { forwardTo: dst } }]);
    await h.admin.deleteTopic(dst);
    const sender = h.client.createSender(src);
    const tdlq = h.client.createReceiver(src, 'fwd', { subQueueType: 'transferDeadLetter' });
    try {
      await sender.sendMessages({ body: 'lost?', messageId: 'missing-1' });
      const got = await receiveUntil(tdlq, 1, { settle: 'complete' });
      assert.deepEqual(idsOf(got), ['missing-1']);
    } finally {
      await tdlq.close();
      await sender.close();
    }
  });

  test('a forward to a send-disabled topic goes to the transfer dead-letter queue', async () => {
    const src = uniqueName('fsrc');
    const dst = uniqueName('fdst');
    await createTopicWithSubscriptions(h.admin, dst, [{ name: 'end' }]);
    await createTopicWithSubscriptions(h.admin, src, [{ name: 'fwd', options: { forwardTo: dst } }]);
    const dstProps = await h.admin.getTopic(dst);
    await h.admin.updateTopic({ ...dstProps, status: 'SendDisabled' });
    const sender = h.client.createSender(src);
    const tdlq = h.client.createReceiver(src, 'fwd', { subQueueType: 'transferDeadLetter' });
    const end = h.client.createReceiver(dst, 'end');
    try {
      await sender.sendMessages({ body: 'blocked', messageId: 'disabled-1' });
      const got = await receiveUntil(tdlq, 1, { settle: 'complete' });
      assert.deepEqual(idsOf(got), ['disabled-1']);
      await expectNoMessage(end, 300);
    } finally {
      await Promise.all([tdlq.close(), end.close()]);
      await sender.close();
    }
  });
});

describe('dead-letter sub-queues', () => {
  test('the dead-letter queue can be peeked and received; runtime properties count it', async () => {
    const t = uniqueName('dlq');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub' }]);
    const sender = h.client.createSender(t);
    const receiver = h.client.createReceiver(t, 'sub');
    const dlq = h.client.createReceiver(t, 'sub', { subQueueType: 'deadLetter' });
    try {
      await sender.sendMessages([1, 2, 3].map((i) => ({ body: i, messageId: `d${i}` })));
      const got = await receiveUntil(receiver, 3);
      for (const m of got)
        await receiver.deadLetterMessage(m, {
          deadLetterReason: 'test',
          deadLetterErrorDescription: `desc ${String(m.messageId)}`,
        });
      const rt = await h.admin.getSubscriptionRuntimeProperties(t, 'sub');
      assert.equal(rt.deadLetterMessageCount, 3);
      assert.equal(rt.activeMessageCount, 0);
      const peeked = await dlq.peekMessages(10);
      assert.deepEqual(idsOf(peeked), ['d1', 'd2', 'd3']);
      assert.ok(peeked.every((m) => m.deadLetterReason === 'test'));
      const received = await receiveUntil(dlq, 3, { settle: 'complete' });
      assert.deepEqual(idsOf(received), ['d1', 'd2', 'd3']);
      assert.equal(received.find((m) => m.messageId === 'd2')?.deadLetterErrorDescription, 'desc d2');
      const rt2 = await h.admin.getSubscriptionRuntimeProperties(t, 'sub');
      assert.equal(rt2.deadLetterMessageCount, 0);
    } finally {
      await Promise.all([receiver.close(), dlq.close()]);
      await sender.close();
    }
  });

  test('the transfer dead-letter queue can be peeked; runtime properties count it', async () => {
    const src = uniqueName('tsrc');
    const dst = uniqueName('tdst');
    await h.admin.createTopic(dst);
    await createTopicWithSubscriptions(h.admin, src, [{ name: 'fwd', options: { forwardTo: dst } }]);
    await h.admin.deleteTopic(dst);
    const sender = h.client.createSender(src);
    const tdlq = h.client.createReceiver(src, 'fwd', { subQueueType: 'transferDeadLetter' });
    try {
      await sender.sendMessages([
        { body: 1, messageId: 't1' },
        { body: 2, messageId: 't2' },
      ]);
      const rt = await waitFor(async () => {
        const r = await h.admin.getSubscriptionRuntimeProperties(src, 'fwd');
        return r.transferDeadLetterMessageCount === 2 ? r : undefined;
      }, 'transferDeadLetterMessageCount = 2');
      assert.equal(rt.activeMessageCount, 0);
      const peeked = await tdlq.peekMessages(10);
      assert.deepEqual(idsOf(peeked), ['t1', 't2']);
      const received = await receiveUntil(tdlq, 2, { settle: 'complete' });
      assert.deepEqual(idsOf(received), ['t1', 't2']);
    } finally {
      await tdlq.close();
      await sender.close();
    }
  });

  test('a dead-lettered message can be dead-lettered no further: abandoning it keeps it in the DLQ', async () => {
    const t = uniqueName('dlq');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub', options: { maxDeliveryCount: 1 } }]);
    const sender = h.client.createSender(t);
    const receiver = h.client.createReceiver(t, 'sub');
    const dlq = h.client.createReceiver(t, 'sub', { subQueueType: 'deadLetter' });
    try {
      await sender.sendMessages({ body: 'x', messageId: 'stay' });
      const [m] = await receiveUntil(receiver, 1);
      assert.ok(m);
      await receiver.deadLetterMessage(m);
      for (let i = 0; i < 3; i++) {
        const [d] = await receiveUntil(dlq, 1);
        assert.ok(d, `dead letter still there after ${i} abandons`);
        await dlq.abandonMessage(d);
      }
      const [d] = await receiveUntil(dlq, 1);
      assert.ok(d);
      await dlq.completeMessage(d);
    } finally {
      await Promise.all([receiver.close(), dlq.close()]);
      await sender.close();
    }
  });
});
