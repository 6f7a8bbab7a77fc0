// Bounded, resumable pages over Cosmos queries. The Cosmos continuation token is wrapped with a fingerprint of
// the query it belongs to, so a token replayed against a different filter is refused with a clear error
// instead of a Cosmos 400 or, worse, a silently wrong page. The fingerprint is an unkeyed hash - a token must work
// on every replica, which share no secret - so anyone can wrap an inner token of their own around the right one:
// whatever Cosmos (or the SDK reading the token) then fails with is the token's fault and answered as a foreign
// token (StoreInputError, a 400), not passed on as an unexpected error (a 500 with an error-level log).
import { createHash } from 'node:crypto';
import type { Container, SqlQuerySpec, PartitionKey } from '@azure/cosmos';
import type { z } from 'zod';
import { StoreInputError, classifyCosmosError, cosmosStatus } from './errors.ts';
import { describeIssues } from './schemas.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;
/** Cosmos may answer empty pages with a continuation (filters over many partitions); follow at most this many. */
const MAX_EMPTY_FETCHES = 20;

export interface Page<T> {
  items: T[];
  /** Pass back to get the next page; undefined when this is the last one. */
  continuationToken: string | undefined;
  /** Documents that matched but no longer parse: reported here (id and problem), never thrown. */
  corrupt: { id: string; issues: string }[];
}

export interface PageRequest {
  pageSize?: number;
  continuationToken?: string;
}

export function clampPageSize(n: number | undefined): number {
  if (n == null) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(n) || n < 1)
    throw new StoreInputError(`pageSize must be a positive integer (got ${n})`);
  return Math.min(n, MAX_PAGE_SIZE);
}

function fingerprint(spec: SqlQuerySpec, partitionKey: PartitionKey | undefined): string {
  return createHash('sha256')
    .update(JSON.stringify([spec.query, spec.parameters ?? [], partitionKey ?? null]))
    .digest('base64url')
    .slice(0, 16);
}

const FOREIGN_TOKEN = 'continuation token is not one this store issued';

function unwrapToken(token: string | undefined, fp: string): string | undefined {
  if (token == null || token === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new StoreInputError(FOREIGN_TOKEN);
  }
  const t = (parsed ?? {}) as { f?: unknown; c?: unknown };
  if (typeof t.f !== 'string' || typeof t.c !== 'string') {
    throw new StoreInputError(FOREIGN_TOKEN);
  }
  if (t.f !== fp) throw new StoreInputError('continuation token belongs to a different query or filter');
  return t.c;
}

const wrapToken = (cosmosToken: string, fp: string): string =>
  Buffer.from(JSON.stringify({ f: fp, c: cosmosToken }), 'utf8').toString('base64url');

/** One page of a query as Cosmos returned it (unparsed), following empty pages a bounded number of times. */
async function fetchPage(
  container: Container,
  spec: SqlQuerySpec,
  /** `callerToken`: `cosmosToken` came from a caller (queryPage), not from Cosmos a moment ago (queryAll). */
  request: { pageSize: number; cosmosToken: string | undefined; callerToken?: boolean; partitionKey?: PartitionKey },
  operation: string,
): Promise<{ resources: unknown[]; next: string | undefined }> {
  const iterator = container.items.query(spec, {
    maxItemCount: request.pageSize,
    continuationToken: request.cosmosToken,
    ...(request.partitionKey !== undefined ? { partitionKey: request.partitionKey } : {}),
  });
  let resources: unknown[] = [];
  let next: string | undefined;
  try {
    for (let i = 0; i < MAX_EMPTY_FETCHES; i++) {
      const response = await iterator.fetchNext();
      resources = response.resources ?? [];
      next = response.continuationToken ?? undefined;
      if (resources.length > 0 || next === undefined) break;
    }
  } catch (err) {
    const typed = classifyCosmosError(err, operation);
    if (typed !== undefined) throw typed; // throttled, unavailable, timed out: the store's trouble, not the token's
    // Resumed from a caller's token: Cosmos refusing the request (400) or the SDK failing to read the token (an
    // error with no status at all) means the token, since the same query without one is what every first page runs.
    const status = cosmosStatus(err);
    if (request.callerToken === true && request.cosmosToken !== undefined && (status === 400 || status === undefined)) throw new StoreInputError(FOREIGN_TOKEN);
    throw err;
  }
  return { resources, next };
}

