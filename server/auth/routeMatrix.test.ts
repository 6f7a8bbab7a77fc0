// The per-endpoint role matrix over EVERY route: the route list is walked from app/**/route.ts, and each
// exported method must have a rule here, or the test fails (a new route cannot ship without deciding who may
// call it). Each rule says what the call needs; the expected answer of each caller is worked out from that and
// the caller's roles by this file's own small model, not by roles.ts. Callers hold roles site-wide or on one
// endpoint (session cookies, embedded stack, real clients). A bulk job's pause, resume and cancel answer by the job
// they name, so they are called with seeded jobs (one over billing, one over billing and crm). Then the reads that
// span endpoints are checked for leaks: search, the audit log and event details return only the endpoints the
// caller may read.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { MessageType } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { CONSOLE_DIR } from '../console.ts';
import { queryAudit, writeAudit } from '../audit/auditLog.ts';
import { SESSION_COOKIE, sealSession } from './session.ts';
import { unauthenticatedRefusals } from './authorize.ts';
import type { Principal } from './principal.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { TimeSeriesStore } from '../../lib/store/index.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'route-matrix-session-secret-0123456789-abcdef';
const AUTH_ENV = {
  ...oidcTestEnv(SECRET, {
    roles: { Reader: 'Reader', Operator: 'Operator', Owner: 'Owner' },
    groups: {
      'billing-readers': 'Reader:billingendpoint',
      'billing-owners': 'Owner:billingendpoint',
      'crm-ops': 'Operator:crmendpoint',
      'billing-agents': 'Agent:billingendpoint',
    },
  }),
  // Every caller makes many changes here; the rate limit has its own tests.
  NIMBUS_RATE_LIMIT_BURST: '1000',
};

const BILLING = 'billingendpoint';
type RoleName = 'Reader' | 'Operator' | 'Owner' | 'Agent';
/** The ladder; Agent is beside it (-1: it covers no role of the ladder). */
const RANK: Record<RoleName, number> = { Reader: 0, Operator: 1, Owner: 2, Agent: -1 };

/** Each caller's roles as this test's model sees them: [role, endpoint or null for site-wide]. */
const CALLERS = {
  anonymous: { principal: null, roles: [] },
  siteReader: { principal: user('reader', ['Reader'], []), roles: [['Reader', null]] },
  billingReader: { principal: user('billing-reader', [], ['billing-readers']), roles: [['Reader', BILLING]] },
  billingOwner: { principal: user('billing-owner', [], ['billing-owners']), roles: [['Owner', BILLING]] },
  crmOperator: { principal: user('crm-operator', [], ['crm-ops']), roles: [['Operator', 'crmendpoint']] },
  roleless: { principal: user('nobody', [], []), roles: [] },
  siteOperator: { principal: user('operator', ['Operator'], []), roles: [['Operator', null]] },
  owner: { principal: user('owner', ['Owner'], []), roles: [['Owner', null]] },
  billingAgent: { principal: user('billing-agent', [], ['billing-agents']), roles: [['Agent', BILLING]] },
} satisfies Record<string, { principal: Principal | null; roles: Array<[RoleName, string | null]> }>;
type Caller = keyof typeof CALLERS;

function user(name: string, roles: string[], groups: string[]): Principal {
  return { kind: 'user', id: `oid-${name}`, name: `${name}@test`, roles, groups };
}

/**
 * What a call needs: nothing (public probes), any role of the ladder anywhere, any role at all (Agent included), a
 * role on an endpoint / site-wide (null), or the Agent's rights (the Agent role there, or Operator and above) on an
 * endpoint or on any endpoint ('anywhere').
 */
type Need =
  | { public: true }
  | { anyRole: true }
  | { anyRoleOrAgent: true }
  | { role: RoleName; endpointId: string | null }
  | { agent: string };

type CallerModel = { principal: Principal | null; roles: Array<[RoleName, string | null]> };

function expected(caller: Caller, need: Need): 'allowed' | 401 | 403 {
  return expectedOf(CALLERS[caller], need);
}

