// Broker failures reach the real client with the error codes it documents.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import rhea from 'rhea';
import { startEmulator } from '../index.ts';
import { errorCode, putToken, startHarness } from './test-support.ts';

test('a send-disabled topic raises MessagingEntityDisabled; re-enabled it accepts again', async () => {
  const h = await startHarness((em) => {
    em.broker.createTopic({ name: 'paused' });
    em.broker.createSubscription({ topicName: 'paused', subscriptionName: 's' });
  });
  try {
    h.emulator.broker.updateTopic({ name: 'paused', status: 'SendDisabled' });
    const sender = h.client.createSender('paused');
    assert.equal(await errorCode(sender.sendMessages({ body: 1 })), 'MessagingEntityDisabled');
    h.emulator.broker.updateTopic({ name: 'paused', status: 'Active' });
    await sender.sendMessages({ body: 2 });
    assert.equal(h.emulator.broker.getSubscriptionRuntime('paused', 's').activeMessageCount, 1);
    await sender.close();
  } finally {
    await h.close();
  }
});

test('exceeding the memory budget raises QuotaExceeded', async () => {
  const emulator = await startEmulator({ port: 0, memoryBudgetBytes: 64 * 1024 });
  const { ServiceBusClient } = await import('@azure/service-bus');
  const client = new ServiceBusClient(emulator.connectionString, {
    retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
  });
  try {
    emulator.broker.createTopic({ name: 'full' });
    emulator.broker.createSubscription({ topicName: 'full', subscriptionName: 's' });
    const sender = client.createSender('full');
    let code = '';
    for (let i = 0; i < 10 && !code; i++) {
      code = await sender.sendMessages({ body: Buffer.alloc(20 * 1024) }).then(
        () => '',
        (err: unknown) => (err as { code?: string }).code ?? 'unknown',
      );
    }
    assert.equal(code, 'QuotaExceeded');
    await sender.close();
  } finally {
    await client.close();
    await emulator.close();
  }
});

test('SASL PLAIN with a wrong key is refused; with the namespace key it is accepted as well as ANONYMOUS', async () => {
  const emulator = await startEmulator({ port: 0 });
  try {
    const refused = rhea.create_container().connect({
      host: '127.0.0.1',
      port: emulator.port,
      username: 'RootManageSharedAccessKey',
      password: 'not-the-namespace-key',
      reconnect: false,
    });
    await new Promise<void>((resolve, reject) => {
      refused.once('connection_open', () => reject(new Error('a wrong key was accepted')));
      refused.on('connection_error', () => resolve());
      refused.on('error', () => resolve());
      refused.on('disconnected', () => resolve());
    });
    const connection = rhea.create_container().connect({
      host: '127.0.0.1',
      port: emulator.port,
      username: 'RootManageSharedAccessKey',
      password: emulator.key,
      reconnect: false,
    });
    await new Promise<void>((resolve, reject) => {
      connection.once('connection_open', () => resolve());
      connection.once('connection_error', () => reject(new Error('refused')));
      connection.once('disconnected', () => reject(new Error('disconnected')));
    });
    connection.close();
    await new Promise<void>((resolve) => connection.once('connection_close', () => resolve()));
  } finally {
    await emulator.close();
  }
});

test('a refused session attach: the attach names no session and the error detach answers the client detach', async () => {
  // The Service Bus client reads an attach without its session as "no session", detaches, and reports the error of
  // the detach that answers it; an error detach it processed before detaching would be lost (SessionCannotBeLocked).
  const emulator = await startEmulator({ port: 0, logLevel: 'silent' });
  emulator.broker.createTopic({ name: 'present' });
  const connection = rhea
    .create_container()
    .connect({ host: '127.0.0.1', port: emulator.port, reconnect: false });
  try {
    await putToken(connection, emulator);
    const link = connection.open_receiver({
      source: { address: 'present/Subscriptions/missing', filter: { 'com.microsoft:session-filter': 's1' } },
      credit_window: 0,
    } as unknown as Parameters<typeof connection.open_receiver>[0]);
    const events: string[] = [];
    link.on('receiver_error', () =>
      events.push(`error ${String(link.error && (link.error as { condition?: string }).condition)}`),
    );
    await new Promise<void>((resolve, reject) => {
      link.once('receiver_open', () => resolve());
      link.once('receiver_close', () => reject(new Error('closed before the attach was answered')));
    });
    const filter = (link.source as { filter?: Record<string, unknown> } | undefined)?.filter;
    assert.equal(filter?.['com.microsoft:session-filter'], undefined);
    // Wait for a round trip the emulator answers (a second link's attach) so an early detach would have arrived.
    const probe = connection.open_receiver({
      source: { address: 'present/Subscriptions/missing' },
      credit_window: 0,
    });
    await new Promise<void>((resolve) => probe.once('receiver_close', () => resolve()));
    assert.deepEqual(events, [], 'no error before the client detaches');
    const closed = new Promise<void>((resolve) => link.once('receiver_close', () => resolve()));
    link.close();
    await closed;
    assert.deepEqual(events, ['error amqp:not-found']);
  } finally {
    connection.close();
    await emulator.close();
  }
});
