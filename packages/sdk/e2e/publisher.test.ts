// The publisher on the emulator: deterministic ids, session keys, explicit ids, batches paged by size, schedule
// and cancel, and validation (payloads and message sizes) that sends nothing.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { HandlerRegistry } from '@nimbus/sdk';
import type { HandlerContext } from '@nimbus/sdk';
import { deterministicMessageId, Publisher, PublishValidationError } from '@nimbus/sdk';
import { eventually, withHarness } from './harness.ts';

describe('publisher', () => {
  test('message ids are deterministic per payload', () => {
    const a = deterministicMessageId('OrderPlaced', JSON.stringify({ orderId: '1' }));
    assert.equal(a, deterministicMessageId('OrderPlaced', JSON.stringify({ orderId: '1' })));
    assert.notEqual(a, deterministicMessageId('OrderPlaced', JSON.stringify({ orderId: '2' })));
    assert.match(a, /^OrderPlaced-[0-9a-f]{16}$/);
  });

  test('explicit session, correlation and message ids round-trip to the handler; no session key gives a fresh session', async () => {
    await withHarness(async (h) => {
      const seen: HandlerContext[] = [];
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('CustomerUpdated', (_e, ctx) => void seen.push(ctx)),
      });
      const pub = h.publisher('shop');
      await pub.publish(
        'CustomerUpdated',
        { customerId: 'P-1' },
        { sessionId: 'explicit-s', correlationId: 'corr-1', messageId: 'msg-1' },
      );
      const noKey = await pub.publish('CustomerUpdated', { name: 'no session key here' });
      assert.match(noKey.sessionId, /^[0-9a-f-]{36}$/);
      await eventually(() => (seen.length === 2 ? true : undefined), 'two deliveries');
      const explicit = seen.find((c) => c.sessionId === 'explicit-s')!;
      assert.equal(explicit.correlationId, 'corr-1');
      assert.equal(explicit.messageId, 'msg-1');
      assert.equal(explicit.originatingMessageId, 'msg-1');
    });
  });

  test('publishMany shares one correlation id and pages by size; an empty list sends nothing', async () => {
    await withHarness(async (h) => {
      const seen: Array<{ n: number; correlationId?: string }> = [];
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<{ n: number }>(
          'CustomerUpdated',
          (e, ctx) => void seen.push({ n: e.n, correlationId: ctx.correlationId }),
        ),
      });
      const pub = h.publisher('shop');
      assert.deepEqual(await pub.publishMany([]), []);
      // 8 x 60 KB is well over the emulator's 256 KB message limit: the batch must be split to be sent at all.
      const big = 'x'.repeat(60_000);
      const events = Array.from({ length: 8 }, (_, n) => ({
        eventTypeId: 'CustomerUpdated',
        payload: { customerId: 'PM-1', n, big },
      }));
      const published = await pub.publishMany(events, 'batch-corr');
      assert.equal(published.length, 8);
      await eventually(() => (seen.length === 8 ? true : undefined), 'eight deliveries', 20_000);
      assert.deepEqual(
        seen.map((s) => s.n),
        [0, 1, 2, 3, 4, 5, 6, 7],
      );
      assert.ok(seen.every((s) => s.correlationId === 'batch-corr'));
    });
  });

  test('publishMany with an oversized event after a small one sends nothing and throws PublishValidationError', async () => {
    await withHarness(async (h) => {
      const seen: string[] = [];
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<{ n: string }>('CustomerUpdated', (e) => void seen.push(e.n)),
      });
      const pub = h.publisher('shop');
      const huge = 'x'.repeat(300_000); // over the emulator's 256 KB message limit, even in a batch of its own
      // One session for all of them: the host handles a session in order, so anything the rejected call sent would
      // be handled before the marker published after it.
      const event = (n: string, extra: Record<string, unknown> = {}) => ({
        eventTypeId: 'CustomerUpdated',
        payload: { customerId: 'PV-1', n, ...extra },
      });
      await assert.rejects(
        pub.publishMany([event('small-1'), event('oversized', { huge }), event('small-2')]),
        (e: unknown) => {
          assert.ok(e instanceof PublishValidationError, String(e));
          assert.match(e.message, /is larger than the broker accepts/);
          return true;
        },
      );
      await pub.publish('CustomerUpdated', { customerId: 'PV-1', n: 'marker' });
      await eventually(() => (seen.includes('marker') ? true : undefined), 'the marker', 20_000);
      assert.deepEqual(seen, ['marker'], 'nothing of the rejected publishMany arrived before the marker');
    });
  });

  test('schedule delivers later; cancel prevents delivery', async () => {
    await withHarness(async (h) => {
      const seen: string[] = [];
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<{ customerId: string }>(
          'CustomerUpdated',
          (e) => void seen.push(e.customerId),
        ),
      });
      const pub = h.publisher('shop');
      const cancelled = await pub.schedule(
        'CustomerUpdated',
        { customerId: 'SC-cancelled' },
        new Date(Date.now() + 800),
      );
      await pub.schedule('CustomerUpdated', { customerId: 'SC-kept' }, new Date(Date.now() + 800));
      await pub.cancelScheduled(cancelled);
      await eventually(() => (seen.length >= 1 ? true : undefined), 'the scheduled delivery');
      await h.resolverRest('SC-cancelled', 1500);
      assert.deepEqual(seen, ['SC-kept']);
    });
  });

  test('an invalid payload throws before anything is sent', async () => {
    await withHarness(async (h) => {
      const pub = new Publisher({
        client: h.client,
        endpointId: 'shop',
        schemas: { CustomerUpdated: z.object({ customerId: z.string() }) },
      });
      try {
        await assert.rejects(pub.publish('CustomerUpdated', { customerId: 42 }), PublishValidationError);
        await assert.rejects(pub.publish('CustomerUpdated', null), PublishValidationError);
        await assert.rejects(pub.publish('bad name!', {}), /contains ' '/);
        const circular: Record<string, unknown> = {};
        circular.self = circular;
        await assert.rejects(
          pub.publishMany([
            { eventTypeId: 'CustomerUpdated', payload: { customerId: 'ok' } },
            { eventTypeId: 'CustomerUpdated', payload: circular },
          ]),
          PublishValidationError,
        );
      } finally {
        await pub.close();
      }
      // Nothing reached crm's topic (its main subscription has no messages).
      const receiver = h.client.createReceiver('crm', 'Resolver');
      try {
        assert.deepEqual(await receiver.peekMessages(5), []);
      } finally {
        await receiver.close();
      }
    });
  });
});
