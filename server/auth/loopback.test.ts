// Sign-in off means every caller is an Owner, so only this machine may call: attacks that come from elsewhere
// through a loopback socket. DNS rebinding (a page on attacker.test whose name resolves to 127.0.0.1 sends
// `Host: attacker.test:3000`) and a local reverse proxy (`X-Forwarded-For`, `Forwarded`) against the route
// handlers (embedded stack, real clients), proxy.ts, the launcher's Node front and the embedded Cosmos server.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { loopbackProblem } from './hardening.ts';
import { refuseUnlessLoopback } from './loopbackFront.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

// proxy.ts belongs to the Next.js program (tsconfig.next.json); a computed specifier keeps it out of this one's.
// next/server likewise: its types (through React's) would declare an empty DOM in the Node program.
const proxyModule = '../../proxy.ts';
const nextServerModule = 'next/server.js';
let proxy: (request: Request) => Response;
let NextRequest: new (url: string, init?: RequestInit) => Request;

const stack = useConsoleStack({
  database: 'loopback',
  env: { NIMBUS_AUTH: 'off' },
  seed: true,
  prepare: async () => {
    ({ proxy } = (await import(proxyModule)) as { proxy: typeof proxy });
    ({ NextRequest } = (await import(nextServerModule)) as { NextRequest: typeof NextRequest });
  },
});

const call = (headers: Record<string, string>, method = 'GET', body?: unknown) =>
  new Request('http://127.0.0.1:3000/api/x', { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });

