// The embedded server's query fixes change cost, never results: partition-scoped queries, ORDER BY with ties and
// paging by continuation give what the whole-container scan gives, after replaces and deletes too; cross-partition
// queries still see everything; and a query plan request no longer runs the query. On a hierarchical key, a query
// naming every path runs over that one full-key group (documentsQueried shows it), with the same results as a scan
// after every kind of write. Real @azure/cosmos client.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CosmosClient, PartitionKeyKind, type Container, type PartitionKey } from '@azure/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { documentsQueried, setKeyGroupScannedWhole, setPropertyNarrowing } from './embeddedQueries.ts';

let server: EmbeddedCosmos;
let client: CosmosClient;
let container: Container;
let events: Container;

async function all<T>(
  query: string,
  parameters: Array<{ name: string; value: string | number }>,
  partitionKey?: PartitionKey,
  pageSize = 3,
  from = container,
) {
  const it = from.items.query<T>(
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

  // A hierarchical key as the store's events container has: endpoint, then event. Three events on endpoint 'a' and
  // one on 'b' with the same event ids; ties on rank; then every kind of write moves or removes documents.
  ({ container: events } = await database.containers.createIfNotExists({
    id: 'events',
    partitionKey: { paths: ['/ep', '/ev'], kind: PartitionKeyKind.MultiHash, version: 2 },
  }));
  for (let i = 0; i < 24; i++)
    await events.items.create({ id: `r${i}`, ep: i % 4 === 3 ? 'b' : 'a', ev: `e${i % 3}`, rank: Math.floor(i / 6), n: i });
  // The same event id as a number and as a string: `=` keeps them apart, so must the groups.
  await events.items.create({ id: 'num', ep: 'a', ev: 7, rank: 0, n: 100 });
  await events.items.create({ id: 'str', ep: 'a', ev: '7', rank: 0, n: 101 });
  await events.item('r0', ['a', 'e0']).replace({ id: 'r0', ep: 'a', ev: 'e0', rank: 9, n: 0 });
  await events.item('r6', ['a', 'e0']).delete();
  await events.items.upsert({ id: 'r9', ep: 'a', ev: 'e0', rank: 0, n: 9 });
  await events.items.upsert({ id: 'r30', ep: 'a', ev: 'e0', rank: 1, n: 30 });
  await events.item('r12', ['a', 'e0']).patch([{ op: 'set', path: '/rank', value: 4 }]);
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

describe('embedded Cosmos query fixes on a hierarchical partition key', () => {
  const ids = (rows: Array<{ id: string }>) => rows.map((d) => d.id);
  // The same filter wrapped in an OR the fixes cannot scope: what the whole-container scan gives.
  const scan = (where: string) => `(${where} OR c.ep = @none)`;
  const none = { name: '@none', value: 'none' };

  test('a query on every path, paged, equals the scan, in order, after create, replace, delete, upsert and patch', async () => {
    const where = 'c.ep = @ep AND c.ev = @ev';
    const params = [
      { name: '@ep', value: 'a' },
      { name: '@ev', value: 'e0' },
    ];
    for (const tail of ['ORDER BY c.rank DESC', 'ORDER BY c.rank ASC', '']) {
      const scoped = await all<{ id: string }>(`SELECT c.id, c.rank FROM c WHERE ${where} ${tail}`, params, ['a', 'e0'], 2, events);
      const scanned = await all<{ id: string }>(`SELECT c.id, c.rank FROM c WHERE ${scan(where)} ${tail}`, [...params, none], undefined, 2, events);
      assert.deepEqual(scoped, scanned, tail);
    }
    assert.deepEqual(
      ids(await all(`SELECT c.id FROM c WHERE ${where} ORDER BY c.rank DESC`, params, ['a', 'e0'], 2, events)),
      ['r0', 'r12', 'r18', 'r21', 'r30', 'r9'],
      'the replaced r0 and patched r12 re-ranked, the deleted r6 gone, r9 upserted in place, r30 upserted new, the tie r18/r21 by _rid',
    );
  });

  test('constants, brackets and numbers scope to the full key; 7 and "7" are different events', async () => {
    const num = await all<{ id: string }>("SELECT c.id FROM c WHERE c['ev'] = 7 AND c.ep = 'a'", [], ['a', 7], 10, events);
    assert.deepEqual(ids(num), ['num']);
    const str = await all<{ id: string }>('SELECT c.id FROM c WHERE c.ev = @ev AND c.ep = @ep', [
      { name: '@ep', value: 'a' },
      { name: '@ev', value: '7' },
    ], ['a', '7'], 10, events);
    assert.deepEqual(ids(str), ['str']);
    const b = await all<{ id: string }>('SELECT c.id FROM c WHERE c.ep = "b" AND c.ev = "e0" AND c.n > 2', [], ['b', 'e0'], 10, events);
    assert.deepEqual(ids(b).sort(), ['r15', 'r3']);
  });

  test('a query on the first path only, or on the second only, gives what the scan gives', async () => {
    for (const [where, params] of [
      ['c.ep = @ep', [{ name: '@ep', value: 'a' }]],
      ['c.ev = @ev', [{ name: '@ev', value: 'e1' }]],
    ] as const) {
      const q = await all<{ id: string }>(`SELECT c.id FROM c WHERE ${where} ORDER BY c.rank DESC`, [...params], undefined, 4, events);
      const s = await all<{ id: string }>(`SELECT c.id FROM c WHERE ${scan(where)} ORDER BY c.rank DESC`, [...params, none], undefined, 4, events);
      assert.deepEqual(q, s, where);
      assert.ok(q.length > 0, where);
    }
  });

  test("a query on every path runs over that event's documents only; on the first path, over the endpoint's", async () => {
    const run = async (where: string, params: Array<{ name: string; value: string }>) => {
      const before = documentsQueried();
      const rows = await all<{ id: string }>(`SELECT c.id FROM c WHERE ${where}`, params, undefined, 100, events);
      return { rows: rows.length, ranOver: documentsQueried() - before };
    };
    // Endpoint 'a' holds 20 documents (18 created there, r6 deleted, r30 upserted, num and str), event e1 six of them.
    assert.deepEqual(
      await run('c.ep = @ep AND c.ev = @ev', [
        { name: '@ep', value: 'a' },
        { name: '@ev', value: 'e1' },
      ]),
      { rows: 6, ranOver: 6 },
    );
    assert.deepEqual(await run('c.ep = @ep', [{ name: '@ep', value: 'a' }]), { rows: 20, ranOver: 20 });
    // The second path alone is not a partition, but an equality term like any other: its value's documents only.
    assert.deepEqual(await run('c.ev = @ev', [{ name: '@ev', value: 'e1' }]), { rows: 8, ranOver: 8 });
  });
});

describe('embedded Cosmos query fixes: narrowing by other top-level equality terms', () => {
  let props: Container;
  const ids = (rows: Array<{ id: string }>) => rows.map((d) => d.id);
  // Runs a query with the narrowing on and off: the results (every page of 2, in order, through the continuation
  // tokens) and what it ran over as one page (each page of a paged query runs over the same documents again).
  const both = async (where: string, parameters: Array<{ name: string; value: string | number }>, tail = 'ORDER BY c.rank DESC') => {
    const sql = `SELECT c.id, c.rank FROM c WHERE ${where} ${tail}`;
    const run = async () => {
      const rows = await all<{ id: string }>(sql, parameters, undefined, 2, props);
      const before = documentsQueried();
      await all(sql, parameters, undefined, 100, props);
      return { rows, ranOver: documentsQueried() - before };
    };
    setPropertyNarrowing(false);
    const off = await run();
    setPropertyNarrowing(true);
    const on = await run();
    assert.deepEqual(on.rows, off.rows, where);
    return { ids: ids(on.rows), ranOver: on.ranOver, ranOverOff: off.ranOver };
  };

  before(async () => {
    ({ container: props } = await client.database('eq').containers.createIfNotExists({ id: 'props', partitionKey: { paths: ['/pk'] } }));
    // Partition 'a': 16 documents; 's' is a string, a number, missing, null, an array, an object; 'st' is a status.
    const shapes: Array<Record<string, unknown>> = [
      { s: 'x', st: 'D' }, { s: 'x', st: 'F' }, { s: 'y', st: 'D' }, { s: 7, st: 'D' }, { s: '7', st: 'D' },
      { st: 'D' }, { s: null, st: 'D' }, { s: ['x'], st: 'D' }, { s: { v: 'x' }, st: 'D' }, { s: 'X', st: 'D' },
      { s: 'x', st: 'D' }, { s: 'y', st: 'F' }, { s: '', st: 'D' }, { s: 'x' }, { s: 0, st: 'D' }, { s: 'x', st: 'D' },
    ];
    for (const [i, shape] of shapes.entries()) await props.items.create({ id: `p${i}`, pk: 'a', rank: i % 3, ...shape });
    // The partition here is small: narrow it anyway, as a large one is (a test below checks the default).
    setKeyGroupScannedWhole(0);
    // Partition 'b': the same values elsewhere, which a partition-scoped query must not see.
    for (let i = 0; i < 4; i++) await props.items.create({ id: `q${i}`, pk: 'b', rank: i, s: 'x', st: 'D' });
  });
  after(() => {
    setPropertyNarrowing(true);
    setKeyGroupScannedWhole(undefined);
  });

  test('a term on another property runs the query over its documents in the partition only', async () => {
    const r = await both('c.pk = @pk AND c.s = @s', [{ name: '@pk', value: 'a' }, { name: '@s', value: 'x' }]);
    assert.deepEqual(r.ids.sort(), ['p0', 'p1', 'p10', 'p13', 'p15']);
    assert.deepEqual([r.ranOver, r.ranOverOff], [5, 16]);
  });

  test('several terms run over the documents in all their groups, either side of `=`, constants and brackets too', async () => {
    const r = await both("c.pk = 'a' AND 'D' = c['st'] AND c.s = @s", [{ name: '@s', value: 'x' }]);
    assert.deepEqual(r.ids.sort(), ['p0', 'p10', 'p15']);
    assert.deepEqual([r.ranOver, r.ranOverOff], [3, 16]);
  });

  test('7 and "7", 0 and "", x and X are different values; missing, null, arrays and objects match no string', async () => {
    for (const [value, expected] of [[7, ['p3']], ['7', ['p4']], [0, ['p14']], ['', ['p12']], ['X', ['p9']], ['none', []]] as const) {
      const r = await both('c.pk = @pk AND c.s = @s', [{ name: '@pk', value: 'a' }, { name: '@s', value }]);
      assert.deepEqual(r.ids, expected, String(value));
      assert.equal(r.ranOver, expected.length, String(value));
    }
  });

  test('without the partition key, a term narrows the cross-partition query to its documents', async () => {
    const r = await both('c.s = @s AND c.st = @st', [{ name: '@s', value: 'x' }, { name: '@st', value: 'D' }]);
    assert.deepEqual(r.ids.sort(), ['p0', 'p10', 'p15', 'q0', 'q1', 'q2', 'q3']);
    assert.deepEqual([r.ranOver, r.ranOverOff], [7, 20]);
  });

  test('terms under OR or NOT, IN, !=, comparisons, nested paths and missing parameters are not narrowed', async () => {
    const p = [{ name: '@pk', value: 'a' }, { name: '@s', value: 'x' }];
    for (const where of [
      'c.pk = @pk AND (c.s = @s OR c.st = "F")',
      'c.pk = @pk AND NOT (c.s = @s)',
      'c.pk = @pk AND c.s IN ("x", "y")',
      'c.pk = @pk AND c.s != @s',
      'c.pk = @pk AND c.s >= @s',
      'c.pk = @pk AND c.s.v = @s',
      'c.pk = @pk AND c.s = @missing',
      'c.pk = @pk AND c.s = c.st',
    ]) {
      const r = await both(where, p);
      assert.equal(r.ranOver, 16, where);
    }
  });

  test('c[@name] names the property by the parameter\'s value and is not narrowed; nor is a parameter given twice', async () => {
    // The property is the parameter's value ('s'), not its text: narrowed by a property called "@field", nothing matched.
    const byName = await both('c.pk = @pk AND c[@field] = @s', [{ name: '@pk', value: 'a' }, { name: '@field', value: 's' }, { name: '@s', value: 'x' }]);
    assert.deepEqual([byName.ids.sort(), byName.ranOver], [['p0', 'p1', 'p10', 'p13', 'p15'], 16]);
    // Which of two values the engine takes is its own business: the scoping leaves such a term alone.
    const twice = await both('c.pk = @pk AND c.s = @s', [{ name: '@pk', value: 'a' }, { name: '@s', value: 'none' }, { name: '@s', value: 'x' }]);
    assert.equal(twice.ranOver, 16);
  });

  test('a partition of a few documents is run over whole by default, not grouped by its other terms', async () => {
    setKeyGroupScannedWhole(undefined);
    try {
      const r = await both('c.pk = @pk AND c.s = @s', [{ name: '@pk', value: 'a' }, { name: '@s', value: 'x' }]);
      assert.deepEqual([r.ids.sort(), r.ranOver], [['p0', 'p1', 'p10', 'p13', 'p15'], 16]);
      // Without the partition key there is no small group to run over: the terms narrow as before.
      assert.equal((await both('c.s = @s AND c.st = @st', [{ name: '@s', value: 'x' }, { name: '@st', value: 'D' }])).ranOver, 7);
    } finally {
      setKeyGroupScannedWhole(0);
    }
  });

  test('ORDER BY ties and continuation tokens are unchanged, and the groups follow replace, patch, upsert and delete', async () => {
    const where = 'c.pk = @pk AND c.st = @st';
    const p = [{ name: '@pk', value: 'a' }, { name: '@st', value: 'D' }];
    for (const tail of ['ORDER BY c.rank DESC', 'ORDER BY c.rank ASC', '']) await both(where, p, tail);
    await props.item('p2', 'a').replace({ id: 'p2', pk: 'a', rank: 0, s: 'y', st: 'F' });
    await props.item('p1', 'a').patch([{ op: 'set', path: '/st', value: 'D' }]);
    await props.item('p5', 'a').patch([{ op: 'remove', path: '/st' }]);
    await props.items.upsert({ id: 'p6', pk: 'a', rank: 2, s: 'x', st: 'D' });
    await props.items.upsert({ id: 'p20', pk: 'a', rank: 1, s: 'x', st: 'D' });
    await props.item('p0', 'a').delete();
    for (const tail of ['ORDER BY c.rank DESC', 'ORDER BY c.rank ASC', '']) {
      const r = await both(where, p, tail);
      assert.equal(r.ranOver, r.ids.length, tail);
    }
    assert.deepEqual(
      (await both('c.pk = @pk AND c.st = @st AND c.s = @s', [...p, { name: '@s', value: 'x' }], '')).ids,
      ['p1', 'p6', 'p10', 'p15', 'p20'],
      '_rid order (the engine sorts a query without ORDER BY by it): patched p1 and upserted p6 keep their _rid, p20 new, deleted p0 gone',
    );
  });
});
