// Authorization of every console request: who is calling (authenticate.ts), may they take this action here
// (roles.ts: claims through NIMBUS_AUTH_ROLE_MAP plus Owners' grants), is a mutating call coming from our own
// origin (CSRF) and within the caller's rate limit. Every refusal is answered `{ error, detail }` (401, 403, 429)
// and written to the audit log within a per-caller budget; a signed-in caller's refusal aimed at one event also lands
// in that event's trail (unauthenticated ones are only counted there: see countUnauthenticated).
// Mutations then run through `audited`, which records how they ended.
import { metrics, type Counter } from '@opentelemetry/api';
import { log } from '../log.ts';
import { HttpError, describeError, owesAudit, scopeAuditDetails } from '../http.ts';
import { getContext, type ConsoleContext } from '../context.ts';
import { writeAudit, type AuditOutcome } from '../audit/auditLog.ts';
import { authMode, getPrincipal } from './authenticate.ts';
import { grantsFor, listGrants } from './grants.ts';
import { principalKey, type Principal } from './principal.ts';
import { RateLimiter, rateLimitSettings } from './rateLimit.ts';
import { scopeOf, type ReadScope } from './readScope.ts';
import { authMode as signInMode, loopbackProblem, originProblem } from './hardening.ts';
import {
  RoleMapError,
  currentRoleMap,
  decide,
  describeRoles,
  isMutating,
  rolesFromClaims,
  type Action,
  type Role,
  type RoleAssignment,
} from './roles.ts';

export type { Action } from './roles.ts';
export { inScope, type ReadScope } from './readScope.ts';
export { authMode } from './authenticate.ts';
export { originProblem } from './hardening.ts';

/** What else a request names, for the audit entry. */
export interface AuthSubject {
  eventId?: string;
  /** A subscription (`topic/subscription`), a grant id, an operation id. */
  target?: string;
}

export interface Authorized {
  principal: Principal;
  /** Recorded as the auditor of every command (the principal's display name). */
  user: string;
  assignments: RoleAssignment[];
  role: Role;
  action: Action;
  endpointId: string | undefined;
  /**
   * A change over several endpoints (authorizeEach): all of them, and endpointId undefined - its audit entry is
   * filed under each (auditLog.ts `endpoints`), not under the last one authorized.
   */
  endpoints?: readonly string[];
  subject: AuthSubject;
  /**
   * Whether this request passed the origin check (a change, a method other than GET/HEAD/OPTIONS, or a read
   * declared `effects`): `limitRate` spends the caller's change budget only for such a request.
   */
  originChecked: boolean;
}

/** What a route declares about a request beyond its action. */
export interface AuthorizeOptions {
  /**
   * The request has effects although its method reads and its action is not a change: it spends the caller's
   * budget (the change rate limit, the Agent API's limits), writes the audit log as the caller, or locks sessions
   * on the broker. Then it must come from our own origin like a change (403 otherwise, audited): a page on another
   * site can send a GET with the user's cookie by a top-level navigation (SameSite=Lax), and with sign-in off by
   * an <img>. Plain reads stay open to such requests - a link to the console from elsewhere must still open it.
   */
  effects?: boolean;
}

/**
 * Who a change is made for, as the event's history records it (server/manager/commands.ts Auditor): the display
 * name shown and the stable id (`user:<oid>`, `service:<id>`) that tells two people of one name apart.
 */
export const actorOf = (who: Pick<Authorized, 'user' | 'principal'>): { name: string; id: string } => ({ name: who.user, id: principalKey(who.principal) });

