// A dead letter on the Resolver's own subscription, for the tests of what the console does with one (list, preview,
// replay): sent, received under its session lock and dead-lettered through the real Service Bus client, as the
// Resolver dead-letters a message it could not record. Its closes are bounded (closeBounded.ts) and in `finally`,
// so a failed receive does not leave the session locked for the rest of the file.
import assert from 'node:assert/strict';
import type { ServiceBusClient, ServiceBusMessage } from '@azure/service-bus';
import { Topic } from '@nimbus/sdk/contract';
import { closeBounded } from './closeBounded.ts';

/** Sends `message` to the Resolver topic and dead-letters it from its session with `reason`. */
export async function sendAndDeadLetter(
  client: ServiceBusClient,
  message: ServiceBusMessage & { sessionId: string },
  reason: { deadLetterReason: string; deadLetterErrorDescription: string },
): Promise<void> {
  const sender = client.createSender(Topic.Resolver);
  try {
    await sender.sendMessages(message);
  } finally {
    await closeBounded('the Resolver topic sender', sender);
  }
  const receiver = await client.acceptSession(Topic.Resolver, Topic.Resolver, message.sessionId);
  try {
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    assert.ok(m, 'received the message to dead-letter');
    await receiver.deadLetterMessage(m, reason);
  } finally {
    await closeBounded('the Resolver session receiver', receiver);
  }
}
