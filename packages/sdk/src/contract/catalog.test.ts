import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CatalogError, loadCatalog, parseCatalog } from './catalog.ts';
import { nameProblem } from './catalogSchema.ts';

const demoPath = new URL('../../../../catalog/demo.json', import.meta.url).pathname;

const minimal = () => ({
  endpoints: [
    { id: 'shop', produces: ['OrderPlaced'] },
    { id: 'billing', consumes: ['OrderPlaced'] },
  ],
  eventTypes: [{ id: 'OrderPlaced', sessionKey: 'orderId', example: { orderId: 'o1' } }],
});

function problemOf(value: unknown): string {
  try {
    parseCatalog(value);
  } catch (error) {
    assert.ok(error instanceof CatalogError);
    return error.message;
  }
  assert.fail('expected the catalog to be refused');
}

describe('catalog', () => {
  test('the demo catalog loads and has producers and several consumers', async () => {
    const catalog = await loadCatalog(demoPath);
    assert.equal(catalog.endpoints.length, 5);
    const consumersOfOrderPlaced = catalog.endpoints.filter((e) => e.consumes.includes('OrderPlaced'));
    assert.ok(consumersOfOrderPlaced.length >= 2);
    for (const type of catalog.eventTypes) assert.ok(type.example, `${type.id} has an example payload`);
  });

  test('defaults empty produces/consumes', () => {
    const catalog = parseCatalog(minimal());
    assert.deepEqual(catalog.endpoints[0]?.consumes, []);
  });

  test('refuses an event type that is used but not declared, naming endpoint and type', () => {
    const c = minimal();
    c.endpoints[1]!.consumes = ['OrderShipped'];
    assert.match(problemOf(c), /endpoints\.1\.consumes\.0: endpoint 'billing' consumes 'OrderShipped', which is not declared/);
  });

  test('refuses duplicates, reserved names and type/endpoint collisions', () => {
    const dup = minimal();
    dup.endpoints.push({ id: 'SHOP', produces: [] });
    assert.match(problemOf(dup), /endpoint 'SHOP' is declared twice/);

    const reserved = minimal();
    reserved.endpoints.push({ id: 'Resolver', produces: [] });
    assert.match(problemOf(reserved), /endpoint id 'Resolver' is reserved/);

    const heartbeat = minimal();
    heartbeat.eventTypes.push({ id: 'NimBus.Platform.Heartbeat' } as never);
    assert.match(problemOf(heartbeat), /'NimBus.Platform.Heartbeat' is reserved/);

    const collide = minimal();
    collide.eventTypes.push({ id: 'billing' } as never);
    assert.match(problemOf(collide), /event type id 'billing' is also an endpoint id/);
  });

  test('refuses invalid entity names with the reason', () => {
    const c = minimal();
    c.endpoints[0]!.id = 'shop front';
    assert.match(problemOf(c), /name 'shop front' contains ' '/);
    assert.match(nameProblem('x'.repeat(51)) ?? '', /51 characters long \(at most 50\)/);
    assert.equal(nameProblem('Order.Placed_v2-x'), undefined);
  });

  test('an example must carry its session key', () => {
    const c = minimal();
    c.eventTypes[0]!.example = { other: 1 } as never;
    assert.match(problemOf(c), /no value for its session key 'orderId'/);
  });

  test('loadCatalog reports a missing file and bad JSON clearly', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nimbus-catalog-'));
    try {
      await assert.rejects(loadCatalog(join(dir, 'absent.json')), /catalog file not found: .*absent\.json/);
      const bad = join(dir, 'bad.json');
      await writeFile(bad, '{ "endpoints": [');
      await assert.rejects(loadCatalog(bad), (error: Error) => error instanceof CatalogError && /is not valid JSON/.test(error.message));
      const empty = join(dir, 'empty.json');
      await writeFile(empty, '{ "endpoints": [] }');
      await assert.rejects(loadCatalog(empty), /at least one endpoint/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
