// The admin plane as mounted by startEmulator on the emulator's single port, next to the AMQP data plane:
// clients come from packages/sdk/src/servicebus with the emulator's own connection string, nothing configured by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startEmulator } from '../index.ts';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';

test('on the emulator port, the admin client provisions and reads counts of messages the data-plane client sent', async () => {
  const emulator = await startEmulator({ port: 0 });
  const clients = createServiceBusClients(emulator.connectionString);
  try {
    assert.equal(clients.isEmulator, true);
    await clients.admin.createTopic('orders');
    await clients.admin.createSubscription('orders', 'audit');
    assert.equal(await clients.admin.topicExists('orders'), true);

    const sender = clients.client.createSender('orders');
    await sender.sendMessages([{ body: 'a' }, { body: 'b' }]);
    await sender.close();

    const runtime = await clients.admin.getSubscriptionRuntimeProperties('orders', 'audit');
    assert.equal(runtime.activeMessageCount, 2);
  } finally {
    await clients.close();
    await emulator.close();
  }
});