/** The roles a principal holds: everything while NIMBUS_AUTH=off, else its claims through the mapping plus grants. */
async function rolesOf(principal: Principal, ctx: ConsoleContext): Promise<RoleAssignment[]> {
  if (principal.kind === 'anonymous') {
    // Only NIMBUS_AUTH=off produces the anonymous principal; the console then listens on loopback only.
    return authMode() === 'off' ? [{ role: 'Owner', endpointId: null, source: 'auth off' }] : [];
  }
  let map;
  try {
    map = currentRoleMap();
  } catch (err) {
    if (err instanceof RoleMapError) throw new HttpError(503, 'not configured', err.message);
    throw err;
  }
  return [...rolesFromClaims(principal, map), ...grantsFor(principal, await listGrants(ctx.store.database))];
}

const UNKNOWN: Principal = { kind: 'anonymous', id: 'unauthenticated', name: 'unauthenticated', roles: [], groups: [] };

/**
 * Refusals are audited within a budget, so refused calls cannot become an unbounded stream of Cosmos writes:
 * a signed-in user without a role still polls the pages every few seconds (each read refused), and anyone on
 * the network can send unauthenticated requests. 401s share one bucket per process; every principal has its
 * own. Past the budget a refusal is still answered and logged, and the next entry written for that bucket
 * says how many were left out (`details.refusalsNotAudited`).
 */
const UNAUTHENTICATED_AUDIT_RATE = { perMinute: 300, burst: 100 };
export const REFUSAL_AUDIT_RATE = { perMinute: 10, burst: 30 };
/** The warning about skipped entries: one a minute per bucket, so a flood does not become a flood of log lines. */
const SKIPPED_LOG_RATE = { perMinute: 1, burst: 1 };
const refusalAudits = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.refusalAudits')] ??= new RateLimiter()) as RateLimiter;
const refusalsNotAudited = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.refusalsNotAudited')] ??= new Map<string, number>()) as Map<string, number>;

/** Whether this refusal may be written, and how many of its bucket were skipped since the last one written. */
function refusalBudget(principal: Principal | null, action: string, status: number): { write: boolean; skippedBefore: number } {
  const key = principal === null ? 'unauthenticated' : `denied:${principalKey(principal)}`;
  const skipped = refusalsNotAudited.get(key) ?? 0;
  if (refusalAudits.take(key, principal === null ? UNAUTHENTICATED_AUDIT_RATE : REFUSAL_AUDIT_RATE) === 0) {
    refusalsNotAudited.delete(key);
    return { write: true, skippedBefore: skipped };
  }
  refusalsNotAudited.delete(key);
  refusalsNotAudited.set(key, skipped + 1);
  // Oldest first (insertion order): the counts are a courtesy, the bound on memory is not.
  while (refusalsNotAudited.size > 10_000) refusalsNotAudited.delete(refusalsNotAudited.keys().next().value as string);
  if (refusalAudits.take(`log:${key}`, SKIPPED_LOG_RATE) === 0)
    log.warn(
      { action, status, actorKind: principal?.kind ?? 'unauthenticated', actorId: principal?.id, notAudited: skipped + 1 },
      'requests refused; audit entries skipped (too many refusals in a short time)',
    );
  return { write: false, skippedBefore: 0 };
}

/**
 * Unauthenticated refusals (401) are counted, not written where a caller could aim them: anyone who can reach
 * the console can send them and choose the event id in the URL, and an event's trail is what the Manager and
 * the event page read (a flood of Denied entries there would push real ones out of view). They go to the
 * site-level audit log within its budget, without the event id, and to this counter
 * (`nimbus.console.unauthenticated_refusals`, by action).
 */
const unauthenticatedCount = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.unauthenticatedRefusals')] ??= { n: 0 }) as { n: number };
let unauthenticatedCounter: Counter | undefined;
function countUnauthenticated(action: string): void {
  unauthenticatedCount.n++;
  unauthenticatedCounter ??= metrics.getMeter('nimbus.console').createCounter('nimbus.console.unauthenticated_refusals', {
    unit: '{requests}',
    description: 'Requests refused with 401 (no valid session or bearer token)',
  });
  unauthenticatedCounter.add(1, { 'nimbus.action': action });
}

/** How many requests this process refused with 401 so far (the counter's value, for tests and diagnostics). */
export const unauthenticatedRefusals = (): number => unauthenticatedCount.n;

