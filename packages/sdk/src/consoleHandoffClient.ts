// The agent-side handoff client over the console's HTTP API: settles an event parked by ctx.markPendingHandoff by
// calling `POST /api/event/handoff/{complete,fail}/{endpoint}/{event}/{message}` with a service principal's bearer
// token. This is how handoff agents settle: the console checks the token (its roles must map to Operator on the
// endpoint), checks that the event is the pending handoff named, audits the call and sends the command on the
// `Manager` topic itself. The agent needs no Service Bus right at all - Send on `Manager` is operator-level (its
// subscriptions stamp From = 'Manager' on anything addressed to an endpoint, skips and resubmissions included) and
// stays with the console's identity (docs/security.md, "The bus rights model").
//
// Retrying is safe: the console derives the command's message id from the handoff message, so a repeat answers
// `duplicate` instead of sending twice. Transient answers (network errors, timeouts, 408, 429, 5xx) are retried with
// backoff; refusals (400, 401, 403, 404, 409) are not, and neither is a token provider that gives no token at all
// (NoTokenError: a configuration fault, answered the same however often it is asked). After a 401 the provider's next
// ask says so (ConsoleTokens), so that the caller's retry is not sent the refused token from a cache again.
import { z } from 'zod';
import { describeIssues } from './contract/index.ts';
import { sleep } from './backoff.ts';
import { HandoffClientError } from './handoffClient.ts';
import { readHandoffToken } from './handoffToken.ts';
import { encodeBody, requestTiming } from './consoleRequestOptions.ts';
import type { HandoffToken } from './handoffToken.ts';

/** What an @azure/identity credential (`DefaultAzureCredential`, `ClientSecretCredential`, ...) offers. */
export interface TokenCredentialLike {
  getToken(scopes: string | string[], options?: { abortSignal?: AbortSignal }): Promise<{ token: string } | null>;
}

/**
 * A function answering a bearer token for the console (it should cache and refresh; it is called per attempt). The
 * clients tell it when the console refused the token it gave last (`request.refresh`, ConsoleTokens). `request` is
 * required because the clients always pass it: optional, a provider written `(signal, request: TokenRequest)` did not
 * compile (strict function types), and one of a single parameter still fits.
 */
export type TokenProvider = (signal: AbortSignal, request: TokenRequest) => string | Promise<string>;

/** What a client says when it asks a TokenProvider for a token. */
export interface TokenRequest {
  /**
   * The console refused (401) the last token this client was given - expired or revoked before its time: answer a
   * new one, not a cached one, or the next attempt is refused as well for as long as the cache keeps it.
   */
  refresh: boolean;
}

export type ConsoleToken = TokenProvider | { credential: TokenCredentialLike; scope: string | string[] };

export interface ConsoleHandoffClientOptions {
  /** The console's base URL, e.g. `https://nimbus.example.com` (a path prefix is kept). https, or http on loopback. */
  consoleUrl: string | URL;
  /** The service principal's token: a provider function, or an @azure/identity credential and the console's scope. */
  token: ConsoleToken;
  /** Attempts per call including the first (default 4), and the backoff between them (default 500 ms doubling to 10 s). */
  retry?: { attempts?: number; initialMs?: number; maxMs?: number };
  /** Time limit per attempt (default 30 s). */
  timeoutMs?: number;
  /** The fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

/** Where the pending event is. The bus client's coordinates fit too: sessionId and the rest are not needed here. */
export const consoleHandoffCoordinatesSchema = z.object({
  endpointId: z
    .string()
    .min(1, 'endpointId is required')
    .max(50)
    .regex(/^[A-Za-z0-9._-]+$/, 'endpoint ids are letters, digits, ".", "_" and "-"'),
  eventId: z.string().min(1, 'eventId is required').max(128),
  /** MessageId of the delivery that parked the handoff. */
  messageId: z.string().min(1, 'messageId is required').max(128),
});
export type ConsoleHandoffCoordinates = z.input<typeof consoleHandoffCoordinatesSchema>;

/** The console's answer: `sent` the first time, `duplicate` when the same settlement was already sent. */
const settlementSchema = z.object({
  endpointId: z.string(),
  eventId: z.string(),
  sessionId: z.string(),
  outcome: z.enum(['sent', 'duplicate']),
  messageId: z.string(),
  messageType: z.string(),
});
export type HandoffSettlement = z.infer<typeof settlementSchema>;

/** The console refused or could not be reached. Carries the console's `{ error, detail }`; never the token. */
export class HandoffRequestError extends HandoffClientError {
  override readonly name: string = 'HandoffRequestError';
  /** HTTP status; 0 when no answer came (network error, timeout). */
  readonly status: number;
  readonly error: string;
  readonly detail: string;
  constructor(status: number, error: string, detail: string) {
    super(`handoff settlement ${status === 0 ? 'got no answer' : `refused with ${status}`}: ${error}${detail ? ` (${detail})` : ''}`);
    this.status = status;
    this.error = error;
    this.detail = detail;
  }
}

/**
 * The token provider gave no token ('' or blank, or no string at all; a credential answered none): a configuration
 * fault, not a transient one, so it is thrown at once rather than retried - asked again, the provider answers the
 * same. A provider that throws is retried instead: the identity provider may be briefly unreachable.
 */
export class NoTokenError extends HandoffClientError {
  override readonly name: string = 'NoTokenError';
}

const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);

