// The demo runs only on a catalog that has its endpoints and event types; anything else is named, not guessed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadCatalog, parseCatalog } from '@nimbus/sdk/catalog';
import { demoCatalogProblems } from './index.ts';

test('catalog/demo.json fits the demo endpoints', async () => {
  assert.deepEqual(
    demoCatalogProblems(await loadCatalog(fileURLToPath(new URL('../catalog/demo.json', import.meta.url)))),
    [],
  );
});

test('a catalog without the demo endpoints is refused with what is missing', () => {
  const catalog = parseCatalog({
    endpoints: [
      { id: 'storefrontendpoint', produces: ['OrderPlaced'] },
      { id: 'billingendpoint', consumes: ['OrderPlaced'] },
    ],
    eventTypes: [{ id: 'OrderPlaced' }],
  });
  const problems = demoCatalogProblems(catalog);
  assert.ok(problems.includes("endpoint 'erpendpoint' is missing"));
  assert.ok(problems.includes("'billingendpoint' does not consume OrderCancelled"));
  assert.ok(problems.includes("'storefrontendpoint' does not produce CustomerRegistered"));
});