const limiterKey = Symbol.for('nimbus.console.rateLimiter');
const limiter = ((globalThis as Record<symbol, unknown>)[limiterKey] ??= new RateLimiter()) as RateLimiter;

interface Refusal {
  status: number;
  error: string;
  detail: string;
  headers?: Record<string, string>;
}

async function refuse(
  ctx: ConsoleContext | undefined,
  principal: Principal | null,
  assignments: readonly RoleAssignment[],
  /** The action's name in the audit log (a route refusing before its body names the action uses a wider label). */
  action: string,
  endpointId: string | undefined,
  subject: AuthSubject,
  r: Refusal,
  /** The endpoints of a change over several (Authorized.endpoints), refused after they were authorized. */
  endpoints?: readonly string[],
): Promise<never> {
  // The refusal is this request's entry: nothing more is owed for a change authorized earlier in it.
  owesAudit(undefined);
  if (principal === null) {
    countUnauthenticated(action);
    // No caller-chosen event id reaches any log: see countUnauthenticated.
    subject = { ...(subject.target !== undefined ? { target: subject.target } : {}) };
  }
  const budget = ctx ? refusalBudget(principal, action, r.status) : undefined;
  if (ctx && budget?.write) {
    const who = principal ?? UNKNOWN;
    await recordOutcome(ctx, {
      principal: who,
      assignments,
      action,
      endpointId,
      subject,
      outcome: 'denied',
      status: r.status,
      reason: r.detail,
      details: budget.skippedBefore > 0 ? { refusalsNotAudited: budget.skippedBefore } : null,
      endpoints,
    });
    // The event page shows its own trail: a signed-in caller's refused attempt against the event belongs there too -
    // a caller holding some console role. One holding none is kept out as the unauthenticated are: any app that can
    // get a token for the console's audience (or any account of the tenant) is such a caller, names itself, and
    // chooses the event id, so it could write "Denied … by <an operator's name>" into any event's trail. Its
    // refusal is still in the audit log, under its stable id.
    if (principal !== null && assignments.length > 0 && subject.eventId !== undefined && endpointId !== undefined) {
      await ctx.store
        .recordAudit({
          eventId: subject.eventId,
          endpointId,
          type: 'Denied',
          auditor: who.name.slice(0, 256) || who.id.slice(0, 256),
          auditorId: principalKey(who).slice(0, 256),
          comment: `${action} refused (${r.status}): ${r.detail}`.slice(0, 4096),
        })
        .catch((err: unknown) => log.error({ err: errText(err) }, 'could not write the denied attempt to the event trail'));
    }
  }
  throw new HttpError(r.status, r.error, r.detail, r.headers);
}

/**
 * A read with effects the operator opened themselves - typed, pasted or bookmarked into the address bar, or from
 * another application: the browser says `Sec-Fetch-Site: none` for a navigation no page started. No page on another
 * site can send that (its links and forms say `cross-site` or `same-site`), so it is no forgery; refusing it broke a
 * saved export link. A change is never let through this way.
 */
function typedOrBookmarkedRead(request: Request, action: Action): boolean {
  return (
    !isMutating(action) &&
    READ_METHODS.has(request.method.toUpperCase()) &&
    request.headers.get('sec-fetch-site') === 'none' &&
    request.headers.get('sec-fetch-mode') === 'navigate'
  );
}

function withScopeDetails(details: Record<string, unknown> | null): Record<string, unknown> | null {
  const scoped = scopeAuditDetails();
  return scoped === undefined ? details : { ...scoped, ...details };
}

const errText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Writes one audit-log entry; a failed write is logged and does not change the caller's answer. The entry carries
 * the details of the scope it is written in (http.ts auditingFailure: `via: "mcp"` for an MCP tool call) under its
 * own, so a failure owed by authorize() or a refusal says where it came from as a success does.
 */
