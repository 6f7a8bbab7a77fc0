// Subscriptions through the real ServiceBusAdministrationClient.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { collect, rejectsWith, startAdminHarness, type AdminHarness } from './test-harness.ts';

describe('admin plane: subscriptions', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdminHarness();
    await h.admin.createTopic('orders');
    await h.admin.createTopic('Resolver');
  });
  after(async () => {
    await h.close();
  });

  test('createSubscription stores every option and getSubscription reads them back', async () => {
    await h.admin.createSubscription('orders', 's-full', {
      forwardTo: 'Resolver',
      requiresSession: true,
      lockDuration: 'PT5S',
      maxDeliveryCount: 3,
      defaultMessageTimeToLive: 'P2D',
      deadLetteringOnMessageExpiration: true,
      deadLetteringOnFilterEvaluationExceptions: false,
      status: 'ReceiveDisabled',
      userMetadata: 'meta',
    });
    const s = await h.admin.getSubscription('orders', 's-full');
    assert.equal(s.topicName, 'orders');
    assert.equal(s.subscriptionName, 's-full');
    // Like Azure, ForwardTo comes back as the absolute address of the target.
    assert.equal(s.forwardTo, `sb://127.0.0.1:${h.port}/Resolver`);
    assert.equal(s.requiresSession, true);
    assert.equal(s.lockDuration, 'PT5S');
    assert.equal(s.maxDeliveryCount, 3);
    assert.equal(s.defaultMessageTimeToLive, 'P2D');
    assert.equal(s.deadLetteringOnMessageExpiration, true);
    assert.equal(s.deadLetteringOnFilterEvaluationExceptions, false);
    assert.equal(s.status, 'ReceiveDisabled');
    assert.equal(s.userMetadata, 'meta');
    // What the broker was told: the entity name, not the address.
    assert.equal(h.broker.getSubscription('orders', 's-full').forwardTo, 'Resolver');
  });

  test('a subscription without options gets the broker defaults and a $Default rule', async () => {
    const s = await h.admin.createSubscription('orders', 's-plain');
    assert.equal(s.requiresSession, false);
    assert.equal(s.forwardTo, undefined);
    assert.equal(s.status, 'Active');
    const rules = await collect(h.admin.listRules('orders', 's-plain'));
    assert.deepEqual(
      rules.map((r) => [r.name, r.filter]),
      [['$Default', { sqlExpression: '1=1', sqlParameters: undefined }]],
    );
  });

  test('updateSubscription (If-Match) changes settings and can remove forwarding', async () => {
    await h.admin.createSubscription('orders', 's-update', { forwardTo: 'Resolver', maxDeliveryCount: 5 });
    const s = await h.admin.getSubscription('orders', 's-update');
    s.forwardTo = undefined;
    s.maxDeliveryCount = 7;
    s.lockDuration = 'PT10S';
    s.status = 'Disabled';
    const updated = await h.admin.updateSubscription(s);
    assert.equal(updated.maxDeliveryCount, 7);
    const again = await h.admin.getSubscription('orders', 's-update');
    assert.equal(again.forwardTo, undefined);
    assert.equal(again.maxDeliveryCount, 7);
    assert.equal(again.lockDuration, 'PT10S');
    assert.equal(again.status, 'Disabled');
  });

  test('changing requiresSession of an existing subscription is rejected with a 400', async () => {
    await h.admin.createSubscription('orders', 's-session', { requiresSession: false });
    const s = await h.admin.getSubscription('orders', 's-session');
    const message = await rejectsWith(
      h.admin.updateSubscription({ ...s, requiresSession: true }),
      'ServiceError',
      400,
    );
    assert.match(message, /RequiresSession/);
  });

  test('duplicates are 409; missing subscriptions and topics are 404', async () => {
    await h.admin.createSubscription('orders', 's-dup');
    await rejectsWith(h.admin.createSubscription('orders', 's-dup'), 'MessageEntityAlreadyExistsError', 409);
    await rejectsWith(h.admin.getSubscription('orders', 's-none'), 'MessageEntityNotFoundError', 404);
    await rejectsWith(h.admin.createSubscription('no-topic', 's'), 'MessageEntityNotFoundError', 404);
    const s = await h.admin.getSubscription('orders', 's-dup');
    await rejectsWith(
      h.admin.updateSubscription({ ...s, subscriptionName: 's-none' }),
      'MessageEntityNotFoundError',
      404,
    );
  });

  test('subscriptionExists, deleteSubscription and a second delete', async () => {
    await h.admin.createSubscription('orders', 's-delete');
    assert.equal(await h.admin.subscriptionExists('orders', 's-delete'), true);
    await h.admin.deleteSubscription('orders', 's-delete');
    assert.equal(await h.admin.subscriptionExists('orders', 's-delete'), false);
    await rejectsWith(h.admin.deleteSubscription('orders', 's-delete'), 'MessageEntityNotFoundError', 404);
  });

  test('listSubscriptions pages with $skip/$top', async () => {
    await h.admin.createTopic('paged');
    for (const name of ['c', 'a', 'b']) await h.admin.createSubscription('paged', name);
    const pages: string[][] = [];
    for await (const page of h.admin.listSubscriptions('paged').byPage({ maxPageSize: 2 })) {
      pages.push(page.map((s) => `${s.topicName}/${s.subscriptionName}`));
    }
    assert.deepEqual(pages, [['paged/a', 'paged/b'], ['paged/c']]);
  });
});
