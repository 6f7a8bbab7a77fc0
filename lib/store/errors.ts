// Typed store errors. Callers (the Resolver's throttle budget, the console's HTTP mapping) branch on the class,
// never on Cosmos status codes, and no error carries the native Cosmos error: its text can name the account.

// The mark every StoreError carries. Symbol.for: one symbol for every copy of this module in a process (Next.js
// bundles lib/store into each route chunk, and a launcher imports its own copy), so an error made by one copy is
// recognised by another, where `instanceof` fails. Set in the base constructor: a new subclass carries it without
// being added to any list.
const STORE_ERROR_MARK = Symbol.for('nimbus.store.StoreError');

/**
 * Base of every error the store raises on purpose. `transient` says whether retrying the same call can help.
 * Each class names itself with a literal, not `new.target.name`: the console's production bundle minifies class
 * names (`class n extends t`), and server/http.ts tells a StoreInputError or StoreThrottledError thrown by another
 * bundled copy of this module by its `name`.
 */
export class StoreError extends Error {
  readonly transient: boolean;
  constructor(message: string, transient: boolean) {
    super(message);
    this.name = 'StoreError';
    this.transient = transient;
    // Not enumerable: a logged or serialised error shows no extra field.
    Object.defineProperty(this, STORE_ERROR_MARK, { value: true });
  }
}

/** A StoreError made by this copy of the module or by another copy in the same process (see STORE_ERROR_MARK). */
export function isStoreError(err: unknown): err is StoreError {
  if (err instanceof StoreError) return true;
  return (
    err instanceof Error &&
    (err as unknown as Record<symbol, unknown>)[STORE_ERROR_MARK] === true &&
    typeof (err as { transient?: unknown }).transient === 'boolean'
  );
}

/** The store's error classes by the `name` each sets (a literal, kept by a minified copy); the base is isStoreError. */
interface StoreErrorsByName {
  StoreThrottledError: StoreThrottledError;
  StoreTransientError: StoreTransientError;
  StoreClosedError: StoreClosedError;
  CorruptDocumentError: CorruptDocumentError;
  StoreInputError: StoreInputError;
  CounterRecoveryIncompleteError: CounterRecoveryIncompleteError;
  CountsRecoveredError: CountsRecoveredError;
  ContainerMissingError: ContainerMissingError;
  ContainerAccessDeniedError: ContainerAccessDeniedError;
}

/**
 * A store error of the class named `name`, made by this copy of the module or by another (`instanceof` knows only
 * this copy's classes). The mark says it is the store's (a lookalike of the same name is not); the name, which class.
 */
export function isStoreErrorNamed<N extends keyof StoreErrorsByName>(err: unknown, name: N): err is StoreErrorsByName[N] {
  return isStoreError(err) && err.name === name;
}