export async function recordOutcome(
  ctx: ConsoleContext,
  e: {
    principal: Principal;
    assignments: readonly RoleAssignment[];
    action: string;
    endpointId: string | undefined;
    subject: AuthSubject;
    outcome: AuditOutcome;
    status: number;
    reason: string | null;
    details: Record<string, unknown> | null;
    endpoints?: readonly string[] | undefined;
  },
): Promise<void> {
  try {
    await writeAudit(ctx.store.database, {
      actorKind: e.principal.kind,
      actorId: e.principal.id,
      actorName: e.principal.name,
      roles: describeRoles(e.assignments),
      action: e.action,
      endpointId: e.endpointId ?? null,
      ...(e.endpoints !== undefined ? { endpoints: [...e.endpoints] } : {}),
      eventId: e.subject.eventId ?? null,
      target: e.subject.target ?? null,
      outcome: e.outcome,
      status: e.status,
      reason: e.reason,
      details: withScopeDetails(e.details),
    });
  } catch (err) {
    log.error({ err: errText(err), action: e.action, outcome: e.outcome }, 'could not write the audit log');
  }
}

/** getPrincipal, with broken sign-in settings answered 503 naming the variables (never their values). */
async function principalOf(request: Request): Promise<Principal | null> {
  try {
    return await getPrincipal(request);
  } catch (err) {
    if (err instanceof Error && err.name === 'AuthConfigError') throw new HttpError(503, 'not configured', err.message);
    throw err;
  }
}

/**
 * With sign-in off every caller is an Owner: only requests addressed to this machine directly may be one (DNS
 * rebinding, local proxies; hardening.ts loopbackProblem). proxy.ts refuses them first; this repeats it so that
 * no route depends on the proxy's matcher. Not audited: nobody signed in to audit, and anyone could flood it.
 */
function refuseUnlessLoopbackWhenSignInOff(request: Request): void {
  if (signInMode() !== 'off') return;
  const refused = loopbackProblem(request.headers, 'nextInternal', new URL(request.url).host);
  if (refused !== null) throw new HttpError(refused.status, 'misdirected request', refused.detail);
}

/**
 * Authorizes a request for an action (on an endpoint, when it names one). Throws 401 without a principal, 403
 * when the roles, the origin or the principal kind do not allow it, 429 over the rate limit - each audited.
 */
export async function authorize(
  request: Request,
  action: Action,
  endpointId?: string,
  subject: AuthSubject = {},
  options: AuthorizeOptions = {},
): Promise<Authorized> {
  return check(request, action, endpointId, subject, 'here', action, options);
}

/**
 * Authorizes one change that spans several endpoints (a bulk job, its pause/resume/cancel, reconcile): the action
 * on each endpoint (401/403 and audited as `authorize`), then ONE call against the rate limit - a bulk command
 * counts once, however many endpoints it touches. Answers as `authorize` did for the last endpoint, but over
 * several endpoints with all of them as `endpoints` and no endpointId (the audit entry is filed under each);
 * undefined for an empty list (nothing authorized, nothing counted).
 */
export async function authorizeEach(
  request: Request,
  action: Action,
  endpointIds: readonly string[],
  subject: AuthSubject = {},
  /** The request already paid for the change (a bulk job's freeze, charged before it ran): only owed its audit. */
  charged = false,
): Promise<Authorized | undefined> {
  let who: Authorized | undefined;
  for (const endpointId of endpointIds) who = await check(request, action, endpointId, subject, 'hereUnlimited');
  if (who && endpointIds.length > 1) who = { ...who, endpointId: undefined, endpoints: [...endpointIds] };
  if (who) await admitChange(who, charged);
  return who;
}

