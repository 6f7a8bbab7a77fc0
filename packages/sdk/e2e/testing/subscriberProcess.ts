// A subscriber process shaped like examples/adapter/src/subscriber.ts, which adapter authors copy: clients from
// createServiceBusClients and a host from createSubscriberHost, both with defaults; on SIGTERM it awaits host.stop()
// and clients.close() and then relies on Node's event loop draining - no process.exit. processExit.test.ts checks
// that the process then exits by itself. It prints `ready` once started, `handled` per event, `stopping` when the
// signal arrives and `closed` once the stop and the close have resolved.
// STOP_WHEN: `signal` (default: waits for the test's SIGTERM), `after-start` (signals itself as soon as start()
// resolves, while its connections are still opening), `during-start` (signals itself while start() is running).
// CLOSE_WITH: `clients` (default: `clients.close()`, as the example) or `client` (`client.close()` on the
// ServiceBusClient itself, as the shutdown sample in docs/sdk.md).
// Configuration: EXIT_CONNECTION_STRING (the emulator), EXIT_ENDPOINT. A test-only program.
import { writeSync } from 'node:fs';
import { createSubscriberHost, HandlerRegistry } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';

const say = (line: string) => writeSync(1, `${line}\n`);
const when = process.env.STOP_WHEN ?? 'signal';
const closeWith = process.env.CLOSE_WITH ?? 'clients';
const clients = createServiceBusClients(process.env.EXIT_CONNECTION_STRING ?? '');
const host = createSubscriberHost({
  client: clients.client,
  endpointId: process.env.EXIT_ENDPOINT ?? 'crm',
  handlers: new HandlerRegistry().on('CustomerUpdated', () => void say('handled')),
});

const onSignal = () => {
  say('stopping');
  void (async () => {
    await host.stop();
    await (closeWith === 'client' ? clients.client.close() : clients.close());
    say('closed');
  })();
};

if (when === 'during-start') {
  process.once('SIGTERM', onSignal);
  const started = host.start();
  // The signal lands while start() checks the subscriptions on its probe connection; start() then rejects.
  setImmediate(() => process.kill(process.pid, 'SIGTERM'));
  await started.catch(() => undefined);
} else {
  await host.start();
  say('ready');
  process.once('SIGTERM', onSignal);
  // The workers' accepts and the deferred processor have just begun opening their connections.
  if (when === 'after-start') process.kill(process.pid, 'SIGTERM');
}