/** Cosmos answered 429. `retryAfterMs` is the server's hint (undefined when it gave none). */
export class StoreThrottledError extends StoreError {
  readonly retryAfterMs: number | undefined;
  readonly operation: string;
  constructor(operation: string, retryAfterMs: number | undefined) {
    super(
      `store throttled (429) during ${operation}${retryAfterMs != null ? `; retry after ${retryAfterMs} ms` : ''}`,
      true,
    );
    this.name = 'StoreThrottledError';
    this.operation = operation;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Timeouts, 5xx, connection resets, and a guarded write that kept losing its compare-and-swap race. */
export class StoreTransientError extends StoreError {
  readonly statusCode: number | undefined;
  constructor(message: string, statusCode?: number) {
    super(message, true);
    this.name = 'StoreTransientError';
    this.statusCode = statusCode;
  }
}

/**
 * The store is closing (close() was called) and refuses a write that would take a counter ticket: its delta could
 * land after the last flush and never be applied. Transient: the same write on a live instance (a redelivered
 * message, a retried request) succeeds. The Resolver leaves such a message unsettled, so it comes back.
 */
export class StoreClosedError extends StoreError {
  constructor(message: string) {
    super(message, true);
    this.name = 'StoreClosedError';
  }
}

/** A document read back from the store does not match its schema: reported with where it is, never a crash. */
export class CorruptDocumentError extends StoreError {
  readonly container: string;
  readonly documentId: string;
  readonly issues: string;
  constructor(container: string, documentId: string, issues: string) {
    super(`corrupt document ${container}/${documentId}: ${issues}`, false);
    this.name = 'CorruptDocumentError';
    this.container = container;
    this.documentId = documentId;
    this.issues = issues;
  }
}

/** The caller passed something the store refuses (bad ids, a message type the guard cannot classify, a foreign token). */
export class StoreInputError extends StoreError {
  constructor(message: string) {
    super(message, false);
    this.name = 'StoreInputError';
  }
}

/**
 * A recovery of a dead writer's counter deltas (recoverCounters) that applied what it could and failed on some
 * endpoints: each endpoint is tried whatever the others do. Running it again is safe (conditional per endpoint).
 */
export class CounterRecoveryIncompleteError extends StoreError {
  /** Stamps applied by this run, on the endpoints that did not fail. */
  readonly applied: number;
  /** The endpoints whose recovery failed. */
  readonly endpoints: readonly string[];
  constructor(owner: string, applied: number, endpoints: readonly string[], first: string) {
    super(`counter recovery of ${owner} failed on ${endpoints.length} endpoint(s) (first: ${first})`, true);
    this.name = 'CounterRecoveryIncompleteError';
    this.applied = applied;
    this.endpoints = endpoints;
  }
}

/**
 * A buffering writer's flush refused on an endpoint because a survivor recovered that writer there (it was taken
 * for dead: its lease lapsed): the survivor applied its stamped deltas, so the flush must not add them again.
 */
export class CountsRecoveredError extends StoreError {
  readonly endpointId: string;
  constructor(endpointId: string) {
    super(`counter flush refused on ${endpointId}: this writer's lost deltas were recovered there by a survivor`, false);
    this.name = 'CountsRecoveredError';
    this.endpointId = endpointId;
  }
}

/**
 * Cosmos refused (403) to create a container a part opens on first use (lib/store/containers.ts): an identity with
 * Entra data-plane roles only may not create containers, so a deployment whose deployer did not create it first
 * (docs/deploy.md) meets this on every use until it exists. Not transient - trying again does not help until someone
 * creates it - but not a bug either: the console answers it 503 "not configured" with this message, which names the
 * container (server/http.ts describeError). Opening is tried again on each use, so it works once the container exists.
 */
export class ContainerMissingError extends StoreError {
  readonly container: string;
  readonly database: string;
  constructor(database: string, container: string) {
    super(
      `the Cosmos container ${container} is missing and may not be created with this identity (Cosmos refused with 403, as it does to an identity with data-plane roles only): it must be created as docs/deploy.md shows`,
      false,
    );
    this.name = 'ContainerMissingError';
    this.database = database;
    this.container = container;
  }
}

/**
 * Cosmos refused (403) to let this identity even read a container a part opens on first use: not a missing container
 * (data-plane roles may read a container's definition) but the account refusing access - its firewall, key sign-in
 * turned off (disableLocalAuth) while a key is configured, or an identity without a data-plane role assignment.
 * Creating the container would not help, so it is told apart from ContainerMissingError, which sends the operator
 * there. Not transient; answered 503 "not configured" naming the container (server/http.ts describeError).
 */
export class ContainerAccessDeniedError extends StoreError {
  readonly container: string;
  readonly database: string;
  constructor(database: string, container: string) {
    super(
      `the Cosmos container ${container} could not be read: Cosmos refused this identity access (403); check the account's firewall, the identity's data-plane role assignment, or whether key sign-in is disabled while a key is configured (docs/deploy.md)`,
      false,
    );
    this.name = 'ContainerAccessDeniedError';
    this.database = database;
    this.container = container;
  }
}

const TRANSIENT_STATUS = new Set([408, 410, 449, 500, 502, 503, 504]);
const TRANSIENT_NETWORK = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
]);

interface CosmosLikeError {
  code?: unknown;
  statusCode?: unknown;
  retryAfterInMs?: unknown;
  retryAfterInMilliseconds?: unknown;
  headers?: Record<string, unknown>;
  name?: unknown;
}

/** Status code of a Cosmos SDK error (its `code` is the HTTP status for server answers). */
export function cosmosStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as CosmosLikeError;
  if (typeof e.code === 'number') return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}

function retryAfter(e: CosmosLikeError): number | undefined {
  for (const v of [e.retryAfterInMs, e.retryAfterInMilliseconds, e.headers?.['x-ms-retry-after-ms']]) {
    const n = typeof v === 'string' ? Number(v) : v;
    if (typeof n === 'number' && Number.isFinite(n) && n > 0) return n;
  }
  return undefined;
}

/** The server's retry-after hint of an SDK failure (a bulk operation's error included), in ms; undefined when none. */
export function cosmosRetryAfterMs(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null ? retryAfter(err as CosmosLikeError) : undefined;
}

/**
 * Maps an SDK failure to a StoreError when it is throttling or transient; returns undefined for anything else
 * (404/409/412 are decisions for the caller, other 4xx are bugs that must surface as they are).
 */
export function classifyCosmosError(err: unknown, operation: string): StoreError | undefined {
  if (isStoreError(err)) return err;
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as CosmosLikeError;
  const status = cosmosStatus(err);
  if (status === 429) return new StoreThrottledError(operation, retryAfter(e));
  if (status != null && TRANSIENT_STATUS.has(status)) {
    return new StoreTransientError(`store unavailable (${status}) during ${operation}`, status);
  }
  if (e.name === 'TimeoutError') return new StoreTransientError(`store timed out during ${operation}`);
  if (typeof e.code === 'string' && TRANSIENT_NETWORK.has(e.code)) {
    return new StoreTransientError(`store connection failed (${e.code}) during ${operation}`);
  }
  return undefined;
}

/** Rethrows an SDK failure as its typed StoreError when it has one, else as is. */
export function rethrowCosmos(err: unknown, operation: string): never {
  throw classifyCosmosError(err, operation) ?? err;
}
