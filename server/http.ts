// HTTP plumbing shared by the route handlers: zod parsing with a 400, typed errors mapped to status codes, and
// one JSON error shape `{ error, detail }` (and `code` where a caller must tell one refusal from the others by more
// than its status). Handlers stay "parse, authorize, call server/".
import { AsyncLocalStorage } from 'node:async_hooks';
import type { z } from 'zod';
import { StoreInputError, StoreThrottledError, describeIssues, isStoreError, isStoreErrorNamed, type ContainerAccessDeniedError, type ContainerMissingError } from '../lib/store/index.ts';
import { reportOnce } from '../lib/store/containers.ts';
import { ConfigError } from './config.ts';
import { log } from './log.ts';
import { MAX_BODY_BYTES } from './auth/hardening.ts';

export class HttpError extends Error {
  override readonly name = 'HttpError';
  readonly status: number;
  readonly detail: string;
  /** Headers the answer carries (a 429's Retry-After). */
  readonly headers: Record<string, string> | undefined;
  /**
   * A stable name for this refusal, answered as `code` beside `error` and `detail`: for a caller that acts on one
   * refusal differently from the others of its status (the event page on a 409 "changed since you opened it"), so
   * it need not match the detail's wording.
   */
  readonly code: string | undefined;
  constructor(status: number, error: string, detail: string, headers?: Record<string, string>, code?: string) {
    super(error);
    this.status = status;
    this.detail = detail;
    this.headers = headers;
    this.code = code;
  }
}

export const badRequest = (detail: string) => new HttpError(400, 'bad request', detail);
export const notFound = (detail: string) => new HttpError(404, 'not found', detail);
export const conflict = (detail: string, code?: string) => new HttpError(409, 'conflict', detail, undefined, code);

export function json(body: unknown, status = 200): Response {
  return Response.json(body, { status, headers: { 'cache-control': 'no-store' } });
}

// Errors are recognised by class or by name: Next.js bundles server/ and lib/ into its route chunks, while a
// launcher that imported server/console.ts holds another copy of the same classes.
const isNamed = (err: unknown, name: string): err is Error => err instanceof Error && err.name === name;

/**
 * The answer a thrown error gets: status, error, detail (and headers). `internal` marks an unknown failure, answered
 * without its text. `audited` records the same status and reason as the caller gets.
 */
export function describeError(err: unknown): { status: number; error: string; detail: string; code?: string; headers?: Record<string, string>; internal?: true } {
  if (err instanceof HttpError || (isNamed(err, 'HttpError') && typeof (err as HttpError).status === 'number')) {
    const e = err as HttpError;
    return { status: e.status, error: e.message, detail: e.detail, ...(e.code ? { code: e.code } : {}), ...(e.headers ? { headers: e.headers } : {}) };
  }
  if (err instanceof StoreInputError || isNamed(err, 'StoreInputError')) return { status: 400, error: 'bad request', detail: err.message };
  if (err instanceof ConfigError || isNamed(err, 'ConfigError') || isNamed(err, 'CatalogError'))
    return { status: 503, error: 'not configured', detail: err.message };
  if (err instanceof StoreThrottledError || isNamed(err, 'StoreThrottledError')) {
    const retryAfterMs = (err as Partial<StoreThrottledError>).retryAfterMs;
    const headers: Record<string, string> = {};
    if (typeof retryAfterMs === 'number') headers['retry-after'] = String(Math.ceil(retryAfterMs / 1000));
    return { status: 503, error: 'busy', detail: 'the store is throttling; try again shortly', headers };
  }
  // A container opened on first use that Cosmos refused to create, or refused this identity even to read
  // (lib/store/containers.ts): the deployment is not complete, and the answer names the container and which of the
  // two it is (what to create, or the access to grant). Not transient, but no bug of ours either: never a 500.
  if (isStoreErrorNamed(err, 'ContainerMissingError') || isStoreErrorNamed(err, 'ContainerAccessDeniedError')) {
    logContainerFailure(err);
    return { status: 503, error: 'not configured', detail: err.message };
  }
  // Any store error, of any copy of lib/store and any subclass (isStoreError: no list of names to keep): a transient
  // one is a 503, the others are internal errors.
  if (isStoreError(err) && err.transient)
    return { status: 503, error: 'unavailable', detail: 'the store did not answer; try again' };
  return { status: 500, error: 'internal error', detail: 'the server could not complete the request', internal: true };
}

/**
 * Logs a container that cannot be opened - missing and not creatable by the console, or refused to it altogether -
 * as an error once per process until it opens (lib/store/containers.ts reportOnce): every request that needs it meets
 * it until it is fixed, and one line says so. Here, where every answer to a caller is made (routes, MCP tools, bulk
 * jobs), rather than in each module that opens a container.
 */
