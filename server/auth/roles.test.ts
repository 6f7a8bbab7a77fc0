import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Principal } from './principal.ts';
import { DEFAULT_ROLE_MAP, RoleMapError, decide, parseRoleMap, permissions, rolesFromClaims, type RoleAssignment } from './roles.ts';
import { grantId, grantInputSchema, grantsFor, type Grant } from './grants.ts';
import { RateLimiter } from './rateLimit.ts';
import { originProblem } from './authorize.ts';

const user = (roles: string[] = [], groups: string[] = []): Principal => ({ kind: 'user', id: 'u1', name: 'ada', roles, groups });
const site = (role: RoleAssignment['role']): RoleAssignment => ({ role, endpointId: null, source: 'test' });
const on = (role: RoleAssignment['role'], endpointId: string): RoleAssignment => ({ role, endpointId, source: 'test' });

describe('roles', () => {
  test('each role includes the one below it, and actions need their role', () => {
    assert.equal(decide(user(), [site('Reader')], 'read', 'billing').allowed, true);
    assert.equal(decide(user(), [site('Reader')], 'resubmit', 'billing').allowed, false);
    assert.equal(decide(user(), [site('Operator')], 'resubmit', 'billing').allowed, true);
    assert.equal(decide(user(), [site('Operator')], 'replay', 'billing').allowed, true);
    assert.equal(decide(user(), [site('Operator')], 'subscription.purge', 'billing').allowed, false);
    assert.equal(decide(user(), [site('Operator')], 'heartbeat.settings').allowed, false);
    assert.equal(decide(user(), [site('Owner')], 'grants.manage').allowed, true);
    assert.equal(decide(user(), [], 'read', 'billing').allowed, false);
    assert.equal(decide(user(), [], 'read').allowed, false);
  });

  test('a per-endpoint role counts on that endpoint only; overviews are readable with any role', () => {
    const a = [on('Operator', 'billing')];
    assert.equal(decide(user(), a, 'skip', 'billing').allowed, true);
    const other = decide(user(), a, 'skip', 'crm');
    assert.equal(other.allowed, false);
    assert.match(other.allowed ? '' : other.reason, /skip needs the Operator role on endpoint crm/);
    assert.equal(decide(user(), a, 'reconcile').allowed, false, 'site-wide actions need a site-wide role');
    assert.equal(decide(user(), a, 'read').allowed, true);
    assert.equal(decide(user(), a, 'read', 'crm').allowed, false);
  });

  test('a service principal may read, settle, resubmit, skip and use the Agent API by its roles; never run the platform', () => {
    const svc: Principal = { kind: 'service', id: 'app-1', name: 'erp', roles: ['Operator'], groups: [] };
    assert.equal(decide(svc, [on('Operator', 'billing')], 'handoff', 'billing').allowed, true);
    assert.equal(decide(svc, [on('Operator', 'billing')], 'handoff', 'crm').allowed, false);
    assert.equal(decide(svc, [on('Operator', 'billing')], 'resubmit', 'billing').allowed, true);
    assert.equal(decide(svc, [on('Reader', 'billing')], 'resubmit', 'billing').allowed, false);
    assert.equal(decide(svc, [site('Owner')], 'read').allowed, true);
    for (const action of ['replay', 'reconcile', 'heartbeat.send', 'subscription.purge', 'grants.manage'] as const) {
      const d = decide(svc, [site('Owner')], action, 'billing');
      assert.equal(d.allowed, false, action);
      assert.match(d.allowed ? '' : d.reason, new RegExp(`service principal may not ${action.replace('.', '\\.')}`));
    }
  });

  test('the Agent role: the Agent API on its endpoint and nothing else; Operator and Owner include it', () => {
    const agent = [on('Agent', 'erp')];
    for (const action of ['agent.receive', 'agent.settle', 'agent.publish', 'agent.catalog'] as const)
      assert.equal(decide(user(), agent, action, action === 'agent.catalog' ? undefined : 'erp').allowed, true, action);
    assert.equal(decide(user(), agent, 'agent.receive', 'billing').allowed, false);
    for (const action of ['read', 'handoff', 'resubmit', 'skip'] as const) {
      const d = decide(user(), agent, action, 'erp');
      assert.equal(d.allowed, false, action);
      assert.match(d.allowed ? '' : d.reason, /only the Agent role there/);
    }
    assert.equal(decide(user(), agent, 'read').allowed, false, 'no overviews either');
    assert.equal(decide(user(), [on('Operator', 'erp')], 'agent.settle', 'erp').allowed, true);
    assert.equal(decide(user(), [site('Owner')], 'agent.publish', 'erp').allowed, true);
    assert.equal(decide(user(), [site('Reader')], 'agent.receive', 'erp').allowed, false);
    assert.deepEqual(parseRoleMap(JSON.stringify({ roles: { Ledger: 'Agent:erp' } })).roles, { Ledger: 'Agent:erp' });
    assert.throws(() => parseRoleMap(JSON.stringify({ roles: { Ledger: 'Agent' } })), RoleMapError, 'an Agent role names its endpoint');
    assert.equal(grantInputSchema.safeParse({ subjectKind: 'service', subject: 'ledger-app', role: 'Agent' }).success, false, 'an Agent grant names its endpoint');
    assert.equal(grantInputSchema.safeParse({ subjectKind: 'service', subject: 'ledger-app', role: 'Agent', endpointId: 'erp' }).success, true);
  });

  test('a grant input naming its subject with control or bidi-override characters is refused', () => {
    const ok = { subjectKind: 'user', subject: 'oid-1', subjectName: 'Ada Lovelace', role: 'Reader' } as const;
    assert.equal(grantInputSchema.safeParse(ok).success, true);
    for (const subject of ['oid\u0000-1', 'oid\n-1', 'oid\u202e1-dio', 'oid\u20661']) {
      const r = grantInputSchema.safeParse({ ...ok, subject });
      assert.equal(r.success, false, JSON.stringify(subject));
      assert.match(r.error!.issues[0]!.message, /subject must not contain control or bidirectional-override characters/);
    }
    assert.equal(grantInputSchema.safeParse({ ...ok, subjectName: 'Ada\u202eecalovoL' }).success, false);
  });

  test('claims map to roles through NIMBUS_AUTH_ROLE_MAP; the default maps same-named app roles', () => {
    assert.deepEqual(rolesFromClaims(user(['Owner', 'Other']), DEFAULT_ROLE_MAP).map((a) => a.role), ['Owner']);
    const map = parseRoleMap(JSON.stringify({ roles: { 'NimBus.Ops': 'Operator' }, groups: { g1: ['Reader', 'Operator:billing'] } }));
    const got = rolesFromClaims(user(['NimBus.Ops'], ['g1', 'g2']), map);
    assert.deepEqual(
      got.map((a) => [a.role, a.endpointId, a.source]),
      [
        ['Operator', null, 'roles:NimBus.Ops'],
        ['Reader', null, 'groups:g1'],
        ['Operator', 'billing', 'groups:g1'],
      ],
    );
  });

  test('a bad role map is a clear error', () => {
    assert.throws(() => parseRoleMap('{not json'), (e: unknown) => e instanceof RoleMapError && /not valid JSON/.test(e.message));
    assert.throws(
      () => parseRoleMap(JSON.stringify({ roles: { x: 'Admin' } })),
      (e: unknown) => e instanceof RoleMapError && /roles\.x/.test(e.message) && /Reader, Operator or Owner/.test(e.message),
    );
    assert.throws(() => parseRoleMap(JSON.stringify({ people: {} })), RoleMapError);
  });

  test('permissions lists allowed actions site-wide and per endpoint', () => {
    const p = permissions(user(), [site('Reader'), on('Owner', 'crm')], ['billing', 'crm']);
    // The Agent API's catalog is site-level: an Owner of crm holds the Agent's rights there.
    assert.deepEqual(p.site, ['read', 'agent.catalog']);
    assert.ok(p.endpoints.crm!.includes('agent.settle') && !p.endpoints.billing!.includes('agent.settle'));
    assert.deepEqual(p.endpoints.billing, ['read']);
    assert.ok(p.endpoints.crm!.includes('subscription.purge') && p.endpoints.crm!.includes('resubmit'));
  });

  test('grants apply to their user, service or group', () => {
    const g = (subjectKind: Grant['subjectKind'], subject: string): Grant => ({
      id: grantId({ subjectKind, subject, role: 'Operator', endpointId: null }),
      subjectKind,
      subject,
      subjectName: null,
      role: 'Operator',
      endpointId: null,
      grantedBy: 'x',
      grantedAt: '2026-01-01T00:00:00.000Z',
    });
    assert.equal(grantsFor(user([], ['grp']), [g('user', 'u1'), g('group', 'grp'), g('service', 'u1'), g('user', 'u2')]).length, 2);
    assert.equal(grantId({ subjectKind: 'user', subject: 'u1', role: 'Owner', endpointId: null }), grantId({ subjectKind: 'user', subject: 'u1', role: 'Owner', endpointId: null }));
  });
});

