// Admin plane (ATOM over HTTP, as ServiceBusAdministrationClient speaks it): CRUD, list paging, exists,
// conflicts and not-found answers, runtime properties.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertRestError, receiveUntil, uniqueName, useHarness } from './helpers.ts';

const h = useHarness();

describe('topics', () => {
  test('create, get, update, exists and delete a topic', async () => {
    const t = uniqueName('adm');
    assert.equal(await h.admin.topicExists(t), false);
    const created = await h.admin.createTopic(t, {
      defaultMessageTimeToLive: 'PT1H',
      maxSizeInMegabytes: 2048,
      userMetadata: 'meta',
    });
    assert.equal(created.name, t);
    assert.equal(created.defaultMessageTimeToLive, 'PT1H');
    assert.equal(created.userMetadata, 'meta');
    assert.equal(await h.admin.topicExists(t), true);
    const got = await h.admin.getTopic(t);
    assert.equal(got.name, t);
    assert.equal(got.status, 'Active');
    assert.equal(got.defaultMessageTimeToLive, 'PT1H');
    assert.equal(got.maxSizeInMegabytes, 2048);
    const updated = await h.admin.updateTopic({
      ...got,
      defaultMessageTimeToLive: 'PT2H',
      userMetadata: 'changed',
    });
    assert.equal(updated.defaultMessageTimeToLive, 'PT2H');
    const again = await h.admin.getTopic(t);
    assert.equal(again.defaultMessageTimeToLive, 'PT2H');
    assert.equal(again.userMetadata, 'changed');
    await h.admin.deleteTopic(t);
    assert.equal(await h.admin.topicExists(t), false);
  });

  test('creating a topic twice answers 409; getting, updating or deleting a missing one answers 404', async () => {
    const t = uniqueName('adm');
    await h.admin.createTopic(t);
    await assertRestError(() => h.admin.createTopic(t), 409, 'MessageEntityAlreadyExistsError');
    const missing = uniqueName('gone');
    await assertRestError(() => h.admin.getTopic(missing), 404, 'MessageEntityNotFoundError');
    await assertRestError(() => h.admin.deleteTopic(missing), 404, 'MessageEntityNotFoundError');
    const props = await h.admin.getTopic(t);
    await assertRestError(() => h.admin.updateTopic({ ...props, name: missing }), 404);
    await assertRestError(() => h.admin.getTopicRuntimeProperties(missing), 404);
  });

  test('listTopics pages with $skip/$top and lists every topic once', async () => {
    const prefix = uniqueName('lst');
    const names = Array.from({ length: 7 }, (_, i) => `${prefix}-${i}`);
    for (const n of names) await h.admin.createTopic(n);
    const seen: string[] = [];
    let pages = 0;
    for await (const page of h.admin.listTopics().byPage({ maxPageSize: 3 })) {
      pages++;
      assert.ok(page.length <= 3, `page of at most 3, got ${page.length}`);
      for (const t of page) seen.push(t.name);
    }
    const mine = seen.filter((n) => n.startsWith(prefix)).sort();
    assert.deepEqual(mine, names);
    assert.equal(new Set(seen).size, seen.length, 'no topic listed twice');
    assert.ok(pages >= 3, `paged (${pages} pages)`);
  });

  test('topic runtime properties report subscription count, size and timestamps', async () => {
    const t = uniqueName('adm');
    await h.admin.createTopic(t);
    await h.admin.createSubscription(t, 'a');
    await h.admin.createSubscription(t, 'b');
    const sender = h.client.createSender(t);
    await sender.sendMessages({ body: Buffer.alloc(1000, 1), messageId: 'sz' });
    await sender.close();
    const rt = await h.admin.getTopicRuntimeProperties(t);
    assert.equal(rt.name, t);
    assert.equal(rt.subscriptionCount, 2);
    assert.ok((rt.sizeInBytes ?? 0) > 0, 'size counts stored messages');
    assert.ok(rt.createdAt instanceof Date && !Number.isNaN(rt.createdAt.getTime()));
    assert.ok(rt.modifiedAt instanceof Date);
  });
});

