// Fixes to how the embedded Cosmos server (@vercel/cosmosdb-server 1.0.1 on @zeit/cosmosdb-query 0.7.2) runs
// queries, found by the console benchmark (bench/console.ts) with 100,000 events. None changes a result; they
// only change how much work a query costs, so the embedded server behaves like Cosmos for our query shapes:
//
// 1. The generated query code collects the candidate documents with `reduce((acc, c) => [...acc, { c }], [])`,
//    which copies the accumulator once per document: quadratic. A query over 100,000 documents did not finish
//    within the SDK's 30 s timeout. The collection step is rewritten to the linear filter/map it means.
// 2. The engine turns the generated code into a function with `new Function` on every execution, so the code that
//    runs once per document never gets past V8's interpreter. The function is now made once per query text.
// 3. ORDER BY sorts with a comparator that walks each document's key path on every comparison; it now reads each
//    key once and sorts on the values (same order, same tie-break on `_rid`, same dropping of undefined keys).
//    And every matching document was projected (the SELECT list) before the page was cut out of them; only the
//    rows of the page are projected now.
// 4. The server ignores the partition key and scans the whole container for every query. Real Cosmos serves a
//    query with `c.<partition key> = value` from that one partition. Here each container keeps its documents
//    grouped by the value of its first partition key path too, and a query whose WHERE requires
//    `c.<that path> = <string or number>` (a top-level AND term) runs over that group only. A container with a
//    hierarchical key (the events container's `[/endpointId, /eventId]`) is also grouped by the values of all its
//    paths, and a query requiring equality on every path runs over that one group: an event's few rows instead of
//    its endpoint's 20,000. Order within a group is the container's own order, so results, ORDER BY ties and
//    continuation tokens are the same as before.
//    The query's other top-level AND terms `c.<property> = <string or number>` narrow it further, as Cosmos's
//    index would serve them: each container keeps, for every property a query has required so, its documents
//    grouped by that property's value (built on the first such query, then kept by every write), and the query runs
//    over the documents in all its groups: the parked rows of one session (`c.sessionId = @session AND c.status =
//    'Deferred'`) instead of the endpoint's 20,000. Only documents that cannot match are left out (the engine's `=`
//    is true only for a value of the same type and value), and the query still evaluates its whole WHERE.
// 5. The SDK asks for a query plan beside every query and uses it only when the gateway refuses the query as
//    needing one (which the embedded server never does). The server does not know plan requests and ran the
//    whole query for each of them: every query cost twice. Plan requests are now refused at once (see below).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';

interface QueryLike {
  ast: { body?: { from?: FromSpec; where?: { condition?: AstNode } } };
  _code: string | null;
  exec(data: unknown[], options: Record<string, unknown>): unknown;
}
interface FromSpec {
  source?: {
    expression?: { type?: string; expression?: { type?: string; name?: string } };
    alias?: { name?: string } | null;
  };
  joins?: unknown[];
}
interface AstNode {
  type: string;
  operator?: string;
  left?: AstNode;
  right?: AstNode;
  object?: AstNode;
  property?: { type: string; name?: string; value?: unknown };
  name?: string;
  value?: unknown;
}
interface ItemHolder {
  read(): Record<string, unknown>;
}
type PropertyIndex = Map<string | number, Map<string, ItemHolder>>;
interface ItemsLike {
  _data: Map<string, ItemHolder>;
  _parent: { read(): { indexingPolicy?: { compositeIndexes?: unknown[] } } | null };
  _byPartition?: Map<unknown, Map<string, ItemHolder>>;
  /** Hierarchical keys only: the documents by the values of all the key's paths (fullKeyName). */
  _byFullKey?: Map<string, Map<string, ItemHolder>>;
  /**
   * For each top-level property an equality term has required: its documents by value (strings and numbers
   * only), in the container's order. Dropped (rebuilt on the next query) if a write could have upset that order.
   */
  _byProperty?: Map<string, PropertyIndex>;
  /** The container's partition key paths as created (`['/endpointId', '/eventId']`). */
  _partitionKeyPath: string[];
  _getPartitionKeyPath(): string[];
  _getQuery(sql: string): QueryLike;
  _userDefinedFunctions(): unknown;
  _item(
    keyPath: string,
    value: string,
    partition: unknown,
  ): ItemHolder & { read(): Record<string, unknown> | undefined };
}

