// Service principals on the embedded stack with a real OpenID provider (server/testing/oidcProvider.ts): an
// external system's client-credentials token, whose `roles` claim maps to Operator on the ERP endpoint, settles
// that endpoint's handoffs and is refused what runs the platform; without the mapping it is refused. Each call is audited.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { seedConsoleData } from '../testing/seed.ts';
import { API_AUDIENCE, startTestOidcProvider, type TestOidcProvider } from '../testing/oidcProvider.ts';
import { queryAudit } from '../audit/auditLog.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
let idp: TestOidcProvider;
let seeded: Awaited<ReturnType<typeof seedConsoleData>>;
let closeContext: () => Promise<void>;
const ERP = 'erpendpoint';
const params = <P>(p: P) => ({ params: Promise.resolve(p) });

before(async () => {
  stack = await startConsoleTestStack('service');
  idp = await startTestOidcProvider({ redirectUris: ['http://127.0.0.1:1/auth/callback'], postLogoutRedirectUris: [] });
  Object.assign(process.env, stack.env, {
    NIMBUS_AUTH: 'oidc',
    NIMBUS_AUTH_ISSUER: idp.issuer,
    NIMBUS_AUTH_CLIENT_ID: idp.consoleClient.id,
    NIMBUS_AUTH_CLIENT_SECRET: idp.consoleClient.secret,
    NIMBUS_AUTH_REDIRECT_URI: 'http://127.0.0.1:1/auth/callback',
    NIMBUS_AUTH_SESSION_SECRET: 'service-test-session-secret-0123456789abcdef',
    NIMBUS_AUTH_BEARER_AUDIENCE: API_AUDIENCE,
    NIMBUS_AUTH_CA_FILE: idp.caFile,
    // The provider gives the ERP integration the app role Handoff.Settle.
    NIMBUS_AUTH_ROLE_MAP: JSON.stringify({ roles: { 'Handoff.Settle': 'Operator:erpendpoint' } }),
  });
  seeded = await seedConsoleData(stack.store);
  ({ closeContext } = await import('../context.ts'));
});

after(async () => {
  await closeContext?.();
  await idp?.close();
  await stack?.close();
});

const bearer = async (body: unknown, headers: Record<string, string> = {}) =>
  new Request('http://127.0.0.1:3000/api/x', {
    method: 'POST',
    headers: { authorization: `Bearer ${await idp.clientCredentialsToken()}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('service principals', () => {
  test('a token whose role maps to Operator on the endpoint settles its handoffs, even with a foreign Origin', async () => {
    const complete = await import('../../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts');
    const fail = await import('../../app/api/event/handoff/fail/[endpointId]/[eventId]/[messageId]/route.ts');
    const done = await complete.POST(await bearer({ note: 'imported' }, { origin: 'https://erp.example' }), params({ endpointId: ERP, eventId: seeded.handoff.eventId, messageId: seeded.handoff.lastMessageId }));
    assert.equal(done.status, 200, await done.clone().text());
    const failed = await fail.POST(await bearer({ errorText: 'ledger rejected it' }), params({ endpointId: ERP, eventId: seeded.handoff2.eventId, messageId: seeded.handoff2.lastMessageId }));
    assert.equal(failed.status, 200, await failed.clone().text());
    const log = await queryAudit(stack.store.database, { user: idp.serviceClient.id, action: 'handoff', pageSize: 5 });
    assert.deepEqual(log.items.map((e) => [e.actorKind, e.outcome, e.roles]), [
      ['service', 'succeeded', 'Operator:erpendpoint'],
      ['service', 'succeeded', 'Operator:erpendpoint'],
    ]);
  });

  test('the same token is refused what runs the platform, and on another endpoint', async () => {
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const complete = await import('../../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts');
    const r = await reconcile.POST(await bearer({ targets: [{ endpointId: ERP, eventId: seeded.handoff.eventId, sessionId: 'S', rowMessageId: 'm' }] }));
    assert.equal(r.status, 403);
    assert.match(((await r.json()) as { detail: string }).detail, /service principal may not reconcile/);
    const other = await complete.POST(await bearer({}), params({ endpointId: 'billingendpoint', eventId: seeded.failed.eventId, messageId: 'm' }));
    assert.equal(other.status, 403);
    const denied = await queryAudit(stack.store.database, { user: idp.serviceClient.id, outcome: 'denied', pageSize: 5 });
    assert.equal(denied.items.length, 2);
  });

  test('without a mapping for its role the token is refused', async () => {
    const saved = process.env.NIMBUS_AUTH_ROLE_MAP;
    process.env.NIMBUS_AUTH_ROLE_MAP = JSON.stringify({ roles: { Other: 'Owner' } });
    try {
      const complete = await import('../../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts');
      const res = await complete.POST(await bearer({}), params({ endpointId: ERP, eventId: seeded.handoff.eventId, messageId: seeded.handoff.lastMessageId }));
      assert.equal(res.status, 403);
      assert.match(((await res.json()) as { detail: string }).detail, /handoff needs the Operator role on endpoint erpendpoint/);
    } finally {
      process.env.NIMBUS_AUTH_ROLE_MAP = saved;
    }
  });

  test('an invalid bearer token is 401, audited site-level (without the event id the caller chose)', async () => {
    const complete = await import('../../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts');
    const req = new Request('http://127.0.0.1:3000/api/x', { method: 'POST', headers: { authorization: 'Bearer not.a.token' }, body: '{}' });
    const res = await complete.POST(req, params({ endpointId: ERP, eventId: seeded.handoff.eventId, messageId: seeded.handoff.lastMessageId }));
    assert.equal(res.status, 401);
    const log = await queryAudit(stack.store.database, { user: 'unauthenticated', action: 'handoff', pageSize: 5 });
    assert.equal(log.items[0]?.status, 401);
    assert.equal(log.items[0]?.eventId, null);
    assert.equal(log.items[0]?.target, `handoff ${seeded.handoff.lastMessageId}`);
  });
});
