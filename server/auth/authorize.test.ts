// Authorization matrix on the embedded stack (emulator + embedded Cosmos, real clients): every mutating route,
// called as Next calls it, by five callers who come in through real session cookies (sealSession): nobody
// (no cookie), a site-wide Reader, an Operator of another endpoint, a site-wide Operator and an Owner. Each call
// must be refused (401/403) or let through exactly as roles.ts says, and every call - refused or not - must
// leave its entry in the audit log; a signed-in caller's refusal aimed at an event also lands in that event's trail.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { SESSION_COOKIE, sealSession } from './session.ts';
import type { Principal } from './principal.ts';
import { queryAudit } from '../audit/auditLog.ts';
import { grantId } from './grants.ts';
import { REFUSAL_AUDIT_RATE } from './authorize.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'matrix-test-session-secret-0123456789-abcdef';
  // App roles named like the console roles map site-wide; the group maps to one endpoint.
const AUTH_ENV = oidcTestEnv(SECRET, { roles: { Reader: 'Reader', Operator: 'Operator', Owner: 'Owner' }, groups: { 'crm-ops': 'Operator:crmendpoint' } });

type Caller = 'anonymous' | 'reader' | 'otherOperator' | 'operator' | 'owner';
const PRINCIPALS: Record<Exclude<Caller, 'anonymous'>, Principal> = {
  reader: { kind: 'user', id: 'oid-reader', name: 'reader@test', roles: ['Reader'], groups: [] },
  otherOperator: { kind: 'user', id: 'oid-crm', name: 'crm-operator@test', roles: [], groups: ['crm-ops'] },
  operator: { kind: 'user', id: 'oid-operator', name: 'operator@test', roles: ['Operator'], groups: [] },
  owner: { kind: 'user', id: 'oid-owner', name: 'owner@test', roles: ['Owner'], groups: [] },
};
const CALLERS: Caller[] = ['anonymous', 'reader', 'otherOperator', 'operator', 'owner'];

const stack = useConsoleStack({ database: 'matrix', env: AUTH_ENV, seed: true });
const seeded = stack.demo;

const params = <P>(p: P) => ({ params: Promise.resolve(p) });

