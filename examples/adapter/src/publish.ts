// Publishes one OrderPlaced as the web shop: `npm run publish-order -- <orderId> <lines>`.
import { createPublisher, sessionKeysFromCatalog } from '@nimbus/sdk';
import { parseCatalog } from '@nimbus/sdk/catalog';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { readCatalog } from './catalog.ts';

const connectionString = process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
if (!connectionString) {
  console.error('Set NIMBUS_SERVICEBUS_CONNECTION_STRING (the emulator prints one when it starts).');
  process.exit(2);
}
const catalog = parseCatalog(readCatalog());
const [orderId = `o-${Date.now()}`, lines = '3'] = process.argv.slice(2);

const clients = createServiceBusClients(connectionString);
const publisher = createPublisher({ client: clients.client, endpointId: 'webshop', sessionKeys: sessionKeysFromCatalog(catalog) });
try {
  const sent = await publisher.publish('OrderPlaced', { orderId, total: 99.5, lines: Number(lines) });
  console.log(`published OrderPlaced ${orderId}: message ${sent.messageId}, session ${sent.sessionId}`);
} finally {
  await publisher.close();
  await clients.close();
}
