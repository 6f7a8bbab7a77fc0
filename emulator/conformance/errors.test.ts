// Error behaviour: entity status, missing entities, oversized messages, and malformed input that must leave
// the emulator serving everyone else.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { startEmulator } from '../index.ts';
import {
  assertServiceBusError,
  createTopicWithSubscriptions,
  idsOf,
  receiveUntil,
  startHarness,
  uniqueName,
  useHarness,
} from './helpers.ts';

const h = useHarness();

/** Proves the emulator still serves: a full send → receive → complete round trip on a fresh topic. */
async function assertStillServing(): Promise<void> {
  const t = uniqueName('alive');
  await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub' }]);
  const sender = h.client.createSender(t);
  const receiver = h.client.createReceiver(t, 'sub');
  try {
    await sender.sendMessages({ body: 'ok', messageId: 'alive' });
    const got = await receiveUntil(receiver, 1, { settle: 'complete' });
    assert.deepEqual(idsOf(got), ['alive']);
  } finally {
    await receiver.close();
    await sender.close();
  }
}

async function setTopicStatus(topic: string, status: 'Active' | 'Disabled' | 'SendDisabled'): Promise<void> {
  const p = await h.admin.getTopic(topic);
  await h.admin.updateTopic({ ...p, status });
}

async function setSubscriptionStatus(
  topic: string,
  sub: string,
  status: 'Active' | 'Disabled' | 'ReceiveDisabled',
): Promise<void> {
  const p = await h.admin.getSubscription(topic, sub);
  await h.admin.updateSubscription({ ...p, status });
}

describe('entity status', () => {
  test('a SendDisabled topic refuses sends with MessagingEntityDisabled; its subscriptions still deliver', async () => {
    const t = uniqueName('st');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub' }]);
    const sender = h.client.createSender(t);
    await sender.sendMessages({ body: 'before', messageId: 'before' });
    await sender.close();
    await setTopicStatus(t, 'SendDisabled');
    const blocked = h.fastClient.createSender(t);
    await assertServiceBusError(() => blocked.sendMessages({ body: 'x' }), 'MessagingEntityDisabled');
    await blocked.close();
    const receiver = h.client.createReceiver(t, 'sub');
    const got = await receiveUntil(receiver, 1, { settle: 'complete' });
    await receiver.close();
    assert.deepEqual(idsOf(got), ['before']);
    await setTopicStatus(t, 'Active');
    const again = h.client.createSender(t);
    await again.sendMessages({ body: 'after', messageId: 'after' });
    await again.close();
  });

  test('a Disabled topic refuses sends and receives with MessagingEntityDisabled', async () => {
    const t = uniqueName('st');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub' }]);
    await setTopicStatus(t, 'Disabled');
    const sender = h.fastClient.createSender(t);
    const receiver = h.fastClient.createReceiver(t, 'sub');
    try {
      await assertServiceBusError(() => sender.sendMessages({ body: 'x' }), 'MessagingEntityDisabled');
      await assertServiceBusError(
        () => receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 }),
        'MessagingEntityDisabled',
      );
    } finally {
      await receiver.close();
      await sender.close();
    }
  });

  test('a ReceiveDisabled subscription refuses receives but keeps accepting copies', async () => {
    const t = uniqueName('st');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub' }]);
    await setSubscriptionStatus(t, 'sub', 'ReceiveDisabled');
    const sender = h.client.createSender(t);
    await sender.sendMessages({ body: 'kept', messageId: 'kept' });
    await sender.close();
    const receiver = h.fastClient.createReceiver(t, 'sub');
    await assertServiceBusError(
      () => receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 }),
      'MessagingEntityDisabled',
    );
    await receiver.close();
    assert.equal((await h.admin.getSubscriptionRuntimeProperties(t, 'sub')).activeMessageCount, 1);
    await setSubscriptionStatus(t, 'sub', 'Active');
    const r2 = h.client.createReceiver(t, 'sub');
    const got = await receiveUntil(r2, 1, { settle: 'complete' });
    await r2.close();
    assert.deepEqual(idsOf(got), ['kept']);
  });

  test('a Disabled subscription refuses receives with MessagingEntityDisabled', async () => {
    const t = uniqueName('st');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub', options: { requiresSession: true } }]);
    await setSubscriptionStatus(t, 'sub', 'Disabled');
    await assertServiceBusError(() => h.fastClient.acceptSession(t, 'sub', 's1'), 'MessagingEntityDisabled');
  });
});

