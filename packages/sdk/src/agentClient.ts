// The SDK's client of the console's Agent API (docs/agents.md): an external agent (an import job, a connector, an
// assistant) sees the catalog it is granted, long-polls its endpoint's pending handoffs, settles them and publishes
// events - over HTTPS with a service principal's bearer token, holding no Service Bus credentials at all.
//
// Transient answers (no answer, timeouts, 408, 429, 5xx, and a publish's 409 PUBLISH_IN_FLIGHT_CODE) are retried
// with backoff (Retry-After is honoured); refusals (400, 401, 403, 404, 409, 413) are not. A receive is a long-poll: its time limit is the wait plus the usual
// per-attempt limit. `serve` runs the whole agent loop: receive (skipping the handoffs it holds), run the work,
// settle - retrying a settlement until it lands, since a finished job that is never reported leaves its session
// blocked; a settlement the console refuses for good is not retried, and neither it nor a handoff the work leaves
// pending is worked again by that loop for a while (heldHandoffs.ts).
import { z } from 'zod';
import { describeIssues } from './contract/index.ts';
import { Backoff, sleep } from './backoff.ts';
import { HandoffClientError } from './handoffClient.ts';
import { truncateDescription } from './decide.ts';
import { HeldHandoffs, LEAVE_HOLD_MS, MAX_EXCLUDE, MAX_REMEMBERED, MIN_LEAVE_HOLD_MS, REFUSAL_HOLD_MS } from './heldHandoffs.ts';
import { containHooks, type ContainedHooks } from './serveHooks.ts';
import { encodeBody, requestTiming } from './consoleRequestOptions.ts';
import { consoleBase, ConsoleTokens, jsonOrString, NoTokenError, readJson, type ConsoleToken } from './consoleHandoffClient.ts';

export interface AgentClientOptions {
  /** The console's base URL, e.g. `https://nimbus.example.com` (a path prefix is kept). https, or http on loopback. */
  consoleUrl: string | URL;
  /**
   * The service principal's token: a provider function, or an @azure/identity credential and the console's scope.
   * Left out only for a console with sign-in off, which answers loopback callers only.
   */
  token?: ConsoleToken;
  /** Attempts per call including the first (default 4), and the backoff between them (default 500 ms doubling to 10 s). */
  retry?: { attempts?: number; initialMs?: number; maxMs?: number };
  /** Time limit per attempt, on top of a receive's wait (default 30 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const eventTypeView = z.object({
  id: z.string(),
  description: z.string().nullable(),
  sessionKey: z.string().nullable(),
  schema: z.record(z.string(), z.unknown()).nullable(),
  example: z.record(z.string(), z.unknown()).nullable(),
});
const catalogSchema = z.object({
  endpoints: z.array(
    z.object({ id: z.string(), description: z.string().nullable(), owner: z.string().nullable(), produces: z.array(z.string()), consumes: z.array(z.string()) }),
  ),
  eventTypes: z.array(eventTypeView),
});
export type AgentCatalog = z.infer<typeof catalogSchema>;

const pendingHandoffSchema = z.object({
  endpointId: z.string(),
  eventId: z.string(),
  sessionId: z.string(),
  eventTypeId: z.string().nullable(),
  messageId: z.string(),
  correlationId: z.string().nullable(),
  enqueuedAt: z.string().nullable(),
  payload: z.unknown(),
  handoff: z.object({ reason: z.string().nullable(), externalJobId: z.string().nullable(), expectedBy: z.string().nullable(), overdue: z.boolean() }),
});
export type PendingHandoff = z.infer<typeof pendingHandoffSchema>;

const settlementSchema = z.object({
  endpointId: z.string(),
  eventId: z.string(),
  sessionId: z.string(),
  outcome: z.enum(['sent', 'duplicate']),
  messageId: z.string(),
  messageType: z.string(),
});
export type AgentSettlement = z.infer<typeof settlementSchema>;

const publishedSchema = z.object({
  endpointId: z.string(),
  eventTypeId: z.string(),
  messageId: z.string(),
  sessionId: z.string(),
  correlationId: z.string(),
  /** True when this is the answer of an earlier attempt of the same publish (a retry): it was sent once, then. */
  replayed: z.boolean().optional(),
});
export type AgentPublished = z.infer<typeof publishedSchema>;