/** Validates each document with `schema`: the ones that parse, and the ones that no longer do (id and problem). */
function parseAll<S extends z.ZodType>(resources: readonly unknown[], schema: S): Pick<Page<z.output<S>>, 'items' | 'corrupt'> {
  const items: z.output<S>[] = [];
  const corrupt: Page<unknown>['corrupt'] = [];
  for (const raw of resources) {
    const parsed = schema.safeParse(raw);
    if (parsed.success) items.push(parsed.data);
    else corrupt.push({ id: docIdOf(raw), issues: describeIssues(parsed.error) });
  }
  return { items, corrupt };
}

/** Runs one page of a query, validating each document with `schema`. */
export async function queryPage<S extends z.ZodType>(
  container: Container,
  spec: SqlQuerySpec,
  schema: S,
  request: PageRequest & { partitionKey?: PartitionKey },
  operation: string,
): Promise<Page<z.output<S>>> {
  const fp = fingerprint(spec, request.partitionKey);
  const { resources, next } = await fetchPage(
    container,
    spec,
    { pageSize: clampPageSize(request.pageSize), cosmosToken: unwrapToken(request.continuationToken, fp), callerToken: true, partitionKey: request.partitionKey },
    operation,
  );
  return { ...parseAll(resources, schema), continuationToken: next !== undefined ? wrapToken(next, fp) : undefined };
}

/**
 * Reads every result of a query known to be small (bounded by `limit`, which it never exceeds). `truncated` means
 * at least one further result exists. It asks for one result more than `limit` in the same request(s) and keeps the
 * first `limit`: whether a further result exists is then known without a request of its own - the common case, a
 * read of the newest `limit` of many (an endpoint's heartbeat records), is one query. A continuation token alone
 * proves nothing: Cosmos may end a page with one though nothing follows it, so a token is followed until the
 * extra result is read or the results end - a caller that refuses a cut set (the Manager) must not refuse one with
 * exactly `limit` results. Results are kept in the order Cosmos returned them, parsing or not, so the one dropped
 * past the limit is the last one (for an ORDER BY query, the oldest), never a result before it.
 */
export async function queryAll<S extends z.ZodType>(
  container: Container,
  spec: SqlQuerySpec,
  schema: S,
  options: { partitionKey?: PartitionKey; limit: number },
  operation: string,
): Promise<{ items: z.output<S>[]; corrupt: Page<unknown>['corrupt']; truncated: boolean }> {
  const wanted = options.limit + 1;
  const resources: unknown[] = [];
  let cosmosToken: string | undefined;
  do {
    const p = await fetchPage(
      container,
      spec,
      { pageSize: Math.min(MAX_PAGE_SIZE, wanted - resources.length), cosmosToken, partitionKey: options.partitionKey },
      operation,
    );
    resources.push(...p.resources);
    cosmosToken = p.next;
  } while (cosmosToken !== undefined && resources.length < wanted);
  const truncated = resources.length > options.limit;
  return { ...parseAll(resources.slice(0, options.limit), schema), truncated };
}

export function docIdOf(raw: unknown): string {
  return typeof raw === 'object' && raw !== null && typeof (raw as { id?: unknown }).id === 'string'
    ? (raw as { id: string }).id
    : '(no id)';
}

/** Drops Cosmos system properties before validation, so schemas describe only our fields. */
export function stripSystem(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null) return raw;
  const {
    _rid: _r,
    _self: _s,
    _etag: _e,
    _ts: _t,
    _attachments: _a,
    ...rest
  } = raw as Record<string, unknown>;
  return rest;
}
