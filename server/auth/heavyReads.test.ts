// Reads that cost the store as much as many changes (embedded stack, real clients, sign-in on with real session
// cookies): the events export (up to 100,000 rows) and a bulk job's freeze (up to 100,000 rows) are charged against
// the caller's rate limit at HEAVY_READ_COST, answered 429 with Retry-After past it, and the export - a GET with
// effects - is refused from another site (a saved link opened in the address bar is not another site).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { seedEvent } from '../testing/seed.ts';
import { MessageType } from '@nimbus/sdk/contract';
import { SESSION_COOKIE, sealSession } from './session.ts';
import type { Principal } from './principal.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { HEAVY_READ_COST } from './rateLimit.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'heavy-reads-test-session-secret-0123456789-abcdef';
const AUTH_ENV = oidcTestEnv(SECRET);

const stack = useConsoleStack({ database: 'heavy-reads', env: AUTH_ENV, seed: true });

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const cookieOf = (p: Principal) => `${SESSION_COOKIE}=${sealSession(p, { secret: SECRET, maxAgeSeconds: 600 })}`;
const user = (id: string, role: 'Reader' | 'Operator'): Principal => ({ kind: 'user', id: `oid-${id}`, name: `${id}@test`, roles: [role], groups: [] });

/**
 * Two heavy reads' worth of budget, and one token a minute: nothing refills during the test however slow the machine.
 */
async function withTwoHeavyReads(fn: () => Promise<void>): Promise<void> {
  const saved = { burst: process.env.NIMBUS_RATE_LIMIT_BURST, rate: process.env.NIMBUS_RATE_LIMIT_PER_MINUTE };
  process.env.NIMBUS_RATE_LIMIT_BURST = String(2 * HEAVY_READ_COST);
  process.env.NIMBUS_RATE_LIMIT_PER_MINUTE = '1';
  try {
    await fn();
  } finally {
    for (const [k, v] of [['NIMBUS_RATE_LIMIT_BURST', saved.burst], ['NIMBUS_RATE_LIMIT_PER_MINUTE', saved.rate]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

async function assertTooMany(res: Response): Promise<void> {
  assert.equal(res.status, 429, await res.clone().text());
  assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After in whole seconds');
  const body = (await res.json()) as { error: string; detail: string };
  assert.equal(body.error, 'too many requests');
  assert.match(body.detail, /try again in \d+ s/);
}

describe('heavy reads are rate-limited', () => {
  test('the events export costs HEAVY_READ_COST of the rate limit, 429 with Retry-After past it, and is refused cross-site', async () => {
    const route = await import('../../app/api/endpoints/[endpointId]/events/export/route.ts');
    const target = params({ endpointId: 'billingendpoint' });
    const exporter = user('exporter', 'Reader');
    const get = (who: Principal, headers: Record<string, string> = {}) =>
      new Request('http://127.0.0.1:3000/api/endpoints/billingendpoint/events/export?format=csv', {
        headers: { host: '127.0.0.1:3000', cookie: cookieOf(who), ...headers },
      });
    await withTwoHeavyReads(async () => {
      // Read each file to its end: the store queries run while it streams.
      for (let i = 0; i < 2; i++) {
        const res = await route.GET(get(exporter), target);
        assert.equal(res.status, 200, await res.clone().text());
        await res.text();
      }
      await assertTooMany(await route.GET(get(exporter), target));
      // A link on another site must not make the signed-in caller's browser run (and pay for) an export.
      const other = user('exporter-other', 'Reader');
      const crossSite = await route.GET(get(other, { 'sec-fetch-site': 'cross-site' }), target);
      assert.equal(crossSite.status, 403, await crossSite.clone().text());
      await crossSite.text();
      // A fetch no page started that is not a navigation is not the operator's own click: refused.
      const notNavigation = await route.GET(get(other, { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'cors' }), target);
      assert.equal(notNavigation.status, 403, await notNavigation.clone().text());
      await notNavigation.text();
      // The console's own page still downloads it.
      const own = await route.GET(get(other, { 'sec-fetch-site': 'same-origin' }), target);
      assert.equal(own.status, 200);
      await own.text();
      // So does a saved or pasted export link opened in the address bar (Sec-Fetch-Site: none, a navigation): no page
      // on another site can send that. Before, 403.
      const typed = await route.GET(get(other, { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }), target);
      assert.equal(typed.status, 200, await typed.clone().text());
      await typed.text();
    });
  });

  test("a bulk job's freeze is charged before it runs, once per job, at HEAVY_READ_COST", async () => {
    const operations = await import('../../app/api/operations/route.ts');
    const cause = { errorText: 'heavy-read probe: upstream refused', errorType: 'HeavyReadProbeException' };
    await seedEvent(stack.store, Date.now() - 30_000, { endpointId: 'billingendpoint', eventId: 'evt-heavy-1', sessionId: 'HR-1', eventTypeId: 'OrderPlaced', payload: { orderId: 'HR-1' } }, MessageType.ErrorResponse, cause);
    const groupId = (await stack.store.getStatusRow('billingendpoint', 'evt-heavy-1', 'HR-1'))?.fingerprint;
    assert.equal(typeof groupId, 'string');
    const operator = user('freezer', 'Operator');
    const post = () =>
      operations.POST(
        new Request('http://127.0.0.1:3000/api/operations', {
          method: 'POST',
          headers: { 'content-type': 'application/json', host: '127.0.0.1:3000', cookie: cookieOf(operator) },
          body: JSON.stringify({ kind: 'skip', selection: { groupId }, hold: true }),
        }),
      );
    await withTwoHeavyReads(async () => {
      // Held jobs: frozen and prepared, nothing sent. Each costs one freeze, not a freeze and a change.
      for (let i = 0; i < 2; i++) {
        const res = await post();
        assert.equal(res.status, 202, await res.clone().text());
      }
      await assertTooMany(await post());
    });
  });
});
