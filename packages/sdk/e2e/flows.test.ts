// More flows end to end: a retry that arrives after the operator already skipped, a resubmission of an event that
// does not block its session, and a chain across endpoints (a handler that publishes).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody, MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry } from '@nimbus/sdk';
import { RetryPolicies } from '@nimbus/sdk';
import { storyOf, withHarness } from './harness.ts';

describe('more flows', () => {
  test('a RetryRequest arriving after a skip is completed without running the handler and without a response', async () => {
    await withHarness(async (h) => {
      const calls: number[] = [];
      const retryPolicies = new RetryPolicies().setDefaultPolicy({ maxRetries: 1, baseDelayMs: 1500 });
      const host = h.host({
        endpointId: 'crm',
        retryPolicies,
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => {
          calls.push(e.n);
          if (e.n === 1) throw new Error('no');
        }),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'F-1', n: 1 });
      const first = await h.resolver('F-1', 2);
      const eventId = String(first[0]!.props.EventId);
      await h.managerCommand('crm', MessageType.SkipRequest, { eventId, sessionId: 'F-1' });
      // The skip's copy and answer, and the scheduled retry's copy (it reaches the Resolver as it reaches the endpoint).
      const skipped = await h.resolver('F-1', 3);
      assert.deepEqual(skipped.map((r) => r.type).sort(), ['RetryRequest', 'SkipRequest', 'SkipResponse']);
      // A marker event published after the retry was enqueued: once its answer arrives, the retry has been handled.
      await pub.publish('CustomerUpdated', { customerId: 'F-1', n: 2 });
      const rest = await h.resolver('F-1', 2);
      assert.deepEqual(storyOf([...first, ...skipped, ...rest]).responses, [
        'ErrorResponse:E1',
        'SkipResponse:E1',
        'ResolutionResponse:E2',
      ]);
      assert.deepEqual(calls, [1, 2]);
      await host.stop();
      assert.equal((await h.sessionState('crm', 'F-1')).BlockedByEventId, null);
    });
  });

  test('resubmitting an event that does not block its session runs the handler and changes no state', async () => {
    await withHarness(async (h) => {
      const seen: Array<{ n: number; type?: string }> = [];
      const host = h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<{ n: number }>(
          'CustomerUpdated',
          (e, ctx) => void seen.push({ n: e.n, type: ctx.messageType }),
        ),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'F-2', n: 1 });
      const first = await h.resolver('F-2', 2);
      await h.managerCommand(
        'crm',
        MessageType.ResubmissionRequest,
        { eventId: String(first[0]!.props.EventId), sessionId: 'F-2', eventTypeId: 'CustomerUpdated' },
        eventBody('CustomerUpdated', { customerId: 'F-2', n: 10 }),
      );
      const again = await h.resolver('F-2', 2);
      assert.deepEqual(
        again.map((r) => r.type),
        ['ResubmissionRequest', 'ResolutionResponse'],
      );
      assert.deepEqual(seen, [
        { n: 1, type: 'EventRequest' },
        { n: 10, type: 'ResubmissionRequest' },
      ]);
      await host.stop();
      const state = await h.sessionState('crm', 'F-2');
      assert.deepEqual([state.BlockedByEventId, state.NextDeferralSequence], [null, 0]);
    });
  });

  test('a handler that publishes: shop -> billing -> crm, each hop recorded with its own producer', async () => {
    await withHarness(async (h) => {
      const invoices = h.publisher('billing');
      const crmSeen: Array<{ from?: string; orderId: string }> = [];
      h.host({
        endpointId: 'billing',
        handlers: new HandlerRegistry().on<{ orderId: string }>('OrderPlaced', async (order, ctx) => {
          if (ctx.from === 'shop')
            await invoices.publish(
              'InvoiceIssued',
              { orderId: order.orderId, amount: 38 },
              { correlationId: ctx.correlationId },
            );
        }),
      });
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry()
          .on<{ orderId: string }>(
            'InvoiceIssued',
            (invoice, ctx) => void crmSeen.push({ from: ctx.from, orderId: invoice.orderId }),
          )
          .on('OrderPlaced', () => undefined),
      });
      const placed = await h.publisher('shop').publish('OrderPlaced', { orderId: 'F-3' });
      // OrderPlaced reaches billing and crm; InvoiceIssued reaches crm: three requests, three resolutions.
      const records = await h.resolver('F-3', 6);
      const summary = records.map((r) => `${r.type}:${r.props.EventTypeId}@${r.props.From}`).sort();
      assert.deepEqual(summary, [
        'EventRequest:InvoiceIssued@billing',
        'EventRequest:OrderPlaced@shop',
        'EventRequest:OrderPlaced@shop',
        'ResolutionResponse:InvoiceIssued@crm',
        'ResolutionResponse:OrderPlaced@billing',
        'ResolutionResponse:OrderPlaced@crm',
      ]);
      assert.ok(
        records.every((r) => r.correlationId === placed.correlationId),
        'one correlation id across the chain',
      );
      assert.deepEqual(crmSeen, [{ from: 'billing', orderId: 'F-3' }]);
      assert.deepEqual(await h.resolverRestAfterMarker('F-3', ['billing', 'crm']), []);
    });
  });
});