function expectedOf(c: CallerModel, need: Need): 'allowed' | 401 | 403 {
  if ('public' in need) return 'allowed';
  if (c.principal === null) return 401;
  const roles = c.roles as Array<[RoleName, string | null]>;
  if ('anyRoleOrAgent' in need) return roles.length > 0 ? 'allowed' : 403;
  if ('anyRole' in need) return roles.some(([role]) => role !== 'Agent') ? 'allowed' : 403;
  if ('agent' in need) {
    const here = (ep: string | null) => ep === null || need.agent === 'anywhere' || ep === need.agent;
    return roles.some(([role, ep]) => (role === 'Agent' ? here(ep) : RANK[role] >= RANK.Operator && here(ep))) ? 'allowed' : 403;
  }
  const ok = roles.some(([role, ep]) => RANK[role] >= RANK[need.role] && (ep === null || ep === need.endpointId));
  return ok ? 'allowed' : 403;
}

/**
 * A bulk job's pause, resume or cancel (server/operations/authorizeControl.ts), by the model: before the job is
 * read, a session (401) and Operator somewhere (403, audited as the control); then the job as for an unknown id
 * (404) unless the caller may read every endpoint it touches - an Agent role reads nothing; last, Operator on
 * each of them (403, audited as the job's kind).
 */
function expectedControl(c: CallerModel, jobEndpoints: readonly string[]): { status: 200 | 401 | 403 | 404; refusedAs?: 'control' | 'kind' } {
  if (c.principal === null) return { status: 401 };
  if (!c.roles.some(([role]) => RANK[role] >= RANK.Operator)) return { status: 403, refusedAs: 'control' };
  const reads = (ep: string) => c.roles.some(([role, at]) => role !== 'Agent' && (at === null || at === ep));
  if (!jobEndpoints.every(reads)) return { status: 404 };
  if (!jobEndpoints.every((ep) => expectedOf(c, on('Operator', ep)) === 'allowed')) return { status: 403, refusedAs: 'kind' };
  return { status: 200 };
}

interface Rule {
  need: Need;
  /** Listed but not called here, with where it is tested instead. */
  testedIn?: string;
  /** Path parameters, query string and body of the call (harmless targets: unknown ids answer 404 once authorized). */
  params?: Record<string, string>;
  query?: string;
  body?: unknown;
}

const any: Need = { anyRole: true };
const on = (role: RoleName, endpointId: string | null = BILLING): Need => ({ role, endpointId });
const sub = { topic: BILLING, subscription: BILLING };
const unknownEvent = { endpointId: BILLING, eventId: 'no-such-event' };