describe('subscriptions', () => {
  test('create, get, update (If-Match), list, exists and delete subscriptions', async () => {
    const t = uniqueName('adm');
    await h.admin.createTopic(t);
    const created = await h.admin.createSubscription(t, 's1', {
      lockDuration: 'PT45S',
      requiresSession: true,
      maxDeliveryCount: 7,
      deadLetteringOnMessageExpiration: true,
      defaultMessageTimeToLive: 'P1D',
      userMetadata: 'sub-meta',
    });
    assert.equal(created.subscriptionName, 's1');
    assert.equal(created.topicName, t);
    const fwdTarget = uniqueName('fwd');
    await h.admin.createTopic(fwdTarget);
    await h.admin.createSubscription(t, 's2', { forwardTo: fwdTarget });
    const got = await h.admin.getSubscription(t, 's1');
    assert.equal(got.lockDuration, 'PT45S');
    assert.equal(got.requiresSession, true);
    assert.equal(got.maxDeliveryCount, 7);
    assert.equal(got.deadLetteringOnMessageExpiration, true);
    assert.equal(got.defaultMessageTimeToLive, 'P1D');
    assert.equal(got.userMetadata, 'sub-meta');
    assert.equal(got.status, 'Active');
    const s2 = await h.admin.getSubscription(t, 's2');
    assert.ok(
      s2.forwardTo && s2.forwardTo.toLowerCase().endsWith(fwdTarget.toLowerCase()),
      `forwardTo names the target, got ${s2.forwardTo}`,
    );

    await h.admin.updateSubscription({ ...got, maxDeliveryCount: 3, lockDuration: 'PT10S' });
    const updated = await h.admin.getSubscription(t, 's1');
    assert.equal(updated.maxDeliveryCount, 3);
    assert.equal(updated.lockDuration, 'PT10S');
    assert.equal(updated.requiresSession, true);

    const listed: string[] = [];
    for await (const s of h.admin.listSubscriptions(t)) listed.push(s.subscriptionName);
    assert.deepEqual(listed.sort(), ['s1', 's2']);
    assert.equal(await h.admin.subscriptionExists(t, 's1'), true);

    await assertRestError(() => h.admin.createSubscription(t, 's1'), 409, 'MessageEntityAlreadyExistsError');
    await assertRestError(() => h.admin.getSubscription(t, 'nope'), 404, 'MessageEntityNotFoundError');
    await assertRestError(() => h.admin.createSubscription(uniqueName('notopic'), 's'), 404);

    await h.admin.deleteSubscription(t, 's1');
    assert.equal(await h.admin.subscriptionExists(t, 's1'), false);
    await assertRestError(() => h.admin.deleteSubscription(t, 's1'), 404);
  });

  test('listSubscriptions pages with $skip/$top', async () => {
    const t = uniqueName('adm');
    await h.admin.createTopic(t);
    const names = Array.from({ length: 5 }, (_, i) => `s${i}`);
    for (const n of names) await h.admin.createSubscription(t, n);
    const seen: string[] = [];
    for await (const page of h.admin.listSubscriptions(t).byPage({ maxPageSize: 2 })) {
      assert.ok(page.length <= 2);
      for (const s of page) seen.push(s.subscriptionName);
    }
    assert.deepEqual(seen.sort(), names);
  });

  test('deleting a topic deletes its subscriptions', async () => {
    const t = uniqueName('adm');
    await h.admin.createTopic(t);
    await h.admin.createSubscription(t, 's');
    await h.admin.deleteTopic(t);
    await h.admin.createTopic(t);
    assert.equal(await h.admin.subscriptionExists(t, 's'), false);
  });

  test('subscription runtime properties count active, dead-lettered and total messages', async () => {
    const t = uniqueName('adm');
    await h.admin.createTopic(t);
    await h.admin.createSubscription(t, 's');
    const sender = h.client.createSender(t);
    await sender.sendMessages([1, 2, 3, 4].map((i) => ({ body: i, messageId: `rt${i}` })));
    await sender.close();
    const receiver = h.client.createReceiver(t, 's');
    const [m] = await receiveUntil(receiver, 1);
    assert.ok(m);
    await receiver.deadLetterMessage(m);
    await receiver.close();
    const rt = await h.admin.getSubscriptionRuntimeProperties(t, 's');
    assert.equal(rt.subscriptionName, 's');
    assert.equal(rt.topicName, t);
    assert.equal(rt.activeMessageCount, 3);
    assert.equal(rt.deadLetterMessageCount, 1);
    assert.equal(rt.totalMessageCount, 4);
    assert.equal(rt.transferDeadLetterMessageCount, 0);
    assert.ok(rt.createdAt instanceof Date);
    const all: string[] = [];
    for await (const r of h.admin.listSubscriptionsRuntimeProperties(t)) all.push(r.subscriptionName);
    assert.deepEqual(all, ['s']);
  });
});

