// Review 44-f, on the emulator with the real @azure/service-bus client: E1 fails and blocks its session; the scheduled
// RetryRequest's handler hands off (job 2). Its PendingHandoffResponse goes out and its block is written, then the
// broker refuses its completion once (as a lost lock or a dropped link would), so the broker redelivers the retry.
// The redelivery is a copy of the delivery that handed off (BlockedByMessageId names it), like the copies of an
// EventRequest (completed as "the blocking event itself") and of a ResubmissionRequest (handedOffByThis). Before, it
// ran the handler again: a second external job and a second PendingHandoffResponse for one retry. Now it is completed
// without the handler and without a response (docs/sdk.md, "A copy of the retry that handed off").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusSessionReceiver } from '@azure/service-bus';
import { MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry, RetryPolicies } from '@nimbus/sdk';
import { eventually, withHarness } from './harness.ts';

type Customer = { customerId: string; n: number };

test('a RetryRequest that handed off and is redelivered does not run the handler again', async () => {
  await withHarness(async (h) => {
    const S = 'RV44F-1';
    // The broker refuses the first completion of a RetryRequest (the state write before it landed).
    let refused = 0;
    const accept = h.client.acceptNextSession.bind(h.client);
    h.client.acceptNextSession = (async (...args: Parameters<typeof accept>) => {
      const receiver: ServiceBusSessionReceiver = await accept(...args);
      const complete = receiver.completeMessage.bind(receiver);
      receiver.completeMessage = async (message) => {
        if (message.applicationProperties?.MessageType === MessageType.RetryRequest && refused === 0) {
          refused++;
          throw new Error('test: completion refused (lock lost)');
        }
        return complete(message);
      };
      return receiver;
    }) as typeof h.client.acceptNextSession;

    const calls: string[] = [];
    h.host({
      endpointId: 'crm',
      sessionConnection: 'shared',
      maxConcurrentSessions: 1,
      retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 1, strategy: 'Fixed', baseDelayMs: 100 }),
      handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
        calls.push(`E${e.n}:${ctx.messageType}`);
        if (ctx.messageType === MessageType.RetryRequest) ctx.markPendingHandoff('DMF import', `job-${calls.length}`);
        else throw new Error('CRM rejected the customer');
      }),
    });
    await h.publisher('shop').publish('CustomerUpdated', { customerId: S, n: 1 });

    // The retry's first delivery: handed off, block written, completion refused; then the broker's redelivery.
    await eventually(() => (refused === 1 && calls.length >= 2 ? true : undefined), 'the refused retry completion', 20_000);
    const rest = await h.resolverRestAfterMarker(S, ['crm']);
    const types = rest.map((r) => `${r.type}:${r.messageId}`);
    const pendingHandoffs = rest.filter((r) => r.type === MessageType.PendingHandoffResponse).length;
    const state = await h.sessionState('crm', S);
    assert.equal(refused, 1);
    assert.deepEqual(calls, ['E1:EventRequest', 'E1:RetryRequest'], 'the retry handler ran a second time');
    assert.equal(pendingHandoffs, 1, `a second PendingHandoffResponse: ${types.join(', ')}`);
    // The handoff still blocks the session under the retry's delivery (the one its PendingHandoffResponse answered).
    const handoff = rest.find((r) => r.type === MessageType.PendingHandoffResponse);
    assert.equal(state.BlockedByEventId, String(handoff?.props.EventId));
    assert.equal(state.BlockedByMessageId, String(handoff?.props.ParentMessageId));
  });
});
