// Flows 1, 9, 10 and the forwarder leak guard, end to end on the emulator.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HandlerRegistry } from '@nimbus/sdk';
import { withHarness } from './harness.ts';

describe('happy path', () => {
  test('publish -> forwarded copy -> handler -> ResolutionResponse with lineage and correlation', async () => {
    await withHarness(async (h) => {
      const seen: Array<{ event: unknown; from?: string; eventId?: string; sessionId?: string }> = [];
      const handlers = new HandlerRegistry().on<{ customerId: string }>('CustomerUpdated', (event, ctx) => {
        seen.push({ event, from: ctx.from, eventId: ctx.eventId, sessionId: ctx.sessionId });
      });
      h.host({ endpointId: 'crm', handlers });
      const published = await h
        .publisher('shop')
        .publish('CustomerUpdated', { customerId: 'A-1', total: 10 });
      assert.equal(published.sessionId, 'A-1');
      assert.match(published.messageId, /^CustomerUpdated-[0-9a-f]{16}$/);

      const records = await h.resolver('A-1', 2);
      assert.deepEqual(
        records.map((r) => r.type),
        ['EventRequest', 'ResolutionResponse'],
      );
      const [request, response] = records;
      assert.equal(request!.props.From, 'shop');
      assert.equal(request!.props.To, 'crm');
      const eventId = request!.props.EventId;
      assert.ok(typeof eventId === 'string' && eventId.length > 0, 'the forwarder assigned an EventId');
      assert.equal(response!.props.EventId, eventId);
      assert.equal(response!.props.From, 'crm', 'the Resolver forwarder stamps the responding endpoint');
      assert.equal(response!.props.ParentMessageId, published.messageId);
      assert.equal(response!.props.OriginatingMessageId, published.messageId);
      assert.equal(response!.props.OriginatingFrom, 'shop');
      assert.equal(response!.correlationId, published.correlationId);
      assert.deepEqual(seen, [
        { event: { customerId: 'A-1', total: 10 }, from: 'shop', eventId, sessionId: 'A-1' },
      ]);
    });
  });

  test('the session state stays empty after a success', async () => {
    await withHarness(async (h) => {
      const host = h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('CustomerUpdated', () => undefined),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'A-2' });
      await h.resolver('A-2', 2);
      await host.stop();
      const state = await h.sessionState('crm', 'A-2');
      assert.equal(state.BlockedByEventId, null);
      assert.equal(state.NextDeferralSequence, 0);
    });
  });

  test('three events of one session are handled in publish order', async () => {
    await withHarness(async (h) => {
      const order: number[] = [];
      const handlers = new HandlerRegistry().on<{ customerId: string; n: number }>(
        'CustomerUpdated',
        async (e) => {
          await new Promise((r) => setTimeout(r, 20 * (3 - e.n)));
          order.push(e.n);
        },
      );
      h.host({ endpointId: 'crm', handlers });
      const pub = h.publisher('shop');
      for (const n of [1, 2, 3]) await pub.publish('CustomerUpdated', { customerId: 'S-1', n });
      const records = await h.resolver('S-1', 6);
      assert.deepEqual(records.filter((r) => r.type === 'ResolutionResponse').length, 3);
      assert.deepEqual(order, [1, 2, 3]);
    });
  });

  test('unsupported event type: UnsupportedResponse, session not blocked', async () => {
    await withHarness(async (h) => {
      // crm has no handler for InvoiceIssued.
      h.host({ endpointId: 'crm', handlers: new HandlerRegistry().on('CustomerUpdated', () => undefined) });
      await h.publisher('billing').publish('InvoiceIssued', { orderId: 'U-1' });
      const records = await h.resolver('U-1', 2);
      assert.deepEqual(
        records.map((r) => r.type),
        ['EventRequest', 'UnsupportedResponse'],
      );
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'U-1' });
      const next = await h.resolver('U-1', 2);
      assert.deepEqual(
        next.map((r) => r.type),
        ['EventRequest', 'ResolutionResponse'],
      );
    });
  });

  test('two consumers of one event get independent copies; a response never leaks through a forwarder', async () => {
    await withHarness(async (h) => {
      const crmSeen: string[] = [];
      h.host({
        endpointId: 'billing',
        handlers: new HandlerRegistry().on('OrderPlaced', () => {
          throw new Error('billing is down');
        }),
      });
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
          crmSeen.push(`${ctx.from}:${ctx.messageType}`);
        }),
      });
      await h.publisher('shop').publish('OrderPlaced', { orderId: 'L-1' });
      const records = await h.resolver('L-1', 4);
      const byEndpoint = (to: string) => records.filter((r) => r.props.To === to || r.props.From === to);
      const types = records.map((r) => `${r.type}@${r.props.From}`).sort();
      assert.deepEqual(types, [
        'ErrorResponse@billing',
        'EventRequest@shop',
        'EventRequest@shop',
        'ResolutionResponse@crm',
      ]);
      const ids = records.filter((r) => r.type === 'EventRequest').map((r) => r.props.EventId);
      assert.notEqual(ids[0], ids[1], 'each consumer copy has its own EventId');
      assert.ok(byEndpoint('crm').length >= 1);
      // billing's ErrorResponse carries EventTypeId OrderPlaced and no From; billing also produces OrderPlaced for
      // crm, so without the MessageType filter it would reach crm. It must not.
      const extra = await h.resolverRestAfterMarker('L-1', ['billing', 'crm']);
      assert.deepEqual(
        extra.map((r) => r.type),
        [],
      );
      assert.deepEqual(crmSeen, ['shop:EventRequest']);
      const dead = await h.deadLetters('crm', 'crm', 10, 300);
      assert.equal(dead.length, 0);
    });
  });
});
