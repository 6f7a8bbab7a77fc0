// Bounded, resumable pages over Cosmos queries. The Cosmos continuation token is wrapped with a fingerprint of
// the query it belongs to, so a token replayed against a different filter is refused with a clear error
// instead of a Cosmos 400 or, worse, a silently wrong page.
import { createHash } from 'node:crypto';
import type { Container, SqlQuerySpec, PartitionKey } from '@azure/cosmos';
import type { z } from 'zod';
import { StoreInputError, rethrowCosmos } from './errors.ts';
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

function unwrapToken(token: string | undefined, fp: string): string | undefined {
  if (token == null || token === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new StoreInputError('continuation token is not one this store issued');
  }
  const t = parsed as { f?: unknown; c?: unknown };
  if (typeof t.f !== 'string' || typeof t.c !== 'string') {
    throw new StoreInputError('continuation token is not one this store issued');
  }
  if (t.f !== fp) throw new StoreInputError('continuation token belongs to a different query or filter');
  return t.c;
}

const wrapToken = (cosmosToken: string, fp: string): string =>
  Buffer.from(JSON.stringify({ f: fp, c: cosmosToken }), 'utf8').toString('base64url');

/** Runs one page of a query, validating each document with `schema`. */
export async function queryPage<S extends z.ZodType>(
  container: Container,
  spec: SqlQuerySpec,
  schema: S,
  request: PageRequest & { partitionKey?: PartitionKey },
  operation: string,
): Promise<Page<z.output<S>>> {
  const pageSize = clampPageSize(request.pageSize);
  const fp = fingerprint(spec, request.partitionKey);
  const cosmosToken = unwrapToken(request.continuationToken, fp);
  const iterator = container.items.query(spec, {
    maxItemCount: pageSize,
    continuationToken: cosmosToken,
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
    rethrowCosmos(err, operation);
  }
  const items: z.output<S>[] = [];
  const corrupt: Page<unknown>['corrupt'] = [];
  for (const raw of resources) {
    const parsed = schema.safeParse(raw);
    if (parsed.success) items.push(parsed.data);
    else corrupt.push({ id: docIdOf(raw), issues: describeIssues(parsed.error) });
  }
  return { items, continuationToken: next !== undefined ? wrapToken(next, fp) : undefined, corrupt };
}

/**
 * Reads every result of a query known to be small (bounded by `limit`, which it never exceeds). `truncated` means
 * at least one further result exists: Cosmos may end a full page with a continuation token though nothing follows
 * it, so a token left when the limit is reached is followed for one result before the set is called cut - a caller
 * that refuses a cut set (the Manager) must not refuse one with exactly `limit` results.
 */
export async function queryAll<S extends z.ZodType>(
  container: Container,
  spec: SqlQuerySpec,
  schema: S,
  options: { partitionKey?: PartitionKey; limit: number },
  operation: string,
): Promise<{ items: z.output<S>[]; corrupt: Page<unknown>['corrupt']; truncated: boolean }> {
  const items: z.output<S>[] = [];
  const corrupt: Page<unknown>['corrupt'] = [];
  const read = () => items.length + corrupt.length;
  const page = (pageSize: number, continuationToken: string | undefined) =>
    queryPage(container, spec, schema, { pageSize, continuationToken, partitionKey: options.partitionKey }, operation);
  let token: string | undefined;
  do {
    // Never more than the limit leaves: a result read past it would be dropped without saying so.
    const p = await page(Math.min(MAX_PAGE_SIZE, options.limit - read()), token);
    items.push(...p.items);
    corrupt.push(...p.corrupt);
    token = p.continuationToken;
  } while (token !== undefined && read() < options.limit);
  if (token === undefined) return { items, corrupt, truncated: false };
  // At the limit with a token: one more result decides. queryPage follows empty pages a bounded number of times;
  // a token still left after them says nothing either way, and is taken as cut (refusing is the safe answer).
  const next = await page(1, token);
  const truncated = next.items.length + next.corrupt.length > 0 || next.continuationToken !== undefined;
  return { items, corrupt, truncated };
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