/** Where a pending handoff is: what `receive` answered (endpointId, eventId, messageId). */
export interface HandoffRef {
  endpointId: string;
  eventId: string;
  messageId: string;
}

// No `note` on a failure: the console refuses one (400, "note belongs to a completed outcome") - a failure says why
// in errorText - so a TypeScript adapter is told at compile time, and settle() tells a JavaScript one before sending.
export type AgentSettleInput = HandoffRef &
  ({ outcome: 'completed'; result?: unknown; note?: string } | { outcome: 'failed'; errorText: string; errorType?: string });

/** The console's limits on a failure's text (server/agent/schemas.ts `settleBody`), to clip an exception's message to. */
const MAX_ERROR_TEXT = 4000;
const MAX_ERROR_TYPE = 200;

export interface ReceiveOptions {
  endpointId: string;
  eventTypeId?: string;
  /** How long the console waits for a handoff to arrive (0-30 s; default 20). */
  waitSeconds?: number;
  /** Event ids already in hand: skipped (at most 100; one with a comma is sent whole, as `excludeId`). */
  exclude?: readonly string[];
  signal?: AbortSignal;
}

/** The console refused or could not be reached. Carries the console's `{ error, detail }`; never the token. */
export class AgentRequestError extends HandoffClientError {
  override readonly name: string = 'AgentRequestError';
  /** HTTP status; 0 when no answer came (network error, timeout). */
  readonly status: number;
  readonly error: string;
  readonly detail: string;
  /** The console's stable name for this refusal, when it gives one (e.g. SETTLED_CODE on a settlement's 409). */
  readonly code: string | undefined;
  constructor(what: string, status: number, error: string, detail: string, code?: string) {
    super(`${what} ${status === 0 ? 'got no answer' : `refused with ${status}`}: ${error}${detail ? ` (${detail})` : ''}`);
    this.status = status;
    this.error = error;
    this.detail = detail;
    this.code = code;
  }
}

/**
 * The `code` of the console's 409 to a settlement of a handoff that is settled already (server/manager/manager.ts
 * HANDOFF_SETTLED_CODE). Only that 409 is taken as settled: the console answers 409 also while the event's rows
 * cannot be read whole, while a claim is under way, when the event "kept changing", or when another handoff of the
 * event is pending - none of them the handoff settled.
 */
export const SETTLED_CODE = 'settled';

/**
 * The `code` of the console's 409 to a publish whose earlier attempt (the same event: endpoint and message id) is
 * still being sent (server/agent/publish.ts). Retried like a 503, after its Retry-After: the next attempt gets the
 * first one's outcome. Past the attempts it is thrown (AgentRequestError, status 409, this code): the publish is
 * not lost - publishing it again later gets that outcome, or sends it if the first never finished.
 */
export const PUBLISH_IN_FLIGHT_CODE = 'publish-in-flight';

const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);

/**
 * What the work on one handoff came to: settle it so, or `null` to leave it pending (not now, or not this agent's):
 * `serve` holds it out of its receives for `leaveHoldMs` (default LEAVE_HOLD_MS, 1 min) and goes on to the next.
 */
export type HandoffWorkResult =
  | { outcome: 'completed'; result?: unknown; note?: string }
  | { outcome: 'failed'; errorText: string; errorType?: string }
  | null;

