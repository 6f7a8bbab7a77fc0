// The edited-resubmit route checks the edited payload against the event type of the row the Manager resubmits (the
// settleable one), not the event's NEWEST row: with an event id in two sessions whose rows differ in type, a payload
// that breaks the acted row's catalog schema was accepted and sent when the route read getEvent(..., 1).rows[0]
// (server/manager/editedResubmit.ts; failing on that code).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop } from '@nimbus/sdk/contract';
import { seedEvent } from '../testing/seed.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const stack = useConsoleStack({ database: 'rveditedschemarow' });
const EP = 'billingendpoint';

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = (body: unknown) => new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('edited resubmit of an event with rows in two sessions', () => {
  test('a payload that breaks the acted row’s schema (OrderPlaced) is refused 400', async () => {
    const eventId = 'evt-two-sessions';
    // Session ORD-A: the failed OrderPlaced (catalog schema: orderId, customerId, lines, total, currency required).
    await seedEvent(stack.store, Date.now() - 120_000, { endpointId: EP, eventId, sessionId: 'ORD-A', eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-A', customerId: 'C', lines: [], total: 1, currency: 'EUR' } }, MessageType.ErrorResponse, { errorText: 'boom', errorType: 'X' });
    // Session ORD-B, updated later: a completed row of another type (OrderCancelled: no schema in the catalog).
    await seedEvent(stack.store, Date.now() - 1_000, { endpointId: EP, eventId, sessionId: 'ORD-B', eventTypeId: 'OrderCancelled', payload: { orderId: 'ORD-B' } }, MessageType.ResolutionResponse);

    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    // Not an OrderPlaced: no customerId, lines, total or currency.
    const res = await resubmit.POST(post({ payload: { orderId: 'ORD-A', note: 'not an order' } }), params({ endpointId: EP, eventId }));
    const text = await res.clone().text();
    let sent: Array<{ type: unknown; eventTypeId: unknown; body: string }> = [];
    if (res.status === 200) {
      const receiver = await stack.serviceBus.client.acceptSession(EP, EP, 'ORD-A');
      try {
        const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 3000 });
        sent = got.map((m) => ({ type: m.applicationProperties?.[Prop.MessageType], eventTypeId: m.applicationProperties?.[Prop.EventTypeId], body: Buffer.isBuffer(m.body) ? m.body.toString('utf8') : JSON.stringify(m.body) }));
        for (const m of got) await receiver.completeMessage(m);
      } finally {
        await receiver.close();
      }
    }
    assert.equal(res.status, 400, `answered ${res.status} ${text}; sent to ${EP}/ORD-A: ${JSON.stringify(sent)}`);
  });
});
