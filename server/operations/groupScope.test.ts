// "Resubmit all" on a failure group acts on what the Failures page shows, for the caller's scope, on the embedded
// stack (real Service Bus emulator, embedded Cosmos, the route handlers as Next calls them):
// - with an "Updated in" window, the page's selection (components/operations/groupSelection.ts, from the failure
//   groups answer's countedFrom) freezes only the group's rows in the window - not its older rows on another
//   endpoint - and the prepare answer names the endpoints of the rows frozen;
// - an Operator of crmendpoint who only reads billingendpoint prepares a group spanning both: the job holds the
//   crmendpoint rows and the answer (and the audit entry) names billingendpoint as left out, with its count and
//   why, while the audit entry, read by crmendpoint's readers, names billingendpoint only (no count, no role);
//   a group only on billingendpoint, or a selection naming billingendpoint, stays a 403;
// - the page's Export link for a group exports the rows the page counted: its "Updated in" window too;
// - the selection's limit counts only the rows kept: billing rows a crmendpoint Operator cannot act on do not make
//   the group too big to act on crmendpoint (freezeActable's `max`, lowered for the test).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { createStore, type MessageStore } from '../../lib/store/index.ts';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { groupExportHref, groupSelection } from '../../components/operations/groupSelection.ts';
import { queryAudit } from '../audit/auditLog.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { routeRequest, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { JobStore } from './jobs.ts';
import { actableOn, type LeftOutEndpoint } from './actableRows.ts';
import { freezeActable } from './selection.ts';
import type { RoleAssignment } from '../auth/roles.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const CRM = 'crmendpoint';
const BILLING = 'billingendpoint';
const DATABASE = 'groupscope';
const SECRET = 'group-scope-test-session-secret-0123456789';
let stack: ConsoleTestStack;
/** The same database through a store whose clock is three hours back: rows last updated before the window. */
let earlier: MessageStore;

before(async () => {
  stack = await startRouteTestStack(DATABASE);
  earlier = await createStore({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: DATABASE, now: () => new Date(Date.now() - 3 * 3600_000) });
});
after(async () => {
  await earlier?.close();
  await stack?.close();
});

const req = (method: string, path: string, body?: unknown, as?: Principal) =>
  routeRequest(method, path, body, as ? { cookie: `${SESSION_COOKIE}=${sealSession(as, { secret: SECRET, maxAgeSeconds: 600 })}` } : undefined);
const routes = async () => ({
  ops: await import('../../app/api/operations/route.ts'),
  cancel: await import('../../app/api/operations/[operationId]/cancel/route.ts'),
  groups: await import('../../app/api/failure-groups/route.ts'),
  audit: await import('../../app/api/audit/route.ts'),
  exportRoute: await import('../../app/api/endpoints/[endpointId]/events/export/route.ts'),
});

/** Failed events of one cause on an endpoint, written through `store` (its clock is the rows' updatedAt). */
async function seedFailed(store: MessageStore, endpointId: string, prefix: string, n: number, errorText: (i: number) => string): Promise<void> {
  for (let i = 0; i < n; i++) {
    const eventId = `${prefix}-${i}`;
    const sessionId = `S-${prefix}`;
    const request = msg(T.EventRequest, { endpointId, eventId, sessionId, eventTypeId: 'CustomerUpdated', payload: { i } });
    const error = msg(T.ErrorResponse, { endpointId, eventId, sessionId, parentMessageId: request.messageId, errorType: 'LedgerSyncError', errorText: errorText(i) });
    for (const m of [request, error]) await store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  }
}

interface GroupsAnswer {
  countedFrom: string | null;
  groups: Array<{ groupId: string; title: string; count: number; endpoints: Array<{ endpointId: string; count: number }> }>;
}
async function groupsSince(since: string | null, title: RegExp, as?: Principal): Promise<{ answer: GroupsAnswer; group: GroupsAnswer['groups'][number] }> {
  const { groups } = await routes();
  const res = await groups.GET(req('GET', `/api/failure-groups${since ? `?since=${encodeURIComponent(since)}` : ''}`, undefined, as));
  const answer = (await res.json()) as GroupsAnswer;
  const group = answer.groups.find((g) => title.test(g.title));
  assert.ok(group, JSON.stringify(answer.groups.map((g) => g.title)));
  return { answer, group };
}