function logContainerFailure(err: ContainerMissingError | ContainerAccessDeniedError): void {
  if (!reportOnce(err)) return;
  log.error(
    { container: err.container, database: err.database },
    err.name === 'ContainerAccessDeniedError'
      ? `Cosmos refuses the console's identity access to the container ${err.container} (403 on reading it): every request that needs it is answered 503 until the account's firewall, the identity's data-plane role or its key sign-in setting lets it in (docs/deploy.md)`
      : `the Cosmos container ${err.container} is missing and the console may not create it (403): every request that needs it is answered 503 until it is created (docs/deploy.md)`,
  );
}

export function errorResponse(err: unknown): Response {
  const d = describeError(err);
  // Unknown failures: logged with their message only (no request bodies), answered without internals.
  if (d.internal) log.error({ err: err instanceof Error ? { name: err.name, message: err.message } : String(err) }, 'request failed');
  return Response.json({ error: d.error, detail: d.detail, ...(d.code ? { code: d.code } : {}) }, { status: d.status, headers: { 'cache-control': 'no-store', ...d.headers } });
}

/** Writes the audit entry of an authorized change that ended with this error before `audited` ran. */
export type UnauditedFailure = (answer: ReturnType<typeof describeError>) => Promise<void>;
type RequestScope = { unaudited?: UnauditedFailure; auditDetails?: Readonly<Record<string, unknown>> };
// One per process (Next.js bundles this module into each route's chunk): the scope of the request being handled.
const requestScope = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.requestScope')] ??=
  new AsyncLocalStorage<RequestScope>()) as AsyncLocalStorage<RequestScope>;

/**
 * What the request being handled owes the audit log if it fails from here on: authorize() sets it once a change is
 * authorized, audited() and every refusal clear it (they write their own entry). Outside handle() and
 * auditingFailure(): nothing.
 */
export function owesAudit(record: UnauditedFailure | undefined): void {
  const scope = requestScope.getStore();
  if (scope) scope.unaudited = record;
}

/**
 * The details every audit entry written in the current scope carries (an MCP tool call's `via: "mcp"`, given to
 * auditingFailure): undefined outside such a scope.
 */
export function scopeAuditDetails(): Readonly<Record<string, unknown>> | undefined {
  return requestScope.getStore()?.auditDetails;
}

/**
 * Runs `fn` with an audit obligation of its own and, when it throws, writes what it owes (a change authorized in it
 * that failed before `audited` ran) with the status and reason of that error, then rethrows. handle() runs each
 * request in one; an MCP tool call runs in its own (mcp/tools.ts), since its error becomes a tool result, not the
 * request's answer, and a JSON-RPC batch runs several calls at once in one request: each call's obligation is its
 * own, neither written for nor cleared by another call. `auditDetails` go into every audit entry written within
 * (scopeAuditDetails): an entry owed for a failure has no details of its own, and an MCP call's must still say it
 * came through MCP.
 */
export async function auditingFailure<T>(fn: () => Promise<T>, auditDetails?: Readonly<Record<string, unknown>>): Promise<T> {
  const scope: RequestScope = auditDetails ? { auditDetails } : {};
  return requestScope.run(scope, async () => {
    try {
      return await fn();
    } catch (err) {
      const record = scope.unaudited;
      scope.unaudited = undefined;
      if (record) await record(describeError(err)).catch(() => undefined);
      throw err;
    }
  });
}

/**
 * Runs a handler body and turns every thrown error into its JSON answer. A change that passed authorization and
 * then failed before `audited` ran (a body that does not validate, an unknown endpoint) is audited here, with the
 * status and reason of that answer.
 */
export async function handle(fn: () => Promise<Response>): Promise<Response> {
  try {
    return await auditingFailure(fn);
  } catch (err) {
    return errorResponse(err);
  }
}

export function parseOr400<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw badRequest(`invalid ${what}: ${describeIssues(r.error)}`);
  return r.data;
}

/**
 * The body as text, read chunk by chunk and abandoned as soon as it passes `limit` bytes: the proxy's
 * Content-Length check cannot see a chunked body, and buffering it whole first would let one request hold
 * an unbounded amount of memory. The limit is the proxy's (hardening.ts), so both checks refuse the same sizes.
 */
async function readBodyText(request: Request, limit: number): Promise<string> {
  if (request.body === null) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new HttpError(413, 'payload too large', `the body is over the limit; at most ${limit} bytes are accepted`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a JSON body (an empty body reads as undefined) and validates it; 400 on bad JSON or shape. */
export async function readJsonBody<S extends z.ZodType>(request: Request, schema: S): Promise<z.output<S>> {
  const text = await readBodyText(request, MAX_BODY_BYTES);
  let value: unknown = undefined;
  if (text.trim() !== '') {
    try {
      value = JSON.parse(text);
    } catch {
      throw badRequest('the body is not valid JSON');
    }
  }
  return parseOr400(schema, value, 'body');
}

/** Route params arrive as a promise in Next 16. */
export type RouteContext<P> = { params: Promise<P> };
