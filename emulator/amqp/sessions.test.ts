// Session receivers end to end: session filter, lock expiry, session state, and what a dead connection frees.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import rhea from 'rhea';
import type { Harness } from './test-support.ts';
import { errorCode, sleep, startHarness } from './test-support.ts';

describe('session receivers with the real ServiceBusClient', () => {
  let h: Harness;
  let n = 0;
  const sessionSubscription = (lockDurationMs = 30_000): { topic: string; sub: string; tag: string } => {
    const tag = `s${++n}`;
    h.emulator.broker.createSubscription(
      { topicName: 'events', subscriptionName: tag, lockDurationMs, requiresSession: true },
      { name: '$Default', filter: { kind: 'sql', sqlExpression: `test = '${tag}'` } },
    );
    return { topic: 'events', sub: tag, tag };
  };

  before(async () => {
    // The client's attach timeout bounds how long acceptNextSession waits; keep it short for the test.
    h = await startHarness((em) => em.broker.createTopic({ name: 'events' }), { clientTimeoutMs: 2_500 });
  });
  after(async () => {
    await h.close();
  });

  test('acceptSession receives only its session, keeps state and renews its lock', async () => {
    const { topic, sub, tag } = sessionSubscription();
    const sender = h.client.createSender(topic);
    await sender.sendMessages([
      { body: 'a1', sessionId: 'A', applicationProperties: { test: tag } },
      { body: 'b1', sessionId: 'B', applicationProperties: { test: tag } },
      { body: 'a2', sessionId: 'A', applicationProperties: { test: tag } },
    ]);
    const receiver = await h.client.acceptSession(topic, sub, 'A');
    assert.equal(receiver.sessionId, 'A');
    assert.ok(receiver.sessionLockedUntilUtc && receiver.sessionLockedUntilUtc.getTime() > Date.now());
    const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 1_000 });
    assert.deepEqual(got.map((m) => [m.body, m.sessionId]), [
      ['a1', 'A'],
      ['a2', 'A'],
    ]);
    for (const m of got) await receiver.completeMessage(m);
    assert.equal(await receiver.getSessionState(), null);
    await receiver.setSessionState(JSON.stringify({ step: 2 }));
    assert.deepEqual(JSON.parse(String(await receiver.getSessionState())), { step: 2 });
    await receiver.renewSessionLock();
    const peeked = await receiver.peekMessages(5);
    assert.deepEqual(peeked, []);
    await receiver.close();
    await sender.close();
  });

  test('acceptNextSession grants a session with messages, and times out as ServiceTimeout when none is left', async () => {
    const { topic, sub, tag } = sessionSubscription();
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'only', sessionId: 'next-1', applicationProperties: { test: tag } });
    const receiver = await h.client.acceptNextSession(topic, sub);
    assert.equal(receiver.sessionId, 'next-1');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 });
    assert.ok(m);
    await receiver.completeMessage(m);
    await receiver.close();
    assert.equal(await errorCode(h.client.acceptNextSession(topic, sub)), 'ServiceTimeout');
    await sender.close();
  });

  test('a session held by one receiver cannot be locked by another', async () => {
    const { topic, sub, tag } = sessionSubscription();
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'x', sessionId: 'held', applicationProperties: { test: tag } });
    const first = await h.client.acceptSession(topic, sub, 'held');
    assert.equal(await errorCode(h.client.acceptSession(topic, sub, 'held')), 'SessionCannotBeLocked');
    await first.close();
    const second = await h.client.acceptSession(topic, sub, 'held');
    assert.equal(second.sessionId, 'held');
    await second.close();
    await sender.close();
  });

  test('settling after the session lock expired raises SessionLockLost', async () => {
    const { topic, sub, tag } = sessionSubscription(300);
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'slow', sessionId: 'exp', applicationProperties: { test: tag } });
    const receiver = await h.client.acceptSession(topic, sub, 'exp', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 });
    assert.ok(m);
    await sleep(700);
    assert.equal(await errorCode(receiver.completeMessage(m)), 'SessionLockLost');
    await receiver.close();
    await sender.close();
  });

  test('when the broker ends a session receiver, the client sees SessionLockLost on its link', async () => {
    const { topic, sub, tag } = sessionSubscription(300);
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'held', sessionId: 'ended', applicationProperties: { test: tag } });
    const receiver = await h.client.acceptSession(topic, sub, 'ended', { maxAutoLockRenewalDurationInMs: 0 });
    const code = await new Promise<string>((resolve) => {
      receiver.subscribe(
        {
          processMessage: async () => {},
          processError: async (args) => resolve((args.error as { code?: string }).code ?? 'none'),
        },
        { autoCompleteMessages: false },
      );
    });
    assert.equal(code, 'SessionLockLost');
    await receiver.close();
    await sender.close();
  });

  test('every credit drain is answered, even when deliveries used up the credit first', async () => {
    // receiveMessages() drains leftover credit after its short wait and closes the link (fatal for a
    // session) if the drain is not answered; with many messages waiting, transfers race the drain.
    const { topic, sub, tag } = sessionSubscription();
    const sender = h.client.createSender(topic);
    const total = 200;
    await sender.sendMessages(
      Array.from({ length: total }, (_, i) => ({ body: i, sessionId: 'busy', applicationProperties: { test: tag } })),
    );
    const receiver = await h.client.acceptSession(topic, sub, 'busy');
    const seen: number[] = [];
    for (let round = 0; round < 200 && seen.length < total; round++) {
      for (const m of await receiver.receiveMessages(50, { maxWaitTimeInMs: 20 })) {
        seen.push(m.body as number);
        await receiver.completeMessage(m);
      }
    }
    await receiver.close();
    assert.deepEqual(seen, Array.from({ length: total }, (_, i) => i));
    await sender.close();
  });

  test('a connection that dies without detaching releases its session lock', async () => {
    const { topic, sub, tag } = sessionSubscription();
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'kept', sessionId: 'orphan', applicationProperties: { test: tag } });
    // A bare AMQP client that attaches a session receiver and then drops its TCP connection: no detach, no
    // AMQP close.
    const container = rhea.create_container();
    const connection = container.connect({ host: '127.0.0.1', port: h.emulator.port, reconnect: false });
    await new Promise<void>((resolve, reject) => {
      const link = connection.open_receiver({
        source: { address: `${topic}/Subscriptions/${sub}`, filter: { 'com.microsoft:session-filter': 'orphan' } },
        credit_window: 0,
      } as unknown as Parameters<typeof connection.open_receiver>[0]);
      link.on('receiver_open', () => resolve());
      link.on('receiver_error', () => reject(new Error('attach refused')));
    });
    assert.equal(await errorCode(h.client.acceptSession(topic, sub, 'orphan')), 'SessionCannotBeLocked');
    (connection as unknown as { socket: { end(): void } }).socket.end();
    let receiver;
    for (let attempt = 0; attempt < 20 && !receiver; attempt++) {
      receiver = await h.client.acceptSession(topic, sub, 'orphan').catch(() => undefined);
      if (!receiver) await sleep(50);
    }
    assert.ok(receiver, 'the session should be free once the connection is gone');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 });
    assert.equal(m?.body, 'kept');
    await receiver.close();
    await sender.close();
  });
});
