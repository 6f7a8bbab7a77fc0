// Queues through the unmodified @azure/service-bus client: the admin plane (create, get, update, list,
// runtime properties, delete) and the data plane (send, receive, settlement, sessions, dead-letter, defer,
// schedule, peek, forwarding). A queue is the subscriptions' machinery behind one name (broker/queues.ts),
// so these tests mirror what dataplane/sessions/forwarding tests do for subscriptions.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { idsOf, receiveUntil, uniqueName, useHarness, waitFor } from './helpers.ts';

describe('queues', () => {
  const h = useHarness();

  test('admin: create with properties, get, update, list, runtime properties, delete', async () => {
    const name = uniqueName('q-admin');
    const created = await h.admin.createQueue(name, {
      lockDuration: 'PT45S',
      maxDeliveryCount: 7,
      requiresSession: false,
      deadLetteringOnMessageExpiration: true,
      defaultMessageTimeToLive: 'PT1H',
      userMetadata: 'meta',
    });
    assert.equal(created.name, name);
    assert.equal(created.lockDuration, 'PT45S');
    assert.equal(created.maxDeliveryCount, 7);
    assert.equal(created.deadLetteringOnMessageExpiration, true);
    assert.equal(created.userMetadata, 'meta');
    const got = await h.admin.getQueue(name);
    assert.equal(got.defaultMessageTimeToLive, 'PT1H');
    const updated = await h.admin.updateQueue({ ...got, maxDeliveryCount: 3, status: 'SendDisabled' });
    assert.equal(updated.maxDeliveryCount, 3);
    assert.equal(updated.status, 'SendDisabled');
    assert.equal((await h.admin.getQueue(name)).maxDeliveryCount, 3);
    await h.admin.updateQueue({ ...updated, status: 'Active' });
    const names: string[] = [];
    for await (const q of h.admin.listQueues()) names.push(q.name);
    assert.ok(names.includes(name));
    assert.ok(await h.admin.queueExists(name));
    await h.client.createSender(name).sendMessages({ body: 'x', messageId: 'm1' });
    const runtime = await h.admin.getQueueRuntimeProperties(name);
    assert.equal(runtime.activeMessageCount, 1);
    assert.equal(runtime.totalMessageCount, 1);
    await assert.rejects(h.admin.createTopic(name), (e: { statusCode?: number }) => e.statusCode === 409);
    await h.admin.deleteQueue(name);
    assert.equal(await h.admin.queueExists(name), false);
  });

  test('send, receive, complete, abandon (redelivery), dead-letter with reason, defer and receive by sequence number', async () => {
    const name = uniqueName('q-data');
    await h.admin.createQueue(name);
    const sender = h.client.createSender(name);
    await sender.sendMessages(['a', 'b', 'c', 'd'].map((id) => ({ body: id, messageId: id })));
    const receiver = h.client.createReceiver(name);
    const [a, b, c, d] = await receiveUntil(receiver, 4);
    assert.deepEqual(idsOf([a!, b!, c!, d!]), ['a', 'b', 'c', 'd']);
    await receiver.completeMessage(a!);
    await receiver.abandonMessage(b!);
    await receiver.deadLetterMessage(c!, {
      deadLetterReason: 'Bad',
      deadLetterErrorDescription: 'bad input',
    });
    await receiver.deferMessage(d!);
    const [again] = await receiveUntil(receiver, 1);
    assert.equal(again?.messageId, 'b');
    assert.equal(again?.deliveryCount, 1);
    await receiver.completeMessage(again!);
    const [deferred] = await receiver.receiveDeferredMessages([d!.sequenceNumber!]);
    assert.equal(deferred?.messageId, 'd');
    await receiver.completeMessage(deferred!);
    const dlq = h.client.createReceiver(name, { subQueueType: 'deadLetter' });
    const [dead] = await receiveUntil(dlq, 1);
    assert.equal(dead?.messageId, 'c');
    assert.equal(dead?.deadLetterReason, 'Bad');
    assert.equal(dead?.deadLetterErrorDescription, 'bad input');
    await dlq.completeMessage(dead!);
    const runtime = await h.admin.getQueueRuntimeProperties(name);
    assert.equal(runtime.totalMessageCount, 0);
  });

  test('peek, schedule and cancel', async () => {
    const name = uniqueName('q-sched');
    await h.admin.createQueue(name);
    const sender = h.client.createSender(name);
    const at = new Date(Date.now() + 1_500);
    const [keep, cancel] = await sender.scheduleMessages(
      [
        { body: 'later', messageId: 'later' },
        { body: 'never', messageId: 'never' },
      ],
      at,
    );
    await sender.cancelScheduledMessages([cancel!]);
    assert.equal((await h.admin.getQueueRuntimeProperties(name)).scheduledMessageCount, 1);
    await sender.sendMessages([{ body: 'now', messageId: 'now' }]);
    const receiver = h.client.createReceiver(name);
    const peeked = await receiver.peekMessages(10);
    assert.deepEqual(idsOf(peeked), ['now']);
    const got = await receiveUntil(receiver, 2, { timeoutMs: 10_000, settle: 'complete' });
    // The scheduled message keeps the sequence number it was given when scheduled (as from a topic).
    assert.deepEqual(idsOf(got).sort(), ['later', 'now']);
    const later = got.find((m) => m.messageId === 'later');
    assert.equal(String(later?.sequenceNumber), String(keep));
    assert.ok(later?.scheduledEnqueueTimeUtc instanceof Date);
  });

  test('sessions: acceptSession, acceptNextSession, session state, lock renewal', async () => {
    const name = uniqueName('q-sess');
    await h.admin.createQueue(name, { requiresSession: true });
    const sender = h.client.createSender(name);
    await sender.sendMessages([
      { body: 1, messageId: 'a1', sessionId: 'a' },
      { body: 2, messageId: 'b1', sessionId: 'b' },
      { body: 3, messageId: 'a2', sessionId: 'a' },
    ]);
    const a = await h.client.acceptSession(name, 'a');
    assert.deepEqual(idsOf(await receiveUntil(a, 2, { settle: 'complete' })), ['a1', 'a2']);
    await a.setSessionState('done');
    assert.equal(String(await a.getSessionState()), 'done');
    const before = a.sessionLockedUntilUtc!.getTime();
    await new Promise((r) => setTimeout(r, 20));
    await a.renewSessionLock();
    assert.ok(a.sessionLockedUntilUtc!.getTime() >= before);
    await a.close();
    const next = await h.client.acceptNextSession(name, { maxAutoLockRenewalDurationInMs: 0 });
    assert.equal(next.sessionId, 'b');
    assert.deepEqual(idsOf(await receiveUntil(next, 1, { settle: 'complete' })), ['b1']);
    await next.close();
  });

  test('forwarding: a subscription forwards to a queue, a queue forwards to a queue, dead letters forward too', async () => {
    const topic = uniqueName('fw-topic');
    const middle = uniqueName('q-middle');
    const final = uniqueName('q-final');
    const dlqTarget = uniqueName('q-dlq');
    await h.admin.createQueue(final);
    await h.admin.createQueue(dlqTarget);
    await h.admin.createQueue(middle, { forwardTo: final });
    await h.admin.createTopic(topic);
    await h.admin.createSubscription(topic, 's', { forwardTo: middle });
    await h.client.createSender(topic).sendMessages({ body: 'hop', messageId: 'hop' });
    const finalReceiver = h.client.createReceiver(final);
    assert.deepEqual(idsOf(await receiveUntil(finalReceiver, 1, { settle: 'complete' })), ['hop']);

    const source = uniqueName('q-source');
    await h.admin.createQueue(source, { forwardDeadLetteredMessagesTo: dlqTarget, maxDeliveryCount: 1 });
    await h.client.createSender(source).sendMessages({ body: 'dead', messageId: 'dead' });
    const r = h.client.createReceiver(source);
    const [m] = await receiveUntil(r, 1);
    await r.deadLetterMessage(m!, { deadLetterReason: 'Nope', deadLetterErrorDescription: 'no' });
    const dlqReceiver = h.client.createReceiver(dlqTarget);
    const [forwarded] = await receiveUntil(dlqReceiver, 1, { settle: 'complete' });
    assert.equal(forwarded?.messageId, 'dead');
    assert.equal(forwarded?.deadLetterReason, 'Nope');
    await waitFor(
      async () =>
        (await h.admin.getQueueRuntimeProperties(source)).totalMessageCount === 0 ? true : undefined,
      'source queue empty',
    );
  });

  test('receive-and-delete and a queue that is disabled for send', async () => {
    const name = uniqueName('q-rad');
    await h.admin.createQueue(name);
    await h.client.createSender(name).sendMessages({ body: 'x', messageId: 'x' });
    const r = h.client.createReceiver(name, { receiveMode: 'receiveAndDelete' });
    assert.deepEqual(idsOf(await receiveUntil(r, 1)), ['x']);
    assert.equal((await h.admin.getQueueRuntimeProperties(name)).activeMessageCount, 0);
    const q = await h.admin.getQueue(name);
    await h.admin.updateQueue({ ...q, status: 'SendDisabled' });
    await assert.rejects(h.client.createSender(name).sendMessages({ body: 'y' }), (e: { code?: string }) =>
      ['MessagingEntityDisabled', 'MessagingEntityNotFound', 'UnauthorizedAccess'].includes(String(e.code)),
    );
  });
});
