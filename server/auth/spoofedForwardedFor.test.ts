// Review finding (fixed): with sign-in off, a request relayed by a local reverse proxy that says so (nginx with the
// usual `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`) must be refused 403 (docs/auth.md,
// docs/security.md). Inside Next.js (`next start`), the check (hardening.ts loopbackProblem, 'nextInternal') read only
// the FIRST X-Forwarded-For element - the one the remote client itself chose. A remote client that sent
// `X-Forwarded-For: 127.0.0.1` made the proxy forward `127.0.0.1, 203.0.113.7`, and was let through as the anonymous
// Owner. Now every element must be loopback.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { loopbackProblem } from './hardening.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const proxyModule = '../../proxy.ts';
const nextServerModule = 'next/server.js';
let proxy: (request: Request) => Response;
let NextRequest: new (url: string, init?: RequestInit) => Request;

useConsoleStack({
  database: 'review-xff',
  env: { NIMBUS_AUTH: 'off' },
  seed: true,
  prepare: async () => {
    ({ proxy } = (await import(proxyModule)) as { proxy: typeof proxy });
    ({ NextRequest } = (await import(nextServerModule)) as { NextRequest: typeof NextRequest });
  },
});

// What nginx forwards (default `proxy_pass http://127.0.0.1:3000;` Host, plus the common forwarding lines) for a
// remote client 203.0.113.7 that sent `X-Forwarded-For: 127.0.0.1` itself.
const relayedSpoofed = { host: '127.0.0.1:3000', 'x-forwarded-for': '127.0.0.1, 203.0.113.7', 'x-forwarded-proto': 'http' };
// The same proxy relaying the same client that did not add the header: refused today (403).
const relayedHonest = { host: '127.0.0.1:3000', 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'http' };

const call = (headers: Record<string, string>, method = 'GET', body?: unknown) =>
  new Request('http://127.0.0.1:3000/api/x', { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });

describe('sign-in off: a relayed request whose client pre-sends X-Forwarded-For: 127.0.0.1', () => {
  test('the guard: the relayed chain names a non-loopback client, so it is refused like the honest one', () => {
    assert.equal(loopbackProblem(relayedHonest, 'nextInternal')?.status, 403, 'the honest relay is refused');
    assert.equal(loopbackProblem(relayedSpoofed, 'nextInternal')?.status, 403, 'the relay with a spoofed first hop must be refused too');
  });

  test('proxy.ts refuses the spoofed relay before the API', () => {
    assert.equal(proxy(new NextRequest('http://127.0.0.1:3000/api/endpoints', { headers: relayedHonest })).status, 403);
    const spoofed = proxy(new NextRequest('http://127.0.0.1:3000/api/endpoints', { headers: relayedSpoofed }));
    assert.equal(spoofed.status, 403, `proxy.ts answered ${spoofed.status} to a request relayed from 203.0.113.7`);
  });

  test('a remote client does not become the anonymous Owner: its site-wide Owner grant is refused', async () => {
    const grants = await import('../../app/api/admin/grants/route.ts');
    const honest = await grants.POST(call(relayedHonest, 'POST', { subjectKind: 'user', subject: 'oid-remote', role: 'Owner' }));
    assert.equal(honest.status, 403, 'the honest relay is refused');
    const res = await grants.POST(call(relayedSpoofed, 'POST', { subjectKind: 'user', subject: 'oid-remote-spoofed', role: 'Owner' }));
    const list = (await (await grants.GET(call({ host: '127.0.0.1:3000' }))).json()) as { grants: Array<{ subject: string }> };
    assert.equal(res.status, 403, `the grant POST relayed from 203.0.113.7 answered ${res.status}; grant stored: ${list.grants.some((g) => g.subject === 'oid-remote-spoofed')}`);
  });
});
