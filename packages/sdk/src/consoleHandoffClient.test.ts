// The HTTP handoff client's own behaviour against a scripted HTTP server on loopback (real sockets, real fetch):
// what it sends, which answers it retries, what it refuses before sending anything. The console's route handlers
// are exercised in packages/sdk/e2e/consoleHandoff.test.ts.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ConsoleHandoffClient,
  ConsoleTokens,
  HandoffRequestError,
  type ConsoleHandoffClientOptions,
  type TokenProvider,
  type TokenRequest,
} from './consoleHandoffClient.ts';
import { HandoffClientError } from './handoffClient.ts';

interface Seen {
  method: string;
  url: string;
  authorization?: string;
  contentType?: string;
  body: string;
}

type Script = (req: IncomingMessage, res: ServerResponse, seen: Seen) => void;

let server: Server;
let base: string;
let seen: Seen[] = [];
let script: Script[] = [];

const ok = (res: ServerResponse, outcome: 'sent' | 'duplicate' = 'sent') => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ endpointId: 'erp', eventId: 'e-1', sessionId: 's-1', outcome, messageId: 'cmd-1', messageType: 'HandoffCompletedRequest' }));
};
const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        ...(req.headers['content-type'] ? { contentType: req.headers['content-type'] } : {}),
      };
      seen.push(s);
      const step = script.shift() ?? ((_q: IncomingMessage, r: ServerResponse) => ok(r));
      step(req, res, s);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen = [];
  script = [];
});

const where = { endpointId: 'erp', eventId: 'e-1', messageId: 'ho/1 2' };
let tokenCalls = 0;
const client = (options: Partial<ConsoleHandoffClientOptions> = {}) =>
  new ConsoleHandoffClient({
    consoleUrl: base,
    token: () => {
      tokenCalls++;
      return 'tok-123';
    },
    retry: { initialMs: 1, maxMs: 5 },
    ...options,
  });

