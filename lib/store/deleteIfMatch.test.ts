// deleteIfMatch on the embedded Cosmos server (real @azure/cosmos client; a 503 injected at the wire by the fault
// proxy): an item is deleted only while it is the version read, a changed or removed one is left and answered false,
// and a store failure is the store's typed error.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Container } from '@azure/cosmos';
import { cosmosConnectionSchema, createCosmosClient } from '@nimbus/sdk/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { isStoreErrorNamed } from './errors.ts';
import { createContainerIfMissing } from './containers.ts';
import { deleteIfMatch } from './deleteIfMatch.ts';
import { startFaultProxy, type FaultProxy } from './testing/faultProxy.ts';

let cosmos: EmbeddedCosmos;
let proxy: FaultProxy;
let direct: Container;
let proxied: Container;
const clients: Array<{ dispose(): void }> = [];

async function containerVia(endpoint: string): Promise<Container> {
  const client = createCosmosClient(cosmosConnectionSchema.parse({ endpoint, key: cosmos.key, database: 'deleteifmatch', throttleRetries: 0 }));
  clients.push(client);
  const { database } = await client.databases.createIfNotExists({ id: 'deleteifmatch' });
  return createContainerIfMissing(database, 'records', '/k');
}

before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  proxy = await startFaultProxy(cosmos.endpoint);
  direct = await containerVia(cosmos.endpoint);
  proxied = await containerVia(proxy.endpoint);
});

after(async () => {
  for (const c of clients) c.dispose();
  await proxy?.close();
  await cosmos?.close();
});

const create = async (id: string) => (await direct.items.create({ id, k: 'p', n: 1 })).etag ?? '';
const read = async (id: string) => (await direct.item(id, 'p').read<{ n: number }>()).resource;

test('the version read is deleted', async () => {
  const etag = await create('current');
  assert.equal(await deleteIfMatch(direct, { id: 'current', partitionKey: 'p', etag }, 'test delete'), true);
  assert.equal(await read('current'), undefined);
});

test('a version changed since it was read is left as it is: false', async () => {
  const etag = await create('changed');
  await direct.item('changed', 'p').replace({ id: 'changed', k: 'p', n: 2 });
  assert.equal(await deleteIfMatch(direct, { id: 'changed', partitionKey: 'p', etag }, 'test delete'), false);
  assert.equal((await read('changed'))?.n, 2, 'the other writer’s version stays');
});

test('an item removed meanwhile: false', async () => {
  const etag = await create('removed');
  await direct.item('removed', 'p').delete();
  assert.equal(await deleteIfMatch(direct, { id: 'removed', partitionKey: 'p', etag }, 'test delete'), false);
});

test('a store that does not answer: a StoreTransientError naming the operation, the item kept', async () => {
  const etag = await create('unavailable');
  proxy.inject({ status: 503, match: (r) => r.method === 'DELETE' });
  try {
    await assert.rejects(deleteIfMatch(proxied, { id: 'unavailable', partitionKey: 'p', etag }, 'test delete'), (err: unknown) => {
      assert.ok(isStoreErrorNamed(err, 'StoreTransientError'), String(err));
      assert.match(err.message, /test delete/);
      return true;
    });
  } finally {
    proxy.clear();
  }
  assert.equal((await read('unavailable'))?.n, 1);
  assert.equal(await deleteIfMatch(proxied, { id: 'unavailable', partitionKey: 'p', etag }, 'test delete'), true, 'and deleted once it answers');
});
