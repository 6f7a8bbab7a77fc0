// Who may replay dead letters, as a role matrix on the embedded stack (real session cookies, the route called as
// Next calls it): an endpoint topic's dead letters are an Operator's (of that endpoint, or site-wide); a platform
// topic's (Resolver, Manager) hold every endpoint's messages and a replayed Resolver dead letter rewrites status
// rows anywhere, so the specification makes that an Owner action. Every refusal is audited.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Topic } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { queryAudit } from '../audit/auditLog.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'replay-authz-session-secret-0123456789-abc';
const AUTH_ENV = oidcTestEnv(SECRET, { roles: { Reader: 'Reader', Operator: 'Operator', Owner: 'Owner' }, groups: { 'billing-ops': 'Operator:billingendpoint' } });

type Caller = 'anonymous' | 'reader' | 'billingOperator' | 'operator' | 'owner';
const PRINCIPALS: Record<Exclude<Caller, 'anonymous'>, Principal> = {
  reader: { kind: 'user', id: 'oid-reader', name: 'reader@test', roles: ['Reader'], groups: [] },
  billingOperator: { kind: 'user', id: 'oid-billing-op', name: 'billing-operator@test', roles: [], groups: ['billing-ops'] },
  operator: { kind: 'user', id: 'oid-operator', name: 'operator@test', roles: ['Operator'], groups: [] },
  owner: { kind: 'user', id: 'oid-owner', name: 'owner@test', roles: ['Owner'], groups: [] },
};
const CALLERS: Caller[] = ['anonymous', 'reader', 'billingOperator', 'operator', 'owner'];

const stack = useConsoleStack({ database: 'replayauthz', env: AUTH_ENV });

const params = <P>(p: P) => ({ params: Promise.resolve(p) });

function request(caller: Caller, body: unknown): Request {
  const h: Record<string, string> = { 'content-type': 'application/json', host: '127.0.0.1:3000' };
  if (caller !== 'anonymous') h.cookie = `${SESSION_COOKIE}=${sealSession(PRINCIPALS[caller], { secret: SECRET, maxAgeSeconds: 600 })}`;
  return new Request('http://127.0.0.1:3000/api/x', { method: 'POST', headers: h, body: JSON.stringify(body) });
}


describe('dead-letter replay authorization', () => {
  test('role matrix: an endpoint topic needs its Operator, a platform topic (Resolver, Manager) an Owner', async () => {
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const targets = [
      { topic: 'billingendpoint', subscription: 'billingendpoint', allowed: ['billingOperator', 'operator', 'owner'] as Caller[] },
      { topic: Topic.Resolver, subscription: Topic.Resolver, allowed: ['owner'] as Caller[] },
      { topic: Topic.Manager, subscription: 'billingendpoint', allowed: ['owner'] as Caller[] },
    ];
    const problems: string[] = [];
    for (const t of targets) {
      for (const caller of CALLERS) {
        const startedAt = new Date(Date.now() - 1000).toISOString();
        // The selection matches no dead letter: an allowed replay starts (202) and finds nothing to send.
        const res = await replay.POST(request(caller, { all: true, reason: 'NoSuchReasonInThisTest' }), params({ topic: t.topic, subscription: t.subscription }));
        const text = await res.text();
        const want = t.allowed.includes(caller) ? 202 : caller === 'anonymous' ? 401 : 403;
        if (res.status !== want) problems.push(`replay ${t.topic}/${t.subscription} by ${caller}: ${res.status} ${text.slice(0, 200)} (expected ${want})`);
        if (want === 403) {
          const who = PRINCIPALS[caller as Exclude<Caller, 'anonymous'>].name;
          const log = await queryAudit(stack.store.database, { user: who, outcome: 'denied', from: startedAt, pageSize: 5 });
          const entry = log.items[0];
          if (!entry || entry.status !== 403 || entry.target !== `${t.topic}/${t.subscription}`)
            problems.push(`replay ${t.topic} by ${caller}: refusal not audited (${JSON.stringify(entry ?? null)})`);
          else if (t.topic !== 'billingendpoint' && !/replay\.platform needs the Owner role site-wide/.test(entry.reason ?? ''))
            problems.push(`replay ${t.topic} by ${caller}: the refusal does not say why (${entry.reason})`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  test('/api/me offers platform replay to Owners only', async () => {
    const me = await import('../../app/api/me/route.ts');
    const site = async (c: Caller) => {
      const h = { cookie: `${SESSION_COOKIE}=${sealSession(PRINCIPALS[c as Exclude<Caller, 'anonymous'>], { secret: SECRET, maxAgeSeconds: 600 })}`, host: '127.0.0.1:3000' };
      const body = (await (await me.GET(new Request('http://127.0.0.1:3000/api/me', { headers: h }))).json()) as { permissions: { site: string[] } };
      return body.permissions.site;
    };
    assert.ok((await site('operator')).includes('replay'));
    assert.ok(!(await site('operator')).includes('replay.platform'));
    assert.ok((await site('owner')).includes('replay.platform'));
  });
});