/**
 * What can be authorized before the body is read, for routes whose body names the endpoint or the action (bulk
 * commands, reconcile, subscription actions) - or whose stored record does (a bulk job's pause, resume and cancel:
 * server/operations/authorizeControl.ts): a principal (401), our own origin for a mutation (403), and a role
 * that allows `action` somewhere - on `endpointId` when the route's path names one, else on any endpoint (403).
 * An unauthenticated or roleless caller is refused before the server parses up to a megabyte of JSON and
 * without learning the body's schema from its errors. The route then reads the body and calls `authorize` with
 * what the body names; only that call counts against the rate limit.
 */
export async function authorizeBeforeBody(
  request: Request,
  action: Action,
  endpointId?: string,
  subject: AuthSubject = {},
  /** How refusals are named in the audit log when the body chooses among several actions (`subscription.*`). */
  label: string = action,
  options: AuthorizeOptions = {},
): Promise<Authorized> {
  return check(request, action, endpointId, subject, endpointId === undefined ? 'anywhere' : 'hereUnlimited', label, options);
}

/**
 * Names the input refusal owed since `authorizeBeforeBody` by what the body asked for, once that can be read (a
 * bulk job's `skip`): its refusals were audited under the name chosen before the body, `resubmit` for either kind.
 */
export function nameRefusedInput(who: Authorized, label: string): void {
  if (isMutating(who.action)) owesAudit((answer) => recordRefusedInput({ ...auditBase(who), action: label }, answer));
}

/**
 * Methods a browser may send from any page without a preflight: no origin check for them unless the action is a
 * change or the route declares effects (AuthorizeOptions).
 */
const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

async function check(
  request: Request,
  action: Action,
  endpointId: string | undefined,
  subject: AuthSubject,
  scope: 'here' | 'hereUnlimited' | 'anywhere',
  label: string = action,
  options: AuthorizeOptions = {},
): Promise<Authorized> {
  refuseUnlessLoopbackWhenSignInOff(request);
  const principal = await principalOf(request);
  // A change, or any request that is not a plain read by method (the replay preview is a POST that scans a
  // dead-letter queue and spends the caller's change budget), or a read with effects: from our own origin only.
  const originChecked = isMutating(action) || !READ_METHODS.has(request.method.toUpperCase()) || options.effects === true;
  // The context is opened whenever a refusal here must be audited: with sign-in off too for a checked origin.
  const ctx = originChecked || principal === null || principal.kind !== 'anonymous' ? await getContext() : undefined;
  if (principal === null) {
    return refuse(ctx, null, [], label, endpointId, subject, {
      status: 401,
      error: 'unauthorized',
      detail: 'sign in to use the console (no valid session or bearer token)',
    });
  }
  const assignments = ctx ? await rolesOf(principal, ctx) : [{ role: 'Owner' as const, endpointId: null, source: 'auth off' }];
  if (originChecked) {
    const problem = typedOrBookmarkedRead(request, action) ? null : originProblem(request);
    if (problem !== null)
      return refuse(ctx, principal, assignments, label, endpointId, subject, { status: 403, error: 'forbidden', detail: problem });
  }
  const decision = scope === 'anywhere' ? decideAnywhere(principal, assignments, action) : decide(principal, assignments, action, endpointId);
  if (!decision.allowed)
    return refuse(ctx, principal, assignments, label, endpointId, subject, {
      status: 403,
      error: 'forbidden',
      detail: label === action ? decision.reason : decision.reason.replace(action, label),
    });
  const who: Authorized = { principal, user: principal.name || principal.id, assignments, role: decision.role, action, endpointId, subject, originChecked };
  if (scope === 'here') await admitChange(who);
  // Let through before the body (or on one endpoint of several, before the change is admitted): input refused from
  // here on - a body that does not validate, an unknown endpoint, a selection that matches nothing - is owed an
  // entry under the name a refusal here would have had. Only `admitChange` set an obligation, so these routes
  // answered a bad body 400 and left no trace, while the single-event routes audited the same body.
  else if (isMutating(action)) owesAudit((answer) => recordRefusedInput({ ...auditBase(who), action: label }, answer));
  return who;
}