const QUADRATIC_COLLECT =
  /\$c\.reduce\(\(\$, c\) => typeof c !== "undefined" \? \[\.\.\.\$, \{\s*c: c\s*\}\] : \$, \[\]\)/g;
const LINEAR_COLLECT = '$c.filter(c => typeof c !== "undefined").map(c => ({ c: c }))';

let installed = false;

/** Installs the fixes into the server's modules (once per process; a no-op afterwards). */
export function installEmbeddedQueryFixes(): void {
  if (installed) return;
  installed = true;
  // Resolved from the server's own location: the query engine is its dependency, not ours.
  const serverRequire = createRequire(createRequire(import.meta.url).resolve('@vercel/cosmosdb-server'));
  const queryModule = serverRequire('@zeit/cosmosdb-query') as { default: (sql: string) => QueryLike };
  const queryProto = Object.getPrototypeOf(queryModule.default('SELECT * FROM c')) as object;
  const codeGetter = Object.getOwnPropertyDescriptor(queryProto, 'code')?.get;
  const rewritten = new WeakSet<object>();
  if (codeGetter) {
    Object.defineProperty(queryProto, 'code', {
      configurable: true,
      get(this: QueryLike) {
        const code = codeGetter.call(this) as string;
        // The original getter returns the cached `_code` from then on: rewrite it once per query.
        if (rewritten.has(this)) return code;
        const linear = projectAfterPaging(code.replace(QUADRATIC_COLLECT, LINEAR_COLLECT));
        this._code = linear;
        rewritten.add(this);
        return linear;
      },
    });
  }

  const helpersModule = serverRequire('@zeit/cosmosdb-query/lib/helpers.js') as object;
  const executor = serverRequire('@zeit/cosmosdb-query/lib/executor.js') as { default: ExecuteFn };
  const aggregates = serverRequire('@zeit/cosmosdb-query/lib/aggregate-functions.js') as unknown;
  const builtins = serverRequire('@zeit/cosmosdb-query/lib/builtin-functions.js') as unknown;
  const compiled = new Map<string, CompiledQuery>();
  executor.default = (
    collection,
    { code, parameters, udf = {}, maxItemCount, continuation, compositeIndexes },
  ) => {
    documentsRunOver += collection.length;
    let run = compiled.get(code);
    if (!run) {
      // The same translation of generated code to a function that the engine does on every call, done once.
      run = new Function(`"use strict";return (${code})`)() as CompiledQuery;
      if (compiled.size >= 500) compiled.clear();
      compiled.set(code, run);
    }
    const params: Record<string, unknown> = {};
    for (const { name, value } of parameters ?? []) params[name.slice(1)] = value;
    return run(
      aggregates,
      builtins,
      collection,
      helpersModule,
      udf,
      params,
      maxItemCount,
      continuation,
      compositeIndexes,
    );
  };

  const helpers = helpersModule as {
    sort: SortFn;
    paginate: (...args: unknown[]) => { result: unknown[]; continuation: unknown };
    stripUndefined: (v: unknown) => unknown;
    [LAZY_HELPER]?: (project: () => unknown) => unknown;
  };
  const originalPaginate = helpers.paginate;
  helpers[LAZY_HELPER] = (project) => {
    lazyRows.add(project);
    return project;
  };
  helpers.paginate = (...args) => {
    const page = originalPaginate(...args);
    page.result = page.result.map((r) =>
      typeof r === 'function' && lazyRows.has(r as () => unknown)
        ? helpers.stripUndefined((r as () => unknown)())
        : r,
    );
    return page;
  };
  const originalSort = helpers.sort;
  helpers.sort = (collection, getRid, compositeIndexes, ...orders) => {
    // Several ORDER BY terms need the composite-index check of the original; we only sort on one (or none: the
    // container order by _rid).
    if (orders.length > 1) return originalSort(collection, getRid, compositeIndexes, ...orders);
    const [keys, desc] = orders[0] ?? [undefined, false];
    const keyed = collection.map((d) => ({ d, k: keys ? valueAt(d, keys) : null, r: getRid(d) }));
    keyed.sort((a, b) => {
      const r = compareValues(a.k, b.k);
      if (r !== 0) return desc ? -r : r;
      return compareValues(a.r, b.r);
    });
    const out: unknown[] = [];
    for (const e of keyed) if (e.k !== undefined) out.push(e.d);
    return out;
  };

  const itemsModule = serverRequire('./account/items.js') as { default: { prototype: ItemsLike } };
  const proto = itemsModule.default.prototype as ItemsLike & {
    _set(data: Record<string, unknown>): unknown;
    delete(idOrRid: string, partition: unknown): void;
    query(
      params: { query: string; parameters?: Array<{ name: string; value: unknown }> },
      options: Record<string, unknown>,
    ): unknown;
  };
  const originalSet = proto._set;
  const originalDelete = proto.delete;
  const originalQuery = proto.query;

  // Every write reaches the documents through _set and delete (replace, upsert and patch are a delete and a _set,
  // which moves the document to the end of the container's order, and of its groups alike).
  proto._set = function (this: ItemsLike, data: Record<string, unknown>) {
    const rid = data._rid as string;
    // Overwritten in place (no delete first), a document keeps its place in the container but would move to the end
    // of its property groups, and its old values would stay grouped: drop them; the next query rebuilds them.
    if (this._data.has(rid)) this._byProperty = undefined;
    const result = originalSet.call(this, data);
    const holder = this._data.get(rid);
    if (holder) {
      groupIn((this._byPartition ??= new Map()), firstKeyValue(this, data)).set(rid, holder);
      const full = fullKeyOfDocument(this, data);
      if (full !== undefined) groupIn((this._byFullKey ??= new Map()), full).set(rid, holder);
      for (const [prop, index] of this._byProperty ?? []) {
        const value = data[prop];
        if (isGroupedValue(value)) groupIn(index, value).set(rid, holder);
      }
    }
    return result;
  };
  proto.delete = function (this: ItemsLike, idOrRid: string, partition: unknown) {
    const existing = this._item('/id', idOrRid, partition).read();
    originalDelete.call(this, idOrRid, partition);
    if (!existing) return;
    const rid = existing._rid as string;
    this._byPartition?.get(firstKeyValue(this, existing))?.delete(rid);
    const full = fullKeyOfDocument(this, existing);
    if (full !== undefined) this._byFullKey?.get(full)?.delete(rid);
    for (const [prop, index] of this._byProperty ?? []) {
      const value = existing[prop];
      if (!isGroupedValue(value)) continue;
      const group = index.get(value);
      group?.delete(rid);
      // Unlike partitions, values such as session ids come and go: an empty group is not kept.
      if (group?.size === 0) index.delete(value);
    }
  };
  proto.query = function (this: ItemsLike, params, options) {
    const parent = this._parent.read();
    const scope = parent ? scopeOf(this, params) : undefined;
    if (!scope) return originalQuery.call(this, params, options);
    const data = scope.map((item) => item.read());
    try {
      return this._getQuery(params.query).exec(data, {
        parameters: params.parameters,
        udf: this._userDefinedFunctions(),
        maxItemCount: options.maxItemCount,
        continuation: options.continuation,
        compositeIndexes: parent?.indexingPolicy?.compositeIndexes ?? [],
      });
    } catch (err) {
      (err as { badRequest?: boolean }).badRequest = true;
      throw err;
    }
  };
}

