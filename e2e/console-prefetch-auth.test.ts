// The data the server components put into the first HTML (components/prefetch.tsx) goes through the same
// authorization and read scope as the API: with sign-in on, a caller without a role gets a page without counts,
// and an Operator of another endpoint gets the event page without the event's details - neither in the markup nor
// in the hydration data. The built console with OIDC sign-in and sealed session cookies (as
// server/auth/routeMatrix.test.ts), over HTTP.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pageAs as fetchPageAs, PREFETCH_CALLERS, PREFETCH_ROLE_MAP, type PrefetchCaller } from '../server/testing/prefetchCallers.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'prefetch-auth-session-secret-0123456789-abcdef';

let ui: SeededConsole | undefined;

const pageAs = (caller: PrefetchCaller, path: string): Promise<string> => fetchPageAs(ui!, caller, path);

before(async () => {
  ui = await startSeededConsole({
    browser: false,
    auth: { sessionSecret: SECRET, roleMap: PREFETCH_ROLE_MAP },
  });
});

after(() => ui?.close());

describe('prefetched data follows the caller’s rights', () => {
  test('the Endpoints page: counts for a Reader, none for a caller without a role', async () => {
    assert.match(await pageAs('siteReader', '/'), /aria-label="2 failed"/);
    const roleless = await pageAs('roleless', '/');
    assert.doesNotMatch(roleless, /aria-label="2 failed"/);
    assert.doesNotMatch(roleless, /data-endpoint="billingendpoint"/);
  });

  test('an event page: details for a site-wide Reader, none for an Operator of another endpoint', async () => {
    // ORD-200 is evt-failed-1's session: only its details carry it (the overview has no session ids).
    assert.match(await pageAs('siteReader', '/endpoints/billingendpoint/events/evt-failed-1'), /ORD-200/);
    assert.doesNotMatch(await pageAs('crmOperator', '/endpoints/billingendpoint/events/evt-failed-1'), /ORD-200/);
  });

  test('an event page: the caller\'s permissions are prefetched, so a Reader gets no Resubmit / Skip buttons in it', async () => {
    const html = await pageAs('siteReader', '/endpoints/billingendpoint/events/evt-failed-1');
    assert.match(html, /ORD-200/);
    assert.doesNotMatch(html, />Resubmit</);
    assert.doesNotMatch(html, />Skip</);
  });
  test('an unknown endpoint is told apart only for a caller who may read the endpoints', async () => {
    // What a caller learns of a page: its status and whether it carries the not-found view.
    const seen = async (path: string, caller?: PrefetchCaller) => {
      const res = await fetch(ui!.url + path, {
        redirect: 'manual',
        headers: caller ? { cookie: ui!.sessionCookie(PREFETCH_CALLERS[caller]) } : {},
      });
      return { status: res.status, notFound: /NEXT_HTTP_ERROR_FALLBACK;404/.test(await res.text()) };
    };
    for (const caller of [undefined, 'roleless'] as const) {
      for (const tail of ['', '/events/evt-x']) {
        // Before, the unknown one was 404 (signed in without a role) or carried the not-found view (nobody signed
        // in): anyone could list the catalog's endpoint names.
        assert.deepEqual(await seen(`/endpoints/nosuchendpoint${tail}`, caller), await seen(`/endpoints/billingendpoint${tail}`, caller), `${caller ?? 'nobody signed in'} ${tail}`);
      }
    }
    assert.equal((await seen('/endpoints/nosuchendpoint', 'siteReader')).status, 404);
  });
});
