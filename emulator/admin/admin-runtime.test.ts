// Runtime properties (message counts) through the real admin client; messages go in through the broker.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { collect, rejectsWith, startAdminHarness, type AdminHarness } from './test-harness.ts';

describe('admin plane: runtime properties', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdminHarness();
    await h.admin.createTopic('rt');
    await h.admin.createSubscription('rt', 'all');
    await h.admin.createSubscription('rt', 'none', {
      defaultRuleOptions: { name: 'never', filter: { sqlExpression: '1=0' } },
    });
    h.broker.send('rt', [{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
    // Dead-letter one of the three.
    const source = { topic: 'rt', subscription: 'all' };
    const receiver = await h.broker.openReceiver({ source, mode: 'peekLock' });
    const [first] = receiver.take(1);
    assert.ok(first?.lockToken);
    h.broker.settle(source, first.lockToken, { kind: 'deadLetter', reason: 'test' });
    receiver.close();
    h.broker.schedule('rt', [{ body: 'later' }], [Date.now() + 3_600_000]);
  });
  after(async () => {
    await h.close();
  });

  test('getSubscriptionRuntimeProperties reports active, dead-letter and total counts', async () => {
    const all = await h.admin.getSubscriptionRuntimeProperties('rt', 'all');
    assert.equal(all.topicName, 'rt');
    assert.equal(all.subscriptionName, 'all');
    assert.equal(all.activeMessageCount, 2);
    assert.equal(all.deadLetterMessageCount, 1);
    assert.equal(all.totalMessageCount, 3);
    assert.ok(all.createdAt instanceof Date && !Number.isNaN(all.createdAt.getTime()));
    const none = await h.admin.getSubscriptionRuntimeProperties('rt', 'none');
    assert.equal(none.activeMessageCount, 0);
    assert.equal(none.totalMessageCount, 0);
  });

  test('getTopicRuntimeProperties reports subscriptions, scheduled messages and size', async () => {
    const t = await h.admin.getTopicRuntimeProperties('rt');
    assert.equal(t.name, 'rt');
    assert.equal(t.subscriptionCount, 2);
    assert.equal(t.scheduledMessageCount, 1);
    assert.ok((t.sizeInBytes ?? 0) > 0);
  });

  test('the list variants report the same counts', async () => {
    const subs = await collect(h.admin.listSubscriptionsRuntimeProperties('rt'));
    assert.deepEqual(
      subs.map((s) => [s.subscriptionName, s.activeMessageCount, s.deadLetterMessageCount]),
      [
        ['all', 2, 1],
        ['none', 0, 0],
      ],
    );
    const topics = await collect(h.admin.listTopicsRuntimeProperties());
    assert.deepEqual(
      topics.map((t) => [t.name, t.subscriptionCount, t.scheduledMessageCount]),
      [['rt', 2, 1]],
    );
  });

  test('runtime properties of a missing entity are a 404', async () => {
    await rejectsWith(h.admin.getTopicRuntimeProperties('nope'), 'MessageEntityNotFoundError', 404);
    await rejectsWith(
      h.admin.getSubscriptionRuntimeProperties('rt', 'nope'),
      'MessageEntityNotFoundError',
      404,
    );
  });
});
