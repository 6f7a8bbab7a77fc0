// The embedded server's query fixes change cost, never results: partition-scoped queries, ORDER BY with ties and
// paging by continuation give what the whole-container scan gives, after replaces and deletes too; cross-partition
// queries still see everything; and a query plan request no longer runs the query. Real @azure/cosmos client.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CosmosClient, type Container } from '@azure/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';

let server: EmbeddedCosmos;
let client: CosmosClient;
let container: Container;

async function all<T>(
  query: string,
  parameters: Array<{ name: string; value: string }>,
  partitionKey?: string,
  pageSize = 3,
) {
  const it = container.items.query<T>(
    { query, parameters },
    { maxItemCount: pageSize, ...(partitionKey ? { partitionKey } : {}) },
  );
  const out: T[] = [];
  while (it.hasMoreResults()) out.push(...(await it.fetchNext()).resources);
  return out;
}

before(async () => {
  server = await startEmbeddedCosmos({ port: 0 });
  client = new CosmosClient({
    endpoint: server.endpoint,
    key: server.key,
    connectionPolicy: { enableEndpointDiscovery: false },
  });
  const { database } = await client.databases.createIfNotExists({ id: 'eq' });
  ({ container } = await database.containers.createIfNotExists({
    id: 'docs',
    partitionKey: { paths: ['/pk'] },
  }));
  // Two partitions, ties on the sort key, one replaced (moves to the container's end) and one deleted.
  for (let i = 0; i < 12; i++)
    await container.items.create({ id: `d${i}`, pk: i % 2 === 0 ? 'a' : 'b', rank: Math.floor(i / 3), n: i });
  await container.item('d4', 'a').replace({ id: 'd4', pk: 'a', rank: 9, n: 4 });
  await container.item('d6', 'a').delete();
});

after(async () => {
  client?.dispose();
  await server?.close();
});

describe('embedded Cosmos query fixes', () => {
  test('a partition-scoped ORDER BY query, paged, equals the filtered cross-partition result', async () => {
    const sql = 'SELECT c.id, c.rank FROM c WHERE c.pk = @pk ORDER BY c.rank DESC';
    const scoped = await all<{ id: string }>(sql, [{ name: '@pk', value: 'a' }], 'a');
    // The same filter the engine cannot scope (an OR around the partition key): the whole container is scanned.
    const scanned = await all<{ id: string }>(
      'SELECT c.id, c.rank FROM c WHERE (c.pk = @pk OR c.pk = @none) ORDER BY c.rank DESC',
      [
        { name: '@pk', value: 'a' },
        { name: '@none', value: 'none' },
      ],
    );
    assert.deepEqual(scoped, scanned);
    assert.deepEqual(
      scoped.map((d) => d.id),
      ['d4', 'd10', 'd8', 'd0', 'd2'],
      'highest rank first, ties in _rid order (ascending, as the engine breaks them), the replaced document in its new place, the deleted one gone',
    );
  });

  test('the partition key in brackets or as a constant scopes too, and another partition is not seen', async () => {
    const b = await all<{ id: string }>("SELECT c.id FROM c WHERE c['pk'] = 'b' AND c.n > 6", [], 'b', 10);
    assert.deepEqual(b.map((d) => d.id).sort(), ['d11', 'd7', 'd9']);
  });

  test('a cross-partition query and an aggregate still see every document', async () => {
    const ids = await all<{ id: string }>('SELECT c.id FROM c ORDER BY c.n ASC', [], undefined, 4);
    assert.equal(ids.length, 11);
    const { resources } = await container.items
      .query<number>('SELECT VALUE COUNT(1) FROM c WHERE c.pk = "a"')
      .fetchAll();
    assert.deepEqual(resources, [5]);
  });

  test('a query plan request is refused at once instead of being run as a query', async () => {
    const res = await fetch(`${server.endpoint}/dbs/eq/colls/docs/docs`, {
      method: 'POST',
      headers: {
        'content-type': 'application/query+json',
        'x-ms-cosmos-is-query-plan-request': 'True',
        'x-ms-documentdb-query-enablecrosspartition': 'True',
      },
      body: JSON.stringify({ query: 'SELECT * FROM c' }),
    });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /computes no query plans/);
  });
});
