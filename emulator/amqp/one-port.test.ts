// Both planes on one port: the unmodified ServiceBusAdministrationClient (HTTPS rewritten to HTTP, as the
// spike found necessary) provisions entities, and the data-plane client uses them through the same port.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceBusAdministrationClient, ServiceBusClient } from '@azure/service-bus';
import { startEmulator } from '../index.ts';

test('admin client and data client share the emulator port', async () => {
  const emulator = await startEmulator({ port: 0 });
  const admin = new ServiceBusAdministrationClient(emulator.connectionString);
  // The admin client always builds https:// URLs; the emulator speaks plain HTTP on loopback.
  admin.pipeline.addPolicy({
    name: 'emulator-plain-http',
    sendRequest: (request, next) => {
      request.url = request.url.replace(/^https:/, 'http:');
      request.allowInsecureConnection = true;
      return next(request);
    },
  });
  const client = new ServiceBusClient(emulator.connectionString, {
    retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
  });
  try {
    await admin.createTopic('billing');
    await admin.createSubscription('billing', 'audit', { lockDuration: 'PT5S' });
    assert.equal(await admin.topicExists('billing'), true);
    const sender = client.createSender('billing');
    await sender.sendMessages({ body: 'invoice' });
    const runtime = await admin.getSubscriptionRuntimeProperties('billing', 'audit');
    assert.equal(runtime.activeMessageCount, 1);
    const receiver = client.createReceiver('billing', 'audit');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.equal(m?.body, 'invoice');
    await receiver.completeMessage(m);
    assert.equal((await admin.getSubscriptionRuntimeProperties('billing', 'audit')).activeMessageCount, 0);
  } finally {
    await client.close();
    await emulator.close();
  }
});
