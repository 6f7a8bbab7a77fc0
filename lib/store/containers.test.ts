// openContainer on the embedded Cosmos server (real @azure/cosmos clients, faults injected at the wire): a
// container another process creates at the same moment is opened, a failed open is retried on the next call rather
// than remembered, and it fails with the store's typed errors (a 403 on the creation names the container as missing,
// a 403 on the read as refused to this identity).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Database } from '@azure/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { cosmosConnectionSchema, createCosmosClient } from '@nimbus/sdk/cosmos';
import { cosmosStatus, isStoreErrorNamed } from './errors.ts';
import { openContainer, type ContainerSlot } from './containers.ts';
import { readFailureGroupDocs } from './failureGroupAggregates.ts';
import { startFaultProxy, type FaultProxy } from './testing/faultProxy.ts';

let cosmos: EmbeddedCosmos;
let proxy: FaultProxy;
const clients: Array<{ dispose(): void }> = [];

/** A database handle through its own client, as another console process would hold. */
async function databaseVia(endpoint: string): Promise<Database> {
  const client = createCosmosClient(cosmosConnectionSchema.parse({ endpoint, key: cosmos.key, database: 'containers', throttleRetries: 0 }));
  clients.push(client);
  return (await client.databases.createIfNotExists({ id: 'containers' })).database;
}

before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  proxy = await startFaultProxy(cosmos.endpoint);
});

after(async () => {
  for (const c of clients) c.dispose();
  await proxy?.close();
  await cosmos?.close();
});

test('a container another process creates between our read and our create (409) is opened', async () => {
  // createIfNotExists reads, finds nothing, creates. The proxy answers that read "not found" while the container
  // already exists, which is exactly the moment another console instance's create landed in between.
  await (await databaseVia(cosmos.endpoint)).containers.createIfNotExists({ id: 'shared', partitionKey: { paths: ['/k'], version: 2 } });
  const d = await databaseVia(proxy.endpoint);
  proxy.inject({ status: 404, times: 1, match: (r) => r.method === 'GET' && r.path.endsWith('/colls/shared') });
  const c = await openContainer({}, d, 'shared', '/k');
  assert.equal(proxy.injected, 1, 'the read was answered "not found"');
  await c.items.create({ id: 'x', k: 'one' });
  assert.equal((await c.item('x', 'one').read<{ k: string }>()).resource?.k, 'one');
  proxy.clear();
});

test('two processes opening a new container at once both get it', async () => {
  const [a, b] = [await databaseVia(cosmos.endpoint), await databaseVia(cosmos.endpoint)];
  const [ca, cb] = await Promise.all([openContainer({}, a, 'fresh', '/k'), openContainer({}, b, 'fresh', '/k')]);
  await ca.items.create({ id: 'y', k: 'two' });
  assert.equal((await cb.item('y', 'two').read<{ k: string }>()).resource?.k, 'two');
});

test('a failed open is forgotten: the next call opens it', async () => {
  const d = await databaseVia(proxy.endpoint);
  const slot: ContainerSlot = {};
  proxy.inject({ status: 400, times: 1 });
  await assert.rejects(openContainer(slot, d, 'later', '/k'), (err: unknown) => cosmosStatus(err) === 400);
  const c = await openContainer(slot, d, 'later', '/k');
  assert.equal(c.id, 'later');
  assert.equal(await openContainer(slot, d, 'later', '/k'), c, 'then remembered');
});

test('a store that does not answer the open: a StoreTransientError, as any store call\'s', async () => {
  const d = await databaseVia(proxy.endpoint);
  proxy.inject({ status: 503 });
  try {
    await assert.rejects(openContainer({}, d, 'down', '/k'), (err: unknown) => isStoreErrorNamed(err, 'StoreTransientError') && err.transient);
  } finally {
    proxy.clear();
  }
});

test('Cosmos refusing to create the container (403): a ContainerMissingError naming it, tried again on the next call', async () => {
  const d = await databaseVia(proxy.endpoint);
  const slot: ContainerSlot = {};
  // The creation (POST .../colls) refused, as Cosmos refuses an identity with Entra data-plane roles only.
  proxy.inject({ status: 403, match: (r) => r.method === 'POST' && /\/colls$/.test(r.path) });
  try {
    for (const attempt of [1, 2]) {
      await assert.rejects(openContainer(slot, d, 'refused', '/k'), (err: unknown) => {
        assert.ok(isStoreErrorNamed(err, 'ContainerMissingError'), `attempt ${attempt}: ${String(err)}`);
        assert.deepEqual([err.container, err.database, err.transient], ['refused', 'containers', false]);
        assert.match(err.message, /container refused is missing .* must be created as docs\/deploy\.md shows/);
        return true;
      });
    }
  } finally {
    proxy.clear();
  }
  assert.equal((await openContainer(slot, d, 'refused', '/k')).id, 'refused', 'opened once it may be created');
});

// A 403 on *reading* a container is the account refusing this identity altogether (its firewall, key sign-in turned
// off with disableLocalAuth, an identity without a data-plane role): the container may well exist, and creating it is
// not the fix. Before, any 403 of the open was a ContainerMissingError, sending the operator to create a container
// that is there.
test('an existing container whose read is refused (403: firewall, key sign-in off, no role): access denied naming it, not missing', async () => {
  await (await databaseVia(cosmos.endpoint)).containers.createIfNotExists({ id: 'guarded', partitionKey: { paths: ['/k'], version: 2 } });
  const d = await databaseVia(proxy.endpoint);
  const slot: ContainerSlot = {};
  proxy.inject({ status: 403 }); // every request refused, as such an account refuses them
  try {
    for (const attempt of [1, 2]) {
      await assert.rejects(openContainer(slot, d, 'guarded', '/k'), (err: unknown) => {
        assert.ok(isStoreErrorNamed(err, 'ContainerAccessDeniedError'), `attempt ${attempt}: ${String(err)}`);
        assert.deepEqual([err.container, err.database, err.transient], ['guarded', 'containers', false]);
        assert.match(err.message, /container guarded .*refused/);
        assert.doesNotMatch(err.message, /missing/);
        return true;
      });
    }
  } finally {
    proxy.clear();
  }
  assert.equal((await openContainer(slot, d, 'guarded', '/k')).id, 'guarded', 'opened once access is allowed');
});

// failureGroups has its own open (one per database, kept in a WeakMap) but the same creation: GET /api/failure-groups
// reads it (readFailureGroupDocs) with the open outside its store-error mapping, a 500 on first use with the store down.
test('the failure groups container opens the same way: a StoreTransientError, a ContainerMissingError for a 403', async () => {
  const d = await databaseVia(proxy.endpoint);
  proxy.inject({ status: 503 });
  try {
    await assert.rejects(readFailureGroupDocs(d), (err: unknown) => isStoreErrorNamed(err, 'StoreTransientError'));
  } finally {
    proxy.clear();
  }
  proxy.inject({ status: 403, match: (r) => r.method === 'POST' && /\/colls$/.test(r.path) });
  try {
    await assert.rejects(readFailureGroupDocs(d), (err: unknown) => isStoreErrorNamed(err, 'ContainerMissingError') && err.container === 'failureGroups');
  } finally {
    proxy.clear();
  }
  assert.deepEqual(await readFailureGroupDocs(d), [], 'opened once the store answers');
});
