// Audit entries of actions over several endpoints, through the real routes on the embedded stack (sign-in on,
// sealed session cookies): a reconcile of many targets and a bulk job across billing and crm. Each is one entry that
// keeps its counts and names every endpoint, and a reader of any one of them finds it on the Audit page's route.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { seedConsoleData, seedEvent } from '../testing/seed.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import type { AuditRecord } from './auditLog.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'multi-endpoint-audit-session-secret-0123456789';
const AUTH_ENV = {
  ...oidcTestEnv(SECRET, {
    roles: { Operator: 'Operator' },
    groups: { 'crm-readers': 'Reader:crmendpoint', 'billing-readers': 'Reader:billingendpoint', 'erp-readers': 'Reader:erpendpoint' },
  }),
  NIMBUS_RATE_LIMIT_BURST: '1000',
};
const siteOperator: Principal = { kind: 'user', id: 'oid-multi-op', name: 'multi-op@test', roles: ['Operator'], groups: [] };
const reader = (group: string): Principal => ({ kind: 'user', id: `oid-${group}`, name: `${group}@test`, roles: [], groups: [group] });

function req(p: Principal, method: string, path: string, body?: unknown): Request {
  return new Request(`http://127.0.0.1:3000${path}`, {
    method,
    headers: { 'content-type': 'application/json', host: '127.0.0.1:3000', cookie: `${SESSION_COOKIE}=${sealSession(p, { secret: SECRET, maxAgeSeconds: 600 })}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

let stack: ConsoleTestStack;
let closeContext: () => Promise<void>;
let closeOps: () => Promise<void>;
before(async () => {
  stack = await startConsoleTestStack('multiaudit');
  Object.assign(process.env, stack.env, AUTH_ENV);
  await seedConsoleData(stack.store);
  ({ closeContext } = await import('../context.ts'));
  ({ closeOpsServices: closeOps } = await import('../heartbeat/services.ts'));
});
after(async () => {
  await closeOps?.();
  await closeContext?.();
  await stack?.close();
});

/** The operator's entries of `action` as `who` reads them through GET /api/audit (with `endpointId`, filtered). */
async function entriesSeenBy(who: Principal, action: string, endpointId?: string): Promise<AuditRecord[]> {
  const { GET } = await import('../../app/api/audit/route.ts');
  const query = new URLSearchParams({ user: siteOperator.id, action, ...(endpointId ? { endpointId } : {}) });
  const res = await GET(req(who, 'GET', `/api/audit?${query.toString()}`));
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return (JSON.parse(body) as { items: AuditRecord[] }).items;
}

test('a reconcile of 50 targets on billing and crm is one entry with its counts, found under both endpoints', async () => {
  // It kept one entry filed under billing with `{ omitted }` for details: no count, no endpoints, no outcome.
  const reconcile = await import('../../app/api/operations/reconcile/route.ts');
  const targets = Array.from({ length: 50 }, (_, i) => ({
    endpointId: i % 2 ? 'billingendpoint' : 'crmendpoint',
    eventId: `00000000-0000-4000-8000-0000000000${String(i).padStart(2, '0')}`,
    sessionId: 'ORD-1',
    rowMessageId: `m-${i}`,
  }));
  const res = await reconcile.POST(req(siteOperator, 'POST', '/api/operations/reconcile', { targets }));
  assert.equal(res.status, 200, await res.clone().text());
  const [entry, ...more] = await entriesSeenBy(siteOperator, 'reconcile');
  assert.deepEqual(more, [], 'one action, one entry');
  assert.equal(entry?.endpointId, null, 'filed under no single endpoint');
  assert.deepEqual([...(entry?.endpoints ?? [])].sort(), ['billingendpoint', 'crmendpoint']);
  // No such rows: every target is left unchanged, and the entry says so.
  assert.deepEqual(entry?.details, {
    targets: 50,
    repairs: 0,
    sessions: 0,
    endpoints: entry?.endpoints,
    repaired: 0,
    unchanged: 50,
    stale: { repaired: 0, unchanged: 50 },
    stuck: { repaired: 0, unchanged: 0 },
    draining: { repaired: 0, unchanged: 0 },
  });
  for (const group of ['crm-readers', 'billing-readers']) {
    assert.equal((await entriesSeenBy(reader(group), 'reconcile')).length, 1, `${group} sees it`);
  }
  assert.equal((await entriesSeenBy(reader('crm-readers'), 'reconcile', 'crmendpoint')).length, 1, 'and finds it filtered by its endpoint');
  assert.deepEqual(await entriesSeenBy(reader('erp-readers'), 'reconcile'), [], 'a reader of neither does not');
});

test('a bulk job over billing and crm is filed under both, not under the last endpoint authorized', async () => {
  const operations = await import('../../app/api/operations/route.ts');
  // One failure cause on two endpoints: one failure group, one job touching both.
  const base = Date.now() - 30_000;
  const cause = { errorText: 'multi-endpoint audit probe: upstream refused', errorType: 'MultiAuditProbeException' };
  await seedEvent(stack.store, base, { endpointId: 'billingendpoint', eventId: 'evt-ma-billing', sessionId: 'MA-1', eventTypeId: 'OrderPlaced', payload: { orderId: 'MA-1' } }, MessageType.ErrorResponse, cause);
  await seedEvent(stack.store, base, { endpointId: 'crmendpoint', eventId: 'evt-ma-crm', sessionId: 'MA-2', eventTypeId: 'CustomerRegistered', payload: { customerId: 'MA-2' } }, MessageType.ErrorResponse, cause);
  const groupId = (await stack.store.getStatusRow('crmendpoint', 'evt-ma-crm', 'MA-2'))?.fingerprint;
  const res = await operations.POST(req(siteOperator, 'POST', '/api/operations', { kind: 'skip', selection: { groupId }, hold: true }));
  assert.equal(res.status, 202, await res.clone().text());
  const [entry] = await entriesSeenBy(siteOperator, 'skip.prepare');
  assert.deepEqual([entry?.endpointId, entry?.endpoints], [null, ['billingendpoint', 'crmendpoint']]);
  assert.equal((await entriesSeenBy(reader('crm-readers'), 'skip.prepare', 'crmendpoint')).length, 1, 'a crm reader finds it');
});

test("a bulk job's closing entry (how it ended) over billing and crm is filed under both too", async () => {
  const { getContext } = await import('../context.ts');
  const { auditFinishedJob } = await import('../operations/service.ts');
  const job = {
    operationId: 'op-multi-closing',
    kind: 'skip',
    state: 'completed',
    startedBy: siteOperator.id,
    endpoints: ['billingendpoint', 'crmendpoint'],
    selection: { groupId: 'g-multi-closing' },
    total: 2,
    done: 2,
    refused: 0,
    failed: 0,
  } as unknown as Parameters<typeof auditFinishedJob>[1];
  await auditFinishedJob(await getContext(), job);
  const [entry] = (await entriesSeenBy(siteOperator, 'operation.skip')).filter((e) => e.target === 'operation/op-multi-closing');
  assert.deepEqual([entry?.endpointId, entry?.endpoints], [null, ['billingendpoint', 'crmendpoint']]);
  const crm = await entriesSeenBy(reader('crm-readers'), 'operation.skip', 'crmendpoint');
  assert.ok(crm.some((e) => e.target === 'operation/op-multi-closing'), 'a crm reader finds how it ended');
});