let documentsRunOver = 0;

/**
 * How many documents the engine's generated query code has been run over in this process, all queries together:
 * what a query scanned is the difference across it. For tests, which cannot tell a scoped query from a scan by its
 * results (the point of the fixes is that these are the same).
 */
export function documentsQueried(): number {
  return documentsRunOver;
}

const LAZY_HELPER = '__nimbusLazyRow';

/**
 * Rows' projections, computed only for the rows on the page returned. A function (not an object) passes through
 * the engine's own clean-up of the page untouched, so the thunks are recognised afterwards.
 */
const lazyRows = new WeakSet<() => unknown>();

const PAGE_PROJECTION_OPEN = /\.map\(\(\{\s*c\s*\}\) => \[/g;
const PAGE_PROJECTION_CLOSE = /, \{\s*c\s*\}\]\), \$maxItemCount/g;

/**
 * The generated code projects (SELECT list) every matching document, sorted, and only then cuts the page out of
 * them: 20,000 rows projected for a page of 50. Rewrites `.map(({ c }) => [PROJECTION, { c }]), $maxItemCount`
 * so the projection is a thunk that the patched paginate evaluates for the rows of the page only. Code of any
 * other shape (aggregates, nested projections) is left as it is.
 */
function projectAfterPaging(code: string): string {
  const closes = [...code.matchAll(PAGE_PROJECTION_CLOSE)];
  if (closes.length !== 1) return code;
  const close = closes[0]!.index;
  const opens = [...code.slice(0, close).matchAll(PAGE_PROJECTION_OPEN)];
  const open = opens.at(-1);
  if (!open) return code;
  const start = open.index + open[0].length;
  const projection = code.slice(start, close);
  if (new RegExp(PAGE_PROJECTION_OPEN.source).test(projection)) return code;
  return `${code.slice(0, start)}$h.${LAZY_HELPER}(() => (${projection}))${code.slice(close)}`;
}

