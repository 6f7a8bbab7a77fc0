// Concurrency: many sessions consumed by concurrent acceptNextSession loops, competing receivers on a
// non-session subscription, and a receiver that dies holding locks.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isServiceBusError } from '@azure/service-bus';
import type { ServiceBusClient, ServiceBusMessage } from '@azure/service-bus';
import {
  createTopicWithSubscriptions,
  describeError,
  expectNoMessage,
  idsOf,
  receiveUntil,
  uniqueName,
  useHarness,
} from './helpers.ts';

const h = useHarness();

async function sendAll(topic: string, messages: ServiceBusMessage[]): Promise<void> {
  const sender = h.client.createSender(topic);
  try {
    for (let i = 0; i < messages.length; i += 100) await sender.sendMessages(messages.slice(i, i + 100));
  } finally {
    await sender.close();
  }
}

describe('concurrency', () => {
  test('100 sessions consumed by concurrent acceptNextSession loops: per-session order kept, no session held twice', async () => {
    const SESSIONS = 100;
    const PER_SESSION = 5;
    const WORKERS = 6;
    const topic = uniqueName('many');
    await createTopicWithSubscriptions(h.admin, topic, [
      // A lock long enough that no worker's session runs out on a loaded machine (seen once at load 15 with 10 s: a
      // SessionLockLost, not an ordering or exclusivity fault, which is what this test is about).
      { name: 'sub', options: { requiresSession: true, lockDuration: 'PT60S' } },
    ]);
    const messages: ServiceBusMessage[] = [];
    for (let i = 0; i < PER_SESSION; i++) {
      for (let s = 0; s < SESSIONS; s++) {
        messages.push({ sessionId: `s${s}`, messageId: `s${s}-${i}`, body: { s, i } });
      }
    }
    await sendAll(topic, messages);

    const clients: ServiceBusClient[] = [
      h.newClient({ timeoutInMs: 2_000, maxRetries: 0 }),
      h.newClient({ timeoutInMs: 2_000, maxRetries: 0 }),
    ];
    const holder = new Map<string, number>(); // session id -> worker currently holding it
    const violations: string[] = [];
    const received = new Map<string, number[]>(); // session id -> message indexes in arrival order
    const errors: string[] = [];
    let total = 0;
    const deadline = Date.now() + 90_000;

    const worker = async (w: number): Promise<void> => {
      const client = clients[w % clients.length]!;
      while (total < SESSIONS * PER_SESSION && Date.now() < deadline) {
        let receiver;
        try {
          receiver = await client.acceptNextSession(topic, 'sub', { maxAutoLockRenewalDurationInMs: 0 });
        } catch (err) {
          if (isServiceBusError(err) && err.code === 'ServiceTimeout') continue; // nothing free right now
          errors.push(`worker ${w} accept: ${describeError(err)}`);
          continue;
        }
        const sid = receiver.sessionId;
        const other = holder.get(sid);
        if (other !== undefined)
          violations.push(`session ${sid} given to worker ${w} while worker ${other} holds it`);
        holder.set(sid, w);
        try {
          for (;;) {
            const batch = await receiver.receiveMessages(PER_SESSION, { maxWaitTimeInMs: 300 });
            if (batch.length === 0) break;
            for (const m of batch) {
              const body = m.body as { s: number; i: number };
              if (`s${body.s}` !== sid)
                violations.push(`message ${String(m.messageId)} delivered on session ${sid}`);
              const list = received.get(sid) ?? [];
              list.push(body.i);
              received.set(sid, list);
              await receiver.completeMessage(m);
              total++;
            }
          }
        } catch (err) {
          errors.push(`worker ${w} session ${sid}: ${describeError(err)}`);
        } finally {
          if (holder.get(sid) === w) holder.delete(sid);
          await receiver.close().catch(() => undefined);
        }
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));

    assert.deepEqual(violations, []);
    assert.deepEqual(errors, []);
    assert.equal(received.size, SESSIONS, 'every session was consumed');
    const outOfOrder: string[] = [];
    for (const [sid, list] of received) {
      // Each message exactly once and in send order (completions never fail here, so no redelivery).
      if (JSON.stringify(list) !== JSON.stringify([0, 1, 2, 3, 4]))
        outOfOrder.push(`${sid}: ${list.join(',')}`);
    }
    assert.deepEqual(outOfOrder, []);
    assert.equal(total, SESSIONS * PER_SESSION);
  });

  test('competing receivers on a non-session subscription get each message exactly once', async () => {
    const COUNT = 300;
    const topic = uniqueName('compete');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub', options: { lockDuration: 'PT30S' } }]);
    await sendAll(
      topic,
      Array.from({ length: COUNT }, (_, i) => ({ messageId: `c${i}`, body: i })),
    );
    const clients = [h.newClient(), h.newClient(), h.newClient()];
    const seen = new Map<string, number>();
    const perReceiver = [0, 0, 0];
    let done = 0;
    const deadline = Date.now() + 60_000;
    await Promise.all(
      clients.map(async (c, idx) => {
        const r = c.createReceiver(topic, 'sub');
        try {
          while (done < COUNT && Date.now() < deadline) {
            const batch = await r.receiveMessages(20, { maxWaitTimeInMs: 500 });
            for (const m of batch) {
              const id = String(m.messageId);
              seen.set(id, (seen.get(id) ?? 0) + 1);
              perReceiver[idx]!++;
              await r.completeMessage(m);
              done++;
            }
          }
        } finally {
          await r.close();
        }
      }),
    );
    const duplicates = [...seen].filter(([, n]) => n > 1).map(([id, n]) => `${id} x${n}`);
    assert.deepEqual(duplicates, []);
    assert.equal(seen.size, COUNT, 'every message delivered');
    assert.equal(
      perReceiver.reduce((a, b) => a + b, 0),
      COUNT,
    );
    const left = h.client.createReceiver(topic, 'sub');
    await expectNoMessage(left, 300);
    await left.close();
  });

  test('a receiver that dies holding locks: its messages come back after the lock duration with deliveryCount + 1', async () => {
    const topic = uniqueName('dies');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub', options: { lockDuration: 'PT3S' } }]);
    await sendAll(
      topic,
      [0, 1, 2].map((i) => ({ messageId: `held-${i}`, body: i })),
    );
    const doomed = h.newClient();
    const r1 = doomed.createReceiver(topic, 'sub', { maxAutoLockRenewalDurationInMs: 0 });
    const held = await receiveUntil(r1, 3);
    assert.deepEqual(idsOf(held), ['held-0', 'held-1', 'held-2']);
    const firstCount = held[0]!.deliveryCount!;
    await doomed.close(); // without settling anything
    const r2 = h.client.createReceiver(topic, 'sub');
    try {
      await expectNoMessage(r2, 800); // still locked by the dead receiver
      const back = await receiveUntil(r2, 3, { timeoutMs: 8_000 });
      assert.deepEqual(idsOf(back), ['held-0', 'held-1', 'held-2']);
      for (const m of back) {
        assert.equal(m.deliveryCount, firstCount + 1, `${String(m.messageId)} deliveryCount`);
        await r2.completeMessage(m);
      }
    } finally {
      await r2.close();
    }
  });

  test('a session receiver that dies: the session comes back after its lock duration, in order', async () => {
    const topic = uniqueName('sdies');
    await createTopicWithSubscriptions(h.admin, topic, [
      { name: 'sub', options: { requiresSession: true, lockDuration: 'PT3S' } },
    ]);
    await sendAll(
      topic,
      [0, 1, 2].map((i) => ({ messageId: `sh-${i}`, body: i, sessionId: 'dying' })),
    );
    const doomed = h.newClient();
    const r1 = await doomed.acceptSession(topic, 'sub', 'dying', { maxAutoLockRenewalDurationInMs: 0 });
    const held = await receiveUntil(r1, 2);
    assert.equal(held.length, 2);
    await doomed.close();
    const r2 = await h.client.acceptSession(topic, 'sub', 'dying');
    try {
      const back = await receiveUntil(r2, 3, { timeoutMs: 8_000, settle: 'complete' });
      assert.deepEqual(
        back.map((m) => m.messageId),
        ['sh-0', 'sh-1', 'sh-2'],
      );
      assert.equal(back[0]!.deliveryCount, held[0]!.deliveryCount! + 1);
    } finally {
      await r2.close();
    }
  });
});
