// Audit entries of actions over several endpoints, through the real routes on the embedded stack (sign-in on,
// sealed session cookies): a reconcile of many targets and a bulk job across billing and crm. Each is one entry that
// keeps its counts and names every endpoint, and a reader of any one of them finds it on the Audit page's route -
// with only their endpoints' part of it: the endpoints they may not read are counted, not named, and their counts left
// out (a billing Reader was shown crm's counts of a job that answers them 404).
import { after, test } from 'node:test';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { seedEvent } from '../testing/seed.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';
import { MAX_DETAILS_CHARS, type AuditRecord } from './auditLog.ts';
import { DEFAULT_CATALOG_PATH } from '../config.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'multi-endpoint-audit-session-secret-0123456789';
const AUTH_ENV = {
  ...oidcTestEnv(SECRET, {
    roles: { Operator: 'Operator', Reader: 'Reader' },
    groups: { 'crm-readers': 'Reader:crmendpoint', 'billing-readers': 'Reader:billingendpoint', 'erp-readers': 'Reader:erpendpoint' },
  }),
  NIMBUS_RATE_LIMIT_BURST: '1000',
};
const siteOperator: Principal = { kind: 'user', id: 'oid-multi-op', name: 'multi-op@test', roles: ['Operator'], groups: [] };
const siteReader: Principal = { kind: 'user', id: 'oid-multi-reader', name: 'multi-reader@test', roles: ['Reader'], groups: [] };
const reader = (group: string): Principal => ({ kind: 'user', id: `oid-${group}`, name: `${group}@test`, roles: [], groups: [group] });