type CompiledQuery = (...args: unknown[]) => unknown;
type ExecuteFn = (
  collection: unknown[],
  options: {
    code: string;
    parameters?: Array<{ name: string; value: unknown }>;
    udf?: unknown;
    maxItemCount?: unknown;
    continuation?: unknown;
    compositeIndexes?: unknown;
  },
) => unknown;

type SortFn = (
  collection: unknown[],
  getRid: (d: unknown) => unknown,
  compositeIndexes: unknown,
  ...orders: Array<[string[], boolean]>
) => unknown[];

/** The value at a property path of a document (undefined where the path ends early). */
export function valueAt(doc: unknown, keys: string[]): unknown {
  let v: unknown = doc;
  for (const k of keys) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<string, unknown>)[k];
    if (v === undefined) return undefined;
  }
  return v;
}

const TYPE_ORDER = ['undefined', 'null', 'boolean', 'number', 'string', 'array', 'object'];
const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** The query engine's ORDER BY comparison: by type rank first, then by value (objects compare equal). */
function compareValues(a: unknown, b: unknown): number {
  if (a === b) return 0;
  const ta = typeOf(a);
  const tb = typeOf(b);
  if (ta === tb) {
    if (ta === 'object') return 0;
    return (a as string) < (b as string) ? -1 : 1;
  }
  return TYPE_ORDER.indexOf(ta) - TYPE_ORDER.indexOf(tb) < 0 ? -1 : 1;
}

/**
 * The value of the container's first partition key path: what the first-path groups are keyed by. Not
 * _getPartition, which names the whole key of a hierarchical container (embeddedHierarchicalKeys.ts).
 */
function firstKeyValue(items: ItemsLike, data: unknown): unknown {
  return valueAt(data, items._getPartitionKeyPath());
}

function groupIn<K>(groups: Map<K, Map<string, ItemHolder>>, key: K): Map<string, ItemHolder> {
  let group = groups.get(key);
  if (!group) groups.set(key, (group = new Map()));
  return group;
}

/**
 * The properties of a hierarchical partition key (`['endpointId', 'eventId']`) when each path is one top-level
 * property; else undefined: a single-path key has its first-path groups only, nested paths are not grouped.
 */
function hierarchicalKeyOf(items: ItemsLike): string[] | undefined {
  const paths = items._partitionKeyPath;
  if (!Array.isArray(paths) || paths.length < 2) return undefined;
  const props = paths.map((p) => p.slice(1));
  return props.every((p) => p !== '' && !p.includes('/')) ? props : undefined;
}

/**
 * The name of the full-key group for one value per path; undefined unless every value is a string or a number,
 * the only values a query's equality is grouped by (a document with another value can match no such query). JSON
 * keeps 7 and '7' apart, as the engine's `=` does.
 */
function fullKeyName(values: unknown[]): string | undefined {
  return values.every((v) => typeof v === 'string' || typeof v === 'number') ? JSON.stringify(values) : undefined;
}

function fullKeyOfDocument(items: ItemsLike, data: Record<string, unknown>): string | undefined {
  const props = hierarchicalKeyOf(items);
  return props && fullKeyName(props.map((p) => data[p]));
}

let propertyNarrowing = true;

