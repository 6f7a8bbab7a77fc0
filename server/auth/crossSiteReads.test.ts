// GETs with effects, sent by a page on another site (embedded stack, real session cookies, real bearer tokens from
// the test identity provider): Reconcile's session scan spends the caller's change budget and locks sessions, and
// every Agent API call (receive, catalog) is audited as the caller and spends its Agent API budget. A foreign page
// sends such a GET with the user's Lax cookie by a top-level navigation, and with sign-in off by an <img>: each must
// be refused 403 and audited like a cross-site change, spending nothing. The console's own pages and bearer callers
// (no Sec-Fetch-Site, an Origin of their own or none) keep working, and plain reads stay open to links from elsewhere.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { API_AUDIENCE, startTestOidcProvider, type TestOidcProvider } from '../testing/oidcProvider.ts';
import { oidcProviderEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from './session.ts';
import type { Principal } from './principal.ts';
import { queryAudit } from '../audit/auditLog.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'cross-site-reads-test-session-secret-0123456789';
let idp: TestOidcProvider;
const stack = useConsoleStack({
  database: 'crosssitereads',
  // The identity provider starts with the stack; its variables go over the stack's.
  env: async () => {
    idp = await startTestOidcProvider({ redirectUris: ['http://127.0.0.1:1/auth/callback'], postLogoutRedirectUris: [] });
    return oidcProviderEnv(idp, {
      sessionSecret: SECRET,
      bearerAudience: API_AUDIENCE,
      // People by their app roles; the provider's service client (app role Handoff.Settle) reads and is the ERP's agent.
      roleMap: { roles: { Operator: 'Operator', 'Handoff.Settle': ['Reader', 'Agent:erpendpoint'] } },
    });
  },
  seed: true,
});
// Runs after useConsoleStack's `after` (top-level `after` hooks run in order): the console is closed by then.
after(async () => {
  await idp?.close();
});

/** Runs `fn` with some environment variables set (undefined: removed), restoring them after. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>) => {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) delete process.env[k];
      else process.env[k] = x;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}

/** One token of the change budget and no refill during the test, however slow the machine. */
const ONE_CHANGE = { NIMBUS_RATE_LIMIT_BURST: '1', NIMBUS_RATE_LIMIT_PER_MINUTE: '1' };
const ONE_AGENT_CALL = { NIMBUS_AGENT_RATE_LIMIT_BURST: '1', NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE: '1' };

const operator = (id: string): Principal => ({ kind: 'user', id: `oid-${id}`, name: `${id}@test`, roles: ['Operator'], groups: [] });
const cookieOf = (p: Principal) => `${SESSION_COOKIE}=${sealSession(p, { secret: SECRET, maxAgeSeconds: 600 })}`;

/** What a browser sends: a top-level navigation from another site, a sibling subdomain, a foreign form, our own page. */
const CROSS_SITE_NAVIGATION = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' };
const SAME_SITE = { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate' };
const FOREIGN_ORIGIN = { origin: 'https://attacker.example' };
const IMAGE = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' };
const OWN_PAGE = { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' };

function get(path: string, headers: Record<string, string>, who?: Principal): Request {
  return new Request(`http://127.0.0.1:3000${path}`, {
    headers: { host: '127.0.0.1:3000', ...(who ? { cookie: cookieOf(who) } : {}), ...headers },
  });
}

async function detailOf(r: Response): Promise<string> {
  return ((await r.clone().json()) as { detail: string }).detail;
}

describe('GETs with effects from another site', () => {
  test("Reconcile's session scan sent by another site is refused 403, audited, and spends none of the caller's budget", async () => {
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const victim = operator('scan-victim');
    await withEnv(ONE_CHANGE, async () => {
      for (const [path, headers] of [
        ['/api/operations/reconcile?part=sessions', CROSS_SITE_NAVIGATION],
        ['/api/operations/reconcile', CROSS_SITE_NAVIGATION],
        ['/api/operations/reconcile?part=sessions', SAME_SITE],
        ['/api/operations/reconcile', FOREIGN_ORIGIN],
      ] as const) {
        const r = await reconcile.GET(get(path, headers, victim));
        assert.equal(r.status, 403, `${path} ${JSON.stringify(headers)}: ${await r.clone().text()}`);
        assert.match(await detailOf(r), /cross-(site|origin) request refused/);
      }
      const denied = await queryAudit(stack.store.database, { user: victim.id, outcome: 'denied', pageSize: 10 });
      assert.equal(denied.items.length, 4, 'each refusal audited');
      assert.ok(denied.items.every((e) => e.status === 403 && /cross-(site|origin) request refused/.test(e.reason ?? '')));
      // The row findings alone are a plain read: a link from elsewhere still opens them.
      assert.equal((await reconcile.GET(get('/api/operations/reconcile?part=rows', CROSS_SITE_NAVIGATION, victim))).status, 200);
      // The one token of the budget is still there for the console's own page; the next scan shows it was the only one.
      const own = await reconcile.GET(get('/api/operations/reconcile?part=sessions', OWN_PAGE, victim));
      assert.equal(own.status, 200, await own.clone().text());
      assert.equal((await reconcile.GET(get('/api/operations/reconcile?part=sessions', OWN_PAGE, victim))).status, 429);
    });
  });

  test('an Agent API receive or catalog sent by another site is refused 403: no call audited as the caller, no budget spent', async () => {
    const receive = await import('../../app/api/agent/receive/route.ts');
    const catalog = await import('../../app/api/agent/catalog/route.ts');
    const victim = operator('agent-victim');
    await withEnv(ONE_AGENT_CALL, async () => {
      for (const headers of [CROSS_SITE_NAVIGATION, SAME_SITE, FOREIGN_ORIGIN]) {
        const r = await receive.GET(get('/api/agent/receive?endpointId=erpendpoint', headers, victim));
        assert.equal(r.status, 403, `receive ${JSON.stringify(headers)}: ${await r.clone().text()}`);
        assert.match(await detailOf(r), /cross-(site|origin) request refused/);
        // A bad query from another site is refused for its origin too, not counted and audited as the agent's input.
        assert.equal((await receive.GET(get('/api/agent/receive?endpointId=erpendpoint&waitSeconds=999', headers, victim))).status, 403);
        assert.equal((await catalog.GET(get('/api/agent/catalog', headers, victim))).status, 403);
      }
      const calls = await queryAudit(stack.store.database, { user: victim.id, pageSize: 50 });
      assert.deepEqual(
        calls.items.filter((e) => e.outcome !== 'denied').map((e) => `${e.action} ${e.outcome}`),
        [],
        'no Agent API call recorded as the caller',
      );
      assert.ok(calls.items.length > 0 && calls.items.every((e) => e.status === 403), 'the refusals are audited');
      // The caller's one Agent API call is still there for its own page.
      const own = await receive.GET(get('/api/agent/receive?endpointId=erpendpoint', OWN_PAGE, victim));
      assert.ok(own.status === 200 || own.status === 204, `own receive: ${own.status} ${await own.clone().text()}`);
      assert.equal((await catalog.GET(get('/api/agent/catalog', OWN_PAGE, victim))).status, 429, 'the budget was one call');
    });
  });

  test('bearer callers are not browsers: their GETs pass whatever Origin they send', async () => {
    const receive = await import('../../app/api/agent/receive/route.ts');
    const catalog = await import('../../app/api/agent/catalog/route.ts');
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const bearer = { authorization: `Bearer ${await idp.clientCredentialsToken()}` };
    for (const headers of [bearer, { ...bearer, ...FOREIGN_ORIGIN }]) {
      const r = await receive.GET(get('/api/agent/receive?endpointId=erpendpoint', headers));
      assert.ok(r.status === 200 || r.status === 204, `receive: ${r.status} ${await r.clone().text()}`);
      assert.equal((await catalog.GET(get('/api/agent/catalog', headers))).status, 200);
      const scan = await reconcile.GET(get('/api/operations/reconcile?part=sessions', headers));
      assert.equal(scan.status, 200, await scan.clone().text());
    }
  });

  test('with sign-in off an <img> on another page cannot run the scan or an Agent API call; the console itself can', async () => {
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const receive = await import('../../app/api/agent/receive/route.ts');
    await withEnv({ NIMBUS_AUTH: undefined }, async () => {
      const scan = await reconcile.GET(get('/api/operations/reconcile?part=sessions', IMAGE));
      assert.equal(scan.status, 403, await scan.clone().text());
      assert.equal((await receive.GET(get('/api/agent/receive?endpointId=erpendpoint', IMAGE))).status, 403);
      const denied = await queryAudit(stack.store.database, { user: 'anonymous', outcome: 'denied', pageSize: 10 });
      assert.equal(denied.items.length, 2, 'both refusals audited, although nobody is signed in');
      assert.equal((await reconcile.GET(get('/api/operations/reconcile?part=sessions', OWN_PAGE))).status, 200);
      const own = await receive.GET(get('/api/agent/receive?endpointId=erpendpoint', OWN_PAGE));
      assert.ok(own.status === 200 || own.status === 204, `own receive: ${own.status}`);
    });
  });
});