/** One rule per route and method, keyed like the route list: `METHOD /api/path/[param]`. */
const RULES: Record<string, Rule> = {
  // The sign-in flow: public by nature, and it talks to the identity provider (flow.test.ts runs one).
  'GET /auth/signin': { need: { public: true }, testedIn: 'flow.test.ts' },
  'GET /auth/callback': { need: { public: true }, testedIn: 'flow.test.ts' },
  'POST /auth/signout': { need: { public: true }, testedIn: 'flow.test.ts' },
  'GET /api/health': { need: { public: true } },
  'GET /api/ready': { need: { public: true } },
  'GET /api/me': { need: any },
  'GET /api/endpoints': { need: any },
  // One endpoint's part of the overview (catalog facts and counts): authorized as the overview is, any role.
  'GET /api/endpoints/[endpointId]': { need: any, params: { endpointId: BILLING } },
  'GET /api/flow': { need: any },
  'GET /api/catalog/event-types': { need: any },
  'GET /api/search': { need: any, query: 'q=evt' },
  'GET /api/audit': { need: any },
  'GET /api/metrics': { need: any },
  'GET /api/admin/health': { need: any },
  'GET /api/admin/grants': { need: any },
  'POST /api/admin/grants': { need: on('Owner', null), body: { subjectKind: 'user', subject: 'oid-matrix', role: 'Reader', endpointId: BILLING } },
  'DELETE /api/admin/grants/[grantId]': { need: on('Owner', null), params: { grantId: '0'.repeat(32) } },
  'PUT /api/admin/heartbeat/endpoints/[endpointId]': { need: on('Owner'), params: { endpointId: BILLING }, body: { included: true } },
  'POST /api/admin/heartbeat/send-now': { need: on('Operator', null) },
  'GET /api/admin/alerts/rules': { need: any },
  'POST /api/admin/alerts/rules': { need: on('Owner', null), body: { name: 'matrix', type: 'resolverLiveness' } },
  'PUT /api/admin/alerts/rules/[ruleId]': { need: on('Owner', null), params: { ruleId: 'no-such-rule' }, body: { name: 'matrix', type: 'resolverLiveness' } },
  'DELETE /api/admin/alerts/rules/[ruleId]': { need: on('Owner', null), params: { ruleId: 'no-such-rule' } },
  'POST /api/admin/alerts/channels': { need: on('Owner', null), body: { type: 'slack', name: 'matrix' } },
  'PUT /api/admin/alerts/channels/[channelId]': { need: on('Owner', null), params: { channelId: 'no-such-channel' }, body: { type: 'slack', name: 'matrix' } },
  'DELETE /api/admin/alerts/channels/[channelId]': { need: on('Owner', null), params: { channelId: 'no-such-channel' } },
  'POST /api/admin/alerts/channels/[channelId]/test': { need: on('Owner', null), params: { channelId: 'no-such-channel' } },
  'GET /api/alerts/history': { need: any },
  'PUT /api/admin/heartbeat/settings': { need: on('Owner', null), body: { enabled: false } },
  'GET /api/endpoints/[endpointId]/events': { need: on('Reader'), params: { endpointId: BILLING } },
  'GET /api/endpoints/[endpointId]/events/export': { need: on('Reader'), params: { endpointId: BILLING }, query: 'format=json' },
  'GET /api/endpoints/[endpointId]/events/[eventId]': { need: on('Reader'), params: unknownEvent },
  'POST /api/event/resubmit/[endpointId]/[eventId]': { need: on('Operator'), params: unknownEvent },
  'POST /api/event/resubmit': { need: on('Operator'), body: { endpointId: BILLING, eventIds: ['no-such-event'] } },
  'POST /api/event/skip/[endpointId]/[eventId]': { need: on('Operator'), params: unknownEvent },
  'POST /api/event/skip': { need: on('Operator'), body: { endpointId: BILLING, eventIds: ['no-such-event'] } },
  'POST /api/event/handoff/complete/[endpointId]/[eventId]/[messageId]': { need: on('Operator'), params: { ...unknownEvent, messageId: 'm-1' }, body: {} },
  'POST /api/event/handoff/fail/[endpointId]/[eventId]/[messageId]': { need: on('Operator'), params: { ...unknownEvent, messageId: 'm-1' }, body: { errorText: 'no' } },
  'GET /api/operations/reconcile': { need: any },
  'POST /api/operations/reconcile': {
    need: on('Operator'),
    body: { targets: [{ endpointId: BILLING, eventId: 'no-such-event', sessionId: 'S-1', rowMessageId: 'm-1' }] },
  },
  'GET /api/failure-groups': { need: any },
  'PUT /api/failure-groups/[groupId]/note': { need: on('Operator', null), params: { groupId: '0'.repeat(20) }, body: { note: 'known: matrix' } },
  'GET /api/operations': { need: any },
  'POST /api/operations': { need: on('Operator'), body: { kind: 'skip', selection: { endpointId: BILLING, eventIds: ['no-such-event'] } } },
  'GET /api/operations/[operationId]': { need: any, params: { operationId: '00000000-0000-4000-8000-000000000000' } },
  'GET /api/operations/[operationId]/outcome': { need: any, params: { operationId: '00000000-0000-4000-8000-000000000000' } },
  // The answer depends on the job (its endpoints, the caller's read scope): called with seeded jobs below.
  'POST /api/operations/[operationId]/pause': { need: on('Operator'), testedIn: 'the job controls test below' },
  'POST /api/operations/[operationId]/resume': { need: on('Operator'), testedIn: 'the job controls test below' },
  'POST /api/operations/[operationId]/cancel': { need: on('Operator'), testedIn: 'the job controls test below' },
  'GET /api/topology/subscriptions': { need: any },
  'GET /api/topology/operations/[operationId]': { need: any, params: { operationId: '00000000-0000-4000-8000-000000000000' } },
  'GET /api/topology/subscriptions/[topic]/[subscription]/deadletters': { need: on('Reader'), params: sub },
  'POST /api/topology/subscriptions/[topic]/[subscription]/replay/preview': { need: on('Reader'), params: sub, body: { all: true } },
  'POST /api/topology/subscriptions/[topic]/[subscription]/replay': { need: on('Operator'), params: sub, body: { sequenceNumbers: ['999999'] } },
  'POST /api/topology/subscriptions/[topic]/[subscription]/actions': { need: on('Owner'), params: sub, body: { action: 'resume', confirm: BILLING } },
  // The agent zone (docs/agents.md): the Agent role on the endpoint, or Operator and above; unknown targets 404/400.
  'GET /api/agent/catalog': { need: { agent: 'anywhere' } },
  'GET /api/agent/receive': { need: { agent: BILLING }, query: `endpointId=${BILLING}&waitSeconds=0` },
  'POST /api/agent/settle': { need: { agent: BILLING }, body: { endpointId: BILLING, eventId: 'no-such-event', messageId: 'm-1', outcome: 'completed' } },
  'POST /api/agent/publish': { need: { agent: BILLING }, body: { endpointId: BILLING, eventTypeId: 'InvoiceIssued', payload: 'not an object' } },
  // The MCP server: any role, Agent included; each tool call is authorized on its own (server/mcp/mcp.test.ts).
  'POST /api/mcp': { need: { anyRoleOrAgent: true }, body: { jsonrpc: '2.0', id: 1, method: 'ping' } },
};

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type Handler = (request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response> | Response;

/** Every route file under app/ with the methods it exports, as `METHOD /path/[param]` keys. */
async function routeList(): Promise<Array<{ key: string; handler: Handler }>> {
  const root = join(CONSOLE_DIR, 'app');
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name === 'route.ts') files.push(full);
    }
  };
  walk(root);
  const out: Array<{ key: string; handler: Handler }> = [];
  for (const file of files.sort()) {
    const path = '/' + relative(join(CONSOLE_DIR, 'app'), file).split(sep).slice(0, -1).join('/');
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    for (const m of METHODS) if (typeof mod[m] === 'function') out.push({ key: `${m} ${path}`, handler: mod[m] as Handler });
  }
  return out;
}

