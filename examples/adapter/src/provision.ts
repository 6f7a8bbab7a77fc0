// Creates the catalog's topics, subscriptions and rules (idempotent): `npm run provision`.
import { parseCatalog } from '@nimbus/sdk/catalog';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { readCatalog } from './catalog.ts';
import { deriveTopology, formatReport, provisionTopology } from '@nimbus/sdk/topology';

const connectionString = process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
if (!connectionString) {
  console.error('Set NIMBUS_SERVICEBUS_CONNECTION_STRING (the emulator prints one when it starts).');
  process.exit(2);
}
const catalog = parseCatalog(readCatalog());
const clients = createServiceBusClients(connectionString);
try {
  console.log(formatReport(await provisionTopology(clients.admin, deriveTopology(catalog))).join('\n'));
} finally {
  await clients.close();
}