/** An authorized change: counted against the rate limit, and owed its audit entry from here on. */
async function admitChange(who: Authorized, charged = false): Promise<void> {
  if (!isMutating(who.action)) return;
  if (!charged) await limitRate(who);
  // Authorized: from here the change is audited however it ends - by audited(), or by handle() when the body,
  // the endpoint or anything else before audited() refuses it.
  owesAudit((answer) => recordFailure(auditBase(who), answer, null));
}

/** `decide` on the endpoint where the caller's role is strongest: may they take this action anywhere at all? */
function decideAnywhere(principal: Principal, assignments: readonly RoleAssignment[], action: Action) {
  const places = [undefined, ...new Set(assignments.flatMap((a) => (a.endpointId === null ? [] : [a.endpointId])))];
  const decisions = places.map((endpointId) => decide(principal, assignments, action, endpointId));
  return decisions.find((d) => d.allowed) ?? decisions[0]!;
}

/**
 * The per-principal rate limit of changes (rateLimit.ts), refused 429 with Retry-After and audited. `authorize`
 * applies it to every mutation; a read that costs as much as a change (the replay preview scans a dead-letter queue)
 * calls it itself, and a scan of up to 100,000 rows (the events export, a bulk job's freeze) with `HEAVY_READ_COST`.
 */
export async function limitRate(who: Authorized, cost = 1): Promise<void> {
  // A read that spends the budget must have been authorized with `effects`: else any site could spend it for the
  // caller (a cross-site GET). A programming error, so loud: the route's tests fail rather than ship the hole.
  if (!who.originChecked) throw new Error(`limitRate: ${who.action} was authorized without the origin check (pass { effects: true } to authorize)`);
  const wait = limiter.take(principalKey(who.principal), rateLimitSettings(), Date.now(), cost);
  if (wait > 0)
    await refuse(await getContext(), who.principal, who.assignments, who.action, who.endpointId, who.subject, {
      status: 429,
      error: 'too many requests',
      detail: `too many changes, exports or scans in a short time; try again in ${wait} s`,
      headers: { 'retry-after': String(wait) },
    }, who.endpoints);
}

/**
 * A call refused for its input (a body, query or missing endpoint that does not do) after `authorizeBeforeBody`
 * let it through: audited as failed with the status and reason the caller gets, within the caller's refusal
 * budget like a 403 - the Agent API audits every call, but a loop of bad requests must not become a stream of
 * Cosmos writes. Refusals (401/403/429) wrote their own entry already and are left alone. This call writes the
 * entry: the obligation `authorizeBeforeBody` set for the same refusal is cleared, so it is not written twice.
 */
export async function auditRefusedInput(who: Authorized, err: unknown): Promise<void> {
  owesAudit(undefined);
  await recordRefusedInput(auditBase(who), describeError(err));
}

async function recordRefusedInput(base: ReturnType<typeof auditBase>, answer: ReturnType<typeof describeError>): Promise<void> {
  if (answer.status === 401 || answer.status === 403 || answer.status === 429) return;
  const budget = refusalBudget(base.principal, base.action, answer.status);
  if (!budget.write) return;
  const reason = answer.internal ? answer.error : `${answer.error}: ${answer.detail}`;
  await recordOutcome(await getContext(), {
    ...base,
    outcome: 'failed',
    status: answer.status,
    reason: reason.slice(0, 1000),
    details: budget.skippedBefore > 0 ? { refusalsNotAudited: budget.skippedBefore } : null,
  });
}

/** The endpoints whose data a caller may read (readScope.ts). */
export const readScope = (who: Pick<Authorized, 'assignments'>): ReadScope => scopeOf(who.assignments);

/**
 * Refuses (403) a caller that `authorize` let through, for a rule its route adds on top: answered, logged and
 * audited like every other refusal, within the same refusal budget.
 */