describe('ConsoleHandoffClient', () => {
  test('complete: POSTs the result and note with the bearer token to the handoff route, ids encoded', async () => {
    const settled = await client().complete(where, { importedLines: 12 }, { note: 'imported' });
    assert.deepEqual(settled, { endpointId: 'erp', eventId: 'e-1', sessionId: 's-1', outcome: 'sent', messageId: 'cmd-1', messageType: 'HandoffCompletedRequest' });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.method, 'POST');
    assert.equal(seen[0]!.url, '/api/event/handoff/complete/erp/e-1/ho%2F1%202');
    assert.equal(seen[0]!.authorization, 'Bearer tok-123');
    assert.equal(seen[0]!.contentType, 'application/json');
    assert.deepEqual(JSON.parse(seen[0]!.body), { result: { importedLines: 12 }, note: 'imported' });
  });

  test('a string result holding JSON is sent as that JSON (as the bus client does); other strings as strings', async () => {
    await client().complete(where, '{"a":1}');
    await client().complete(where, 'done');
    await client().complete(where);
    assert.deepEqual(seen.map((s) => JSON.parse(s.body) as unknown), [{ result: { a: 1 } }, { result: 'done' }, {}]);
  });

  test('fail: POSTs errorText and errorType; the bus client coordinates fit as they are', async () => {
    await client().fail({ ...where, sessionId: 's-1', correlationId: 'c' } as typeof where, 'DMF job 7 rejected 3 lines', 'DmfRejected');
    assert.equal(seen[0]!.url, '/api/event/handoff/fail/erp/e-1/ho%2F1%202');
    assert.deepEqual(JSON.parse(seen[0]!.body), { errorText: 'DMF job 7 rejected 3 lines', errorType: 'DmfRejected' });
  });

  test('keeps a path prefix of the console URL', async () => {
    await client({ consoleUrl: `${base}/nimbus` }).complete(where);
    assert.equal(seen[0]!.url, '/nimbus/api/event/handoff/complete/erp/e-1/ho%2F1%202');
  });

  test('an @azure/identity-style credential is asked for the console scope', async () => {
    const scopes: unknown[] = [];
    const credential = {
      getToken: (scope: string | string[]) => {
        scopes.push(scope);
        return Promise.resolve({ token: 'cred-tok', expiresOnTimestamp: Date.now() + 3_600_000 });
      },
    };
    await client({ token: { credential, scope: 'api://nimbus-console/.default' } }).complete(where);
    assert.deepEqual(scopes, ['api://nimbus-console/.default']);
    assert.equal(seen[0]!.authorization, 'Bearer cred-tok');
  });

  test('retries 503, 429 and a dropped connection, then answers the settlement; a fresh token per attempt', async () => {
    script = [
      answer(503, { error: 'unavailable', detail: 'try again' }),
      answer(429, { error: 'too many requests', detail: 'wait' }, { 'retry-after': '0' }),
      (req) => req.socket.destroy(),
    ];
    tokenCalls = 0;
    const settled = await client({ retry: { attempts: 4, initialMs: 1, maxMs: 5 } }).complete(where);
    assert.equal(settled.outcome, 'sent');
    assert.equal(seen.length, 4);
    assert.equal(tokenCalls, 4);
  });

  test('gives up after the attempts with the last answer', async () => {
    script = [answer(503, { error: 'unavailable', detail: 'one' }), answer(503, { error: 'unavailable', detail: 'two' })];
    await assert.rejects(client({ retry: { attempts: 2, initialMs: 1 } }).complete(where), (err: unknown) => {
      assert.ok(err instanceof HandoffRequestError);
      assert.equal(err.status, 503);
      assert.equal(err.detail, 'two');
      return true;
    });
    assert.equal(seen.length, 2);
  });

  for (const [status, error] of [[400, 'bad request'], [401, 'unauthorized'], [403, 'forbidden'], [404, 'not found'], [409, 'conflict']] as const) {
    test(`does not retry ${status}; the error carries the console's reason and never the token`, async () => {
      script = [answer(status, { error, detail: `because ${status}` })];
      await assert.rejects(client().complete(where), (err: unknown) => {
        assert.ok(err instanceof HandoffRequestError && err instanceof HandoffClientError);
        assert.equal(err.status, status);
        assert.equal(err.error, error);
        assert.equal(err.detail, `because ${status}`);
        assert.doesNotMatch(`${err.message} ${err.stack}`, /tok-123/);
        return true;
      });
      assert.equal(seen.length, 1);
    });
  }

  test('an attempt that gets no answer in time is abandoned and retried', async () => {
    script = [() => undefined /* never answers */];
    const settled = await client({ timeoutMs: 1500, retry: { attempts: 2, initialMs: 1 } }).complete(where);
    assert.equal(settled.outcome, 'sent');
    assert.equal(seen.length, 2);
  });

  test('does not follow a redirect (it would carry the token elsewhere)', async () => {
    let elsewhere = 0;
    const other = createServer((_req, res) => {
      elsewhere++;
      res.end();
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const target = `http://127.0.0.1:${(other.address() as AddressInfo).port}/steal`;
      script = [(_req, res) => { res.writeHead(307, { location: target }); res.end(); }];
      await assert.rejects(client({ retry: { attempts: 1 } }).complete(where), HandoffRequestError);
      assert.equal(elsewhere, 0);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  test('a 200 that is not a settlement is an error, not a success', async () => {
    script = [answer(200, { hello: 'world' })];
    await assert.rejects(client().complete(where), /unexpected answer/);
  });

  test('refuses before sending: bad coordinates, an empty error text, a plain-http remote URL, credentials in the URL', async () => {
    await assert.rejects(client().complete({ endpointId: 'erp', eventId: '', messageId: 'm' }), /invalid handoff coordinates: .*eventId/);
    await assert.rejects(client().complete({ endpointId: "erp'; x", eventId: 'e', messageId: 'm' }), /invalid handoff coordinates/);
    await assert.rejects(client().fail(where, '  '), /errorText is required/);
    assert.throws(() => client({ consoleUrl: 'http://console.example.com' }), /consoleUrl must be https \(plain http only on loopback\)/);
    assert.throws(() => client({ consoleUrl: 'https://user:pw@console.example.com' }), /must not carry credentials/);
    assert.throws(() => client({ consoleUrl: 'not a url' }), /consoleUrl is not a URL/);
    assert.doesNotThrow(() => client({ consoleUrl: 'https://console.example.com' }));
    assert.equal(seen.length, 0);
  });

  test('refuses retry and time-limit options that could never work, at construction (consoleRequestOptions.ts)', () => {
    // Before: attempts NaN never ended the retry loop (attempt >= NaN is never true), and a NaN or negative timeoutMs
    // made every attempt throw a RangeError from AbortSignal.timeout, retried like a failure.
    const bad: Array<[string, Partial<ConsoleHandoffClientOptions>, RegExp]> = [
      ['attempts NaN', { retry: { attempts: Number.NaN } }, /invalid client options: retry\.attempts/],
      ['attempts 1.5', { retry: { attempts: 1.5 } }, /retry\.attempts is a whole number \(0 or more\) or Infinity/],
      ['initialMs negative', { retry: { initialMs: -1 } }, /retry\.initialMs/],
      ['maxMs Infinity', { retry: { maxMs: Number.POSITIVE_INFINITY } }, /retry\.maxMs/],
      ['timeoutMs NaN', { timeoutMs: Number.NaN }, /timeoutMs/],
      ['timeoutMs 0', { timeoutMs: 0 }, /timeoutMs/],
      ['timeoutMs beyond a timer', { timeoutMs: 2 ** 31 }, /timeoutMs/],
      // A receive adds its wait (up to 30 s) to the limit: the sum must fit a timer too.
      ['timeoutMs within a timer but not with a wait added', { timeoutMs: 2 ** 31 - 1 - 30_000 }, /timeoutMs/],
    ];
    for (const [what, options, words] of bad) {
      assert.throws(() => client(options), (err: unknown) => err instanceof HandoffClientError && words.test(err.message), what);
    }
    // The defaults and 0 attempts (taken as the one first attempt, as always) still construct.
    assert.doesNotThrow(() => client({ retry: { attempts: 0 }, timeoutMs: 1 }));
    // Infinity retried a call for ever, each wait bounded by maxMs: kept.
    assert.doesNotThrow(() => client({ retry: { attempts: Number.POSITIVE_INFINITY } }));
  });

  test('a result JSON cannot encode is refused with a HandoffClientError before anything is sent', async () => {
    // Before: JSON.stringify's own TypeError escaped complete(), not told from a failure to reach the console.
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (const result of [circular, { amount: 10n }]) {
      await assert.rejects(client().complete(where, result), (err: unknown) => err instanceof HandoffClientError && /the settlement \(its result\) cannot be encoded as JSON, so nothing was sent/.test(err.message));
    }
    assert.equal(seen.length, 0);
  });

  test('a token provider that gives no token fails at once with a HandoffClientError: nothing is sent, nothing retried', async () => {
    // A configuration fault, answered the same however often asked. Before, a credential's empty answer was taken
    // for a failure to reach the identity provider and asked again on every attempt (4 here), then reported as "no
    // answer" (HandoffRequestError, status 0).
    let asked = 0;
    const credential = {
      getToken: () => {
        asked++;
        return Promise.resolve(null);
      },
    };
    const providers: Array<[string, ConsoleHandoffClientOptions['token'], RegExp]> = [
      ['a credential answering null', { credential, scope: 'api://nimbus-console/.default' }, /the credential gave no token for the console \(undefined\)/],
      ['a provider answering an empty string', () => (asked++, ''), /the token provider gave no token for the console \(an empty string\)/],
      ['a provider answering spaces', () => (asked++, '  '), /\(a blank string\)/],
      ['a provider answering undefined', (() => (asked++, undefined)) as unknown as () => string, /\(undefined\)/],
    ];
    for (const [what, token, words] of providers) {
      asked = 0;
      await assert.rejects(client({ token, retry: { attempts: 4, initialMs: 1, maxMs: 5 } }).complete(where), (err: unknown) => {
        assert.ok(err instanceof HandoffClientError && !(err instanceof HandoffRequestError), `${what}: ${String(err)}`);
        assert.equal(err.name, 'NoTokenError', what);
        assert.match(err.message, words, what);
        return true;
      });
      assert.equal(asked, 1, `${what}: asked once, not once per attempt`);
    }
    assert.equal(seen.length, 0);
  });

  test('after the console refused a token (401), the next ask tells the provider to refresh, once', async () => {
    // A 401 is not retried by the call; the caller's next one must not be sent the refused token from a cache again.
    script = [answer(401, { error: 'unauthorized', detail: 'no valid session or bearer token' })];
    const asks: unknown[] = [];
    let cached = 'tok-revoked';
    const c = client({
      token: (_signal, request) => {
        asks.push(request);
        if (request?.refresh) cached = 'tok-new';
        return cached;
      },
    });
    await assert.rejects(c.complete(where), (err: unknown) => err instanceof HandoffRequestError && err.status === 401);
    await c.complete(where);
    await c.complete(where);
    assert.deepEqual(asks, [{ refresh: false }, { refresh: true }, { refresh: false }]);
    assert.deepEqual(
      seen.map((s) => s.authorization),
      ['Bearer tok-revoked', 'Bearer tok-new', 'Bearer tok-new'],
    );
  });

  test('a provider written with a required TokenRequest parameter is a TokenProvider (the typecheck holds this), and is given the request', async () => {
    // Before, TokenProvider's request was optional, and under strict function types this provider was refused by
    // tsc (TS2322): the natural signature did not compile, while a wrapper dropping the hint did.
    const asks: TokenRequest[] = [];
    const withRequest = (_signal: AbortSignal, request: TokenRequest): string => {
      asks.push(request);
      return request.refresh ? 'tok-new' : 'tok-123';
    };
    const typed: TokenProvider = withRequest;
    const oneParameter: TokenProvider = (_signal: AbortSignal) => 'tok-123';
    await client({ token: typed }).complete(where);
    await client({ token: oneParameter }).complete(where);
    assert.deepEqual(asks, [{ refresh: false }]);
    assert.deepEqual(
      seen.map((s) => s.authorization),
      ['Bearer tok-123', 'Bearer tok-123'],
    );
  });

  test('a refresh the provider fails (it throws) is asked for again on the next attempt, not given up', async () => {
    // Before, the hint was cleared as it was asked: the provider's throw used it up, and the retry asked
    // { refresh: false } and was answered the refused token from the cache.
    script = [answer(401, { error: 'unauthorized', detail: 'no valid session or bearer token' })];
    const asks: boolean[] = [];
    let cached = 'tok-revoked';
    let failRefresh = true;
    const c = client({
      token: (_signal, request) => {
        asks.push(request.refresh);
        if (request.refresh && failRefresh) {
          failRefresh = false;
          throw new Error('identity provider unreachable');
        }
        if (request.refresh) cached = 'tok-new';
        return cached;
      },
      retry: { attempts: 2, initialMs: 1, maxMs: 5 },
    });
    await assert.rejects(c.complete(where), (err: unknown) => err instanceof HandoffRequestError && err.status === 401);
    await c.complete(where);
    assert.deepEqual(asks, [false, true, true]);
    assert.deepEqual(
      seen.map((s) => s.authorization),
      ['Bearer tok-revoked', 'Bearer tok-new'],
    );
  });

  test('a token provider that throws is retried (the identity provider may be briefly away), then reported as no answer', async () => {
    let asked = 0;
    const token = () => {
      asked++;
      throw new Error('identity provider unreachable');
    };
    await assert.rejects(client({ token, retry: { attempts: 3, initialMs: 1, maxMs: 5 } }).complete(where), (err: unknown) => {
      assert.ok(err instanceof HandoffRequestError, String(err));
      assert.equal(err.status, 0);
      assert.equal(err.error, 'no token');
      return true;
    });
    assert.equal(asked, 3);
    assert.equal(seen.length, 0);
  });

  test('a caller abort stops the retries', async () => {
    script = [answer(503, { error: 'unavailable' }), answer(503, { error: 'unavailable' })];
    const abort = new AbortController();
    const pending = client({ retry: { attempts: 10, initialMs: 60_000, maxMs: 60_000 } }).complete(where, undefined, { signal: abort.signal });
    // Abort once the first answer is in, while the client waits out its backoff.
    while (seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    abort.abort(new Error('shutting down'));
    await assert.rejects(pending, /shutting down/);
    assert.equal(seen.length, 1);
  });
});

describe('ConsoleTokens', () => {
  test('two calls refused (401) with the same token ask for one refresh, not one each', async () => {
    // Two calls in flight together carry the same token. Before, the second one's 401, answered after the first
    // one's retry had been given a new token, asked for a refresh again: [false, false, true, true].
    const asks: boolean[] = [];
    let cached = 'tok-revoked';
    const tokens = new ConsoleTokens((_signal, request) => {
      asks.push(request.refresh);
      if (request.refresh) cached = cached === 'tok-revoked' ? 'tok-new' : 'tok-newer';
      return cached;
    });
    const signal = new AbortController().signal;
    const first = await tokens.get(signal);
    const second = await tokens.get(signal);
    tokens.refused(first);
    assert.equal(await tokens.get(signal), 'tok-new');
    tokens.refused(second);
    assert.equal(await tokens.get(signal), 'tok-new');
    assert.deepEqual(asks, [false, false, true, false]);
  });

  test('a 401 to the token last handed out asks for a refresh again, even one just refreshed', async () => {
    const asks: boolean[] = [];
    const tokens = new ConsoleTokens((_signal, request) => {
      asks.push(request.refresh);
      return 'tok-same';
    });
    const signal = new AbortController().signal;
    tokens.refused(await tokens.get(signal));
    tokens.refused(await tokens.get(signal));
    await tokens.get(signal);
    assert.deepEqual(asks, [false, true, true]);
  });
});
