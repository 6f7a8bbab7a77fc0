// A subscriber host in a child process, built the way an adapter author builds one: the client from
// createServiceBusClients with default options (60 s operation timeout) and a host with default options (its
// deferred processor included). It prints `handled` per event; on `stop` on stdin it stops the host, closes the
// client and lets Node exit on its own. The lifecycle test measures how long that takes: nothing the SDK leaves
// behind (a pending accept, an attach timer, a connection) may keep the process alive.
// Configuration: STOP_CONNECTION_STRING (the emulator), STOP_ENDPOINT. A test-only program.
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { HandlerRegistry } from '@nimbus/sdk';
import { SubscriberHost } from '@nimbus/sdk';

const say = (line: string) => writeSync(1, `${line}\n`);
const { client } = createServiceBusClients(process.env.STOP_CONNECTION_STRING ?? '');
const host = new SubscriberHost({
  client,
  endpointId: process.env.STOP_ENDPOINT ?? 'crm',
  handlers: new HandlerRegistry().on('CustomerUpdated', () => void say('handled')),
});
await host.start();
say('ready');
const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  if (line.trim() !== 'stop') return;
  input.close();
  process.stdin.destroy(); // the test's pipe stays open; it must not be what keeps Node alive
  const started = Date.now();
  void (async () => {
    await host.stop();
    await client.close();
    say(`stopped in ${Date.now() - started} ms`);
  })();
});