describe('rate limit', () => {
  test('allows the burst, then refuses until the rate refills it', () => {
    const l = new RateLimiter();
    const s = { perMinute: 60, burst: 3 };
    assert.deepEqual([0, 1, 2].map(() => l.take('a', s, 1000)), [0, 0, 0]);
    assert.equal(l.take('a', s, 1000), 1);
    assert.equal(l.take('b', s, 1000), 0, 'callers have their own buckets');
    assert.equal(l.take('a', s, 2000), 0, 'one second refills one call at 60/min');
  });
});

describe('origin check', () => {
  const req = (headers: Record<string, string>) => new Request('http://127.0.0.1:3000/api/event/skip', { method: 'POST', headers: { host: '127.0.0.1:3000', ...headers } });
  test('same-origin and non-browser requests pass', () => {
    assert.equal(originProblem(req({ origin: 'http://127.0.0.1:3000', 'sec-fetch-site': 'same-origin' })), null);
    assert.equal(originProblem(req({})), null);
    assert.equal(originProblem(req({ authorization: 'Bearer x.y.z', origin: 'https://evil.example' })), null);
  });
  test('another origin or site is refused', () => {
    assert.match(originProblem(req({ origin: 'https://evil.example' })) ?? '', /cross-origin/);
    assert.match(originProblem(req({ 'sec-fetch-site': 'cross-site' })) ?? '', /cross-site/);
    assert.match(originProblem(req({ 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:3000' })) ?? '', /same-site/);
    assert.match(originProblem(req({ origin: 'null' })) ?? '', /cross-origin/);
  });
});