function requestAs(caller: Caller, method: string, path: string, rule: Rule): Request {
  return requestOf(CALLERS[caller].principal, method, path, rule);
}

function requestOf(p: Principal | null, method: string, path: string, rule: Rule): Request {
  const headers: Record<string, string> = { 'content-type': 'application/json', host: '127.0.0.1:3000' };
  if (p) headers.cookie = `${SESSION_COOKIE}=${sealSession(p, { secret: SECRET, maxAgeSeconds: 600 })}`;
  const filled = path.replace(/\[(\w+)\]/g, (_, k: string) => encodeURIComponent(rule.params?.[k] ?? k));
  return new Request(`http://127.0.0.1:3000${filled}${rule.query ? `?${rule.query}` : ''}`, {
    method,
    headers,
    body: rule.body === undefined ? undefined : JSON.stringify(rule.body),
  });
}

const stack = useConsoleStack({ database: 'routematrix', env: AUTH_ENV, seed: true });

describe('role matrix over every route', () => {
  test('every route and method has a rule, and every rule a route', async () => {
    const keys = (await routeList()).map((r) => r.key);
    assert.deepEqual(keys.filter((k) => !(k in RULES)), [], 'routes without a rule in RULES');
    assert.deepEqual(Object.keys(RULES).filter((k) => !keys.includes(k)), [], 'rules without a route');
  });

  test('every route x every caller: refused (401/403) or let through as its rule says', async () => {
    const problems: string[] = [];
    let calls = 0;
    for (const { key, handler } of await routeList()) {
      const rule = RULES[key];
      if (!rule || rule.testedIn !== undefined) continue; // reported by the test above / tested elsewhere
      const [method, path] = key.split(' ') as [string, string];
      for (const caller of Object.keys(CALLERS) as Caller[]) {
        const res = await handler(requestAs(caller, method, path, rule), { params: Promise.resolve(rule.params ?? {}) });
        calls++;
        const want = expected(caller, rule.need);
        const text = await res.text();
        const what = `${key} by ${caller}: ${res.status} ${text.slice(0, 160)}`;
        if (want === 'allowed') {
          if ([401, 403, 421, 429].includes(res.status) || (res.status >= 500 && !key.endsWith('/api/ready'))) problems.push(`${what} (should pass authorization)`);
        } else if (res.status !== want) problems.push(`${what} (expected ${want})`);
      }
    }
    assert.ok(calls >= Object.values(RULES).filter((r) => r.testedIn === undefined).length * Object.keys(CALLERS).length);
    assert.deepEqual(problems, []);
  });

  test('the job controls x every caller, on a job over billing and one over billing and crm', async () => {
    const { getContext } = await import('../context.ts');
    const { getOperations } = await import('../operations/service.ts');
    const { jobs } = getOperations(await getContext());
    // Callers able to read a job that they may not control, or control one over two endpoints: a 403 from the check
    // on the job's endpoints needs them (the callers above are refused before the read, or answered 404).
    const all: Record<string, CallerModel> = {
      ...CALLERS,
      billingReaderCrmOperator: { principal: user('billing-reader-crm-operator', [], ['billing-readers', 'crm-ops']), roles: [['Reader', BILLING], ['Operator', 'crmendpoint']] },
      billingOwnerCrmOperator: { principal: user('billing-owner-crm-operator', [], ['billing-owners', 'crm-ops']), roles: [['Owner', BILLING], ['Operator', 'crmendpoint']] },
    };
    // Ids of their own: the matrix above spent the refusal audit budget of some callers (REFUSAL_AUDIT_RATE).
    const callers = Object.fromEntries(
      Object.entries(all).map(([name, c]) => [name, { ...c, principal: c.principal && { ...c.principal, id: `${c.principal.id}-jobs` } }]),
    );
    /** A job its operator paused: stored prepared (the runner leaves those alone), then paused, so no runner starts it. */
    const pausedJob = async (endpoints: string[]) => {
      const rows = endpoints.map((endpointId) => ({ endpointId, eventId: `evt-matrix-job-${endpointId}` }));
      const selection = endpoints.length === 1 ? { endpointId: endpoints[0]!, eventIds: [rows[0]!.eventId] } : { groupId: '0'.repeat(20) };
      const job = await jobs.create({ kind: 'skip', selection, rows, startedBy: 'owner@test', ratePerSecond: 0, hold: true });
      await jobs.save({ ...job, state: 'paused', expiresAt: null }, (await jobs.read(job.operationId))!.etag);
      return job.operationId;
    };
    const snapshot = async (id: string) => {
      const job = await jobs.get(id);
      return { state: job?.state, done: job?.done, control: await jobs.control(id) };
    };
    const routes = Object.fromEntries(
      await Promise.all(
        (['pause', 'resume', 'cancel'] as const).map(async (control) => {
          const mod = (await import(pathToFileURL(join(CONSOLE_DIR, `app/api/operations/[operationId]/${control}/route.ts`)).href)) as { POST: Handler };
          return [control, mod.POST] as const;
        }),
      ),
    );
    const call = (control: string, p: Principal | null, operationId: string) =>
      routes[control]!(requestOf(p, 'POST', `/api/operations/${operationId}/${control}`, { need: any }), { params: Promise.resolve({ operationId }) });
    const denials = async (p: Principal, target: string) =>
      (await queryAudit(stack.store.database, { user: p.id, outcome: 'denied', pageSize: 200 })).items.filter((e) => e.target === target);

    const problems: string[] = [];
    const answered = new Set<number>();
    for (const endpoints of [[BILLING], [BILLING, 'crmendpoint']]) {
      // The refusals share one job, which they must leave as it was; each control let through gets a job of its own
      // (a resume starts it, a cancel ends it).
      const shared = await pausedJob(endpoints);
      const before = await snapshot(shared);
      for (const control of ['pause', 'resume', 'cancel']) {
        for (const [name, c] of Object.entries(callers)) {
          const want = expectedControl(c, endpoints);
          const id = want.status === 200 ? await pausedJob(endpoints) : shared;
          const deniedBefore = c.principal && want.status === 403 ? (await denials(c.principal, `operation/${id}`)).length : 0;
          const unauthenticatedBefore = unauthenticatedRefusals();
          const res = await call(control, c.principal, id);
          const text = await res.text();
          answered.add(res.status);
          const what = `${control} of a job over ${endpoints.join('+')} by ${name}: ${res.status} ${text.slice(0, 160)}`;
          if (res.status !== want.status) {
            problems.push(`${what} (expected ${want.status})`);
            continue;
          }
          // Unauthenticated refusals are counted (their audit entries share one budget: refusals.test.ts).
          if (want.status === 401 && unauthenticatedRefusals() !== unauthenticatedBefore + 1) problems.push(`${what} (not counted)`);
          if (want.status === 404) {
            // Answered exactly as an id no job has: nothing says the job exists.
            const unknown = '00000000-0000-4000-8000-000000000001';
            const other = await call(control, c.principal, unknown);
            if (other.status !== 404 || (await other.text()).replaceAll(unknown, id) !== text) problems.push(`${what} (differs from an unknown id's answer)`);
          }
          if (want.status === 403) {
            const entries = await denials(c.principal!, `operation/${id}`);
            const action = want.refusedAs === 'control' ? `operation.${control}` : 'skip';
            if (entries.length !== deniedBefore + 1 || entries[0]?.action !== action || entries[0]?.status !== 403)
              problems.push(`${what} (audited: ${JSON.stringify(entries.slice(0, 1))}, expected one more denied ${action})`);
          }
        }
      }
      const now = await snapshot(shared);
      if (!isDeepStrictEqual(now, before)) problems.push(`the job over ${endpoints.join('+')} changed by the refusals: ${JSON.stringify(before)} -> ${JSON.stringify(now)}`);
    }
    assert.deepEqual(problems, []);
    // The model reached every answer the routes give: refused with and without a session, unknown, allowed.
    assert.deepEqual([...answered].sort(), [200, 401, 403, 404]);
  });
});

