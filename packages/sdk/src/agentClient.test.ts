// What the AgentClient refuses before sending anything (a fetch that counts the requests stands in for the
// console; nothing here needs one). The client against the console's real routes: packages/sdk/e2e/agentApi.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentClient, AgentRequestError, PUBLISH_IN_FLIGHT_CODE, type AgentSettleInput } from './agentClient.ts';
import { HandoffClientError } from './handoffClient.ts';

test('settle refuses a failed outcome with a note before any request: the console would refuse it with 400', async () => {
  let requests = 0;
  const client = new AgentClient({
    consoleUrl: 'http://127.0.0.1:1',
    fetch: async () => {
      requests++;
      return new Response(null, { status: 503 });
    },
    retry: { attempts: 1 },
  });
  const where = { endpointId: 'erpendpoint', eventId: 'e-1', messageId: 'm-1' };
  // A JavaScript caller's shape: the TypeScript type has no note on a failure.
  const noted = { ...where, outcome: 'failed', errorText: 'period closed', note: 'will retry tomorrow' } as unknown as AgentSettleInput;
  const err = await client.settle(noted).then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof HandoffClientError, String(err));
  assert.match(err.message, /note belongs to a completed outcome/);
  await assert.rejects(client.settle({ ...where, outcome: 'failed', errorText: '  ' }), /errorText is required/);
  assert.equal(requests, 0);
});

test('a call whose token provider gives no token fails at once with a HandoffClientError: nothing sent, nothing retried', async () => {
  // A configuration fault, answered the same however often asked. Before, a credential's empty answer was taken for
  // a failure to reach the identity provider: asked again on each of the 4 attempts, then "got no answer" (status 0).
  let requests = 0;
  let asked = 0;
  const client = new AgentClient({
    consoleUrl: 'http://127.0.0.1:1',
    token: { credential: { getToken: () => (asked++, Promise.resolve(null)) }, scope: 'api://nimbus-console/.default' },
    fetch: async () => {
      requests++;
      return new Response(null, { status: 503 });
    },
    retry: { attempts: 4, initialMs: 1, maxMs: 5 },
  });
  const err = await client.catalog().then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof HandoffClientError && !(err instanceof AgentRequestError), String(err));
  assert.equal(err.name, 'NoTokenError');
  assert.match(err.message, /the credential gave no token for the console/);
  assert.equal(asked, 1);
  assert.equal(requests, 0);
});

test('after the console refused a token (401), the next ask tells the provider to refresh, once: a cached token is not sent again', async () => {
  // Before, the provider was asked alike every time, and one that caches its token (as it should) answered the
  // refused one again: every retry refused until its cache let go.
  const asks: unknown[] = [];
  let cached = 'tok-revoked';
  const answers = [401, 200, 200];
  const sent: Array<string | null> = [];
  const client = new AgentClient({
    consoleUrl: 'http://127.0.0.1:1',
    token: (_signal, request) => {
      asks.push(request);
      if (request?.refresh) cached = 'tok-new';
      return cached;
    },
    fetch: async (_url, init) => {
      sent.push(new Headers(init?.headers).get('authorization'));
      const status = answers.shift() ?? 500;
      return status === 401
        ? Response.json({ error: 'unauthorized', detail: 'no valid session or bearer token' }, { status })
        : Response.json({ endpoints: [], eventTypes: [] });
    },
    retry: { attempts: 1 },
  });
  const refused = await client.catalog().then(
    () => assert.fail('expected a 401'),
    (e: unknown) => e,
  );
  assert.ok(refused instanceof AgentRequestError && refused.status === 401, String(refused));
  await client.catalog();
  await client.catalog();
  assert.deepEqual(asks, [{ refresh: false }, { refresh: true }, { refresh: false }]);
  assert.deepEqual(sent, ['Bearer tok-revoked', 'Bearer tok-new', 'Bearer tok-new']);
});

test('receive sends the ids in hand in exclude, and each id with a comma whole in an excludeId of its own', async () => {
  // The console splits exclude on ','. Before, "INV,77" went into it and excluded "INV" and "77" instead.
  const asked: URL[] = [];
  const client = new AgentClient({
    consoleUrl: 'http://127.0.0.1:1',
    fetch: async (url) => {
      asked.push(new URL(String(url)));
      return new Response(null, { status: 204 });
    },
    retry: { attempts: 1 },
  });
  assert.equal(await client.receive({ endpointId: 'erpendpoint', waitSeconds: 0, exclude: ['evt-1', 'INV,77', ' evt-2', ',', 'a,b,c'] }), null);
  assert.equal(await client.receive({ endpointId: 'erpendpoint', waitSeconds: 0, exclude: ['evt-1'] }), null);
  assert.equal(await client.receive({ endpointId: 'erpendpoint', waitSeconds: 0, exclude: ['INV,77'] }), null);
  assert.deepEqual(
    asked.map((u) => [u.searchParams.get('exclude'), u.searchParams.getAll('excludeId')]),
    [
      ['evt-1, evt-2', ['INV,77', ',', 'a,b,c']],
      ['evt-1', []],
      [null, ['INV,77']],
    ],
  );
});

