// Review finding (fixed): the subscription page's layout (app/topology/subscriptions/[topic]/[subscription]/layout.tsx)
// asked the broker whether the subscription exists for ANY signed-in caller - one holding no console role, or only the
// Agent role - and answered an unknown one 404 (notFound()) and a known one with the page. The endpoint layout
// (app/endpoints/[endpointId]/layout.tsx) was fixed for exactly this ("Before, the 404 came first, so anyone could tell
// which endpoint names exist"): there the lookup runs only for a caller who may read. Here, topics are named after
// endpoints and subscriptions after their consumers, so a roleless account of the tenant (or an Agent-only app
// identity) could enumerate the endpoints and who consumes whom. Now the layout authorizes the dead-letter read first.
//
// The layout runs here inside the request scope Next.js gives a page render (work / work-unit async storage), with
// the caller's Cookie header: currentViewer() and notFound() behave as under `next start`.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { AsyncLocalStorage } from 'node:async_hooks';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from './session.ts';
import type { Principal } from './principal.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'review-layout-session-secret-0123456789-abcdef';

useConsoleStack({
  database: 'review-layout',
  env: { ...oidcTestEnv(SECRET, { groups: { 'billing-agents': 'Agent:billingendpoint', 'billing-readers': 'Reader:billingendpoint', readers: 'Reader' } }) },
  seed: true,
});

// What Next's server installs before anything of it loads (next/dist/server/node-environment).
(globalThis as Record<string, unknown>).AsyncLocalStorage ??= AsyncLocalStorage;
const require = createRequire(import.meta.url);
const { workAsyncStorage } = require('next/dist/server/app-render/work-async-storage.external.js') as {
  workAsyncStorage: { run: <T>(store: unknown, fn: () => T) => T };
};
const { workUnitAsyncStorage } = require('next/dist/server/app-render/work-unit-async-storage.external.js') as {
  workUnitAsyncStorage: { run: <T>(store: unknown, fn: () => T) => T };
};

// The layouts belong to the Next.js program (tsconfig.next.json, JSX); computed specifiers keep them out of this one's.
const subscriptionLayoutModule = '../../app/topology/subscriptions/[topic]/[subscription]/layout.tsx';
const endpointLayoutModule = '../../app/endpoints/[endpointId]/layout.tsx';

const user = (id: string, groups: string[]): Principal => ({ kind: 'user', id, name: `${id}@test`, roles: [], groups });

/** Renders the layout for `who` as a page request would; 404 when it calls notFound(), else 200. */
async function renderLayout(who: Principal, topic: string, subscription: string): Promise<number> {
  const layout = (await import(subscriptionLayoutModule)).default as (p: {
    children: unknown;
    params: Promise<{ topic: string; subscription: string }>;
  }) => Promise<unknown>;
  return inPageRequest(who, () => layout({ children: 'page', params: Promise.resolve({ topic, subscription }) }));
}

/** The endpoint layout, the one already fixed for the same probe (control). */
async function renderEndpointLayout(who: Principal, endpointId: string): Promise<number> {
  const layout = (await import(endpointLayoutModule)).default as (p: {
    children: unknown;
    params: Promise<{ endpointId: string }>;
  }) => Promise<unknown>;
  return inPageRequest(who, () => layout({ children: 'page', params: Promise.resolve({ endpointId }) }));
}

async function inPageRequest(who: Principal, render: () => Promise<unknown>): Promise<number> {
  const headers = new Headers({ host: '127.0.0.1:3000', cookie: `${SESSION_COOKIE}=${sealSession(who, { secret: SECRET, maxAgeSeconds: 600 })}` });
  const workStore = { route: '/topology/subscriptions/[topic]/[subscription]', forceStatic: false, dynamicShouldError: false, isStaticGeneration: false };
  const requestStore = { type: 'request', phase: 'render', headers, implicitTags: { tags: [] } };
  try {
    await workAsyncStorage.run(workStore, () => workUnitAsyncStorage.run(requestStore, render));
    return 200;
  } catch (err) {
    const digest = (err as { digest?: string }).digest ?? '';
    if (digest.includes(';404')) return 404;
    throw err;
  }
}

describe('the subscription layout answers existence only to callers who may read the subscription', () => {
  test('a billing Reader (may read): a real subscription is the page, an unknown one 404 (control)', async () => {
    const reader = user('oid-reader', ['billing-readers']);
    assert.equal(await renderLayout(reader, 'billingendpoint', 'billingendpoint'), 200);
    assert.equal(await renderLayout(reader, 'billingendpoint', 'no-such-subscription'), 404);
  });

  test('control: the endpoint layout (fixed for this probe) answers a roleless caller the same for known and unknown endpoints', async () => {
    const roleless = user('oid-roleless', []);
    assert.equal(await renderEndpointLayout(roleless, 'billingendpoint'), 200);
    assert.equal(await renderEndpointLayout(roleless, 'guessedendpoint'), 200);
    assert.equal(await renderEndpointLayout(user('oid-reader', ['billing-readers']), 'guessedendpoint'), 404, 'a reader gets the 404');
  });

  // The layout authorizes as the page's own read does (GET …/deadletters): Reader of the topic's endpoint.
  test('a Reader of another endpoint: erpendpoint answers the same whether it exists or not; a site-wide Reader gets the 404', async () => {
    const reader = user('oid-reader', ['billing-readers']);
    assert.deepEqual(
      {
        known: await renderLayout(reader, 'erpendpoint', 'erpendpoint'),
        unknown: await renderLayout(reader, 'erpendpoint', 'no-such-subscription'),
        unknownTopic: await renderLayout(reader, 'guessedendpoint', 'guessedendpoint'),
      },
      { known: 200, unknown: 200, unknownTopic: 200 },
      "billingendpoint's Reader learns nothing about other endpoints' subscriptions",
    );
    const siteReader = user('oid-site-reader', ['readers']);
    assert.equal(await renderLayout(siteReader, 'erpendpoint', 'erpendpoint'), 200);
    assert.equal(await renderLayout(siteReader, 'erpendpoint', 'no-such-subscription'), 404);
    assert.equal(await renderLayout(siteReader, 'guessedendpoint', 'guessedendpoint'), 404);
  });

  for (const [label, who] of [
    ['signed in, no console role', user('oid-roleless', [])],
    ['Agent role only (reads nothing)', user('oid-agent', ['billing-agents'])],
  ] as const) {
    test(`${label}: the answer must not depend on whether the subscription exists`, async () => {
      const known = await renderLayout(who, 'billingendpoint', 'billingendpoint');
      const unknown = await renderLayout(who, 'billingendpoint', 'no-such-subscription');
      const unknownTopic = await renderLayout(who, 'guessedendpoint', 'guessedendpoint');
      assert.deepEqual(
        { known, unknown, unknownTopic },
        { known: 200, unknown: 200, unknownTopic: 200 },
        'a caller that may read no endpoint learns which topics and subscriptions exist from 200 vs 404',
      );
    });
  }
});