export interface ServeOptions {
  endpointId: string;
  eventTypeId?: string;
  /** Handoffs worked on at once (default 4, at most 100: each receive excludes every one in hand). */
  concurrency?: number;
  /** Long-poll wait per receive (default 20 s; at least 1 s: with no wait an empty receive comes straight back). */
  waitSeconds?: number;
  /**
   * How long a handoff the work left (answered null) is kept out of this loop's receives, in ms (default
   * LEAVE_HOLD_MS, 1 min): how soon "not now" comes round again. A finite number, at least MIN_LEAVE_HOLD_MS (1 s);
   * anything else is refused when `serve` starts (HandoffClientError).
   */
  leaveHoldMs?: number;
  /** Stops the loop; work in progress is abandoned (its handoffs stay pending and are handed out again). */
  signal: AbortSignal;
  /**
   * Receive or settle problems the loop goes on after (default: ignored), an `onSettled` hook's own failure
   * (stage 'onSettled'), and the agent's token at fault (stage 'token', with the event id when a settlement met it):
   * a token provider that gave no token (a NoTokenError), or a token the console refused (an AgentRequestError with
   * status 401). What this hook throws is contained (the SDK's logger notes its type).
   */
  onError?: (error: unknown, context: { stage: 'receive' | 'settle' | 'onSettled' | 'token'; eventId?: string }) => void;
  /**
   * Each settlement made, or found made already (`alreadySettled`: the console answered 409 with code SETTLED_CODE;
   * any other 409 goes to onError, the result kept for the handoff's return). `outcome` is this
   * loop's own; a settlement found made may be another's - receive does not claim, so another agent or an operator
   * may have settled the handoff while this loop held its settlement (a 401 retried, say), possibly otherwise - and
   * `conflictDetail` is the console's 409 text saying what it knows of it. What this hook throws goes to `onError`.
   */
  onSettled?: (handoff: PendingHandoff, outcome: 'completed' | 'failed', alreadySettled: boolean, conflictDetail?: string) => void;
}

export class AgentClient {
  readonly #base: URL;
  readonly #token: ConsoleTokens | undefined;
  readonly #fetch: typeof fetch;
  readonly #attempts: number;
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #timeoutMs: number;