export interface SettleOptions {
  signal?: AbortSignal;
}

export class ConsoleHandoffClient {
  readonly #base: URL;
  readonly #token: ConsoleTokens;
  readonly #fetch: typeof fetch;
  readonly #attempts: number;
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #timeoutMs: number;

  constructor(options: ConsoleHandoffClientOptions) {
    this.#base = consoleBase(options.consoleUrl);
    this.#token = new ConsoleTokens(options.token);
    this.#fetch = options.fetch ?? fetch;
    ({ attempts: this.#attempts, initialMs: this.#initialMs, maxMs: this.#maxMs, timeoutMs: this.#timeoutMs } = requestTiming(options));
  }

  /**
   * The external work succeeded: the session is released and the Resolver records Completed with `result` (any JSON
   * value; a string holding JSON is sent as that JSON, as the bus client does). `note` is recorded in the event's
   * audit trail.
   */
  async complete(
    coordinates: ConsoleHandoffCoordinates | HandoffToken,
    result?: unknown,
    options: SettleOptions & { note?: string } = {},
  ): Promise<HandoffSettlement> {
    const body: Record<string, unknown> = {};
    if (result !== undefined) body.result = typeof result === 'string' ? jsonOrString(result) : result;
    if (options.note !== undefined) body.note = options.note;
    return this.#settle('complete', coordinates, body, options.signal);
  }

  /** The external work failed: the Resolver records Failed with `errorText` verbatim; the session stays blocked. */
  async fail(
    coordinates: ConsoleHandoffCoordinates | HandoffToken,
    errorText: string,
    errorType?: string,
    options: SettleOptions = {},
  ): Promise<HandoffSettlement> {
    if (typeof errorText !== 'string' || errorText.trim() === '') throw new HandoffClientError('errorText is required');
    return this.#settle('fail', coordinates, { errorText, ...(errorType !== undefined ? { errorType } : {}) }, options.signal);
  }

  async #settle(kind: 'complete' | 'fail', coordinates: ConsoleHandoffCoordinates | HandoffToken, body: object, signal?: AbortSignal): Promise<HandoffSettlement> {
    const parsed = consoleHandoffCoordinatesSchema.safeParse(typeof coordinates === 'string' ? readHandoffToken(coordinates) : coordinates);
    if (!parsed.success) throw new HandoffClientError(`invalid handoff coordinates: ${describeIssues(parsed.error)}`);
    const c = parsed.data;
    const path = ['api/event/handoff', kind, c.endpointId, c.eventId, c.messageId].map((s, i) => (i < 2 ? s : encodeURIComponent(s))).join('/');
    const url = new URL(path, this.#base);
    const text = encodeBody('the settlement (its result)', body);

    let delay = this.#initialMs;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const outcome = await this.#attempt(url, text, signal);
      if (outcome.ok) return outcome.settlement;
      if (!outcome.retry || attempt >= this.#attempts) throw outcome.error;
      await sleep(Math.min(this.#maxMs, Math.max(delay, outcome.retryAfterMs ?? 0)), signal);
      delay = Math.min(this.#maxMs, delay * 2);
    }
  }

  async #attempt(
    url: URL,
    body: string,
    signal: AbortSignal | undefined,
  ): Promise<{ ok: true; settlement: HandoffSettlement } | { ok: false; retry: boolean; retryAfterMs?: number; error: HandoffRequestError }> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const attemptSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let token: string;
    try {
      token = await this.#token.get(attemptSignal);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (err instanceof NoTokenError) throw err;
      // The identity provider may be briefly unreachable too: worth another attempt.
      const what = timeout.aborted ? `no token within ${this.#timeoutMs} ms` : err instanceof Error ? err.message : String(err);
      return { ok: false, retry: true, error: new HandoffRequestError(0, 'no token', what) };
    }
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        body,
        // A redirect would carry the bearer token to wherever it points; a settlement has no reason to move.
        redirect: 'error',
        signal: attemptSignal,
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      const what = timeout.aborted ? `no answer within ${this.#timeoutMs} ms` : err instanceof Error ? err.message : String(err);
      return { ok: false, retry: true, error: new HandoffRequestError(0, 'unreachable', `${url.origin}: ${what}`) };
    }
    if (response.status === 401) this.#token.refused(token);
    const answer = await readJson(response);
    if (response.ok) {
      const settlement = settlementSchema.safeParse(answer);
      if (settlement.success) return { ok: true, settlement: settlement.data };
      return { ok: false, retry: false, error: new HandoffRequestError(response.status, 'unexpected answer', describeIssues(settlement.error)) };
    }
    const shape = z.object({ error: z.string(), detail: z.string().optional() }).safeParse(answer);
    const error = new HandoffRequestError(
      response.status,
      shape.success ? shape.data.error : response.statusText || 'error',
      shape.success ? (shape.data.detail ?? '') : '',
    );
    const retryAfter = Number(response.headers.get('retry-after'));
    return {
      ok: false,
      retry: RETRYABLE.has(response.status),
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
      error,
    };
  }
}

export function createConsoleHandoffClient(options: ConsoleHandoffClientOptions): ConsoleHandoffClient {
  return new ConsoleHandoffClient(options);
}

const isLoopback = (hostname: string) => {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
};

// The console HTTP transport below is shared with the AgentClient (agentClient.ts): one check of where the bearer
// token may go, one way to obtain it.

/** The base URL, checked: the bearer token must not travel in clear text beyond this machine. */
export function consoleBase(value: string | URL): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new HandoffClientError('consoleUrl is not a URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname)))
    throw new HandoffClientError(`consoleUrl must be https (plain http only on loopback), got ${url.protocol}//${url.host}`);
  if (url.username || url.password) throw new HandoffClientError('consoleUrl must not carry credentials; pass a token provider');
  url.search = '';
  url.hash = '';
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/**
 * The caller's token as a provider that answers a token or throws: NoTokenError (not retried) for no token at all -
 * before, a credential's empty answer was retried like a failure and a function's was not, and in `serve` a
 * settlement was retried for ever with its handoff in hand.
 */
export function tokenProvider(token: ConsoleToken): TokenProvider {
  if (typeof token === 'function') return async (signal, request) => checkedToken(await token(signal, request), 'the token provider');
  if (token && typeof token.credential?.getToken === 'function') {
    const { credential, scope } = token;
    // A credential cannot be told to refresh: @azure/identity's getToken has no such option (its `claims` is for a
    // claims challenge, which the console does not send). It answers its cached token until that nears expiry.
    return async (signal) => checkedToken((await credential.getToken(scope, { abortSignal: signal }))?.token, 'the credential');
  }
  throw new HandoffClientError('token must be a function or { credential, scope }');
}

/**
 * A client's token provider (tokenProvider), and whether the console refused (401) a token it gave: the next ask
 * says so (`refresh`), once per refused token. A provider that caches its token (as it should) would otherwise
 * answer the refused one again - a token revoked, or the console's clock ahead of the provider's - and every retry,
 * `serve`'s settlement kept in hand included, be refused until the cache let it go.
 */
export class ConsoleTokens {
  readonly #provider: TokenProvider;
  #refused = false;
  /** The token last handed out; undefined while a refresh is asked for (the one before it is known refused). */
  #last: string | undefined;

  constructor(token: ConsoleToken) {
    this.#provider = tokenProvider(token);
  }

  async get(signal: AbortSignal): Promise<string> {
    // Cleared as it is passed on, so that one refusal asks for one refresh.
    const refresh = this.#refused;
    this.#refused = false;
    if (refresh) this.#last = undefined;
    let token: string;
    try {
      token = await this.#provider(signal, { refresh });
    } catch (err) {
      // The refresh did not happen (the identity provider away, say): the next ask must ask for it again, or it is
      // answered the refused token from the cache.
      if (refresh) this.#refused = true;
      throw err;
    }
    this.#last = token;
    return token;
  }

  /**
   * The console answered 401 to `token`, which this provider gave. Only the token last handed out counts: calls in
   * flight together all carry the same token, and the 401 of a second one, answered after the first one's retry
   * was given a new token, would otherwise ask for a second refresh of a token already replaced.
   */
  refused(token: string): void {
    if (token === this.#last) this.#refused = true;
  }
}

/** A bearer token, or NoTokenError saying what came instead (never a token: there is none). */
function checkedToken(token: unknown, from: string): string {
  if (typeof token === 'string' && token.trim() !== '') return token;
  const got = typeof token === 'string' ? (token === '' ? 'an empty string' : 'a blank string') : token === null ? 'null' : typeof token;
  throw new NoTokenError(`${from} gave no token for the console (${got}): a configuration fault, not retried`);
}

export function jsonOrString(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export async function readJson(response: Response): Promise<unknown> {
  try {
    return (await response.json()) as unknown;
  } catch {
    return undefined;
  }
}