function request(caller: Caller, method: string, body?: unknown, headers: Record<string, string> = {}): Request {
  const h: Record<string, string> = { 'content-type': 'application/json', host: '127.0.0.1:3000', ...headers };
  if (caller !== 'anonymous') h.cookie = `${SESSION_COOKIE}=${sealSession(PRINCIPALS[caller], { secret: SECRET, maxAgeSeconds: 600 })}`;
  return new Request('http://127.0.0.1:3000/api/x', { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
}

interface Row {
  name: string;
  action: string;
  /** The action a refusal is audited as, when it differs (refused before the body names the action). */
  refusedAs?: string;
  /** Who gets through: the rest must be refused. */
  allowed: Caller[];
  call: (caller: Caller) => Promise<Response>;
}

async function rows(): Promise<Row[]> {
  const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
  const bulkResubmit = await import('../../app/api/event/resubmit/route.ts');
  const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
  const bulkSkip = await import('../../app/api/event/skip/route.ts');
  const complete = await import('../../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts');
  const fail = await import('../../app/api/event/handoff/fail/[endpointId]/[eventId]/[messageId]/route.ts');
  const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
  const subAction = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/actions/route.ts');
  const reconcile = await import('../../app/api/operations/reconcile/route.ts');
  const sendNow = await import('../../app/api/admin/heartbeat/send-now/route.ts');
  const settings = await import('../../app/api/admin/heartbeat/settings/route.ts');
  const inclusion = await import('../../app/api/admin/heartbeat/endpoints/[endpointId]/route.ts');
  const grants = await import('../../app/api/admin/grants/route.ts');
  const revoke = await import('../../app/api/admin/grants/[grantId]/route.ts');
  const ops: Caller[] = ['operator', 'owner'];
  const owners: Caller[] = ['owner'];
  const billing = 'billingendpoint';
  const sub = params({ topic: billing, subscription: billing });
  const target = { subjectKind: 'user' as const, subject: 'oid-someone', role: 'Reader' as const, endpointId: billing };
  return [
    { name: 'resubmit one (edited)', action: 'resubmit', allowed: ops, call: (c) => resubmit.POST(request(c, 'POST', { payload: { orderId: 'ORD-200', customerId: 'CUST-1', lines: [], total: 40, currency: 'EUR' } }), params({ endpointId: billing, eventId: seeded.failed.eventId })) },
    { name: 'resubmit bulk', action: 'resubmit', allowed: ops, call: (c) => bulkResubmit.POST(request(c, 'POST', { endpointId: billing, eventIds: [seeded.deadLettered.eventId] })) },
    { name: 'skip one', action: 'skip', allowed: ops, call: (c) => skip.POST(request(c, 'POST'), params({ endpointId: billing, eventId: seeded.deadLettered.eventId })) },
    { name: 'skip bulk', action: 'skip', allowed: ops, call: (c) => bulkSkip.POST(request(c, 'POST', { endpointId: billing, eventIds: [seeded.failed.eventId] })) },
    { name: 'handoff complete', action: 'handoff', allowed: ops, call: (c) => complete.POST(request(c, 'POST', { note: 'done' }), params({ endpointId: 'erpendpoint', eventId: seeded.handoff.eventId, messageId: seeded.handoff.lastMessageId })) },
    { name: 'handoff fail', action: 'handoff', allowed: ops, call: (c) => fail.POST(request(c, 'POST', { errorText: 'ledger said no' }), params({ endpointId: 'erpendpoint', eventId: seeded.handoff2.eventId, messageId: seeded.handoff2.lastMessageId })) },
    { name: 'replay dead letters', action: 'replay', allowed: ops, call: (c) => replay.POST(request(c, 'POST', { all: true }), sub) },
    { name: 'subscription resume', action: 'subscription.resume', refusedAs: 'subscription.*', allowed: owners, call: (c) => subAction.POST(request(c, 'POST', { action: 'resume', confirm: billing }), sub) },
    { name: 'subscription purge', action: 'subscription.purge', refusedAs: 'subscription.*', allowed: owners, call: (c) => subAction.POST(request(c, 'POST', { action: 'purge', confirm: `${billing}/${billing}` }), sub) },
    {
      name: 'reconcile apply',
      action: 'reconcile',
      allowed: ops,
      call: (c) => reconcile.POST(request(c, 'POST', { targets: [{ endpointId: billing, eventId: seeded.completed.eventId, sessionId: seeded.completed.sessionId, rowMessageId: seeded.completed.lastMessageId }] })),
    },
    { name: 'heartbeat send now', action: 'heartbeat.send', allowed: ops, call: (c) => sendNow.POST(request(c, 'POST')) },
    { name: 'heartbeat settings', action: 'heartbeat.settings', allowed: owners, call: (c) => settings.PUT(request(c, 'PUT', { enabled: false })) },
    { name: 'heartbeat inclusion', action: 'heartbeat.settings', allowed: owners, call: (c) => inclusion.PUT(request(c, 'PUT', { included: true }), params({ endpointId: billing })) },
    { name: 'grant a role', action: 'grants.manage', allowed: owners, call: (c) => grants.POST(request(c, 'POST', target)) },
    { name: 'revoke a role', action: 'grants.manage', allowed: owners, call: (c) => revoke.DELETE(request(c, 'DELETE'), params({ grantId: grantId(target) })) },
  ];
}

const actorName = (c: Caller) => (c === 'anonymous' ? 'unauthenticated' : PRINCIPALS[c].name);

describe('authorization matrix', () => {
  test('every mutating route x every caller: refused or let through as the roles say, and audited', async () => {
    const problems: string[] = [];
    let calls = 0;
    for (const row of await rows()) {
      for (const caller of CALLERS) {
        const startedAt = new Date(Date.now() - 1000).toISOString();
        const res = await row.call(caller);
        calls++;
        const body = (await res.json()) as { error?: string; detail?: string };
        const expected = row.allowed.includes(caller) ? 'allowed' : caller === 'anonymous' ? 401 : 403;
        const what = `${row.name} by ${caller}: ${res.status} ${body.error ?? ''} ${body.detail ?? ''}`;
        if (expected === 'allowed') {
          if ([401, 403, 429].includes(res.status) || res.status >= 500) problems.push(`${what} (should pass authorization)`);
        } else if (res.status !== expected) problems.push(`${what} (expected ${expected})`);
        if (expected !== 'allowed' && typeof body.detail !== 'string') problems.push(`${what}: no { error, detail }`);
        const action = expected === 'allowed' ? row.action : (row.refusedAs ?? row.action);
        const log = await queryAudit(stack.store.database, { user: actorName(caller), action, from: startedAt, pageSize: 5 });
        const entry = log.items[0];
        if (!entry) problems.push(`${what}: no audit entry`);
        else if (expected === 'allowed' ? entry.outcome === 'denied' : entry.outcome !== 'denied' || entry.status !== expected)
          problems.push(`${what}: audit says ${entry.outcome} ${entry.status}`);
      }
    }
    assert.equal(calls, 15 * 5);
    assert.deepEqual(problems, []);
  });

  test('an edited resubmission is audited with a structural diff, not the payload', async () => {
    const log = await queryAudit(stack.store.database, { user: 'operator@test', action: 'resubmit', eventId: seeded.failed.eventId, pageSize: 5 });
    const entry = log.items.find((e) => e.outcome === 'succeeded' && e.details?.edited === true);
    assert.ok(entry, 'the operator resubmitted the edited payload');
    assert.equal(entry.roles, 'Operator');
    const diff = entry.details!.payloadDiff as { changes: Array<{ path: string; op: string }> };
    assert.deepEqual(diff.changes.map((c) => `${c.op} ${c.path}`).sort(), ['added /currency', 'added /customerId', 'added /lines', 'changed /total', 'removed /note']);
    assert.ok(!JSON.stringify(entry).includes('ORD-200'), 'no payload values in the audit log');
  });

  test("signed-in callers' refused attempts against an event show in that event's trail; unauthenticated ones do not", async () => {
    const trail = (await stack.store.listAudits(seeded.failed.eventId)).items;
    const denied = trail.filter((a) => a.type === 'Denied');
    assert.deepEqual([...new Set(denied.map((a) => a.auditor))].sort(), ['crm-operator@test', 'reader@test']);
    assert.ok(denied.every((a) => /refused \(403\)/.test(a.comment ?? '')));
  });

  test('a service principal is refused what runs the platform, whatever its roles', async () => {
    // Bearer tokens are verified by sign-in (bearer.ts); here the rule itself: a service session cookie is not
    // a way in either, since the principal's kind decides.
    const svc: Principal = { kind: 'service', id: 'erp-app', name: 'erp-app', roles: ['Owner'], groups: [] };
    const cookie = `${SESSION_COOKIE}=${sealSession(svc, { secret: SECRET, maxAgeSeconds: 600 })}`;
    const sendNow = await import('../../app/api/admin/heartbeat/send-now/route.ts');
    const res = await sendNow.POST(new Request('http://127.0.0.1:3000/api/x', { method: 'POST', headers: { cookie } }));
    assert.equal(res.status, 403);
    assert.match(((await res.json()) as { detail: string }).detail, /service principal may not heartbeat\.send/);
  });

  test('a cross-origin mutation is refused with 403 and audited, even for an Owner', async () => {
    const settings = await import('../../app/api/admin/heartbeat/settings/route.ts');
    const res = await settings.PUT(request('owner', 'PUT', { enabled: true }, { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }));
    assert.equal(res.status, 403);
    const log = await queryAudit(stack.store.database, { user: 'owner@test', outcome: 'denied', pageSize: 5 });
    assert.match(log.items[0]?.reason ?? '', /cross-site request refused/);
  });

  test('GET /api/me names the caller, the roles and where they come from, and what they may do', async () => {
    const me = await import('../../app/api/me/route.ts');
    const res = await me.GET(request('otherOperator', 'GET'));
    assert.equal(res.status, 200);
    const body = (await res.json()) as { principal: { name: string }; roles: Array<{ role: string; endpointId: string | null; source: string }>; permissions: { site: string[]; endpoints: Record<string, string[]> } };
    assert.equal(body.principal.name, 'crm-operator@test');
    assert.deepEqual(body.roles, [{ role: 'Operator', endpointId: 'crmendpoint', source: 'groups:crm-ops' }]);
    assert.deepEqual(body.permissions.site, ['read', 'agent.catalog']);
    assert.ok(body.permissions.endpoints.crmendpoint!.includes('resubmit'));
    assert.deepEqual(body.permissions.endpoints.billingendpoint, []);
    assert.equal((await me.GET(request('anonymous', 'GET'))).status, 401);
  });

  test('a grant stored by an Owner takes effect, and its revocation too', async () => {
    const grants = await import('../../app/api/admin/grants/route.ts');
    const revoke = await import('../../app/api/admin/grants/[grantId]/route.ts');
    const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
    const trySkip = () => skip.POST(request('reader', 'POST'), params({ endpointId: 'billingendpoint', eventId: 'no-such-event' }));
    assert.equal((await trySkip()).status, 403);
    const g = { subjectKind: 'user', subject: 'oid-reader', role: 'Operator', endpointId: 'billingendpoint' };
    const made = await grants.POST(request('owner', 'POST', g));
    assert.equal(made.status, 201);
    const { id } = (await made.json()) as { id: string };
    const after = await trySkip();
    assert.equal(after.status, 404, `authorized now: the event is simply unknown (${await after.text()})`);
    assert.equal((await revoke.DELETE(request('owner', 'DELETE'), params({ grantId: id }))).status, 200);
    assert.equal((await trySkip()).status, 403);
  });

  test('a grant naming an endpoint the catalog does not know is refused with 400 naming it, audited, and not stored', async () => {
    const grants = await import('../../app/api/admin/grants/route.ts');
    const startedAt = new Date(Date.now() - 1000).toISOString();
    const g = { subjectKind: 'user', subject: 'oid-typo', role: 'Operator', endpointId: 'billingendpoitn' };
    const res = await grants.POST(request('owner', 'POST', g));
    const body = (await res.json()) as { error?: string; detail?: string };
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match(body.detail ?? '', /billingendpoitn.*not in the catalog/);
    const list = (await (await grants.GET(request('owner', 'GET'))).json()) as { grants: Array<{ subject: string }> };
    assert.ok(!list.grants.some((x) => x.subject === 'oid-typo'), 'nothing stored');
    const log = await queryAudit(stack.store.database, { user: 'owner@test', action: 'grants.manage', from: startedAt, pageSize: 5 });
    assert.equal(log.items[0]?.status, 400);
    // A site-wide grant names no endpoint and still passes.
    assert.equal((await grants.POST(request('owner', 'POST', { ...g, endpointId: null }))).status, 201);
  });

  test("a grant's endpoint is taken exactly as sent: spaces alone, a space around it or too long is a 400 in the exact-id rule's words", async () => {
    // The Access page trimmed the box (spaces alone became a site-wide grant); the route refused only as "an endpoint id".
    const grants = await import('../../app/api/admin/grants/route.ts');
    const refused: Array<[string, string]> = [
      ['   ', 'an endpoint id of spaces alone names nothing; ids are taken exactly as sent'],
      [' billingendpoint', 'an endpoint id is made of letters, digits, ".", "_" and "-" alone (no spaces): this one names no endpoint'],
      ['x'.repeat(51), 'an endpoint id longer than 50 characters names nothing; no endpoint id is that long'],
      ['', 'an endpoint id is empty'],
    ];
    for (const [endpointId, words] of refused) {
      const res = await grants.POST(request('owner', 'POST', { subjectKind: 'user', subject: 'oid-exact', role: 'Operator', endpointId }));
      const body = (await res.json()) as { detail?: string };
      assert.equal(res.status, 400, `${JSON.stringify(endpointId)}: ${JSON.stringify(body)}`);
      assert.ok((body.detail ?? '').includes(words), `${JSON.stringify(endpointId)}: ${body.detail}`);
    }
    const list = (await (await grants.GET(request('owner', 'GET'))).json()) as { grants: Array<{ subject: string }> };
    assert.ok(!list.grants.some((x) => x.subject === 'oid-exact'), 'nothing stored');
  });

  test('mutating calls over the rate limit get 429, audited; reads are not limited', async () => {
    const saved = process.env.NIMBUS_RATE_LIMIT_BURST;
    process.env.NIMBUS_RATE_LIMIT_BURST = '2';
    try {
      const hasty: Principal = { kind: 'user', id: 'oid-hasty', name: 'hasty@test', roles: ['Operator'], groups: [] };
      const cookie = `${SESSION_COOKIE}=${sealSession(hasty, { secret: SECRET, maxAgeSeconds: 600 })}`;
      const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
      const me = await import('../../app/api/me/route.ts');
      const call = () => skip.POST(new Request('http://127.0.0.1:3000/api/x', { method: 'POST', headers: { cookie } }), params({ endpointId: 'billingendpoint', eventId: 'no-such-event' }));
      const statuses = [(await call()).status, (await call()).status];
      const limited = await call();
      assert.deepEqual(statuses, [404, 404], 'within the burst: authorized (the event is unknown)');
      assert.equal(limited.status, 429);
      assert.match(((await limited.json()) as { detail: string }).detail, /try again in \d+ s/);
      assert.equal((await me.GET(new Request('http://127.0.0.1:3000/api/me', { headers: { cookie } }))).status, 200);
      const log = await queryAudit(stack.store.database, { user: 'hasty@test', outcome: 'denied', pageSize: 5 });
      assert.equal(log.items[0]?.status, 429);
    } finally {
      if (saved === undefined) delete process.env.NIMBUS_RATE_LIMIT_BURST;
      else process.env.NIMBUS_RATE_LIMIT_BURST = saved;
    }
  });

  test("one principal's refused calls write a bounded number of audit entries, each still refused", async () => {
    // A signed-in user with no role, polling: every read is refused.
    const idle: Principal = { kind: 'user', id: 'oid-idle', name: 'idle@test', roles: [], groups: [] };
    const cookie = `${SESSION_COOKIE}=${sealSession(idle, { secret: SECRET, maxAgeSeconds: 600 })}`;
    const me = await import('../../app/api/me/route.ts');
    const calls = REFUSAL_AUDIT_RATE.burst * 3;
    const statuses = new Set<number>();
    for (let i = 0; i < calls; i++) statuses.add((await me.GET(new Request('http://127.0.0.1:3000/api/me', { headers: { cookie } }))).status);
    assert.deepEqual([...statuses], [403], 'every call is refused, audited or not');
    const written = (await queryAudit(stack.store.database, { user: 'idle@test', outcome: 'denied', pageSize: 200 })).items;
    // The burst, plus whatever the sustained rate refilled while the calls ran (one per six seconds).
    assert.ok(written.length >= REFUSAL_AUDIT_RATE.burst && written.length < calls, `${written.length} of ${calls} refusals written`);
    // Another principal has a budget of its own: its first refusal is written.
    const next: Principal = { ...idle, id: 'oid-idle-2', name: 'idle-2@test' };
    const res = await me.GET(new Request('http://127.0.0.1:3000/api/me', { headers: { cookie: `${SESSION_COOKIE}=${sealSession(next, { secret: SECRET, maxAgeSeconds: 600 })}` } }));
    assert.equal(res.status, 403);
    assert.equal((await queryAudit(stack.store.database, { user: 'idle-2@test', outcome: 'denied', pageSize: 5 })).items.length, 1);
  });

  test('a bad NIMBUS_AUTH_ROLE_MAP or sign-in setting is a clear 503, not a crash', async () => {
    const before = process.env.NIMBUS_AUTH_ROLE_MAP;
    process.env.NIMBUS_AUTH_ROLE_MAP = '{"roles":{"Owner":"Boss"}}';
    try {
      const me = await import('../../app/api/me/route.ts');
      const res = await me.GET(request('owner', 'GET'));
      assert.equal(res.status, 503);
      assert.match(((await res.json()) as { detail: string }).detail, /NIMBUS_AUTH_ROLE_MAP is invalid: roles\.Owner/);
    } finally {
      process.env.NIMBUS_AUTH_ROLE_MAP = before;
    }
    // Broken sign-in settings likewise: 503 naming the variable, not a 500.
    const issuer = process.env.NIMBUS_AUTH_ISSUER;
    process.env.NIMBUS_AUTH_ISSUER = 'not a url';
    try {
      const me = await import('../../app/api/me/route.ts');
      const res = await me.GET(request('owner', 'GET'));
      assert.equal(res.status, 503);
      assert.match(((await res.json()) as { detail: string }).detail, /NIMBUS_AUTH_ISSUER/);
    } finally {
      process.env.NIMBUS_AUTH_ISSUER = issuer;
    }
  });
});