describe('missing entities', () => {
  test('sending to a missing topic fails with MessagingEntityNotFound', async () => {
    const sender = h.fastClient.createSender(uniqueName('nope'));
    try {
      await assertServiceBusError(() => sender.sendMessages({ body: 'x' }), 'MessagingEntityNotFound');
    } finally {
      await sender.close();
    }
  });

  test('receiving from a missing subscription or topic fails with MessagingEntityNotFound', async () => {
    const t = uniqueName('mis');
    await h.admin.createTopic(t);
    const r1 = h.fastClient.createReceiver(t, 'nope');
    const r2 = h.fastClient.createReceiver(uniqueName('nope'), 'nope');
    try {
      await assertServiceBusError(
        () => r1.receiveMessages(1, { maxWaitTimeInMs: 1_000 }),
        'MessagingEntityNotFound',
      );
      await assertServiceBusError(
        () => r2.receiveMessages(1, { maxWaitTimeInMs: 1_000 }),
        'MessagingEntityNotFound',
      );
      await assertServiceBusError(() => r1.peekMessages(1), 'MessagingEntityNotFound');
    } finally {
      await Promise.all([r1.close(), r2.close()]);
    }
  });

  test('accepting a session on a missing subscription fails with MessagingEntityNotFound', async () => {
    const t = uniqueName('mis');
    await h.admin.createTopic(t);
    await assertServiceBusError(() => h.fastClient.acceptSession(t, 'nope', 's'), 'MessagingEntityNotFound');
    await assertServiceBusError(() => h.fastClient.acceptNextSession(t, 'nope'), 'MessagingEntityNotFound');
  });

  test('a subscription deleted while a sender is open: the next send to its topic still works', async () => {
    const t = uniqueName('mis');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'a' }, { name: 'b' }]);
    const sender = h.client.createSender(t);
    try {
      await sender.sendMessages({ body: 1, messageId: 'one' });
      await h.admin.deleteSubscription(t, 'a');
      await sender.sendMessages({ body: 2, messageId: 'two' });
      const r = h.client.createReceiver(t, 'b');
      const got = await receiveUntil(r, 2, { settle: 'complete' });
      await r.close();
      assert.deepEqual(idsOf(got), ['one', 'two']);
    } finally {
      await sender.close();
    }
  });
});

describe('message size', () => {
  test('an oversized message fails with MessageSizeExceeded and the next send works', async () => {
    const t = uniqueName('big');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub' }]);
    const sender = h.fastClient.createSender(t);
    const receiver = h.client.createReceiver(t, 'sub');
    try {
      await assertServiceBusError(
        () => sender.sendMessages({ body: Buffer.alloc(300 * 1024, 7), messageId: 'too-big' }),
        'MessageSizeExceeded',
      );
      await sender.sendMessages({ body: Buffer.alloc(100 * 1024, 1), messageId: 'fits' });
      const got = await receiveUntil(receiver, 1, { settle: 'complete' });
      assert.deepEqual(idsOf(got), ['fits']);
      assert.equal((got[0]!.body as Buffer).length, 100 * 1024);
    } finally {
      await receiver.close();
      await sender.close();
    }
  });

  test('a batch larger than the size limit is refused as a whole and nothing of it is delivered', async () => {
    const t = uniqueName('big');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub' }]);
    const sender = h.fastClient.createSender(t);
    const receiver = h.client.createReceiver(t, 'sub');
    try {
      const parts = Array.from({ length: 4 }, (_, i) => ({
        body: Buffer.alloc(90 * 1024, i),
        messageId: `part-${i}`,
      }));
      await assertServiceBusError(() => sender.sendMessages(parts), 'MessageSizeExceeded');
      await sender.sendMessages({ body: 'small', messageId: 'small' });
      const got = await receiveUntil(receiver, 1, { settle: 'complete' });
      assert.deepEqual(idsOf(got), ['small']);
      const more = await receiver.receiveMessages(5, { maxWaitTimeInMs: 300 });
      assert.equal(more.length, 0);
    } finally {
      await receiver.close();
      await sender.close();
    }
  });
});

/** Writes raw bytes to the emulator's port and resolves once the emulator has closed the socket. */
function rawExchange(bytes: Buffer[], timeoutMs = 5_000): Promise<{ closed: boolean; received: Buffer }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket: Socket = connect({ host: '127.0.0.1', port: h.port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, received: Buffer.concat(chunks) });
    }, timeoutMs);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, received: Buffer.concat(chunks) });
    });
    socket.on('connect', () => {
      for (const b of bytes) socket.write(b);
    });
  });
}