/**
 * Turns the narrowing by properties other than the partition key (fix 4's second part) on or off, for this process.
 * For the test and the bench that compare a query's result and cost both ways; on by default.
 */
export function setPropertyNarrowing(on: boolean): void {
  propertyNarrowing = on;
}

/**
 * A partition (or full-key) group this small is run over as it is: grouping the whole container by the query's other
 * properties would cost a synchronous pass over every document and a map entry per document kept for the process's
 * life (about 1 s and 95 MB for 300,000 history entries, measured), to save a scan of a few documents.
 */
const KEY_GROUP_SCANNED_WHOLE = 256;
let keyGroupScannedWhole = KEY_GROUP_SCANNED_WHOLE;

/** Sets the size under which a key group is not narrowed further (tests use 0 to narrow small groups); undefined restores the default. */
export function setKeyGroupScannedWhole(size: number | undefined): void {
  keyGroupScannedWhole = size ?? KEY_GROUP_SCANNED_WHOLE;
}

/** The values documents are grouped by: what a query's equality is narrowed by (the engine's `=` keeps 7 and '7' apart, as Map keys do). */
function isGroupedValue(v: unknown): v is string | number {
  return typeof v === 'string' || typeof v === 'number';
}

/**
 * The container's documents grouped by the value of `prop`, built from the container (in its order) the first time a
 * query asks; kept by every write afterwards.
 */
function propertyIndex(items: ItemsLike, prop: string): PropertyIndex {
  const indexes = (items._byProperty ??= new Map());
  let index = indexes.get(prop);
  if (index) return index;
  index = new Map();
  for (const [rid, holder] of items._data) {
    const value = holder.read()[prop];
    if (isGroupedValue(value)) groupIn(index, value).set(rid, holder);
  }
  indexes.set(prop, index);
  return index;
}

/**
 * The documents a query must be run over, in the container's order, when its WHERE requires equality of top-level
 * properties: the full-key group when it requires every path of a hierarchical key, else the first-path group when it
 * requires that path, narrowed to the documents in the groups of its other required values; undefined (scan the
 * container) when it requires none. No group for a value: nothing matches.
 */
function scopeOf(
  items: ItemsLike,
  params: { query: string; parameters?: Array<{ name: string; value: unknown }> },
): ItemHolder[] | undefined {
  const terms = equalityTerms(items, params);
  if (!terms) return undefined;
  const others = new Map(terms);
  let keyGroup: Map<string, ItemHolder> | undefined;
  const props = hierarchicalKeyOf(items);
  const full = props?.every((p) => terms.has(p)) ? fullKeyName(props.map((p) => terms.get(p))) : undefined;
  if (props && full !== undefined) {
    keyGroup = items._byFullKey?.get(full) ?? new Map();
    for (const p of props) others.delete(p);
  } else {
    const path = items._getPartitionKeyPath();
    if (path.length === 1 && terms.has(path[0]!)) {
      keyGroup = items._byPartition?.get(terms.get(path[0]!)) ?? new Map();
      others.delete(path[0]!);
    }
  }
  const groups = keyGroup ? [keyGroup] : [];
  if (propertyNarrowing && !(keyGroup && keyGroup.size <= keyGroupScannedWhole))
    for (const [prop, value] of others) groups.push(propertyIndex(items, prop).get(value) ?? new Map());
  if (groups.length === 0) return undefined;
  // Walk the smallest group (in the container's order, as every group is) and keep what is in all the others.
  groups.sort((a, b) => a.size - b.size);
  const [smallest, ...rest] = groups;
  const out: ItemHolder[] = [];
  for (const [rid, holder] of smallest!) if (rest.every((g) => g.has(rid))) out.push(holder);
  return out;
}

/**
 * The values a query's WHERE requires of the document's top-level properties: its top-level AND terms
 * `c.<prop> = @param` or `c.<prop> = 'constant' | number` (either side; `c['prop']` too), the first term per
 * property. Undefined when the query has no such term or is of a shape the scoping leaves alone (joins, a FROM
 * that is not the container).
 */
