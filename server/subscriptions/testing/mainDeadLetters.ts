// Dead letters on an endpoint's main subscription, for the tests of what the console does with them (the
// Topology → Subscriptions list, the replay preview, the replay): sent to the endpoint's topic in one session,
// received under its session lock and dead-lettered through the real Service Bus client, as a subscriber leaves a
// message it could not handle. Shared by the route tests (server/subscriptions/*.test.ts) and the browser tests
// (e2e/console-deadletter-*.test.ts, server/subscriptions/pages.test.ts): no console components, no browser.
import { randomUUID } from 'node:crypto';
import type { ServiceBusClient, ServiceBusMessage } from '@azure/service-bus';
import { eventBody, MessageType, Prop, WireText } from '@nimbus/sdk/contract';
import { closeBounded } from '../../testing/closeBounded.ts';

/** A message to dead-letter, and the reason it is dead-lettered with. */
export interface DeadLetterSeed {
  message: ServiceBusMessage;
  reason: string;
}

/**
 * A refused Manager command (a SkipRequest from storefrontendpoint to `endpoint`, dead-lettered CommandRefused): the
 * dead letter the console marks `replayWarning` (replaying it is refused again).
 */
export function refusedCommand(endpoint: string, ids: { messageId?: string; eventId?: string } = {}): DeadLetterSeed {
  return {
    message: {
      messageId: ids.messageId ?? randomUUID(),
      body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-1' })),
      applicationProperties: {
        [Prop.To]: endpoint,
        [Prop.From]: 'storefrontendpoint',
        [Prop.MessageType]: MessageType.SkipRequest,
        [Prop.EventId]: ids.eventId ?? `e-${randomUUID()}`,
        [Prop.EventTypeId]: 'OrderPlaced',
      },
    },
    reason: WireText.CommandRefused,
  };
}

/** A message that is no NimBus event (no EventId): listed, linked to no event, nothing to warn of. */
export function foreignMessage(endpoint: string, messageId: string = randomUUID()): DeadLetterSeed {
  return { message: { messageId, body: Buffer.from('{}'), applicationProperties: { [Prop.To]: endpoint } }, reason: 'Foreign' };
}

/**
 * Sends each message to `endpoint`'s topic in one new session (in lots of 50) and dead-letters it from the
 * endpoint's main subscription with its reason and `description` (default 'seeded'). Returns once every one is
 * dead-lettered.
 */
export async function deadLetterOnMain(
  client: ServiceBusClient,
  endpoint: string,
  seeds: DeadLetterSeed[],
  description = 'seeded',
): Promise<void> {
  const sessionId = `s-${randomUUID().slice(0, 8)}`;
  const sender = client.createSender(endpoint);
  try {
    for (let i = 0; i < seeds.length; i += 50) await sender.sendMessages(seeds.slice(i, i + 50).map(({ message }) => ({ ...message, sessionId })));
  } finally {
    await closeBounded('the dead-letter seed sender', sender);
  }
  const reasons = new Map(seeds.map(({ message, reason }) => [String(message.messageId), reason]));
  const receiver = await client.acceptSession(endpoint, endpoint, sessionId);
  try {
    while (reasons.size > 0) {
      for (const m of await receiver.receiveMessages(50, { maxWaitTimeInMs: 5000 })) {
        const reason = reasons.get(String(m.messageId));
        if (reason === undefined) continue;
        await receiver.deadLetterMessage(m, { deadLetterReason: reason, deadLetterErrorDescription: description });
        reasons.delete(String(m.messageId));
      }
    }
  } finally {
    await closeBounded('the dead-letter seed receiver', receiver);
  }
}
