// Containers opened on first use, through the real routes that first open them, on the embedded stack with the
// console's store behind the fault proxy: a store that does not answer, or Cosmos refusing to create the container
// (403, as it refuses an identity with Entra data-plane roles only), or refusing even to read it (403: a firewall,
// key sign-in turned off, no data-plane role), is a JSON 503 - naming the container and which of the two it is - not a
// 500 "internal error", logged once until the container opens; and a failed open is not remembered. The role grants (Admin → Access: GET and
// POST /api/admin/grants; with sign-in on, every signed-in request reads them: authorize.ts rolesOf) and the replay
// journal (the replay preview reads its open records whatever the queue holds). Each container has its own slot
// (lib/store/containers.ts), so one process meets each first open in turn.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFaultProxy, type FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { routeRequest, startRouteTestStack, type ConsoleTestStack } from './testing/routeStack.ts';
import { log, setConsoleLogSink } from './log.ts';
import { GRANTS_CONTAINER } from './auth/grants.ts';
import { JOURNAL_CONTAINER } from './subscriptions/replayJournal.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
// A handful of writes: well within any burst, set so the rate limit never decides an answer here.
process.env.NIMBUS_RATE_LIMIT_BURST = '1000';

let stack: ConsoleTestStack;
let proxy: FaultProxy;

before(async () => {
  stack = await startRouteTestStack('containeropen');
  proxy = await startFaultProxy(stack.cosmos.endpoint);
  process.env.NIMBUS_COSMOS_ENDPOINT = proxy.endpoint;
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

type Answer = { status: number; body: { error?: string; detail?: string; grants?: unknown[] } };
const answer = async (r: Response): Promise<Answer> => ({ status: r.status, body: (await r.json()) as Answer['body'] });

const grant = { subjectKind: 'user', subject: 'someone', role: 'Reader' };
async function grants(method: 'GET' | 'POST'): Promise<Answer> {
  const route = await import('../app/api/admin/grants/route.ts');
  return answer(await route[method](routeRequest(method, '/api/admin/grants', method === 'POST' ? grant : undefined)));
}
async function preview(): Promise<Answer> {
  const route = await import('../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts');
  const params = { params: Promise.resolve({ topic: 'Resolver', subscription: 'Resolver' }) };
  return answer(await route.POST(routeRequest('POST', '/api/topology/subscriptions/Resolver/Resolver/replay/preview', { all: true }), params));
}

const cases = [
  {
    container: GRANTS_CONTAINER,
    // Both methods meet the first open; a later GET meets it again (a failed open is forgotten).
    calls: [() => grants('GET'), () => grants('POST'), () => grants('GET')],
    async works() {
      const posted = await grants('POST');
      assert.equal(posted.status, 201, JSON.stringify(posted.body));
      const read = await grants('GET');
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.equal(read.body.grants?.length, 1);
    },
  },
  {
    container: JOURNAL_CONTAINER,
    calls: [preview, preview, preview],
    async works() {
      const ok = await preview();
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    },
  },
];

for (const c of cases) {
  // In order: the container is never created until the last test, so each of the first two meets a first open.
  describe(`the ${c.container} container`, () => {
    test('the store down before it was ever opened: 503 unavailable (try again), not 500', async () => {
      // The console's context opened while the store answers, as on a console that has served other pages.
      await (await import('./context.ts')).getContext();
      proxy.inject({ status: 503 });
      try {
        for (const [i, call] of c.calls.entries()) {
          const a = await call();
          assert.deepEqual([a.status, a.body.error], [503, 'unavailable'], `call ${i + 1}: ${JSON.stringify(a.body)}`);
        }
      } finally {
        proxy.clear();
      }
    });

    test('Cosmos refuses to create it (403): 503 naming it, logged once', async () => {
      const records: Array<Record<string, unknown>> = [];
      const level = log.level;
      setConsoleLogSink((record) => records.push(JSON.parse(record) as Record<string, unknown>));
      log.level = 'warn';
      // The container's creation (POST .../colls) refused, as Cosmos refuses an identity with data-plane roles only.
      proxy.inject({ status: 403, match: (r) => r.method === 'POST' && /\/colls$/.test(r.path) });
      try {
        for (const [i, call] of c.calls.entries()) {
          const a = await call();
          assert.equal(a.status, 503, `call ${i + 1}: ${JSON.stringify(a.body)}`);
          assert.equal(a.body.error, 'not configured');
          assert.match(a.body.detail ?? '', new RegExp(`container ${c.container} is missing .* must be created as docs/deploy\\.md shows`));
        }
      } finally {
        proxy.clear();
        log.level = level;
        setConsoleLogSink(undefined);
      }
      const errors = records.filter((r) => r.level === 50 && r.container === c.container);
      assert.equal(errors.length, 1, `one error logged naming the container: ${JSON.stringify(records)}`);
    });

    test('its read refused (403: firewall, key sign-in off, no data-plane role): 503 saying access is refused, not missing; logged once', async () => {
      const { answers, errors } = await logged(async () => {
        // Only the container's read (GET .../colls/<id>): the store's own containers are open already.
        proxy.inject({ status: 403, match: (r) => r.method === 'GET' && r.path.endsWith(`/colls/${c.container}`) });
        try {
          const answers: Answer[] = [];
          for (const call of c.calls) answers.push(await call());
          return answers;
        } finally {
          proxy.clear();
        }
      });
      for (const [i, a] of answers.entries()) {
        assert.deepEqual([a.status, a.body.error], [503, 'not configured'], `call ${i + 1}: ${JSON.stringify(a.body)}`);
        assert.match(a.body.detail ?? '', new RegExp(`container ${c.container} .*refused`));
        assert.doesNotMatch(a.body.detail ?? '', /missing/);
      }
      assert.equal(errors(c.container).length, 1, 'one error logged naming the container');
    });

    test('a failed open is not remembered: once the store answers, it is opened and used', c.works);

    // Once a container opened, a later loss of it is news: logged again, once. Before, the set of containers logged
    // was never cleared, so a container deleted after it had been missing once was answered 503 without a line.
    test('deleted after it opened: 503 missing again, and logged again', async () => {
      const { closeContext } = await import('./context.ts');
      await closeContext(); // a fresh context: the module opens its container again, as a restarted console would
      await stack.store.database.container(c.container).delete();
      const { answers, errors } = await logged(async () => {
        proxy.inject({ status: 403, match: (r) => r.method === 'POST' && /\/colls$/.test(r.path) });
        try {
          return [await c.calls[0]!()];
        } finally {
          proxy.clear();
        }
      });
      assert.equal(answers[0]!.status, 503, JSON.stringify(answers[0]!.body));
      assert.match(answers[0]!.body.detail ?? '', new RegExp(`container ${c.container} is missing`));
      assert.equal(errors(c.container).length, 1, 'logged again');
      await c.works();
    });
  });
}

/** Runs `calls` with the console's log captured (warnings and errors); `errors` are the error records naming a container. */
async function logged(calls: () => Promise<Answer[]>) {
  const records: Array<Record<string, unknown>> = [];
  const level = log.level;
  setConsoleLogSink((record) => records.push(JSON.parse(record) as Record<string, unknown>));
  log.level = 'warn';
  try {
    const answers = await calls();
    return { answers, errors: (container: string) => records.filter((r) => r.level === 50 && r.container === container) };
  } finally {
    log.level = level;
    setConsoleLogSink(undefined);
  }
}