describe('reads that span endpoints show only what the caller may read', () => {
  const SHARED = 'evt-shared-7';
  const CRM_SECRET_ERROR = 'crm-only error text: customer 4711 credit blocked';
  const CRM_PAYLOAD_KEY = 'crmInternalCreditScore';

  before(async () => {
    // One event id consumed by billing and by crm: two status rows, two histories under one event partition.
    const when = new Date().toISOString();
    for (const [endpointId, errorText] of [[BILLING, 'billing error'], ['crmendpoint', CRM_SECRET_ERROR]] as const) {
      const common = {
        endpointId,
        eventId: SHARED,
        sessionId: 'ORD-777',
        messageId: `${SHARED}-${endpointId}-res`,
        messageType: MessageType.ErrorResponse,
        eventTypeId: 'OrderPlaced',
        parentMessageId: `${SHARED}-req`,
        originatingMessageId: `${SHARED}-req`,
        correlationId: null,
        from: endpointId,
        to: 'Resolver',
        enqueuedAt: when,
        errorText,
        payload: { orderId: 'ORD-777' },
      };
      await stack.store.recordOutcome({ history: { ...common }, status: { ...common } });
    }
    await stack.store.recordAudit({ eventId: SHARED, endpointId: 'crmendpoint', type: 'ResubmitWithChanges', auditor: 'crm-operator@test', comment: 'crm fix' });
    await writeAudit(stack.store.database, {
      actorKind: 'user',
      actorId: 'oid-crm-operator',
      actorName: 'crm-operator@test',
      roles: 'Operator:crmendpoint',
      action: 'resubmit',
      endpointId: 'crmendpoint',
      eventId: SHARED,
      target: null,
      outcome: 'succeeded',
      status: 200,
      reason: null,
      details: { edited: true, payloadDiff: { changes: [{ path: `/${CRM_PAYLOAD_KEY}`, op: 'changed' }] } },
    });
  });

  const get = async (caller: Caller, path: string, route: string, params: Record<string, string> = {}) => {
    const mod = (await import(pathToFileURL(join(CONSOLE_DIR, 'app', route, 'route.ts')).href)) as { GET: Handler };
    const res = await mod.GET(requestAs(caller, 'GET', path, { need: any }), { params: Promise.resolve(params) });
    assert.equal(res.status, 200, `${caller} GET ${path}`);
    return res.text();
  };

  test('search: a Reader of billing finds billing rows only; a site-wide Reader finds both', async () => {
    const mine = JSON.parse(await get('billingReader', '/api/search?q=evt-shared', 'api/search')) as { items: Array<{ endpointId: string; errorText: string | null }> };
    assert.deepEqual(mine.items.map((i) => i.endpointId), [BILLING]);
    const all = JSON.parse(await get('siteReader', '/api/search?q=evt-shared', 'api/search')) as { items: Array<{ endpointId: string }> };
    assert.deepEqual(all.items.map((i) => i.endpointId).sort(), [BILLING, 'crmendpoint']);
  });

  test("the audit log: a Reader of billing does not see crm's entries (payload key names, event ids)", async () => {
    const mine = await get('billingReader', '/api/audit?pageSize=200', 'api/audit');
    assert.doesNotMatch(mine, new RegExp(CRM_PAYLOAD_KEY));
    const items = (JSON.parse(mine) as { items: Array<{ endpointId: string | null; endpoints?: string[] }> }).items;
    // Billing's own entries, and those of actions over several endpoints that touched billing (a job over billing and
    // crm, its controls: filed under each, auditLog.ts `endpoints`).
    const billings = (e: { endpointId: string | null; endpoints?: string[] }) => e.endpointId === BILLING || (e.endpointId === null && (e.endpoints ?? []).includes(BILLING));
    assert.ok(items.every(billings), `only billing entries: ${JSON.stringify(items.filter((e) => !billings(e)).slice(0, 3))}`);
    assert.match(await get('siteReader', '/api/audit?pageSize=200', 'api/audit'), new RegExp(CRM_PAYLOAD_KEY));
  });

  test("metrics: without an endpoint, a Reader of billing gets billing's sums only; crm's series need a role on crm", async () => {
    const series = new TimeSeriesStore(stack.store.database, { flushMs: 60_000 });
    const at = new Date();
    for (let i = 0; i < 3; i++) series.add({ endpointId: BILLING, eventTypeId: 'T', at, count: 'failed' });
    for (let i = 0; i < 5; i++) series.add({ endpointId: 'crmendpoint', eventTypeId: 'T', at, count: 'failed' });
    await series.flush();
    const failed = (text: string) =>
      (JSON.parse(text) as { series: Array<{ name: string; points: Array<[number, number]> }> }).series.find((x) => x.name === 'failed')!.points.reduce((a, [, v]) => a + v, 0);
    assert.equal(failed(await get('billingReader', '/api/metrics', 'api/metrics')), 3);
    assert.equal(failed(await get('siteReader', '/api/metrics', 'api/metrics')), 8);
    const mod = (await import(pathToFileURL(join(CONSOLE_DIR, 'app/api/metrics/route.ts')).href)) as { GET: Handler };
    const res = await mod.GET(requestAs('billingReader', 'GET', '/api/metrics', { need: any, query: 'endpointId=crmendpoint' }), { params: Promise.resolve({}) });
    assert.equal(res.status, 403);
  });

  test("a replay operation on crm's subscription is not known to a Reader of billing", async () => {
    const replay = (await import(pathToFileURL(join(CONSOLE_DIR, 'app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts')).href)) as { POST: Handler };
    const crmSub = { topic: 'crmendpoint', subscription: 'crmendpoint' };
    const started = await replay.POST(requestAs('owner', 'POST', '/api/x', { need: any, body: { sequenceNumbers: ['999999'] } }), { params: Promise.resolve(crmSub) });
    assert.equal(started.status, 202, await started.clone().text());
    const { operationId } = (await started.json()) as { operationId: string };
    const op = (await import(pathToFileURL(join(CONSOLE_DIR, 'app/api/topology/operations/[operationId]/route.ts')).href)) as { GET: Handler };
    const ask = (caller: Caller) => op.GET(requestAs(caller, 'GET', '/api/x', { need: any }), { params: Promise.resolve({ operationId }) });
    assert.equal((await ask('billingReader')).status, 404);
    assert.equal((await ask('crmOperator')).status, 200);
    assert.equal((await ask('siteReader')).status, 200);
  });

  test("grants: a Reader of billing sees billing's grants, not crm's nor the site-wide ones", async () => {
    const grants = (await import(pathToFileURL(join(CONSOLE_DIR, 'app/api/admin/grants/route.ts')).href)) as { GET: Handler; POST: Handler };
    for (const g of [
      { subjectKind: 'user', subject: 'oid-crm-person', role: 'Operator', endpointId: 'crmendpoint' },
      { subjectKind: 'user', subject: 'oid-site-person', role: 'Owner' },
      { subjectKind: 'user', subject: 'oid-billing-person', role: 'Reader', endpointId: BILLING },
    ])
      assert.equal((await grants.POST(requestAs('owner', 'POST', '/api/admin/grants', { need: any, body: g }), { params: Promise.resolve({}) })).status, 201);
    const mine = await get('billingReader', '/api/admin/grants', 'api/admin/grants');
    assert.match(mine, /oid-billing-person/);
    assert.doesNotMatch(mine, /oid-crm-person|oid-site-person|crm-ops/);
    assert.match(await get('siteReader', '/api/admin/grants', 'api/admin/grants'), /oid-crm-person/);
  });

  test("reconcile's preview: a Reader of billing does not see crm's overdue handoff", async () => {
    const overdue = {
      endpointId: 'crmendpoint',
      eventId: 'evt-crm-overdue',
      sessionId: 'CRM-9',
      messageId: 'evt-crm-overdue-handoff',
      messageType: MessageType.PendingHandoffResponse,
      eventTypeId: 'CustomerRegistered',
      parentMessageId: 'evt-crm-overdue-req',
      originatingMessageId: 'evt-crm-overdue-req',
      correlationId: null,
      from: 'crmendpoint',
      to: 'Resolver',
      enqueuedAt: new Date(Date.now() - 3_600_000).toISOString(),
      handoffReason: 'crm-only import job',
      externalJobId: 'CRM-JOB-1',
      expectedBy: new Date(Date.now() - 1_800_000).toISOString(),
    };
    await stack.store.recordOutcome({ history: { ...overdue }, status: { ...overdue } });
    const mine = await get('billingReader', '/api/operations/reconcile', 'api/operations/reconcile');
    assert.doesNotMatch(mine, /evt-crm-overdue|crm-only import job/);
    assert.match(await get('siteReader', '/api/operations/reconcile', 'api/operations/reconcile'), /evt-crm-overdue/);
  });

  test("event details: billing's view of a shared event id carries no crm history or audits", async () => {
    const route = 'api/endpoints/[endpointId]/events/[eventId]';
    const params = { endpointId: BILLING, eventId: SHARED };
    const mine = await get('billingReader', `/api/endpoints/${BILLING}/events/${SHARED}`, route, params);
    assert.doesNotMatch(mine, /crm-only error text|crm fix|crmendpoint/);
    const all = await get('siteReader', `/api/endpoints/${BILLING}/events/${SHARED}`, route, params);
    assert.match(all, /crm-only error text/);
  });
});
