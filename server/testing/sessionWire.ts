// What reached one session of an endpoint's main subscription, for the tests that count the commands on the wire
// ("one command sent, not two"). The read ends at a positive signal: an end marker sent into the session after the
// commands, by their own path (the Manager topic, whose subscription for the endpoint forwards to the endpoint's
// topic). The emulator routes and forwards within the send, so every command whose send has returned is ahead of
// the marker in the session. The tests' own loops ended at a receive that stayed empty for 1.5 s, after batches
// that each wait a second past their first message (the client's batching receiver): 2.5 s per read, on the
// order of twenty reads in a file. Its sender's and receiver's closes are bounded (closeBounded.ts).
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import type { ServiceBusClient, ServiceBusReceivedMessage } from '@azure/service-bus';
import { Prop, Topic } from '@nimbus/sdk/contract';
import { closeBounded } from './closeBounded.ts';

/** Only bounds a failing read: the marker is in the session before the receiver opens. */
const MARKER_WAIT_MS = 60_000;

/**
 * The messages in the session `sessionId` of `endpointId`'s main subscription, in order, received and deleted (so
 * a later read sees only what came after). The endpoint must have its Manager subscription (every catalog endpoint
 * does, once the topology is provisioned).
 */
export async function drainSession(client: ServiceBusClient, endpointId: string, sessionId: string): Promise<ServiceBusReceivedMessage[]> {
  const marker = `end-of-wire-${randomUUID()}`;
  const sender = client.createSender(Topic.Manager);
  try {
    await sender.sendMessages({ messageId: marker, sessionId, body: 'end of wire', applicationProperties: { [Prop.To]: endpointId } });
  } finally {
    await closeBounded('the end marker sender', sender);
  }
  const got: ServiceBusReceivedMessage[] = [];
  const receiver = await client.acceptSession(endpointId, endpointId, sessionId, {
    receiveMode: 'receiveAndDelete',
    // Stacks provision a 5 s lock: renewed, so a slow machine cannot lose the session mid-read.
    maxAutoLockRenewalDurationInMs: 120_000,
  });
  try {
    for (;;) {
      // One at a time: a receive of one returns as its message arrives (a larger one waits a second past its first).
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: MARKER_WAIT_MS });
      assert.ok(m, `the end marker reached ${endpointId}/${sessionId}`);
      if (m.messageId === marker) return got;
      got.push(m);
    }
  } finally {
    await closeBounded('the session wire receiver', receiver);
  }
}

/** A received message's JSON body (the client hands a body it cannot decode as bytes). */
export function jsonBody(m: ServiceBusReceivedMessage): unknown {
  return m.body instanceof Uint8Array ? JSON.parse(Buffer.from(m.body).toString('utf8')) : m.body;
}
