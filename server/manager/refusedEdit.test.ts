// An edited resubmission that is refused leaves the event's row with the payload last delivered, not the edit. Through
// the real route (POST /api/event/resubmit/...): the Manager claims the row with the edited payload and sends the
// command on the embedded emulator; a real Resolver on the same Cosmos store records the command's copy (forwarded by
// the endpoint topic's Resolver subscription) and then the subscriber's CommandRefused notice, and puts the row back.
// Before, the row went back to Failed but kept the edit as its payload (and the command as its request), as if the
// edit had been sent; the handler never got it. A 409 from the Manager itself (the event changed since it was seen)
// writes nothing at all.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServiceBusSender } from '@azure/service-bus';
import { pino } from 'pino';
import { encodeBody, eventBody, MessageType as T, Prop, SELF, Topic } from '@nimbus/sdk/contract';
import { startResolver, type ResolverHandle, type SettledEvent } from '../../resolver-worker/index.ts';
import { eventually } from '../../resolver-worker/testHarness.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { endProcessAfterResults } from '../../packages/sdk/e2e/harness.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
// A stopped Resolver on the shared client can leave rhea-promise's 60 s link-open timer behind (docs/resolver.md).
endProcessAfterResults();

const EP = 'billingendpoint';
const settled: SettledEvent[] = [];
let resolver: ResolverHandle | undefined;
let sender: ServiceBusSender | undefined;

// Before useConsoleStack's: top-level after hooks run in order, and the Resolver stops before the stack it uses.
after(async () => {
  await sender?.close();
  await resolver?.stop();
});

const stack = useConsoleStack({
  database: 'refusededit',
  prepare: async (s) => {
    resolver = startResolver({
      client: s.serviceBus.client,
      store: s.store,
      concurrency: 4,
      sessionIdleTimeoutMs: 300,
      budget: { baseDelayMs: 20, maxDelayMs: 200 },
      log: pino({ level: 'silent' }),
      onSettled: (e) => settled.push(e),
    });
    sender = s.serviceBus.client.createSender(Topic.Resolver);
  },
});


const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = (body: unknown) => new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const order = (orderId: string, total: number) => ({ orderId, customerId: 'CUST-1', lines: [{ sku: 'MUG', quantity: 1, unitPrice: total }], total, currency: 'EUR' });

/** Sends one message to the Resolver topic as the forwarding rules deliver it, and waits until it is settled. */
async function deliver(m: { type: string; eventId: string; sessionId: string; from: string; to: string; parentMessageId?: string; body?: string; props?: Record<string, string> }): Promise<string> {
  const messageId = randomUUID();
  await sender!.sendMessages({
    messageId,
    sessionId: m.sessionId,
    body: Buffer.from(m.body ?? encodeBody({}), 'utf8'),
    applicationProperties: {
      [Prop.MessageType]: m.type,
      [Prop.EventId]: m.eventId,
      [Prop.EventTypeId]: 'OrderPlaced',
      [Prop.From]: m.from,
      [Prop.To]: m.to,
      [Prop.ParentMessageId]: m.parentMessageId ?? SELF,
      ...m.props,
    },
  });
  await eventually(() => (settled.some((s) => s.messageId === messageId && s.ok) ? true : undefined), `settlement of ${messageId}`, 60_000);
  return messageId;
}

/** An event delivered to EP with `payload` and failed there: the row is Failed with that payload. */
async function failedEvent(payload: unknown): Promise<{ eventId: string; sessionId: string; requestId: string; failureId: string }> {
  const eventId = `evt-${randomUUID().slice(0, 8)}`;
  const sessionId = `ORD-${randomUUID().slice(0, 8)}`;
  const requestId = await deliver({ type: T.EventRequest, eventId, sessionId, from: 'storefrontendpoint', to: EP, body: eventBody('OrderPlaced', payload) });
  const failureId = await deliver({
    type: T.ErrorResponse,
    eventId,
    sessionId,
    from: EP,
    to: 'Resolver',
    parentMessageId: requestId,
    body: encodeBody({ EventContent: null, ErrorContent: { ErrorText: 'Card declined', ErrorType: 'PaymentDeclined' } }),
  });
  return { eventId, sessionId, requestId, failureId };
}

describe('a refused edited resubmission', () => {
  test("the subscriber's refusal puts the row back with the payload last delivered; the edit stays on the command's entry", async () => {
    const original = order('ORD-1', 10);
    const edited = order('ORD-1', 12);
    const { eventId, sessionId, requestId, failureId } = await failedEvent(original);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: edited, lastMessageId: failureId }), params({ endpointId: EP, eventId }));
    assert.equal(res.status, 200, await res.clone().text());
    const { messageId: commandId } = (await res.json()) as { messageId: string };
    // The command's copy reaches the Resolver by the endpoint topic's Resolver subscription: recorded with the edit.
    const recorded = await eventually(async () => (await stack.store.getHistory(eventId, commandId)) ?? undefined, 'the command recorded', 60_000);
    assert.deepEqual(recorded.payload, edited, "the edit is on the command's history entry");
    await eventually(() => (settled.some((s) => s.messageId === commandId && s.ok) ? true : undefined), 'the command copy settled', 60_000);

    const noticeId = await deliver({
      type: T.ErrorResponse,
      eventId,
      sessionId,
      from: EP,
      to: 'Resolver',
      parentMessageId: commandId,
      props: { [Prop.DeadLetterReason]: 'CommandRefused', [Prop.DeadLetterErrorDescription]: 'ResubmissionRequest refused: not the failed delivery' },
    });
    const row = await stack.store.getStatusRow(EP, eventId, sessionId);
    assert.equal(row?.lastMessageId, noticeId, 'the row was put back under the notice');
    assert.equal(row?.status, 'Failed');
    // Before: the edited payload, and the command as the request that carried it.
    assert.deepEqual(row?.payload, original, 'the payload last delivered, not the refused edit');
    assert.equal(row?.requestMessageId, requestId, 'the request that carried it');
  });

  test("the Manager's own 409 (the event changed since it was seen) writes nothing", async () => {
    const original = order('ORD-2', 20);
    const { eventId, sessionId, failureId } = await failedEvent(original);
    const before = await stack.store.getStatusRow(EP, eventId, sessionId);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: order('ORD-2', 21), lastMessageId: `${failureId}-older` }), params({ endpointId: EP, eventId }));
    assert.equal(res.status, 409, await res.clone().text());
    const row = await stack.store.getStatusRow(EP, eventId, sessionId);
    assert.equal(row?.lastMessageId, before?.lastMessageId);
    assert.deepEqual(row?.payload, original);
  });
});
