// The ERP endpoint's process: `npm run subscriber` with NIMBUS_SERVICEBUS_CONNECTION_STRING set (for the emulator:
// what `npm run emulator` prints in the NimBus repository).
import { createSubscriberHost } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { erpHandlers, erpRetryPolicies, type Erp } from './erp.ts';

const connectionString = process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
if (!connectionString) {
  console.error('Set NIMBUS_SERVICEBUS_CONNECTION_STRING (the emulator prints one when it starts).');
  process.exit(2);
}

// A stand-in ERP: imports orders of up to 10 lines at once and queues larger ones as a job.
const erp: Erp = {
  async importOrder(order) {
    return order.lines > 10 ? { kind: 'queued', jobId: `job-${order.orderId}` } : { kind: 'imported' };
  },
};

const clients = createServiceBusClients(connectionString);
const host = createSubscriberHost({
  client: clients.client,
  endpointId: 'erp',
  handlers: erpHandlers(erp),
  retryPolicies: erpRetryPolicies,
});
// Checks that the endpoint's subscriptions exist (run `npm run provision` first) and starts handling, with the
// endpoint's deferred processor.
await host.start();
console.log('erp subscriber running; Ctrl+C stops it');

// No process.exit: once the host has stopped and the clients are closed, nothing the SDK or its clients leave keeps
// Node alive, so the process ends by itself, well within a container platform's grace period (docs/sdk.md, "Stopping").
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void (async () => {
      await host.stop();
      await clients.close();
    })();
  });
}
