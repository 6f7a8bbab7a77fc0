// How broker failures reach the admin client. The broker here is a stand-in whose every method throws the
// error under test: this checks the plane's error mapping only (the real broker's errors are covered by the
// other admin tests), including failures the real broker cannot be made to produce on demand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BrokerError, type BrokerAdmin } from '../broker/api.ts';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { createAdminHandler } from './http.ts';
import { rejectsWith } from './test-harness.ts';

async function withThrowingBroker(
  error: Error,
  run: (admin: ReturnType<typeof createServiceBusClients>['admin']) => Promise<void>,
): Promise<void> {
  const broker = new Proxy({} as BrokerAdmin, {
    get: () => () => {
      throw error;
    },
  });
  const server = http.createServer(createAdminHandler(broker));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const clients = createServiceBusClients(
    `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true`,
    { admin: { retryOptions: { maxRetries: 0 } } },
  );
  try {
    await run(clients.admin);
  } finally {
    await clients.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

test('QuotaExceeded becomes 403, which the client reports as QuotaExceededError', async () => {
  await withThrowingBroker(new BrokerError('QuotaExceeded', 'The namespace is full.'), async (admin) => {
    const message = await rejectsWith(admin.createTopic('t'), 'QuotaExceededError', 403);
    assert.equal(message, 'The namespace is full.');
  });
});

test('InvalidOperation becomes 400 with the broker reason', async () => {
  await withThrowingBroker(new BrokerError('InvalidOperation', 'Not now.'), async (admin) => {
    assert.equal(await rejectsWith(admin.createTopic('t'), 'ServiceError', 400), 'Not now.');
  });
});

test('an unexpected failure is a 500 carrying the message but never the stack', async () => {
  const err = new Error('disk on fire');
  await withThrowingBroker(err, async (admin) => {
    const message = await rejectsWith(admin.getTopic('t'), 'InternalServerError', 500);
    assert.match(message, /disk on fire/);
    assert.ok(!message.includes('at '), 'no stack frames');
    assert.ok(err.stack && !message.includes(err.stack.split('\n')[1]!.trim()));
  });
});