  constructor(options: AgentClientOptions) {
    this.#base = consoleBase(options.consoleUrl);
    this.#token = options.token === undefined ? undefined : new ConsoleTokens(options.token);
    this.#fetch = options.fetch ?? fetch;
    ({ attempts: this.#attempts, initialMs: this.#initialMs, maxMs: this.#maxMs, timeoutMs: this.#timeoutMs } = requestTiming(options));
  }

  /** The endpoints and event types (with JSON schemas) this agent may use. */
  async catalog(options: { signal?: AbortSignal } = {}): Promise<AgentCatalog> {
    return required('catalog', await this.#call('catalog', 'GET', 'api/agent/catalog', undefined, catalogSchema, options.signal));
  }

  /** The oldest pending handoff of the endpoint, waiting up to `waitSeconds` for one; null when none came. */
  async receive(options: ReceiveOptions): Promise<PendingHandoff | null> {
    const wait = Math.min(30, Math.max(0, Math.floor(options.waitSeconds ?? 20)));
    const q = new URLSearchParams({ endpointId: options.endpointId, waitSeconds: String(wait) });
    if (options.eventTypeId) q.set('eventTypeId', options.eventTypeId);
    const exclude = options.exclude ?? [];
    const plain = exclude.filter((id) => !id.includes(','));
    if (plain.length > 0) q.set('exclude', plain.join(','));
    // The console splits `exclude` on ',', so an id with a comma goes whole in an `excludeId` of its own. Only such an
    // id: a console older than `excludeId` ignores it (mid-deploy), and `exclude` could not name that id anyway.
    for (const id of exclude) if (id.includes(',')) q.append('excludeId', id);
    return this.#call('receive', 'GET', `api/agent/receive?${q}`, undefined, pendingHandoffSchema, options.signal, wait * 1000);
  }

  /** Settles a pending handoff. A second settlement is refused with 409 (AgentRequestError). */
  async settle(input: AgentSettleInput, options: { signal?: AbortSignal } = {}): Promise<AgentSettlement> {
    const problem = settlementProblem(input);
    if (problem) throw new HandoffClientError(problem);
    const body: Record<string, unknown> = { ...input };
    if (input.outcome === 'completed' && typeof input.result === 'string') body.result = jsonOrString(input.result);
    const text = encodeBody('the settlement (its result)', body);
    return required('settlement', await this.#call('settlement', 'POST', 'api/agent/settle', text, settlementSchema, options.signal));
  }

  /** The work succeeded (the same shape as ConsoleHandoffClient.complete, so either client fits a job runner). */
  complete(where: HandoffRef, result?: unknown, options: { note?: string; signal?: AbortSignal } = {}): Promise<AgentSettlement> {
    return this.settle({ ...pick(where), outcome: 'completed', result, ...(options.note !== undefined ? { note: options.note } : {}) }, options);
  }

  /** The work failed: the Resolver records Failed with `errorText`; the session stays blocked for an operator. */
  fail(where: HandoffRef, errorText: string, errorType?: string, options: { signal?: AbortSignal } = {}): Promise<AgentSettlement> {
    return this.settle({ ...pick(where), outcome: 'failed', errorText, ...(errorType !== undefined ? { errorType } : {}) }, options);
  }

  /**
   * Publishes an event as the agent's endpoint (named when the agent holds several), validated by the console. A
   * retry of a publish whose answer was lost is answered the first outcome (`replayed: true`), not sent again.
   */
  async publish(
    input: { eventTypeId: string; payload: unknown; endpointId?: string; sessionId?: string },
    options: { signal?: AbortSignal } = {},
  ): Promise<AgentPublished> {
    const text = encodeBody('the event (its payload)', input);
    return required('publish', await this.#call('publish', 'POST', 'api/agent/publish', text, publishedSchema, options.signal));
  }

  /**
   * The agent loop: receive handoffs of the endpoint (the ones in hand excluded), run `work` on each, settle
   * what it answers. Settling is retried until it lands or is refused; a 409 with code SETTLED_CODE then means it is
   * settled already - by this loop, or (receive does not claim) by another agent or an operator: onSettled is given
   * the console's text. Any other 409 (not settled: the event's rows unreadable, a claim under way, another handoff
   * pending) is reported to onError and held like a refusal, its result kept and sent when the handoff comes back.
   * An exception from `work` settles the handoff as failed with the exception's message (clipped to the console's
   * limit). A handoff whose settlement is refused for good (400, 404, an input settle() refuses, or a result that
   * JSON cannot encode, e.g. circular or holding a BigInt: settle() throws before sending) is reported to
   * `onError` and excluded from this loop's later receives for REFUSAL_HOLD_MS (10 min): it stays pending for an
   * operator (overdue once past its expected-by) rather than being worked, and refused, again and again. A handoff
   * the work leaves (null) is held out likewise for `leaveHoldMs` (default LEAVE_HOLD_MS, 1 min), so the loop goes
   * on to the next one instead of being handed the same one straight back. One handed out all the same while held
   * (more are held than one receive's exclude carries) is not worked: the loop waits, longer each time, and asks
   * again. A 403 (the agent's role) is given up on without holding the handoff out; a status the SDK has no meaning
   * for is held like a refusal (afterSettleFailure). A receive that fails, or answers "nothing pending" before half
   * its wait, is reported to `onError` and the next waits 1 s, doubling to 30 s. A token provider that gives no token
   * (NoTokenError: a configuration fault), or a token the console refuses (401: expired or not valid), is reported with
   * stage 'token': a receive waits as above, a settlement keeps its result and is tried again after 1 s, doubling to
   * 30 s (the work is not run again). What a hook throws does not end the loop
   * (serveHooks.ts). Resolves when stopped.
   */
  async serve(options: ServeOptions, work: (handoff: PendingHandoff, signal: AbortSignal) => Promise<HandoffWorkResult>): Promise<void> {
    const { signal } = options;
    const leaveHoldMs = options.leaveHoldMs ?? LEAVE_HOLD_MS;
    // Refused rather than clamped: under MIN_LEAVE_HOLD_MS a left handoff comes straight back (the busy loop the hold
    // is for: before, 1 ms was taken), and NaN would hold it for no time at all, silently.
    if (typeof leaveHoldMs !== 'number' || !Number.isFinite(leaveHoldMs) || leaveHoldMs < MIN_LEAVE_HOLD_MS)
      throw new HandoffClientError(`leaveHoldMs must be a finite number of milliseconds, at least ${MIN_LEAVE_HOLD_MS}, got ${describeValue(leaveHoldMs)}`);
    // At most MAX_EXCLUDE in hand: every one of them goes into each receive's exclude, which the console caps.
    const limit = Math.min(MAX_EXCLUDE, Math.max(1, options.concurrency ?? 4));
    const waitSeconds = Math.min(30, Math.max(1, Math.floor(options.waitSeconds ?? 20)));
    const inHand = new Map<string, Promise<void>>();
    const held = new HeldHandoffs();
    // Results whose settlement met a 409 that is not "settled": sent again, the work not run, when the handoff comes back.
    const kept = new KeptResults();
    // The wait after a receive handed out a handoff still held: 1 s doubling to 30 s, until a receive hands out another.
    const heldAgain = new Backoff();
    // A hook's failure must not end the loop: the handoffs would stop being worked (serveHooks.ts).
    const hooks = containHooks(options);
    let receiveFailures = 0;
    while (!signal.aborted) {
      if (inHand.size >= limit) {
        await Promise.race([...inHand.values(), abortOf(signal)]);
        continue;
      }
      let handoff: PendingHandoff | null;
      try {
        const asked = Date.now();
        handoff = await this.receive({
          endpointId: options.endpointId,
          ...(options.eventTypeId ? { eventTypeId: options.eventTypeId } : {}),
          waitSeconds,
          exclude: held.exclude(inHand.keys()),
          signal,
        });
        // The console answers "nothing pending" only once the wait is over. Sooner, something in between answers for
        // it (or it is not the console we know), and asked again at once it answers at once again: a busy loop.
        const tookMs = Date.now() - asked;
        if (!handoff && !signal.aborted && tookMs < (waitSeconds * 1000) / 2)
          throw new AgentRequestError('receive', 204, 'unexpected answer', `nothing pending after ${tookMs} ms of a ${waitSeconds} s long-poll: the console did not wait`);
        receiveFailures = 0;
      } catch (err) {
        if (signal.aborted) break;
        hooks.error(err, { stage: tokenAtFault(err) ? 'token' : 'receive' });
        receiveFailures++;
        await sleep(Math.min(30_000, 1_000 * 2 ** Math.min(5, receiveFailures - 1)), signal);
        continue;
      }
      if (handoff && held.isHeld(handoff.eventId)) {
        // More are held than the exclude carries, and the console hands out the oldest pending first: worked again, it
        // would be left or refused again at once and the next receive would hand out the next of them - a busy loop.
        await sleep(heldAgain.next(), signal);
        continue;
      }
      heldAgain.reset();
      if (!handoff) continue;
      const h = handoff;
      // Held before it leaves the hand, so no receive in between can be handed it back.
      const job = this.#work(h, work, signal, hooks, leaveHoldMs, kept)
        .then((holdMs) => {
          if (holdMs !== undefined) held.hold(h.eventId, holdMs);
        })
        .finally(() => inHand.delete(h.eventId));
      inHand.set(h.eventId, job);
    }
    await Promise.allSettled([...inHand.values()]);
  }

  /** Works one handoff and settles it; how long to hold it out of the loop's receives (left, or refused for good), if at all. */
  async #work(
    h: PendingHandoff,
    work: (handoff: PendingHandoff, signal: AbortSignal) => Promise<HandoffWorkResult>,
    signal: AbortSignal,
    hooks: ContainedHooks,
    leaveHoldMs: number,
    kept: KeptResults,
  ): Promise<number | undefined> {
    // A result kept from an earlier settlement of this very handoff (same event, same message) is sent as it was:
    // the work is done, and running it again would import, or pay, twice.
    let result: HandoffWorkResult | undefined = kept.take(h);
    if (result === undefined) {
      try {
        result = await work(h, signal);
      } catch (err) {
        if (signal.aborted) return undefined;
        result = failureOf(err);
      }
    }
    if (signal.aborted) return undefined;
    if (result === null) return leaveHoldMs;
    // The handoff's ids last, so they win: a result that carries its own (an external system's messageId, spread in
    // by the work) sent the settlement to another message - refused 409 and, taken as settled, the result dropped.
    let input = { ...result, endpointId: h.endpointId, eventId: h.eventId, messageId: h.messageId } as AgentSettleInput;
    for (let attempt = 1; !signal.aborted; attempt++) {
      let alreadySettled = false;
      let conflictDetail: string | undefined;
      try {
        await this.settle(input, { signal });
      } catch (err) {
        if (signal.aborted) return undefined;
        if (err instanceof AgentRequestError && err.status === 413) {
          // Too large is too large on every attempt, and the work is done: it must not run again. A completion is
          // settled as failed with a short text saying so, which the console shows (the event Failed, its session
          // waiting for an operator who reads that the work ran). Before, the 413 held the handoff out with its
          // result dropped, and after the hold the work ran again - every 10 minutes, for ever.
          hooks.error(err, { stage: 'settle', eventId: h.eventId });
          if (result.outcome === 'completed') {
            result = { outcome: 'failed', errorText: tooLargeText(err.detail, input), errorType: RESULT_TOO_LARGE };
            input = { ...result, endpointId: h.endpointId, eventId: h.eventId, messageId: h.messageId };
            continue;
          }
          // A failure too large (only a broker with a smaller limit than the console's): nothing shorter to send.
          // Kept and held out like a 409 that is not settled: when the handoff comes back it is sent again, the
          // work not run again.
          kept.keep(h, result);
          return REFUSAL_HOLD_MS;
        }
        if (err instanceof AgentRequestError && err.status === 409 && err.code !== SETTLED_CODE) {
          // A 409 that does not say settled: the event's rows cannot be read whole, a claim is under way, it "kept
          // changing", or another handoff of the event is pending. Not settled, so the result is kept and the
          // handoff held out like a refusal; when it comes back the kept result is sent, the work not run again.
          // Before, every 409 was taken as settled: the result dropped, the handoff handed back, the work run again.
          hooks.error(err, { stage: 'settle', eventId: h.eventId });
          kept.keep(h, result);
          return REFUSAL_HOLD_MS;
        }
        if (!(err instanceof AgentRequestError && err.status === 409)) {
          hooks.error(err, { stage: tokenAtFault(err) ? 'token' : 'settle', eventId: h.eventId });
          const next = afterSettleFailure(err, attempt);
          if (next === 'hold') return REFUSAL_HOLD_MS;
          if (next === 'give up') return undefined;
          await sleep(Math.min(30_000, 1_000 * 2 ** Math.min(5, attempt - 1)), signal);
          continue;
        }
        // Settled already: by an earlier attempt whose answer was lost, or - receive does not claim - by another agent
        // or an operator, possibly otherwise than this loop's outcome. The console's text says what it knows.
        alreadySettled = true;
        if (err.detail) conflictDetail = err.detail;
      }
      // Out of the try: a throwing hook was taken for a failed settlement, which was then sent again.
      hooks.settled(h, result.outcome, alreadySettled, conflictDetail);
      return undefined;
    }
    return undefined;
  }

  async #call<S extends z.ZodType>(
    what: string,
    method: 'GET' | 'POST',
    path: string,
    text: string | undefined,
    schema: S,
    signal: AbortSignal | undefined,
    extraTimeMs = 0,
  ): Promise<z.output<S> | null> {
    const url = new URL(path, this.#base);
    let delay = this.#initialMs;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const outcome = await this.#attempt(what, method, url, text, schema, signal, extraTimeMs);
      if (outcome.ok) return outcome.value;
      if (!outcome.retry || attempt >= this.#attempts) throw outcome.error;
      await sleep(Math.min(this.#maxMs, Math.max(delay, outcome.retryAfterMs ?? 0)), signal);
      delay = Math.min(this.#maxMs, delay * 2);
    }
  }

  async #attempt<S extends z.ZodType>(
    what: string,
    method: string,
    url: URL,
    body: string | undefined,
    schema: S,
    signal: AbortSignal | undefined,
    extraTimeMs: number,
  ): Promise<{ ok: true; value: z.output<S> | null } | { ok: false; retry: boolean; retryAfterMs?: number; error: AgentRequestError }> {
    const limitMs = this.#timeoutMs + extraTimeMs;
    const timeout = AbortSignal.timeout(limitMs);
    const attemptSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let token: string | undefined;
    if (this.#token) {
      try {
        token = await this.#token.get(attemptSignal);
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        // No token at all is a configuration fault (tokenProvider): thrown, not retried.
        if (err instanceof NoTokenError) throw err;
        const why = timeout.aborted ? `no token within ${limitMs} ms` : err instanceof Error ? err.message : String(err);
        return { ok: false, retry: true, error: new AgentRequestError(what, 0, 'no token', why) };
      }
      headers.authorization = `Bearer ${token}`;
    }
    let response: Response;
    try {
      // A redirect would carry the bearer token to wherever it points: refused.
      // No body key at all when there is no body (fetch's type has no room for an explicit undefined).
      const init: RequestInit = { method, headers, redirect: 'error', signal: attemptSignal };
      if (body !== undefined) init.body = body;
      response = await this.#fetch(url, init);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      const why = timeout.aborted ? `no answer within ${limitMs} ms` : err instanceof Error ? err.message : String(err);
      return { ok: false, retry: true, error: new AgentRequestError(what, 0, 'unreachable', `${url.origin}: ${why}`) };
    }
    if (response.status === 204) return { ok: true, value: null };
    if (response.status === 401 && token !== undefined) this.#token?.refused(token);
    const answer = await readJson(response);
    if (response.ok) {
      const parsed = schema.safeParse(answer);
      if (parsed.success) return { ok: true, value: parsed.data };
      return { ok: false, retry: false, error: new AgentRequestError(what, response.status, 'unexpected answer', describeIssues(parsed.error)) };
    }
    const shape = z.object({ error: z.string(), detail: z.string().optional(), code: z.string().optional() }).safeParse(answer);
    const error = shape.success
      ? new AgentRequestError(what, response.status, shape.data.error, shape.data.detail ?? '', shape.data.code)
      : new AgentRequestError(what, response.status, response.statusText || 'error', '');
    const retryAfter = Number(response.headers.get('retry-after'));
    return {
      ok: false,
      // Only the publish's tagged 409 is transient: every other 409 (a settlement's above all) is a refusal.
      retry: RETRYABLE.has(response.status) || (what === 'publish' && response.status === 409 && error.code === PUBLISH_IN_FLIGHT_CODE),
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
      error,
    };
  }
}

export function createAgentClient(options: AgentClientOptions): AgentClient {
  return new AgentClient(options);
}

/**
 * Work results whose settlement met a 409 that is not "settled", by handoff: the event id and the handoff's message
 * id, so the event's next handoff (another message, after an operator's resubmit) is worked afresh. Bounded as the
 * holds are (MAX_REMEMBERED, the oldest forgotten first): one forgotten is worked again when it comes back.
 */
class KeptResults {
  readonly #results = new Map<string, Exclude<HandoffWorkResult, null>>();

  keep(h: HandoffRef, result: Exclude<HandoffWorkResult, null>): void {
    const key = keyOf(h);
    this.#results.delete(key);
    this.#results.set(key, result);
    for (const oldest of this.#results.keys()) {
      if (this.#results.size <= MAX_REMEMBERED) break;
      this.#results.delete(oldest);
    }
  }

  /** The result kept for this handoff, forgotten here (kept again if its settlement meets such a 409 again). */
  take(h: HandoffRef): Exclude<HandoffWorkResult, null> | undefined {
    const key = keyOf(h);
    const result = this.#results.get(key);
    this.#results.delete(key);
    return result;
  }
}

const keyOf = (h: HandoffRef) => `${h.eventId}\u0000${h.messageId}`;

/** Attempts at a settlement answered in 2xx without a settlement in it, before it is held out like a refusal. */
const UNREADABLE_SETTLE_ATTEMPTS = 3;

/**
 * What a failed settlement comes to: another attempt (no answer, or a transient one: the console is busy or down,
 * and a finished job never reported leaves its session blocked); given up on, the handoff held out of the loop's
 * receives (the same settlement is answered the same way every time: 400, 404, and any status the SDK does not know
 * - before, those were retried for ever, the handoff in hand - and so is one settle() refuses before sending
 * anything); or given up on, not held (a 403: the agent may not settle on the endpoint, the handoff is not at fault).
 * The agent's token at fault - none given (NoTokenError), or refused by the console (401) - is retried with the
 * result in hand, each attempt reported: giving it up ran the work again on this loop's next receive (with several
 * agents the work can run twice regardless: receive does not claim).
 */
function afterSettleFailure(err: unknown, attempt: number): 'retry' | 'hold' | 'give up' {
  // No token, or one the console refused (401: it expired, or stopped being valid, between the receive and the settlement,
  // and the console read nothing of the settlement): the work is done and its result in hand; given up, the
  // handoff would be handed out again and the work - an import, a payment - run a second time once a good token
  // comes (the next receive asks the provider again) - by this loop: with several agents on the endpoint the work can
  // run twice regardless, since receive does not claim. Retried with the settlement's backoff (1 s doubling to
  // 30 s), reported each time with stage 'token'. A 409 then says the handoff is settled already: by an earlier
  // attempt that landed after all, or by another agent or an operator while this one was held (onSettled's detail).
  if (tokenAtFault(err)) return 'retry';
  // settle()'s own refusal, before any request (an input the console would refuse, a result JSON cannot encode): the
  // work's answer is at fault and another attempt fails alike. Before, an unencodable result was retried for ever.
  if (err instanceof HandoffClientError && !(err instanceof AgentRequestError)) return 'hold';
  // No answer while sending is an AgentRequestError (status 0); anything else is unforeseen: tried again, as before.
  if (!(err instanceof AgentRequestError)) return 'retry';
  // 403: the token is good but the agent may not settle on this endpoint - its Agent role there was taken away
  // between the receive and the settlement (a grant revoked, the role map changed), since both need the same role.
  // The same rights get the same answer, so a retry cannot land; the handoff is not at fault, and this loop's
  // receives on the endpoint are refused likewise. Given up and reported (stage 'settle'): the result is dropped,
  // the handoff stays pending for whoever may settle it.
  if (err.status === 403) return 'give up';
  if (err.status === 0 || RETRYABLE.has(err.status)) return 'retry';
  // Answered 2xx but unreadable: the settlement may well have landed, which another attempt finds out (409); a few.
  if (err.status >= 200 && err.status < 300 && attempt < UNREADABLE_SETTLE_ATTEMPTS) return 'retry';
  return 'hold';
}

/** The errorType of a completion settled as failed because the console refused its result as too large (413). */
export const RESULT_TOO_LARGE = 'ResultTooLarge';

/**
 * The failure text for a completion refused as too large: its size and the limit from the console's detail when it
 * names them ("N bytes as sent; at most M bytes"), else the settlement's size as this client encoded it.
 */
function tooLargeText(detail: string, input: AgentSettleInput): string {
  const sent = /(\d+) bytes as sent/.exec(detail)?.[1] ?? String(new TextEncoder().encode(JSON.stringify(input)).length);
  const limit = /at most (\d+) bytes/.exec(detail)?.[1];
  return `result too large (${sent} bytes > ${limit === undefined ? "the broker's limit" : `${limit} bytes`}); the work was done, its result was not recorded`;
}

/** The agent's token is at fault: the provider gave none, or the console refused the one it gave (401). */
const tokenAtFault = (err: unknown) => err instanceof NoTokenError || (err instanceof AgentRequestError && err.status === 401);

/** Only a receive may answer 204 (nothing pending); for anything else an empty answer is a broken one. */
function required<T>(what: string, value: T | null): T {
  if (value === null) throw new AgentRequestError(what, 204, 'unexpected answer', 'the console answered without a body');
  return value;
}

/** Why the console would refuse this settlement for its shape alone, or undefined. */
function settlementProblem(input: AgentSettleInput): string | undefined {
  if (input.outcome !== 'failed') return undefined;
  if (typeof input.errorText !== 'string' || input.errorText.trim() === '') return 'errorText is required for a failed outcome';
  // A JavaScript caller (or a cast) can still send one; the console would refuse it with 400.
  if ('note' in input && (input as { note?: unknown }).note !== undefined)
    return 'note belongs to a completed outcome: a failed settlement says why in errorText (the console refuses a note on a failure)';
  return undefined;
}

/** A failed result for an exception from the work: its message and name, clipped to what the console accepts. */
function failureOf(err: unknown): HandoffWorkResult {
  const message = err instanceof Error ? err.message || err.name : String(err);
  const name = err instanceof Error ? err.name.trim() : '';
  return {
    outcome: 'failed',
    errorText: truncateDescription(message.trim() ? message : 'the work threw an exception without a message', MAX_ERROR_TEXT),
    ...(name ? { errorType: truncateDescription(name, MAX_ERROR_TYPE) } : {}),
  };
}

/** An option's value for an error message: numbers and strings as they are, anything else by its type. */
const describeValue = (value: unknown) => (typeof value === 'number' ? String(value) : typeof value === 'string' ? JSON.stringify(value) : typeof value);

const pick = (w: HandoffRef): HandoffRef => ({ endpointId: w.endpointId, eventId: w.eventId, messageId: w.messageId });

const abortOf = (signal: AbortSignal) =>
  new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
