// The dead-letter API leads to the fix: each dead letter with an EventId names its event (endpoint, id, type: the
// key of the console's event page), a foreign message names none, and the replay preview counts the selected dead
// letters the SDK dead-lettered as permanent failures (replayed unchanged they fail again). Real @azure/service-bus
// clients on the embedded emulator with the demo catalog's topology.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServiceBusMessage } from '@azure/service-bus';
import { Address, eventBody, MessageType, Prop, Subscription, Topic } from '@nimbus/sdk/contract';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { peekDeadLetters } from './deadLetters.ts';
import { previewReplay } from './replay.ts';
import { ReplayJournal } from './replayJournal.ts';

let stack: ConsoleTestStack;
let journal: ReplayJournal;

before(async () => {
  stack = await startConsoleTestStack();
  journal = new ReplayJournal(stack.store.database);
});
after(async () => {
  await stack?.close();
});

/** Sends `message` to `topic` and dead-letters it from `subscription` (sessionful when it has a session id). */
async function deadLetter(topic: string, subscription: string, message: ServiceBusMessage, reason: string): Promise<void> {
  const sender = stack.serviceBus.client.createSender(topic);
  await sender.sendMessages(message);
  await sender.close();
  const receiver = message.sessionId
    ? await stack.serviceBus.client.acceptSession(topic, subscription, message.sessionId)
    : stack.serviceBus.client.createReceiver(topic, subscription);
  try {
    for (;;) {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
      if (!m) continue;
      if (m.messageId !== message.messageId) {
        await receiver.abandonMessage(m);
        continue;
      }
      await receiver.deadLetterMessage(m, { deadLetterReason: reason, deadLetterErrorDescription: 'seeded' });
      return;
    }
  } finally {
    await receiver.close();
  }
}

describe('dead letters lead to their event', () => {
  test('each dead letter names its event and whether it failed permanently; the preview counts the permanent ones', async () => {
    const ep = 'billingendpoint';
    const run = randomUUID().slice(0, 8);
    const permanent = `Permanent failure: PermanentFailureError: customer record is corrupt ${run}`;
    const transient = `Throttled${run}`;
    const [eventId, parkedEventId, foreignId, requestId, parkedId] = [`evt-${run}`, `parked-${run}`, randomUUID(), randomUUID(), randomUUID()];
    const sessionId = `s-${run}`;

    // An event on the endpoint's main subscription, failed permanently by its handler.
    await deadLetter(
      ep,
      ep,
      {
        messageId: requestId,
        sessionId,
        body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-1' })),
        applicationProperties: { [Prop.To]: ep, [Prop.From]: 'storefrontendpoint', [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: eventId, [Prop.EventTypeId]: 'OrderPlaced' },
      },
      permanent,
    );
    // A foreign message on the same subscription: no EventId, so no event to go to.
    await deadLetter(ep, ep, { messageId: foreignId, sessionId, body: Buffer.from('{}'), applicationProperties: { [Prop.To]: ep } }, transient);
    // A parked copy (addressed to Deferred) belongs to the endpoint whose topic it is on.
    await deadLetter(
      ep,
      Subscription.Deferred,
      {
        messageId: parkedId,
        sessionId,
        body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-2' })),
        applicationProperties: { [Prop.To]: Address.Deferred, [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: parkedEventId, [Prop.EventTypeId]: 'OrderPlaced' },
      },
      transient,
    );

    const main = await peekDeadLetters(stack.serviceBus.client, ep, ep);
    const byId = new Map(main.items.map((d) => [d.messageId, d]));
    assert.deepEqual(byId.get(requestId)?.event, { endpointId: ep, eventId, eventTypeId: 'OrderPlaced' });
    assert.equal(byId.get(requestId)?.permanentFailure, true);
    assert.equal(byId.get(foreignId)?.event, null, 'a message without an EventId names no event');
    assert.equal(byId.get(foreignId)?.permanentFailure, false);
    const parked = (await peekDeadLetters(stack.serviceBus.client, ep, Subscription.Deferred)).items.find((d) => d.messageId === parkedId);
    assert.deepEqual(parked?.event, { endpointId: ep, eventId: parkedEventId, eventTypeId: 'OrderPlaced' });

    const preview = await previewReplay(stack.serviceBus.client, stack.serviceBus.admin, journal, ep, ep, {
      sequenceNumbers: [byId.get(requestId)!.sequenceNumber, byId.get(foreignId)!.sequenceNumber],
    });
    assert.equal(preview.count, 2);
    assert.equal(preview.permanentFailures, 1, 'one of the two selected failed permanently');
    assert.equal(preview.toSend, 2, 'the warning changes nothing about what is sent');
  });

  test('a Resolver dead letter belongs to the endpoint that answered (From), not to the Resolver topic', async () => {
    const run = randomUUID().slice(0, 8);
    const messageId = randomUUID();
    const eventId = `evt-${run}`;
    await deadLetter(
      Topic.Resolver,
      Topic.Resolver,
      {
        messageId,
        sessionId: `s-${run}`,
        body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-1' })),
        applicationProperties: { [Prop.To]: Address.Resolver, [Prop.From]: 'crmendpoint', [Prop.MessageType]: MessageType.ResolutionResponse, [Prop.EventId]: eventId, [Prop.EventTypeId]: 'OrderPlaced' },
      },
      'CosmosDbThrottled',
    );
    const dead = (await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver)).items.find((d) => d.messageId === messageId);
    assert.deepEqual(dead?.event, { endpointId: 'crmendpoint', eventId, eventTypeId: 'OrderPlaced' });
    assert.equal(dead?.permanentFailure, false);
  });
});
