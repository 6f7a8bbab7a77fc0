// The role grants' container opened on first use through the real routes (Admin → Access: GET and POST
// /api/admin/grants), on the embedded stack with the console's store behind the fault proxy: a store that does not
// answer, or Cosmos refusing to create the container (403, as it refuses an identity with Entra data-plane roles
// only), is a JSON 503 - naming the container for the 403 - not a 500 "internal error". With sign-in on, every
// signed-in request reads the grants (authorize.ts rolesOf), so this was every page's answer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFaultProxy, type FaultProxy } from '../../lib/store/testing/faultProxy.ts';
import { routeRequest, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { log, setConsoleLogSink } from '../log.ts';
import { GRANTS_CONTAINER } from './grants.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
// A handful of grant writes: well within any burst, set so the rate limit never decides an answer here.
process.env.NIMBUS_RATE_LIMIT_BURST = '1000';

let stack: ConsoleTestStack;
let proxy: FaultProxy;

before(async () => {
  stack = await startRouteTestStack('grantsopen');
  proxy = await startFaultProxy(stack.cosmos.endpoint);
  process.env.NIMBUS_COSMOS_ENDPOINT = proxy.endpoint;
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

type Answer = { status: number; body: { error?: string; detail?: string; grants?: unknown[] } };
const grant = { subjectKind: 'user', subject: 'someone', role: 'Reader' };
async function call(method: 'GET' | 'POST'): Promise<Answer> {
  const route = await import('../../app/api/admin/grants/route.ts');
  const r = await route[method](routeRequest(method, '/api/admin/grants', method === 'POST' ? grant : undefined));
  return { status: r.status, body: (await r.json()) as Answer['body'] };
}

// In order: the container is never created until the last test, so each of the first two meets a first open.
test('the store down before the grants were ever read: 503 unavailable (try again), not 500', async () => {
  // The console's context opened while the store answers, as on a console that has served other pages.
  await (await import('../context.ts')).getContext();
  proxy.inject({ status: 503 });
  try {
    for (const method of ['GET', 'POST'] as const) {
      const a = await call(method);
      assert.deepEqual([a.status, a.body.error], [503, 'unavailable'], `${method}: ${JSON.stringify(a.body)}`);
    }
  } finally {
    proxy.clear();
  }
});

test('Cosmos refuses to create the grants container (403): 503 naming it, logged once', async () => {
  const records: Array<Record<string, unknown>> = [];
  const level = log.level;
  setConsoleLogSink((record) => records.push(JSON.parse(record) as Record<string, unknown>));
  log.level = 'warn';
  // The container's creation (POST .../colls) refused, as Cosmos refuses an identity with data-plane roles only.
  proxy.inject({ status: 403, match: (r) => r.method === 'POST' && /\/colls$/.test(r.path) });
  try {
    for (const method of ['GET', 'POST', 'GET'] as const) {
      const a = await call(method);
      assert.equal(a.status, 503, `${method}: ${JSON.stringify(a.body)}`);
      assert.equal(a.body.error, 'not configured');
      assert.match(a.body.detail ?? '', new RegExp(`container ${GRANTS_CONTAINER} is missing .* must be created as docs/deploy\\.md shows`));
    }
  } finally {
    proxy.clear();
    log.level = level;
    setConsoleLogSink(undefined);
  }
  const errors = records.filter((r) => r.level === 50 && r.container === GRANTS_CONTAINER);
  assert.equal(errors.length, 1, `one error logged naming the container: ${JSON.stringify(records)}`);
});

test('a failed open is not remembered: once the store answers, grants are read and written', async () => {
  const posted = await call('POST');
  assert.equal(posted.status, 201, JSON.stringify(posted.body));
  const read = await call('GET');
  assert.equal(read.status, 200, JSON.stringify(read.body));
  assert.equal(read.body.grants?.length, 1);
});
