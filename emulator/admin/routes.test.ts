import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { matchRoute, RouteError } from './routes.ts';

describe('admin routes', () => {
  test('map the paths the admin client uses', () => {
    assert.deepEqual(matchRoute('/$Resources/Topics'), { kind: 'topicList' });
    assert.deepEqual(matchRoute('/orders'), { kind: 'topic', topic: 'orders' });
    assert.deepEqual(matchRoute('/orders/Subscriptions/'), { kind: 'subscriptionList', topic: 'orders' });
    assert.deepEqual(matchRoute('/orders/Subscriptions/s1'), {
      kind: 'subscription',
      topic: 'orders',
      subscription: 's1',
    });
    assert.deepEqual(matchRoute('/orders/Subscriptions/s1/Rules/'), {
      kind: 'ruleList',
      topic: 'orders',
      subscription: 's1',
    });
    assert.deepEqual(matchRoute('/orders/subscriptions/s1/rules/$Default'), {
      kind: 'rule',
      topic: 'orders',
      subscription: 's1',
      rule: '$Default',
    });
  });

  test('decode percent-encoded names', () => {
    assert.deepEqual(matchRoute('/a%20b'), { kind: 'topic', topic: 'a b' });
    assert.throws(() => matchRoute('/a%ZZ'), RouteError);
  });

  test('do not match the root or unknown $ resources', () => {
    assert.equal(matchRoute('/'), undefined);
    assert.equal(matchRoute('/$Resources/EventHubs'), undefined);
  });
});