interface Prepared {
  operationId: string;
  total: number;
  endpoints?: string[];
  leftOut?: LeftOutEndpoint[];
}
async function prepare(kind: 'resubmit' | 'skip', selection: unknown, as?: Principal): Promise<{ status: number; body: Prepared & { detail?: string } }> {
  const { ops } = await routes();
  const res = await ops.POST(req('POST', '/api/operations', { kind, selection, hold: true }, as));
  return { status: res.status, body: (await res.json()) as never };
}

async function frozenRows(operationId: string): Promise<string[]> {
  const docs = new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: DATABASE });
  try {
    const jobs = new JobStore(docs);
    const job = await jobs.get(operationId);
    assert.ok(job, `job ${operationId}`);
    return (await jobs.rows(job)).map((r) => `${r.endpointId}/${r.eventId}`).sort();
  } finally {
    docs.close();
  }
}

async function cancel(operationId: string, as?: Principal): Promise<void> {
  const { cancel: route } = await routes();
  const res = await route.POST(req('POST', `/api/operations/${operationId}/cancel`, undefined, as), { params: Promise.resolve({ operationId }) });
  assert.equal(res.status, 200, await res.clone().text());
}

describe('a failure group’s bulk action', () => {
  test('with an "Updated in" window, the job holds only the rows the page counted, and the answer names their endpoints', { timeout: 300_000 }, async () => {
    await seedFailed(stack.store, CRM, 'win-crm', 3, (i) => `ledger sync failed for ORD-${i}`);
    await seedFailed(earlier, BILLING, 'win-bill', 2, (i) => `ledger sync failed for ORD-${i + 10}`);

    const { answer, group } = await groupsSince(new Date(Date.now() - 3600_000).toISOString(), /^ledger sync failed/);
    assert.equal(group.count, 3, 'the last hour counts the crmendpoint rows only');
    assert.deepEqual(group.endpoints.map((e) => e.endpointId), [CRM]);

    // The page's selection for that group, as FailuresView builds it from the answer.
    const windowed = await prepare('resubmit', groupSelection(group.groupId, answer.countedFrom));
    assert.equal(windowed.status, 202, JSON.stringify(windowed.body));
    assert.equal(windowed.body.total, 3, 'the confirmation counts what the page counted');
    assert.deepEqual(await frozenRows(windowed.body.operationId), ['crmendpoint/win-crm-0', 'crmendpoint/win-crm-1', 'crmendpoint/win-crm-2']);
    assert.deepEqual(windowed.body.endpoints, [CRM], 'the dialog names the endpoints of the rows frozen');
    assert.deepEqual(windowed.body.leftOut, []);
    await cancel(windowed.body.operationId);

    // Any time: the whole group, both endpoints, and the answer says so.
    const all = await groupsSince(null, /^ledger sync failed/);
    assert.equal(all.group.count, 5);
    assert.equal(all.answer.countedFrom, null);
    const whole = await prepare('resubmit', groupSelection(all.group.groupId, all.answer.countedFrom));
    assert.equal(whole.status, 202, JSON.stringify(whole.body));
    assert.equal(whole.body.total, 5);
    assert.deepEqual(whole.body.endpoints, [BILLING, CRM]);
    await cancel(whole.body.operationId);
  });

  test('an Operator of one endpoint acts on the group there; the endpoints it only reads are left out, and said so', { timeout: 300_000 }, async () => {
    await seedFailed(stack.store, CRM, 'op-crm', 2, (i) => `tax engine timed out for INV-${i}`);
    await seedFailed(stack.store, BILLING, 'op-bill', 3, (i) => `tax engine timed out for INV-${i + 10}`);
    await seedFailed(stack.store, BILLING, 'only-bill', 2, (i) => `invoice archive unreachable for INV-${i + 20}`);
    const crmOperator: Principal = { kind: 'user', id: 'oid-crm-op', name: 'crm-op@test', roles: ['Reader'], groups: ['crm-ops'] };
    const authEnv = oidcTestEnv(SECRET, { roles: { Reader: 'Reader' }, groups: { 'crm-ops': `Operator:${CRM}`, 'crm-readers': `Reader:${CRM}` } });
    const saved = Object.fromEntries(Object.keys(authEnv).map((k) => [k, process.env[k]]));
    Object.assign(process.env, authEnv);
    try {
      const startedAt = new Date(Date.now() - 1000).toISOString();
      const { group } = await groupsSince(null, /^tax engine timed out/, crmOperator);
      assert.deepEqual(group.endpoints.map((e) => e.endpointId).sort(), [BILLING, CRM], 'a Reader everywhere sees the whole group');

      const prepared = await prepare('resubmit', { groupId: group.groupId }, crmOperator);
      assert.equal(prepared.status, 202, `the group is acted on where the caller may: ${JSON.stringify(prepared.body)}`);
      assert.equal(prepared.body.total, 2);
      assert.deepEqual(await frozenRows(prepared.body.operationId), ['crmendpoint/op-crm-0', 'crmendpoint/op-crm-1']);
      assert.deepEqual(prepared.body.endpoints, [CRM]);
      assert.equal(prepared.body.leftOut?.length, 1, JSON.stringify(prepared.body.leftOut));
      const [left] = prepared.body.leftOut!;
      assert.equal(left!.endpointId, BILLING);
      assert.equal(left!.events, 3);
      assert.match(left!.reason, /resubmit needs the Operator role on endpoint billingendpoint; crm-op@test has Reader/);
      // The entry as a reader of crmendpoint only reads it: which endpoint was left out, not its count or why.
      const crmReader: Principal = { kind: 'user', id: 'oid-crm-reader', name: 'crm-reader@test', roles: [], groups: ['crm-readers'] };
      const { audit } = await routes();
      const read = await audit.GET(req('GET', `/api/audit?action=resubmit.prepare&from=${encodeURIComponent(startedAt)}`, undefined, crmReader));
      assert.equal(read.status, 200, await read.clone().text());
      const entry = ((await read.json()) as { items: Array<{ action: string; details: Record<string, unknown> }> }).items.find((a) => a.action === 'resubmit.prepare');
      assert.ok(entry, 'the preparation is audited, and readable by crmendpoint’s readers');
      assert.deepEqual(entry.details.leftOut, [BILLING], 'the audit names the endpoint left out');
      assert.doesNotMatch(JSON.stringify(entry.details), /"events"|Reader|Operator role/, 'no count of billingendpoint’s, nor the preparer’s role there');
      await cancel(prepared.body.operationId, crmOperator);

      // Nowhere to act: a group only on billingendpoint, and a selection naming billingendpoint, are refused.
      const { group: billingOnly } = await groupsSince(null, /^invoice archive unreachable/, crmOperator);
      const none = await prepare('resubmit', { groupId: billingOnly.groupId }, crmOperator);
      assert.equal(none.status, 403, JSON.stringify(none.body));
      assert.match(none.body.detail ?? '', /on endpoint billingendpoint/);
      const named = await prepare('resubmit', { endpointId: BILLING, groupId: group.groupId }, crmOperator);
      assert.equal(named.status, 403, JSON.stringify(named.body));
      const denied = (await queryAudit(stack.store.database, { user: 'crm-op@test', from: startedAt, pageSize: 20 })).items.filter((a) => a.outcome === 'denied');
      assert.equal(denied.length, 2, 'both refusals are audited');
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test('the limit counts the rows kept: rows on an endpoint the caller only reads do not make the group too big', { timeout: 300_000 }, async () => {
    await seedFailed(stack.store, CRM, 'lim-crm', 2, (i) => `rating service refused RT-${i}`);
    await seedFailed(stack.store, BILLING, 'lim-bill', 3, (i) => `rating service refused RT-${i + 10}`);
    const { group } = await groupsSince(null, /^rating service refused/);
    const crmOperator: Principal = { kind: 'user', id: 'oid-crm-op', name: 'crm-op@test', roles: ['Reader'], groups: ['crm-ops'] };
    const assignments: RoleAssignment[] = [
      { role: 'Reader', endpointId: null, source: 'roles:Reader' },
      { role: 'Operator', endpointId: CRM, source: 'groups:crm-ops' },
    ];
    const actable = actableOn('resubmit', { principal: crmOperator, assignments });
    // A limit of 2: the group has 5 rows, 2 of them on crmendpoint, where the job acts.
    const frozen = await freezeActable(stack.store, { groupId: group.groupId }, { all: true }, { keep: actable.keep, max: 2 });
    assert.deepEqual(frozen.rows.map((r) => `${r.endpointId}/${r.eventId}`).sort(), ['crmendpoint/lim-crm-0', 'crmendpoint/lim-crm-1']);
    assert.deepEqual(actable.leftOut(frozen.dropped).map((l) => `${l.endpointId}:${l.events}`), [`${BILLING}:3`]);
    // Past the limit on the rows kept, still refused.
    await assert.rejects(freezeActable(stack.store, { groupId: group.groupId }, { all: true }, { keep: actable.keep, max: 1 }), {
      status: 400,
      detail: /names more than 1 events; narrow the filter/,
    });
    // Given the catalog's endpoints, only crm's rows are read as rows; billing's events are counted apart, at most
    // the limit of them (3 there, counted as 2): the rows the job will never act on are not all read.
    const catalogEndpoints = [CRM, BILLING, 'erpendpoint'];
    const bounded = await freezeActable(stack.store, { groupId: group.groupId }, { all: true }, { keep: actable.keep, max: 2, endpoints: catalogEndpoints });
    assert.deepEqual(bounded.rows.map((r) => `${r.endpointId}/${r.eventId}`).sort(), ['crmendpoint/lim-crm-0', 'crmendpoint/lim-crm-1']);
    assert.deepEqual([...bounded.dropped], [[BILLING, 2]]);
    const wide = await freezeActable(stack.store, { groupId: group.groupId }, { all: true }, { keep: actable.keep, max: 5, endpoints: catalogEndpoints });
    assert.deepEqual([...wide.dropped], [[BILLING, 3]], 'under the limit, every event counted');
    // Rows on an endpoint the catalog does not list are still read and kept where the caller may act.
    const outside = await freezeActable(stack.store, { groupId: group.groupId }, { all: true }, { keep: actable.keep, max: 5, endpoints: [BILLING] });
    assert.deepEqual(outside.rows.map((r) => `${r.endpointId}/${r.eventId}`).sort(), ['crmendpoint/lim-crm-0', 'crmendpoint/lim-crm-1']);
    assert.deepEqual([...outside.dropped], [[BILLING, 3]]);
  });

  test('the group’s Export link exports the rows the page counted, in its "Updated in" window', { timeout: 300_000 }, async () => {
    await seedFailed(stack.store, CRM, 'exp-new', 2, (i) => `archive quota exceeded for AR-${i}`);
    await seedFailed(earlier, CRM, 'exp-old', 1, (i) => `archive quota exceeded for AR-${i + 10}`);
    const { answer, group } = await groupsSince(new Date(Date.now() - 3600_000).toISOString(), /^archive quota exceeded/);
    assert.equal(group.count, 2);
    const { exportRoute } = await routes();
    const href = groupExportHref(CRM, group.groupId, answer.countedFrom);
    const res = await exportRoute.GET(req('GET', href), { params: Promise.resolve({ endpointId: CRM }) });
    assert.equal(res.status, 200, await res.clone().text());
    const ids = (await res.text()).split('\r\n').filter((l) => l.includes('exp-')).map((l) => l.split(',')[1]).sort();
    assert.deepEqual(ids, ['exp-new-0', 'exp-new-1'], 'the older row on that endpoint is not exported');
  });
});