export async function refuseAuthorized(
  who: Authorized,
  detail: string,
  /** 429 for a limit of the caller's own (the Agent API's per-agent limits). */
  status: 403 | 429 = 403,
): Promise<never> {
  return refuse(await getContext(), who.principal, who.assignments, who.action, who.endpointId, who.subject, {
    status,
    error: status === 429 ? 'too many requests' : 'forbidden',
    detail,
  }, who.endpoints);
}

/**
 * Runs an authorized mutation and records how it ended: succeeded (with `details`), or failed with the status
 * and reason the caller gets. `details` may be a function of the result (counts, an operation id).
 */
export async function audited<T>(
  who: Authorized,
  run: () => Promise<T>,
  details?: Record<string, unknown> | ((result: T) => Record<string, unknown>),
  /** The status the caller gets on success (201 for a created grant, 202 for a started replay). */
  okStatus = 200,
  record: {
    /** The outcome recorded for a result that is not a success (a prepared bulk job the operator cancelled). */
    outcomeOf?: (result: T) => 'succeeded' | 'cancelled';
    /** The action's name in the log when it is a step of the authorized action (`skip.prepare` for `skip`). */
    action?: string;
  } = {},
): Promise<T> {
  // This call writes the entry: handle() owes none for it.
  owesAudit(undefined);
  let result: T;
  const base = { ...auditBase(who), action: record.action ?? who.action };
  try {
    result = await run();
  } catch (err) {
    await recordFailure(base, describeError(err), typeof details === 'object' ? details : null);
    throw err;
  }
  const d = typeof details === 'function' ? details(result) : (details ?? null);
  await recordOutcome(await getContext(), { ...base, outcome: record.outcomeOf?.(result) ?? 'succeeded', status: okStatus, reason: null, details: d });
  return result;
}

const auditBase = (
  who: Authorized,
): { principal: Principal; assignments: readonly RoleAssignment[]; action: string; endpointId: string | undefined; endpoints: readonly string[] | undefined; subject: AuthSubject } => ({
  principal: who.principal,
  assignments: who.assignments,
  action: who.action,
  endpointId: who.endpointId,
  endpoints: who.endpoints,
  subject: who.subject,
});

/**
 * An authorized change that failed, with the status and reason the caller gets (handle() answers with the same
 * describeError): a throttled store is a 503 "busy" in the log too, not a 500.
 */
async function recordFailure(base: ReturnType<typeof auditBase>, answer: ReturnType<typeof describeError>, details: Record<string, unknown> | null): Promise<void> {
  const reason = answer.internal ? answer.error : `${answer.error}: ${answer.detail}`;
  await recordOutcome(await getContext(), { ...base, outcome: 'failed', status: answer.status, reason: reason.slice(0, 1000), details });
}

/**
 * Who is calling and that they hold some role, for an entry point whose actions are authorized one by one later
 * (the MCP server: each tool call authorizes its own action with `authorize`). 401 without a principal, 403 for a
 * mutation from a foreign origin or a caller with no role at all - audited under `label` like every refusal.
 */
export async function identify(request: Request, label: string): Promise<Authorized> {
  refuseUnlessLoopbackWhenSignInOff(request);
  const principal = await principalOf(request);
  const ctx = await getContext();
  if (principal === null)
    return refuse(ctx, null, [], label, undefined, {}, { status: 401, error: 'unauthorized', detail: 'sign in or present a bearer token (no valid session or bearer token)' });
  const assignments = await rolesOf(principal, ctx);
  const originChecked = request.method !== 'GET';
  if (originChecked) {
    const problem = originProblem(request);
    if (problem !== null) return refuse(ctx, principal, assignments, label, undefined, {}, { status: 403, error: 'forbidden', detail: problem });
  }
  if (assignments.length === 0)
    return refuse(ctx, principal, assignments, label, undefined, {}, { status: 403, error: 'forbidden', detail: `${principal.name} holds no console role` });
  return { principal, user: principal.name || principal.id, assignments, role: assignments[0]!.role, action: 'read', endpointId: undefined, subject: {}, originChecked };
}
