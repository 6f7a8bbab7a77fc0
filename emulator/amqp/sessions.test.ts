// Session receivers end to end: session filter, lock expiry, session state, and what a dead connection frees.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import rhea from 'rhea';
import type { Harness } from './test-support.ts';
import { errorCode, putToken, sleep, startHarness } from './test-support.ts';

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
    assert.deepEqual(
      got.map((m) => [m.body, m.sessionId]),
      [
        ['a1', 'A'],
        ['a2', 'A'],
      ],
    );
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

  test('a bare rhea receiver (not the ServiceBusClient): every credit drain is answered, even when deliveries used up the credit first', async () => {
    // A drain requested while our transfers are still on the wire finds no credit left on our side; rhea's sender
    // would not answer it, and the Service Bus client closes the link (fatal for a session) when a drain is not
    // answered within 200 ms. A bare AMQP receiver asks for a drain as soon as each round's first message
    // arrives, so the rest of the round's transfers race it; every drain must be answered. (Bare client: the
    // Service Bus client's own 200 ms timer made this test fail on a loaded machine, not the emulator.)
    const { topic, sub, tag } = sessionSubscription();
    const sender = h.client.createSender(topic);
    const total = 200;
    await sender.sendMessages(
      Array.from({ length: total }, (_, i) => ({
        body: i,
        messageId: `m-${i}`,
        sessionId: 'busy',
        applicationProperties: { test: tag },
      })),
    );
    await sender.close();
    const container = rhea.create_container();
    const connection = container.connect({ host: '127.0.0.1', port: h.emulator.port, reconnect: false });
    try {
      await putToken(connection, h.emulator);
      const link = connection.open_receiver({
        source: {
          address: `${topic}/Subscriptions/${sub}`,
          filter: { 'com.microsoft:session-filter': 'busy' },
        },
        credit_window: 0,
        autoaccept: false,
        snd_settle_mode: 1, // receive-and-delete: nothing to settle
      } as unknown as Parameters<typeof connection.open_receiver>[0]);
      await new Promise<void>((resolve) => link.once('receiver_open', () => resolve()));
      const seen: string[] = [];
      let drainsAsked = 0;
      let drainsAnswered = 0;
      let onDrained: () => void = () => undefined;
      link.on('message', (ctx) => {
        seen.push(String(ctx.message?.message_id));
        if (!link.drain) {
          drainsAsked++;
          link.drain_credit();
        }
      });
      link.on('receiver_drained', () => {
        drainsAnswered++;
        link.drain = false;
        onDrained();
      });
      for (let round = 0; seen.length < total && round < 50; round++) {
        const drained = new Promise<void>((resolve, reject) => {
          // Bounded so that an unanswered drain fails the test instead of hanging it.
          const timer = setTimeout(() => reject(new Error(`drain ${drainsAsked} was not answered`)), 10_000);
          onDrained = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        link.add_credit(50);
        await drained;
      }
      assert.equal(drainsAnswered, drainsAsked);
      assert.ok(drainsAsked >= 4, `expected a drain per round, got ${drainsAsked}`);
      assert.deepEqual(
        seen,
        Array.from({ length: total }, (_, i) => `m-${i}`),
      );
    } finally {
      connection.close();
    }
  });

  test('a connection that dies without detaching releases its session lock', async () => {
    const { topic, sub, tag } = sessionSubscription();
    const sender = h.client.createSender(topic);
    await sender.sendMessages({ body: 'kept', sessionId: 'orphan', applicationProperties: { test: tag } });
    // A bare AMQP client that attaches a session receiver and then drops its TCP connection: no detach, no
    // AMQP close.
    const container = rhea.create_container();
    const connection = container.connect({ host: '127.0.0.1', port: h.emulator.port, reconnect: false });
    await putToken(connection, h.emulator);
    await new Promise<void>((resolve, reject) => {
      const link = connection.open_receiver({
        source: {
          address: `${topic}/Subscriptions/${sub}`,
          filter: { 'com.microsoft:session-filter': 'orphan' },
        },
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