function equalityTerms(
  items: ItemsLike,
  params: { query: string; parameters?: Array<{ name: string; value: unknown }> },
): Map<string, string | number> | undefined {
  let q: QueryLike;
  try {
    q = items._getQuery(params.query);
  } catch {
    return undefined; // the original path reports the syntax error
  }
  const from = q.ast.body?.from;
  if (!from || (from.joins?.length ?? 0) > 0) return undefined;
  const source = from.source;
  if (source?.expression?.type !== 'collection_expression') return undefined;
  const alias = source.alias?.name ?? source.expression.expression?.name;
  const terms: AstNode[] = [];
  const collect = (n: AstNode | undefined) => {
    if (!n) return;
    if (n.type === 'scalar_binary_expression' && n.operator === 'AND') {
      collect(n.left);
      collect(n.right);
    } else terms.push(n);
  };
  collect(q.ast.body?.where?.condition);
  const required = new Map<string, string | number>();
  for (const t of terms) {
    if (t.type !== 'scalar_binary_expression' || t.operator !== '=') continue;
    for (const [member, other] of [
      [t.left, t.right],
      [t.right, t.left],
    ] as const) {
      if (member?.type !== 'scalar_member_expression') continue;
      if (member.object?.type !== 'identifier' || member.object.name !== alias) continue;
      // `c.prop` or `c['prop']` only: `c[@name]` names the property by a parameter's value, not by its text.
      const property = member.property;
      const prop = property?.type === 'identifier' ? property.name : property?.type === 'string_constant' ? property.value : undefined;
      if (typeof prop !== 'string' || required.has(prop)) continue;
      let value: unknown;
      if (other?.type === 'parameter_name') {
        // A name given twice: the engine takes one of them; which one is not the scoping's to guess.
        const given = params.parameters?.filter((p) => p.name === other.name) ?? [];
        value = given.length === 1 ? given[0]!.value : undefined;
      }
      else if (other?.type === 'string_constant' || other?.type === 'number_constant') value = other.value;
      if (typeof value === 'string' || typeof value === 'number') {
        required.set(prop, value);
        break;
      }
    }
  }
  return required.size > 0 ? required : undefined;
}

/**
 * Answers the SDK's query-plan requests with a 400 before the server runs them as queries. The SDK fetches a plan
 * beside every query and keeps a failed fetch to itself unless the query itself is refused as needing a plan,
 * which the embedded server never does; so nothing changes but the wasted second execution.
 */
export function refuseQueryPlanRequests(server: Server): void {
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (String(req.headers['x-ms-cosmos-is-query-plan-request'] ?? '').toLowerCase() === 'true') {
      req.resume();
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ code: 'BadRequest', message: 'the embedded Cosmos server computes no query plans' }),
      );
      return;
    }
    for (const handler of handlers) handler.call(server, req, res);
  });
}

/**
 * Refuses (400, as Cosmos does) a continuation the server did not issue. The server reads `x-ms-continuation` as
 * JSON and takes anything that is not - `garbage` - as no continuation at all: the query started over and the
 * caller got its first page again, where Cosmos answers 400 BadRequest. Its own continuations are JSON objects
 * with a `token` in the engine's encoding, which it decodes leniently (`abc` read as a position of NaN); a token of
 * that shape whose parts do not decode is a 400 of the query's already (installEmbeddedQueryFixes' badRequest).
 */
export function refuseUnreadableContinuations(server: Server): void {
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const header = req.headers['x-ms-continuation'];
    if (typeof header === 'string' && header !== '' && !isEngineContinuation(header)) {
      req.resume();
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'BadRequest', message: 'Invalid Continuation Token' }));
      return;
    }
    for (const handler of handlers) handler.call(server, req, res);
  });
}

/** The engine's encoding (@zeit/cosmosdb-query continuation-token.js): `+RID:<rid>#RT:<n>[#SRC:<n>]#TRC:<n>[#RTD:<base64>]`. */
const ENGINE_TOKEN = /^\+RID:[A-Za-z0-9+/=]+#RT:\d+(#SRC:\d+)?#TRC:\d+(#RTD:[A-Za-z0-9+/=]*)?$/;

function isEngineContinuation(header: string): boolean {
  try {
    const parsed: unknown = JSON.parse(header);
    const token = typeof parsed === 'object' && parsed !== null ? (parsed as { token?: unknown }).token : undefined;
    return typeof token === 'string' && ENGINE_TOKEN.test(token);
  } catch {
    return false;
  }
}
