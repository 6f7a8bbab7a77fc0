// Shared setup for the data-plane tests: an emulator on an ephemeral loopback port with a topic and
// subscriptions created through the broker, and a real ServiceBusClient with short timeouts.

import { ServiceBusClient, isServiceBusError } from '@azure/service-bus';
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
