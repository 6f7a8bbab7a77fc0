// Shared setup for the data-plane tests: an emulator on an ephemeral loopback port with a topic and
// subscriptions created through the broker, and a real ServiceBusClient with short timeouts.

import { randomUUID } from 'node:crypto';
import { ServiceBusClient, isServiceBusError } from '@azure/service-bus';
import type { Connection } from 'rhea';
import { createSasToken } from '../auth/sas-token.ts';
import { ROOT_KEY_NAME } from '../auth/policies.ts';
import { startEmulator } from '../index.ts';
import type { RunningEmulator } from '../index.ts';

export interface Harness {
  emulator: RunningEmulator;
  client: ServiceBusClient;
  close(): Promise<void>;
}

export async function startHarness(
  setup: (em: RunningEmulator) => void,
  options: { handshakeTimeoutMs?: number; maxMessageSizeBytes?: number; clientTimeoutMs?: number } = {},
): Promise<Harness> {
  const emulator = await startEmulator({
    port: 0,
    logLevel: 'silent',
    handshakeTimeoutMs: options.handshakeTimeoutMs,
    maxMessageSizeBytes: options.maxMessageSizeBytes,
  });
  setup(emulator);
  const client = new ServiceBusClient(emulator.connectionString, {
    retryOptions: { maxRetries: 0, timeoutInMs: options.clientTimeoutMs ?? 5_000 },
  });
  return {
    emulator,
    client,
    async close() {
      await client.close();
      await emulator.close();
    },
  };
}

/** The ServiceBusError code a promise rejects with (fails the test if it resolves). */
export async function errorCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isServiceBusError(err)) return err.code;
    throw err;
  }
  throw new Error('expected the operation to fail');
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * For bare rhea clients: put a token signed with `key` (default: the emulator's namespace key) for `audience`
 * (an entity path, '' = the namespace) on the connection's $cbs node, as the Service Bus client does before
 * each link. Resolves with the reply's status code and description.
 */
export async function putToken(
  connection: Connection,
  emulator: { port: number; key: string },
  audience = '',
  options: { keyName?: string; key?: string; expiresAt?: number } = {},
): Promise<{ status: unknown; description: unknown }> {
  const replyTo = `cbs-reply-${randomUUID()}`;
  const resource = `sb://127.0.0.1:${emulator.port}/${audience}`;
  const token = createSasToken(
    resource,
    options.keyName ?? ROOT_KEY_NAME,
    options.key ?? emulator.key,
    options.expiresAt ?? Math.floor(Date.now() / 1000) + 3600,
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no $cbs reply')), 10_000);
    const receiver = connection.open_receiver({ source: { address: '$cbs' }, target: { address: replyTo } });
    receiver.on('message', (ctx) => {
      clearTimeout(timer);
      const props = ctx.message?.application_properties ?? {};
      resolve({ status: props['status-code'], description: props['status-description'] });
      receiver.close();
      sender.close();
    });
    const sender = connection.open_sender({ target: { address: '$cbs' } });
    receiver.once('receiver_open', () => {
      const send = (): void => {
        sender.send({
          reply_to: replyTo,
          message_id: randomUUID(),
          application_properties: {
            operation: 'put-token',
            type: 'servicebus.windows.net:sastoken',
            name: resource,
          },
          body: token,
        });
      };
      if (sender.sendable()) send();
      else sender.once('sendable', send);
    });
  });
}
