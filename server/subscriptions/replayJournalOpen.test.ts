// The replay journal's container opened on first use through the real route (the replay preview, which reads the
// journal's open records whatever the queue holds), on the embedded stack with the console's store behind the fault
// proxy: a store that does not answer, or Cosmos refusing to create the container (403, as it refuses an identity
// with Entra data-plane roles only), is a JSON 503 - naming the container for the 403 - not a 500 "internal error".
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFaultProxy, type FaultProxy } from '../../lib/store/testing/faultProxy.ts';
import { routeRequest, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { log, setConsoleLogSink } from '../log.ts';
import { JOURNAL_CONTAINER } from './replayJournal.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
// A handful of previews: well within any burst, set so the rate limit never decides an answer here.
process.env.NIMBUS_RATE_LIMIT_BURST = '1000';

let stack: ConsoleTestStack;
let proxy: FaultProxy;

before(async () => {
  stack = await startRouteTestStack('journalopen');
  proxy = await startFaultProxy(stack.cosmos.endpoint);
  process.env.NIMBUS_COSMOS_ENDPOINT = proxy.endpoint;
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

const params = { params: Promise.resolve({ topic: 'Resolver', subscription: 'Resolver' }) };
async function preview(): Promise<{ status: number; body: { error?: string; detail?: string } }> {
  const route = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts');
  const r = await route.POST(routeRequest('POST', '/api/topology/subscriptions/Resolver/Resolver/replay/preview', { all: true }), params);
  return { status: r.status, body: (await r.json()) as { error?: string; detail?: string } };
}

// In order: the container is never created until the last test, so each of the first two meets a first open.
test('the store down before the journal was ever opened: 503 unavailable (try again), not 500', async () => {
  // The console's context opened while the store answers, as on a console that has served other pages.
  await (await import('../context.ts')).getContext();
  proxy.inject({ status: 503 });
  try {
    for (const attempt of [1, 2]) {
      const a = await preview();
      assert.deepEqual([a.status, a.body.error], [503, 'unavailable'], `attempt ${attempt}: ${JSON.stringify(a.body)}`);
    }
  } finally {
    proxy.clear();
  }
});

test('Cosmos refuses to create the journal container (403): 503 naming it, logged once', async () => {
  const records: Array<Record<string, unknown>> = [];
  const level = log.level;
  setConsoleLogSink((record) => records.push(JSON.parse(record) as Record<string, unknown>));
  log.level = 'warn';
  // The container's creation (POST .../colls) refused, as Cosmos refuses an identity with data-plane roles only.
  proxy.inject({ status: 403, match: (r) => r.method === 'POST' && /\/colls$/.test(r.path) });
  try {
    for (const attempt of [1, 2, 3]) {
      const a = await preview();
      assert.equal(a.status, 503, `attempt ${attempt}: ${JSON.stringify(a.body)}`);
      assert.equal(a.body.error, 'not configured');
      assert.match(a.body.detail ?? '', new RegExp(`container ${JOURNAL_CONTAINER} is missing .* must be created as docs/deploy\\.md shows`));
    }
  } finally {
    proxy.clear();
    log.level = level;
    setConsoleLogSink(undefined);
  }
  const errors = records.filter((r) => r.level === 50);
  assert.equal(errors.length, 1, `one error logged: ${JSON.stringify(records)}`);
  assert.equal(errors[0]!.container, JOURNAL_CONTAINER);
});

test('a failed open is not remembered: once the store answers, the preview opens the journal', async () => {
  const ok = await preview();
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
});
