// The embedded Cosmos server (@vercel/cosmosdb-server 1.0.1) identifies a document by one partition key value and its
// id: for a hierarchical key (the events container's `[/endpointId, /eventId]`) only the first value, from the
// document (Items._getPartition) and from the request's x-ms-documentdb-partitionkey header alike (parsePartitionKey
// takes `["ep","ev"]`[0]). So two documents with the same id and endpoint but different events collided: the second
// create was a 409, and a replace, patch or delete addressed to one reached the other. Real Cosmos identifies a
// document by its whole key plus id. This fix makes both sides name the whole key for a hierarchical container; a
// single-path container is left as it was. The store never writes such a pair (a row's id holds its event id,
// ids.ts), but the embedded server stands in for Cosmos in every test, and should not differ from it there.
//
// The first-path groups that scope queries (embeddedQueries.ts) take the first value themselves, not _getPartition.
// The journal (embeddedJournal.ts) names documents by `_rid`, so journals written before this fix replay unchanged.
import { createRequire } from 'node:module';
import { valueAt } from './embeddedQueries.ts';

interface ItemsProto {
  /** The container's partition key paths as created (`['/endpointId', '/eventId']`). */
  _partitionKeyPath: string[];
  _getPartition(data: unknown): unknown;
}

let installed = false;

/** Installs the fix into the server's modules (once per process; a no-op afterwards). */
export function installHierarchicalKeyFix(): void {
  if (installed) return;
  installed = true;
  // Resolved from the server's own location, as embeddedQueries.ts does.
  const serverRequire = createRequire(createRequire(import.meta.url).resolve('@vercel/cosmosdb-server'));
  // The handlers call it through the module's exports (`(0, m.parsePartitionKey)(…)`), so replacing it there reaches them.
  const header = serverRequire('./utils/get-partition-from-header.js') as {
    parsePartitionKey(partitionKey: string, defaultValue: unknown): unknown;
  };
  const original = header.parsePartitionKey;
  header.parsePartitionKey = (partitionKey, defaultValue) => {
    const first = original(partitionKey, defaultValue); // refuses a header that does not parse, as before
    const values: unknown = JSON.parse(partitionKey);
    return Array.isArray(values) && values.length > 1 ? fullKey(values) : first;
  };

  const items = serverRequire('./account/items.js') as { default: { prototype: ItemsProto } };
  const proto = items.default.prototype;
  const originalGetPartition = proto._getPartition;
  proto._getPartition = function (this: ItemsProto, data: unknown) {
    const paths = this._partitionKeyPath;
    if (!Array.isArray(paths) || paths.length < 2) return originalGetPartition.call(this, data);
    return fullKey(paths.map((p) => valueAt(data, p.slice(1).split('/'))));
  };
}

/**
 * One string for a whole hierarchical key. A path the document lacks and the SDK's "none" marker for it (`{}` in the
 * header) are both null, so a document without a value is found by the key the client sends for it.
 */
function fullKey(values: unknown[]): string {
  const none = (v: unknown) =>
    v === undefined || (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);
  return `hk:${JSON.stringify(values.map((v) => (none(v) ? null : v)))}`;
}
