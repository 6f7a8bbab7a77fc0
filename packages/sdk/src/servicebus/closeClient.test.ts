// What closeClient.ts relies on in the installed @azure/service-bus / rhea-promise / rhea: the rhea connection under
// a client and its timer fields. If an upgrade moves them, the fix would silently do nothing; this file says so.
// The process-level behaviour (a subscriber process exits by itself) is in packages/sdk/e2e/processExit.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusClient } from '@azure/service-bus';
import { createServiceBusClients } from './clients.ts';
import { closeServiceBusClient } from './closeClient.ts';

// Nothing listens there and nothing is sent: a client connects only when a link is opened.
const UNUSED =
  'Endpoint=sb://127.0.0.1:9;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true';

const rheaConnection = (client: ServiceBusClient) =>
  (client as unknown as { _connectionContext: { connection: { _connection: Record<string, unknown> } } })
    ._connectionContext.connection._connection;

test("after close(), a timer the client's connection arms no longer keeps the process alive", async () => {
  const { client, close } = createServiceBusClients(UNUSED);
  const connection = rheaConnection(client);
  for (const name of ['heartbeat_in', 'heartbeat_out', 'abort_idle']) assert.ok(name in connection, name);
  await close();
  // As rhea does when it writes a second close frame on a socket that has gone (closeClient.ts).
  const timer = setTimeout(() => undefined, 120_000);
  try {
    connection.heartbeat_in = timer;
    assert.equal(timer.hasRef(), false);
    assert.equal(connection.heartbeat_in, timer, 'rhea still reads (and can clear) its timer');
  } finally {
    clearTimeout(timer);
  }
});

test('closing the ServiceBusClient itself does the same, and so does closeServiceBusClient', async () => {
  const own = createServiceBusClients(UNUSED).client;
  await own.close();
  const { client: built } = createServiceBusClients(UNUSED);
  await closeServiceBusClient(built);
  for (const client of [own, built]) {
    const timer = setTimeout(() => undefined, 120_000);
    try {
      rheaConnection(client).heartbeat_out = timer;
      assert.equal(timer.hasRef(), false);
    } finally {
      clearTimeout(timer);
    }
  }
});

test('a client without those internals (another version, a mock) is closed as it is', async () => {
  let closed = 0;
  await closeServiceBusClient({ close: async () => void closed++ } as unknown as ServiceBusClient);
  assert.equal(closed, 1);
});