test('settle and publish refuse what JSON cannot encode (a circular result, a BigInt) with a HandoffClientError: no token asked, nothing sent', async () => {
  // The same every time, so the caller's to fix. Before, JSON.stringify's TypeError came out as it was - not a
  // HandoffClientError, and in serve not told from a transient failure: retried for ever (agentServe.test.ts).
  let requests = 0;
  let asked = 0;
  const client = new AgentClient({
    consoleUrl: 'http://127.0.0.1:1',
    token: () => (asked++, 'tok-1'),
    fetch: async () => {
      requests++;
      return new Response(null, { status: 503 });
    },
    retry: { attempts: 1 },
  });
  const where = { endpointId: 'erpendpoint', eventId: 'e-1', messageId: 'm-1' };
  const circular: Record<string, unknown> = { journal: 'J-1' };
  circular.self = circular;
  const refusal = (call: Promise<unknown>) =>
    call.then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => e,
    );
  for (const [name, result, why] of [
    ['circular', circular, /circular structure.*property 'self' closes the circle/],
    ['BigInt', { amount: 10n }, /BigInt/],
  ] as const) {
    const err = await refusal(client.settle({ ...where, outcome: 'completed', result }));
    assert.ok(err instanceof HandoffClientError && !(err instanceof AgentRequestError), `${name}: ${String(err)}`);
    assert.match(err.message, /^the settlement \(its result\) cannot be encoded as JSON, so nothing was sent: /);
    assert.match(err.message, why);
  }
  const err = await refusal(client.publish({ eventTypeId: 'OrderPlaced', payload: { total: 1n } }));
  assert.ok(err instanceof HandoffClientError && !(err instanceof AgentRequestError), String(err));
  assert.match(err.message, /^the event \(its payload\) cannot be encoded as JSON, so nothing was sent: .*BigInt/);
  assert.deepEqual([asked, requests], [0, 0]);
});

test('a timeoutMs or retry option that could never work is refused at construction, as the handoff client refuses it', () => {
  // Before: a NaN or negative timeoutMs made every request throw a RangeError (AbortSignal.timeout), which serve
  // retried with backoff for ever; attempts NaN never ended a call's retries.
  for (const options of [{ timeoutMs: Number.NaN }, { timeoutMs: -5 }, { retry: { attempts: Number.NaN } }]) {
    assert.throws(
      () => new AgentClient({ consoleUrl: 'http://127.0.0.1:1', ...options }),
      (err: unknown) => err instanceof HandoffClientError && /invalid client options/.test(err.message),
      JSON.stringify(options),
    );
  }
});

test('a publish answered 409 "publish-in-flight" is retried after its Retry-After and gets the first attempt\'s outcome; other 409s are not retried', async () => {
  // The console answers this 409 while an earlier attempt of the same publish is still being sent. Before, every 409
  // was a refusal: the publish was thrown at once, its outcome never asked for.
  const answers: Response[] = [];
  const client = new AgentClient({
    consoleUrl: 'http://127.0.0.1:1',
    fetch: async () => answers.shift() ?? new Response(null, { status: 500 }),
    retry: { attempts: 3, initialMs: 1, maxMs: 5 },
  });
  const published = { endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', messageId: 'OrderPlaced-1', sessionId: 'ORD-1', correlationId: 'c-1' };
  const inFlight = () => {
    return Response.json({ error: 'conflict', detail: 'being published by an earlier attempt', code: PUBLISH_IN_FLIGHT_CODE }, { status: 409, headers: { 'retry-after': '1' } });
  };
  answers.push(inFlight(), Response.json({ ...published, replayed: true }));
  assert.deepEqual(await client.publish({ eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-1' } }), { ...published, replayed: true });
  assert.equal(answers.length, 0, 'asked again after the 409');

  // Past the attempts: a clear error carrying the code, so the caller knows to publish again later.
  answers.push(inFlight(), inFlight(), inFlight());
  const err = await client.publish({ eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-1' } }).then(
    () => assert.fail('expected the 409'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof AgentRequestError && err.status === 409 && err.code === PUBLISH_IN_FLIGHT_CODE, String(err));
  assert.equal(answers.length, 0, 'all three attempts made');

  // Any other 409 stays a refusal: a publish's untagged one, and a settlement's.
  answers.push(Response.json({ error: 'conflict', detail: 'published by another principal' }, { status: 409 }), Response.json(published));
  await assert.rejects(client.publish({ eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-1' } }), (e: unknown) => e instanceof AgentRequestError && e.status === 409);
  assert.equal(answers.length, 1, 'not retried');
  answers.length = 0;
  answers.push(Response.json({ error: 'conflict', detail: 'x', code: PUBLISH_IN_FLIGHT_CODE }, { status: 409 }), Response.json({}));
  await assert.rejects(client.settle({ endpointId: 'e', eventId: 'v', messageId: 'm', outcome: 'completed' }), (e: unknown) => e instanceof AgentRequestError && e.status === 409);
  assert.equal(answers.length, 1, 'a settlement\'s 409 is never retried, whatever its code');
});