function httpRaw(method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: h.port,
        method,
        path,
        headers: body ? { 'content-type': 'application/atom+xml' } : {},
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

describe('malformed input leaves the emulator serving', () => {
  test('GET /health answers 200', async () => {
    const res = await httpRaw('GET', '/health');
    assert.equal(res.status, 200);
  });

  test('raw TCP garbage: the connection is closed, the emulator keeps serving', async () => {
    const garbage = Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 37 + 11) % 256));
    const res = await rawExchange([garbage]);
    assert.ok(res.closed, 'the emulator closed the garbage connection');
    await assertStillServing();
  });

  test('AMQP header followed by a malformed frame: the connection is closed, others keep working', async () => {
    const header = Buffer.from([0x41, 0x4d, 0x51, 0x50, 0x00, 0x01, 0x00, 0x00]);
    // A frame claiming 4 GiB, then junk.
    const frame = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef]);
    const res = await rawExchange([header, frame]);
    assert.ok(res.closed, 'the emulator closed the connection');
    await assertStillServing();
  });

  test('SASL header followed by junk: the connection is closed, others keep working', async () => {
    const header = Buffer.from([0x41, 0x4d, 0x51, 0x50, 0x03, 0x01, 0x00, 0x00]);
    const junk = Buffer.from([
      0x00, 0x00, 0x00, 0x10, 0x02, 0x01, 0x00, 0x00, 0x00, 0x53, 0x99, 0x45, 0x45, 0x45, 0x45, 0x45,
    ]);
    const res = await rawExchange([header, junk]);
    assert.ok(res.closed, 'the emulator closed the connection');
    await assertStillServing();
  });

  test('a half-open connection (partial header, then silence) does not block other clients', async () => {
    const socket = connect({ host: '127.0.0.1', port: h.port });
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    socket.write(Buffer.from('AMQ'));
    try {
      await assertStillServing();
    } finally {
      socket.destroy();
    }
  });

  test('HTTP garbage gets a 4xx answer and the admin plane keeps working', async () => {
    const raw = await rawExchange([Buffer.from('NOT-A-METHOD /??? HTTP/9.9\r\njunk\r\n\r\n')]);
    const text = raw.received.toString('latin1');
    assert.ok(
      raw.closed || /^HTTP\/1\.[01] 4\d\d/.test(text),
      `answered 4xx or closed, got ${JSON.stringify(text.slice(0, 40))}`,
    );
    const bad = await httpRaw(
      'PUT',
      `/${uniqueName('xml')}?api-version=2021-05`,
      '<entry><content><not-closed>',
    );
    assert.ok(bad.status >= 400 && bad.status < 500, `malformed XML answered 4xx, got ${bad.status}`);
    const invalidName = await httpRaw('GET', '/%00%01bad?api-version=2021-05');
    assert.ok(
      invalidName.status >= 400 && invalidName.status < 500,
      `bad path answered 4xx, got ${invalidName.status}`,
    );
    await assertStillServing();
  });

  test('a client that sends then drops its connection mid-stream leaves the emulator serving', async () => {
    const t = uniqueName('drop');
    await createTopicWithSubscriptions(h.admin, t, [{ name: 'sub' }]);
    const doomed = h.newClient();
    const sender = doomed.createSender(t);
    await sender.sendMessages({ body: 'x', messageId: 'pre' });
    const receiver = doomed.createReceiver(t, 'sub');
    await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    await doomed.close();
    await assertStillServing();
  });
});

describe('limits and binding', () => {
  test('over the memory budget a send fails with QuotaExceeded; after receiving, sends work again', async () => {
    const small = await startHarness({ memoryBudgetBytes: 200_000 });
    try {
      const t = uniqueName('quota');
      await createTopicWithSubscriptions(small.admin, t, [{ name: 'sub' }]);
      const sender = small.fastClient.createSender(t);
      let accepted = 0;
      let refused: unknown;
      for (let i = 0; i < 100 && refused === undefined; i++) {
        try {
          await sender.sendMessages({ body: Buffer.alloc(10 * 1024, i), messageId: `q${i}` });
          accepted++;
        } catch (err) {
          refused = err;
        }
      }
      assert.ok(refused !== undefined, `the budget was never hit after ${accepted} sends of 10 KiB`);
      await assertServiceBusError(() => Promise.reject(refused), 'QuotaExceeded');
      assert.ok(accepted > 0, 'sends under the budget were accepted');
      // Everything acknowledged before the refusal is there.
      const r = small.client.createReceiver(t, 'sub', { receiveMode: 'receiveAndDelete' });
      const got = await receiveUntil(r, accepted);
      await r.close();
      assert.equal(got.length, accepted);
      await sender.sendMessages({ body: 'fits again', messageId: 'after' });
      await sender.close();
    } finally {
      await small.close();
    }
  });

  test('a larger configured message size limit (1 MiB) accepts a 700 KiB message', async () => {
    const big = await startHarness({ maxMessageSizeBytes: 1024 * 1024 });
    try {
      const t = uniqueName('size');
      await createTopicWithSubscriptions(big.admin, t, [{ name: 'sub' }]);
      const sender = big.client.createSender(t);
      await sender.sendMessages({ body: Buffer.alloc(700 * 1024, 3), messageId: 'large' });
      await sender.close();
      const r = big.client.createReceiver(t, 'sub', { receiveMode: 'receiveAndDelete' });
      const [m] = await receiveUntil(r, 1);
      await r.close();
      assert.equal((m?.body as Buffer).length, 700 * 1024);
    } finally {
      await big.close();
    }
  });

  test('the emulator refuses to bind to a non-loopback address', async () => {
    await assert.rejects(() => startEmulator({ port: 0, host: '0.0.0.0' }));
  });
});
