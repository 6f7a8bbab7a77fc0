// On the embedded Cosmos server, a conditional patch is decided by the addressed document only, as on Cosmos. The
// server (@vercel/cosmosdb-server) ran the condition as a query over the whole container with `c.id = @id`: on
// `counters`, where every endpoint's document has the id `counts`, another endpoint's document could satisfy it
// (recoverLostDeltas' "nobody recovered it meanwhile" condition then passed for the wrong document). It also lower-
// cased the condition, so a property or string with capitals never matched. Real @azure/cosmos client.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CosmosClient, type Container } from '@azure/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';

let server: EmbeddedCosmos;
let client: CosmosClient;
let docs: Container;

before(async () => {
  server = await startEmbeddedCosmos({ port: 0 });
  client = new CosmosClient({ endpoint: server.endpoint, key: server.key, connectionPolicy: { enableEndpointDiscovery: false } });
  const { database } = await client.databases.createIfNotExists({ id: 'conditions' });
  // As the store's counters container: one document per endpoint, all with one id.
  ({ container: docs } = await database.containers.createIfNotExists({ id: 'counters', partitionKey: { paths: ['/endpointId'] } }));
});
after(async () => {
  client?.dispose();
  await server?.close();
});

const n = async (endpointId: string) => (await docs.item('counts', endpointId).read<{ n: number }>()).resource?.n;

test("a patch's condition is decided by the addressed document, not another partition's with the same id", async () => {
  await docs.items.create({ id: 'counts', endpointId: 'ep-a', n: 1 });
  await docs.items.create({ id: 'counts', endpointId: 'ep-b', n: 2 });

  // True for ep-b's document only: refused for ep-a's.
  await assert.rejects(
    docs.item('counts', 'ep-a').patch({ operations: [{ op: 'set', path: '/n', value: 10 }], condition: 'FROM c WHERE c.n = 2' }),
    { code: 412 },
  );
  assert.deepEqual([await n('ep-a'), await n('ep-b')], [1, 2], 'neither document changed');

  // True for the addressed one: applied to it alone.
  await docs.item('counts', 'ep-a').patch({ operations: [{ op: 'set', path: '/n', value: 10 }], condition: 'FROM c WHERE c.n = 1' });
  assert.deepEqual([await n('ep-a'), await n('ep-b')], [10, 2]);
});

test("a patch's condition keeps its capitals", async () => {
  await docs.items.create({ id: 'counts', endpointId: 'ep-c', flushed: { 'Writer-A': 3 } });
  await docs.item('counts', 'ep-c').patch({
    operations: [{ op: 'set', path: '/flushed/Writer-A', value: 4 }],
    condition: 'FROM c WHERE c.flushed["Writer-A"] = 3',
  });
  const { resource } = await docs.item('counts', 'ep-c').read<{ flushed: Record<string, number> }>();
  assert.deepEqual(resource?.flushed, { 'Writer-A': 4 });
});
