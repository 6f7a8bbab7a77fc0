// On the embedded Cosmos server, a document of a hierarchical-key container is identified by its whole key plus its
// id, as on Cosmos: two documents with the same id and the same first key value (endpoint) but another second one
// (event) are two documents, written, read, replaced, patched, upserted, deleted and bulk-read apart. The server
// (@vercel/cosmosdb-server) indexed them by the first key value and id only: the second create was a 409, and a
// replace, patch or delete addressed to one reached the other. Real @azure/cosmos client. And the store never writes
// such a pair anyway: a status row's id holds its event id (statusRowId), so ids differ across events.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BulkOperationType, CosmosClient, PartitionKeyKind, type Container } from '@azure/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { statusRowId } from './ids.ts';

let server: EmbeddedCosmos;
let client: CosmosClient;
let events: Container;

before(async () => {
  server = await startEmbeddedCosmos({ port: 0 });
  client = new CosmosClient({ endpoint: server.endpoint, key: server.key, connectionPolicy: { enableEndpointDiscovery: false } });
  const { database } = await client.databases.createIfNotExists({ id: 'hk' });
  // The store's events container's key: endpoint, then event.
  ({ container: events } = await database.containers.createIfNotExists({
    id: 'events',
    partitionKey: { paths: ['/endpointId', '/eventId'], kind: PartitionKeyKind.MultiHash, version: 2 },
  }));
});
after(async () => {
  client?.dispose();
  await server?.close();
});

const read = async (id: string, eventId: string) =>
  (await events.item(id, ['ep', eventId]).read<{ eventId: string; n: number }>()).resource;

test('two documents with one id and endpoint but different events are two documents', async () => {
  await events.items.create({ id: 'same', endpointId: 'ep', eventId: 'e1', n: 1 });
  await events.items.create({ id: 'same', endpointId: 'ep', eventId: 'e2', n: 2 });
  assert.deepEqual([(await read('same', 'e1'))?.n, (await read('same', 'e2'))?.n], [1, 2], 'each reads back its own');

  await events.item('same', ['ep', 'e2']).replace({ id: 'same', endpointId: 'ep', eventId: 'e2', n: 20 });
  await events.item('same', ['ep', 'e1']).patch([{ op: 'set', path: '/n', value: 10 }]);
  await events.items.upsert({ id: 'same', endpointId: 'ep', eventId: 'e2', n: 21 });
  assert.deepEqual([(await read('same', 'e1'))?.n, (await read('same', 'e2'))?.n], [10, 21], 'each write reached its own');

  const bulk = await events.items.executeBulkOperations([
    { operationType: BulkOperationType.Read, id: 'same', partitionKey: ['ep', 'e1'] },
    { operationType: BulkOperationType.Read, id: 'same', partitionKey: ['ep', 'e2'] },
  ]);
  assert.deepEqual(bulk.map((r) => (r.response?.resourceBody as { n?: number } | undefined)?.n), [10, 21], 'bulk reads too');

  const q = async (sql: string, partitionKey: string[]) =>
    (await events.items.query<number>({ query: sql, parameters: [{ name: '@ep', value: 'ep' }, { name: '@ev', value: 'e1' }] }, { partitionKey }).fetchAll())
      .resources.sort();
  assert.deepEqual(await q('SELECT VALUE c.n FROM c WHERE c.endpointId = @ep', ['ep']), [10, 21], "the endpoint's query sees both");
  assert.deepEqual(await q('SELECT VALUE c.n FROM c WHERE c.endpointId = @ep AND c.eventId = @ev', ['ep', 'e1']), [10], "one event's query sees its own");

  await events.item('same', ['ep', 'e1']).delete();
  assert.equal(await read('same', 'e1'), undefined, 'deleted');
  assert.equal((await read('same', 'e2'))?.n, 21, 'the other is still there');
  await assert.rejects(events.items.create({ id: 'same', endpointId: 'ep', eventId: 'e2', n: 3 }), { code: 409 }, 'the full key plus id is unique');
});

test("a read, patch or delete addressed to another event's key does not reach the document", async () => {
  await events.items.create({ id: 'only', endpointId: 'ep', eventId: 'f1', n: 1 });
  const elsewhere = events.item('only', ['ep', 'f2']);
  await assert.rejects(elsewhere.read().then((r) => (r.statusCode === 404 ? Promise.reject({ code: 404 }) : r)), { code: 404 }, 'read');
  await assert.rejects(elsewhere.patch([{ op: 'set', path: '/n', value: 99 }]), { code: 404 }, 'patch');
  await assert.rejects(elsewhere.delete(), { code: 404 }, 'delete');
  assert.equal((await read('only', 'f1'))?.n, 1, 'untouched');
});

test("a replace cannot move a document to another event (the key is the document's, as on Cosmos)", async () => {
  await events.items.create({ id: 'moving', endpointId: 'ep', eventId: 'm1', n: 1 });
  await assert.rejects(events.item('moving', ['ep', 'm1']).replace({ id: 'moving', endpointId: 'ep', eventId: 'm2', n: 2 }), { code: 400 });
  assert.equal((await read('moving', 'm1'))?.n, 1);
  assert.equal(await read('moving', 'm2'), undefined);
});

test("the store's status rows never share an id across events: the id holds the event id", () => {
  assert.notEqual(statusRowId('e1', 's'), statusRowId('e2', 's'));
  // Hashed when too long: still from both parts.
  const long = 'x'.repeat(300);
  assert.notEqual(statusRowId(`${long}1`, 's'), statusRowId(`${long}2`, 's'));
});
