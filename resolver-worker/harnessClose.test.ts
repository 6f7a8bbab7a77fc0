// ResolverHarness.close closes every part even when one step fails. Why: its steps were plain awaits, so an error
// in one (here the emulator's close) skipped the store, the fault proxy and the embedded Cosmos server after it;
// those servers kept the test file's process alive and the runner cancelled the file after 20 minutes, with the
// error never shown. Real servers: the closed listeners are checked by connecting to them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { startEmulator } from '../emulator/index.ts';
import { ResolverHarness, startStoreAndResolver } from './testHarness.ts';

/** True when something still accepts connections on the port of `endpoint`. */
function listening(endpoint: string): Promise<boolean> {
  const { hostname, port } = new URL(endpoint);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

test('a step that throws is named, and the fault proxy and Cosmos after it are closed anyway', async () => {
  const { harness: h, proxy } = await ResolverHarness.startBehindProxy();
  const emulatorClose = h.emulator.close.bind(h.emulator);
  h.emulator.close = () => Promise.reject(new Error('injected close failure'));
  try {
    await assert.rejects(h.close(), /emulator close: Error: injected close failure/);
    assert.equal(await listening(proxy.endpoint), false, 'the fault proxy is closed');
    assert.equal(await listening(h.cosmos.endpoint), false, 'the embedded Cosmos server is closed');
  } finally {
    await emulatorClose();
    // Only when the harness left them open (the old close): a second close of either is not needed otherwise.
    if (await listening(proxy.endpoint)) await proxy.close();
    if (await listening(h.cosmos.endpoint)) await h.cosmos.close();
  }
});

test('startStoreAndResolver: a step that throws is named, and Cosmos after it is closed anyway', async () => {
  const emulator = await startEmulator({ port: 0 });
  const clients = createServiceBusClients(emulator.connectionString);
  const started = await startStoreAndResolver(clients.client, 'harnessclose');
  const storeClose = started.store.close.bind(started.store);
  started.store.close = () => Promise.reject(new Error('injected close failure'));
  try {
    await assert.rejects(started.close(), /store close: Error: injected close failure/);
    assert.equal(await listening(started.cosmosEndpoint), false, 'the embedded Cosmos server is closed');
  } finally {
    await storeClose().catch(() => undefined);
    await clients.close();
    await emulator.close();
  }
});