/** Raw HTTP, so that the Host header is exactly what an attacker's browser would send. */
function raw(port: number, headers: Record<string, string>, path = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET', headers, setHost: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('sign-in off: only direct requests from this machine', () => {
  test('DNS rebinding: a route handler refuses Host attacker.test (421) and reads nothing', async () => {
    const endpoints = await import('../../app/api/endpoints/route.ts');
    const ok = await endpoints.GET(call({ host: '127.0.0.1:3000' }));
    assert.equal(ok.status, 200, 'the loopback caller reads the endpoints');
    const rebound = await endpoints.GET(call({ host: 'attacker.test:3000' }));
    assert.equal(rebound.status, 421);
    const body = (await rebound.json()) as { error: string; detail: string; endpoints?: unknown };
    assert.equal(body.endpoints, undefined);
    assert.match(body.detail, /sign-in is off/);
    assert.doesNotMatch(body.detail, /\n/, 'one line');
  });

  test('DNS rebinding: a grant cannot be added through a foreign Host', async () => {
    const grants = await import('../../app/api/admin/grants/route.ts');
    const res = await grants.POST(call({ host: 'attacker.test:3000' }, 'POST', { subjectKind: 'user', subject: 'oid-attacker', role: 'Owner' }));
    assert.equal(res.status, 421);
    const list = (await (await grants.GET(call({ host: 'localhost:3000' }))).json()) as { grants: Array<{ subject: string }> };
    assert.ok(!list.grants.some((g) => g.subject === 'oid-attacker'));
  });

  test('a request relayed by a proxy (X-Forwarded-For from another machine, Forwarded) is refused with 403', async () => {
    const endpoints = await import('../../app/api/endpoints/route.ts');
    const viaProxy = await endpoints.GET(call({ host: '127.0.0.1:3000', 'x-forwarded-for': '203.0.113.7' }));
    assert.equal(viaProxy.status, 403);
    assert.match(((await viaProxy.json()) as { detail: string }).detail, /x-forwarded-for/);
    assert.equal((await endpoints.GET(call({ host: '127.0.0.1:3000', forwarded: 'for=203.0.113.7' }))).status, 403);
    // What Next.js itself adds inside the process (the socket's own loopback address, the same host) passes.
    const nextAdded = await endpoints.GET(
      call({ host: '127.0.0.1:3000', 'x-forwarded-for': '::ffff:127.0.0.1', 'x-forwarded-host': '127.0.0.1:3000', 'x-forwarded-proto': 'http', 'x-forwarded-port': '3000' }),
    );
    assert.equal(nextAdded.status, 200);
  });

  test('proxy.ts refuses pages and API calls addressed to another host', () => {
    const page = proxy(new NextRequest('http://127.0.0.1:3000/endpoints', { headers: { host: 'attacker.test:3000' } }));
    assert.equal(page.status, 421);
    const api = proxy(new NextRequest('http://127.0.0.1:3000/api/endpoints', { headers: { host: '127.0.0.1:3000', 'x-forwarded-for': '198.51.100.1' } }));
    assert.equal(api.status, 403);
    const fine = proxy(new NextRequest('http://localhost:3000/endpoints', { headers: { host: 'localhost:3000' } }));
    assert.ok(fine.status < 400, `a loopback page goes on (${fine.status})`);
    const saved = process.env.NIMBUS_AUTH;
    process.env.NIMBUS_AUTH = 'oidc';
    try {
      const signedIn = proxy(new NextRequest('https://console.example/endpoints', { headers: { host: 'console.example' } }));
      assert.ok(signedIn.status < 400, 'with sign-in on, any host is fine (sign-in guards it)');
    } finally {
      process.env.NIMBUS_AUTH = saved;
    }
  });

  test("the launcher's Node front refuses any forwarding header and foreign hosts before Next.js sees them", async () => {
    let reached = 0;
    const server: Server = createServer((req, res) => {
      if (refuseUnlessLoopback(req, res)) return;
      reached++;
      res.end('console');
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const port = (server.address() as AddressInfo).port;
    try {
      assert.equal((await raw(port, { host: `127.0.0.1:${port}` })).status, 200);
      assert.equal((await raw(port, { host: `[::1]:${port}` })).status, 200);
      const rebound = await raw(port, { host: `attacker.test:${port}` }, '/api/endpoints');
      assert.equal(rebound.status, 421);
      assert.match(rebound.body, /"error":"misdirected request"/);
      assert.equal((await raw(port, { host: `127.0.0.1.attacker.test:${port}` })).status, 421);
      // Strict here: even a loopback X-Forwarded-For means something relayed the request.
      assert.equal((await raw(port, { host: `localhost:${port}`, 'x-forwarded-for': '127.0.0.1' })).status, 403);
      assert.equal((await raw(port, { host: `localhost:${port}`, 'x-forwarded-host': 'console.example' })).status, 403);
      assert.equal(reached, 2);
    } finally {
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  });

  test('the embedded Cosmos server refuses rebinding, proxies and browsers, and still serves its client', async () => {
    const port = stack.cosmos.port;
    const rebound = await raw(port, { host: `attacker.test:${port}` }, '/dbs');
    assert.equal(rebound.status, 421);
    assert.equal((await raw(port, { host: `127.0.0.1:${port}`, 'x-forwarded-for': '203.0.113.7' }, '/dbs')).status, 403);
    assert.equal((await raw(port, { host: `127.0.0.1:${port}`, origin: 'http://attacker.test' }, '/dbs')).status, 403);
    assert.equal((await raw(port, { host: `127.0.0.1:${port}`, 'sec-fetch-site': 'cross-site' }, '/dbs')).status, 403);
    // The real client keeps working through the front.
    const counts = await stack.store.getAllCounts();
    assert.ok(counts.endpoints.length > 0);
  });

  test('the guard itself: loopback names and addresses pass, everything else names the reason', () => {
    for (const host of ['127.0.0.1:3000', 'localhost:3000', 'LOCALHOST', '[::1]:3000', '127.1.2.3'])
      assert.equal(loopbackProblem(new Headers({ host })), null, host);
    for (const host of ['attacker.test', '127.0.0.1.nip.io:3000', '0.0.0.0:3000', '192.168.1.2', '[::2]:3000', '127.0.0.256', ''])
      assert.equal(loopbackProblem(new Headers({ host }))?.status, 421, host);
    assert.equal(loopbackProblem({ host: 'localhost' }, 'nextInternal'), null);
    assert.equal(loopbackProblem({ host: 'localhost', 'x-forwarded-proto': 'https' }, 'nextInternal')?.status, 403);
    assert.equal(loopbackProblem({ host: 'localhost', 'x-forwarded-host': 'evil.example' }, 'nextInternal')?.status, 403);
    assert.equal(loopbackProblem({ host: 'localhost', 'x-forwarded-prefix': '/x' }, 'nextInternal')?.status, 403);
    // Lists are judged on every element: an appending proxy keeps what its client sent in front
    // (spoofedForwardedFor.test.ts has the whole attack).
    const next = { host: 'localhost:3000', 'x-forwarded-host': 'localhost:3000', 'x-forwarded-proto': 'http', 'x-forwarded-port': '3000' };
    assert.equal(loopbackProblem({ ...next, 'x-forwarded-for': '127.0.0.1, ::1, ::ffff:127.0.0.1' }, 'nextInternal'), null, 'a loopback chain');
    for (const [name, value] of [
      ['x-forwarded-for', '127.0.0.1, 203.0.113.7'],
      ['x-forwarded-for', '127.0.0.1,'],
      ['x-forwarded-for', ''],
      ['x-forwarded-host', 'localhost:3000, evil.example'],
      ['x-forwarded-proto', 'http, https'],
    ] as const)
      assert.equal(loopbackProblem({ ...next, 'x-forwarded-for': '127.0.0.1', [name]: value }, 'nextInternal')?.status, 403, `${name}: ${value}`);
    // Node joins a repeated header line into one value; a Headers object does too.
    assert.equal(loopbackProblem({ ...next, 'x-forwarded-for': ['127.0.0.1', '203.0.113.7'] }, 'nextInternal')?.status, 403);
    const repeated = new Headers({ host: 'localhost:3000' });
    repeated.append('x-forwarded-for', '127.0.0.1');
    repeated.append('x-forwarded-for', '203.0.113.7');
    assert.equal(loopbackProblem(repeated, 'nextInternal')?.status, 403);
    // Next.js never writes Forwarded: it refuses whatever it names.
    assert.equal(loopbackProblem({ host: 'localhost', forwarded: 'for=127.0.0.1;proto=http' }, 'nextInternal')?.status, 403);
  });
});