describe('rules', () => {
  test('create, get, update, list and delete rules; 409 and 404 answers', async () => {
    const t = uniqueName('adm');
    await h.admin.createTopic(t);
    await h.admin.createSubscription(t, 's');
    const created = await h.admin.createRule(
      t,
      's',
      'r1',
      { sqlExpression: "user.A = 'x'" },
      { sqlExpression: "SET user.B = 'y'" },
    );
    assert.equal(created.name, 'r1');
    const got = await h.admin.getRule(t, 's', 'r1');
    assert.equal((got.filter as { sqlExpression: string }).sqlExpression, "user.A = 'x'");
    assert.equal(got.action.sqlExpression, "SET user.B = 'y'");

    await h.admin.createRule(t, 's', 'corr', {
      correlationId: 'cid',
      subject: 'lbl',
      applicationProperties: { K: 'v', N: 3 },
    });
    const corr = await h.admin.getRule(t, 's', 'corr');
    const cf = corr.filter as {
      correlationId?: string;
      subject?: string;
      applicationProperties?: Record<string, unknown>;
    };
    assert.equal(cf.correlationId, 'cid');
    assert.equal(cf.subject, 'lbl');
    assert.deepEqual(cf.applicationProperties, { K: 'v', N: 3 });

    await h.admin.updateRule(t, 's', { ...got, filter: { sqlExpression: "user.A = 'z'" } });
    const updated = await h.admin.getRule(t, 's', 'r1');
    assert.equal((updated.filter as { sqlExpression: string }).sqlExpression, "user.A = 'z'");

    const names: string[] = [];
    for await (const r of h.admin.listRules(t, 's')) names.push(r.name);
    assert.deepEqual(names.sort(), ['$Default', 'corr', 'r1']);
    assert.equal(await h.admin.ruleExists(t, 's', 'r1'), true);

    await assertRestError(() => h.admin.createRule(t, 's', 'r1', { sqlExpression: '1=1' }), 409);
    await assertRestError(() => h.admin.getRule(t, 's', 'nope'), 404);
    await h.admin.deleteRule(t, 's', 'r1');
    assert.equal(await h.admin.ruleExists(t, 's', 'r1'), false);
    await assertRestError(() => h.admin.deleteRule(t, 's', 'r1'), 404);
  });

  test('a subscription created with a default rule has that rule instead of $Default', async () => {
    const t = uniqueName('adm');
    await h.admin.createTopic(t);
    await h.admin.createSubscription(t, 's', {
      defaultRuleOptions: {
        name: 'only',
        filter: { sqlExpression: "user.To = 'me'" },
        action: { sqlExpression: "SET user.From = 'x'" },
      },
    });
    const names: string[] = [];
    for await (const r of h.admin.listRules(t, 's')) names.push(r.name);
    assert.deepEqual(names, ['only']);
  });
});