function req(p: Principal, method: string, path: string, body?: unknown): Request {
  return new Request(`http://127.0.0.1:3000${path}`, {
    method,
    headers: { 'content-type': 'application/json', host: '127.0.0.1:3000', cookie: `${SESSION_COOKIE}=${sealSession(p, { secret: SECRET, maxAgeSeconds: 600 })}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** `count` endpoint ids of the longest kind an id may be (50 characters): billing first, crm last, others between. */
const manyEndpoints = (count: number) => [
  'billingendpoint',
  ...Array.from({ length: count - 2 }, (_, i) => `orders-fulfilment-and-invoicing-endpoint-${String(i).padStart(3, '0')}`),
  'crmendpoint',
];

/**
 * The demo catalog with the endpoints between billing and crm of manyEndpoints(count) added (no topology: their
 * rows are only looked up): a reconcile names catalog endpoints alone (app/api/operations/reconcile/route.ts).
 */
async function catalogWithManyEndpoints(count: number): Promise<string> {
  const demo = JSON.parse(await readFile(DEFAULT_CATALOG_PATH, 'utf8')) as { endpoints: Array<Record<string, unknown>> };
  const added = manyEndpoints(count).slice(1, -1).map((id) => ({ id, owner: 'test', description: 'an endpoint of the many-endpoint audit test', produces: [], consumes: [] }));
  catalogDir = await mkdtemp(join(tmpdir(), 'nimbus-multiaudit-'));
  const path = join(catalogDir, 'catalog.json');
  await writeFile(path, JSON.stringify({ ...demo, endpoints: [...demo.endpoints, ...added] }));
  return path;
}
let catalogDir: string | undefined;

const stack = useConsoleStack({ database: 'multiaudit', env: async () => ({ ...AUTH_ENV, NIMBUS_CATALOG: await catalogWithManyEndpoints(60) }), seed: true });
after(async () => {
  if (catalogDir) await rm(catalogDir, { recursive: true, force: true });
});

/**
 * The operator's entries of `action` as `who` reads them through GET /api/audit (with `endpointId`, filtered); `user`
 * is the operator's name for the runner's entries (a job's `startedBy`).
 */
async function entriesSeenBy(who: Principal, action: string, endpointId?: string, user = siteOperator.id): Promise<AuditRecord[]> {
  const { GET } = await import('../../app/api/audit/route.ts');
  const query = new URLSearchParams({ user, action, ...(endpointId ? { endpointId } : {}) });
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
    // Each endpoint's part, for its readers.
    byEndpoint: Object.fromEntries(
      ['crmendpoint', 'billingendpoint'].map((e) => [
        e,
        { targets: 25, repairs: 0, sessions: 0, repaired: 0, unchanged: 25, stale: { repaired: 0, unchanged: 25 }, stuck: { repaired: 0, unchanged: 0 }, draining: { repaired: 0, unchanged: 0 } },
      ]),
    ),
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

test("a billing Reader reads billing's part of a reconcile over billing and crm, not crm's counts; a site-wide reader all of it", async () => {
  const reconcile = await import('../../app/api/operations/reconcile/route.ts');
  // Three targets on billing, one on crm (no such rows: each is left unchanged).
  const target = (endpointId: string, i: number) => ({ endpointId, eventId: `00000000-0000-4000-8000-0000000001${String(i).padStart(2, '0')}`, sessionId: 'ORD-2', rowMessageId: `m-part-${i}` });
  const targets = [target('billingendpoint', 1), target('billingendpoint', 2), target('billingendpoint', 3), target('crmendpoint', 4)];
  const res = await reconcile.POST(req(siteOperator, 'POST', '/api/operations/reconcile', { targets }));
  assert.equal(res.status, 200, await res.clone().text());
  const [whole] = await entriesSeenBy(siteReader, 'reconcile');
  assert.deepEqual([whole?.endpoints, whole?.otherEndpoints, whole?.details?.targets, whole?.details?.unchanged], [['billingendpoint', 'crmendpoint'], undefined, 4, 4], 'a site-wide reader: all of it');
  assert.deepEqual(Object.keys((whole?.details?.byEndpoint ?? {}) as object).sort(), ['billingendpoint', 'crmendpoint']);
  const [billing] = await entriesSeenBy(reader('billing-readers'), 'reconcile');
  assert.equal(billing?.id, whole?.id);
  assert.deepEqual([billing?.endpointId, billing?.endpoints, billing?.otherEndpoints], [null, ['billingendpoint'], 1], 'crm counted, not named');
  const part = { targets: 3, repairs: 0, sessions: 0, repaired: 0, unchanged: 3, stale: { repaired: 0, unchanged: 3 }, stuck: { repaired: 0, unchanged: 0 }, draining: { repaired: 0, unchanged: 0 } };
  assert.deepEqual(billing?.details, { ...part, endpoints: ['billingendpoint'], byEndpoint: { billingendpoint: part } }, "billing's counts alone");
});

test("a billing Reader reads billing's part of a bulk job over billing and crm, as it starts and as it ends; a site-wide reader all of it", async () => {
  const operations = await import('../../app/api/operations/route.ts');
  // Two failures on billing, one on crm, of one cause: one failure group, one job touching both, run by this
  // process's runner.
  const base = Date.now() - 30_000;
  const cause = { errorText: 'multi-endpoint audit parts probe: upstream refused', errorType: 'MultiAuditPartsException' };
  const seed = (endpointId: string, eventId: string, sessionId: string) =>
    seedEvent(stack.store, base, { endpointId, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { orderId: sessionId } }, MessageType.ErrorResponse, cause);
  await seed('billingendpoint', 'evt-mp-billing-1', 'MP-1');
  await seed('billingendpoint', 'evt-mp-billing-2', 'MP-2');
  await seed('crmendpoint', 'evt-mp-crm', 'MP-3');
  const groupId = (await stack.store.getStatusRow('crmendpoint', 'evt-mp-crm', 'MP-3'))?.fingerprint;
  const res = await operations.POST(req(siteOperator, 'POST', '/api/operations', { kind: 'skip', selection: { groupId } }));
  assert.equal(res.status, 202, await res.clone().text());
  const { operationId } = (await res.json()) as { operationId: string };
  const target = `operation/${operationId}`;

  const started = async (who: Principal) => (await entriesSeenBy(who, 'skip')).find((e) => e.action === 'skip' && e.details?.operationId === operationId);
  const all = await started(siteReader);
  assert.deepEqual([all?.details?.total, all?.endpoints], [3, ['billingendpoint', 'crmendpoint']], 'a site-wide reader: all of it');
  const start = await started(reader('billing-readers'));
  assert.deepEqual([start?.endpoints, start?.otherEndpoints, start?.details?.endpoints, start?.details?.total, start?.details?.byEndpoint], [['billingendpoint'], 1, ['billingendpoint'], 2, { billingendpoint: { total: 2 } }]);

  // How it ended: the runner writes it when the job is done (read back until it is there).
  const ended = async (who: Principal) => (await entriesSeenBy(who, 'operation.skip', undefined, siteOperator.name)).find((e) => e.target === target);
  await waitFor(`job ${operationId} to end`, async () => (await ended(siteReader)) !== undefined);
  const whole = await ended(siteReader);
  assert.deepEqual([whole?.outcome, whole?.details?.total, whole?.details?.done, whole?.endpoints], ['succeeded', 3, 3, ['billingendpoint', 'crmendpoint']]);
  assert.deepEqual(whole?.details?.byEndpoint, { billingendpoint: { total: 2, done: 2, refused: 0, failed: 0 }, crmendpoint: { total: 1, done: 1, refused: 0, failed: 0 } });
  const billing = await ended(reader('billing-readers'));
  assert.deepEqual([billing?.endpoints, billing?.otherEndpoints], [['billingendpoint'], 1]);
  assert.deepEqual(billing?.details, {
    state: 'completed',
    selection: { groupId },
    total: 2,
    done: 2,
    refused: 0,
    failed: 0,
    byEndpoint: { billingendpoint: { total: 2, done: 2, refused: 0, failed: 0 } },
  });
  const crm = await ended(reader('crm-readers'));
  assert.deepEqual([crm?.endpoints, crm?.otherEndpoints, crm?.details?.total, crm?.details?.done], [['crmendpoint'], 1, 1, 1], "crm's readers: crm's part");
});


test('a reconcile over 60 endpoints keeps its totals, and the parts that fit for their readers; one whose part was cut sees no counts', async () => {
  // Its details were `{ omitted }` past 40 endpoints: the byEndpoint parts (objects of numbers) could not be cut.
  const reconcile = await import('../../app/api/operations/reconcile/route.ts');
  const endpoints = manyEndpoints(60);
  const targets = endpoints.map((endpointId, i) => ({ endpointId, eventId: `00000000-0000-4000-8000-0000000002${String(i).padStart(2, '0')}`, sessionId: 'ORD-3', rowMessageId: `m-many-${i}` }));
  const res = await reconcile.POST(req(siteOperator, 'POST', '/api/operations/reconcile', { targets }));
  assert.equal(res.status, 200, await res.clone().text());
  const [whole] = (await entriesSeenBy(siteReader, 'reconcile')).filter((e) => e.details?.targets === 60);
  assert.ok(whole, 'the entry is there with its totals');
  assert.ok(JSON.stringify(whole.details).length <= MAX_DETAILS_CHARS);
  assert.equal(whole.details?.omitted, undefined, 'not omitted');
  assert.deepEqual(whole.endpoints, endpoints);
  assert.deepEqual(
    [whole.details?.targets, whole.details?.repaired, whole.details?.unchanged, whole.details?.stale, whole.details?.stuck],
    [60, 0, 60, { repaired: 0, unchanged: 60 }, { repaired: 0, unchanged: 0 }],
  );
  const kept = Object.keys(whole.details?.byEndpoint as object);
  const cutOff = whole.details?.byEndpointTruncated as number;
  assert.ok(kept.length > 0 && cutOff > 0, `${kept.length} parts kept, ${cutOff} cut`);
  assert.deepEqual(kept, endpoints.slice(0, kept.length), 'the first endpoints\' parts are kept');
  assert.equal(kept.length + cutOff, 60);
  // Billing's part is kept (zero counts left out): its reader sees billing's counts, as when nothing was cut.
  const [billing] = (await entriesSeenBy(reader('billing-readers'), 'reconcile')).filter((e) => e.id === whole.id);
  assert.deepEqual([billing?.endpoints, billing?.otherEndpoints], [['billingendpoint'], 59]);
  assert.deepEqual(
    [billing?.details?.targets, billing?.details?.repairs, billing?.details?.unchanged, billing?.details?.stale, billing?.details?.draining],
    [1, 0, 1, { repaired: 0, unchanged: 1 }, { repaired: 0, unchanged: 0 }],
  );
  assert.deepEqual(billing?.details?.byEndpoint, { billingendpoint: { targets: 1, unchanged: 1, stale: { unchanged: 1 } } });
  // Crm's part was cut: its reader sees none of the totals (all 60 endpoints'), nor another endpoint's part.
  const [crm] = (await entriesSeenBy(reader('crm-readers'), 'reconcile')).filter((e) => e.id === whole.id);
  assert.deepEqual([crm?.endpoints, crm?.otherEndpoints], [['crmendpoint'], 59]);
  // The names of the counts the parts break down are there for every reader (which are kept says nothing of values).
  const { byEndpointKeys, ...crmDetails } = crm?.details ?? {};
  assert.ok(Array.isArray(byEndpointKeys) && byEndpointKeys.includes('targets'), JSON.stringify(byEndpointKeys));
  assert.deepEqual(crmDetails, { endpoints: ['crmendpoint'], byEndpoint: {}, truncated: ['byEndpoint'] });
});

test("a bulk job's closing entry over 200 endpoints keeps its totals, and the parts that fit for their readers; one whose part was cut sees no counts", async () => {
  // Its details were `{ omitted }` past 140 endpoints: no state, no totals for anyone.
  const { getContext } = await import('../context.ts');
  const { auditFinishedJob } = await import('../operations/service.ts');
  const endpoints = manyEndpoints(200);
  const job = {
    operationId: 'op-many-closing',
    kind: 'skip',
    state: 'completed',
    startedBy: siteOperator.id,
    endpoints,
    selection: { groupId: 'g-many-closing' },
    total: 400,
    done: 399,
    refused: 1,
    failed: 0,
    // Two events on each endpoint; one of billing's refused.
    byEndpoint: Object.fromEntries(endpoints.map((e) => [e, { total: 2, done: e === 'billingendpoint' ? 1 : 2, refused: e === 'billingendpoint' ? 1 : 0, failed: 0 }])),
  } as unknown as Parameters<typeof auditFinishedJob>[1];
  await auditFinishedJob(await getContext(), job);
  const closing = async (who: Principal) => (await entriesSeenBy(who, 'operation.skip')).find((e) => e.target === 'operation/op-many-closing');
  const whole = await closing(siteReader);
  assert.ok(JSON.stringify(whole?.details).length <= MAX_DETAILS_CHARS);
  assert.deepEqual(
    [whole?.details?.state, whole?.details?.total, whole?.details?.done, whole?.details?.refused, whole?.details?.failed],
    ['completed', 400, 399, 1, 0],
    'the totals and the state stay for a site-wide reader',
  );
  const kept = Object.keys(whole?.details?.byEndpoint as object);
  assert.ok(kept.length > 1 && kept.length < 200, `${kept.length} parts kept`);
  assert.deepEqual(kept, endpoints.slice(0, kept.length));
  assert.equal(whole?.details?.byEndpointTruncated, 200 - kept.length);
  const billing = await closing(reader('billing-readers'));
  assert.deepEqual([billing?.endpoints, billing?.otherEndpoints], [['billingendpoint'], 199]);
  assert.deepEqual(billing?.details, {
    state: 'completed',
    selection: { groupId: 'g-many-closing' },
    total: 2,
    done: 1,
    refused: 1,
    failed: 0,
    byEndpoint: { billingendpoint: { total: 2, done: 1, refused: 1 } },
    byEndpointKeys: ['total', 'done', 'refused', 'failed'],
    truncated: ['byEndpoint'],
  });
  const crm = await closing(reader('crm-readers'));
  assert.deepEqual([crm?.endpoints, crm?.otherEndpoints], [['crmendpoint'], 199]);
  const { byEndpointKeys, ...crmDetails } = crm?.details ?? {};
  assert.ok(Array.isArray(byEndpointKeys) && byEndpointKeys.includes('failed'), JSON.stringify(byEndpointKeys));
  assert.deepEqual(crmDetails, { state: 'completed', selection: { groupId: 'g-many-closing' }, byEndpoint: {}, truncated: ['byEndpoint'] }, 'no counts: not the sum of all, not another endpoint\'s');
});
