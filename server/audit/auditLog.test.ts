// The audit log on the embedded Cosmos server (real @azure/cosmos client): filters, newest-first order,
// continuation paging, single-month ranges answered from one partition (observed, not assumed), and bounded details.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../../lib/store/index.ts';
import type { FeedOptions, SqlQuerySpec } from '@azure/cosmos';
import { MAX_DETAILS_CHARS, auditContainer, auditQuerySchema, queryAudit, writeAudit, type AuditRecordInput } from './auditLog.ts';
import { auditEntry as entry } from '../testing/auditEntry.ts';

let cosmos: EmbeddedCosmos;
let store: MessageStore;

before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'audit' });
  const writes: AuditRecordInput[] = [
    entry({ at: '2026-11-30T10:00:00.000Z', eventId: 'e1' }),
    entry({ at: '2026-12-01T10:00:00.000Z', eventId: 'e2', actorName: 'bob@test', actorId: 'oid-2' }),
    entry({ at: '2026-12-01T11:00:00.000Z', action: 'skip', outcome: 'denied', status: 403, reason: 'no role' }),
    entry({ at: '2026-12-02T09:00:00.000Z', endpointId: 'crmendpoint' }),
    entry({ at: '2026-12-02T10:00:00.000Z', endpointId: null, action: 'grants.manage', details: { grant: 'g-1', blob: 'x'.repeat(20_000) } }),
  ];
  for (const w of writes) await writeAudit(store.database, w);
});

after(async () => {
  await store?.close();
  await cosmos?.close();
});

const q = (raw: Record<string, unknown>) => auditQuerySchema.parse(raw);

test('newest first, paged with a continuation', async () => {
  const first = await queryAudit(store.database, q({ pageSize: 2 }));
  assert.deepEqual(first.items.map((e) => e.at), ['2026-12-02T10:00:00.000Z', '2026-12-02T09:00:00.000Z']);
  assert.ok(first.continuationToken);
  const second = await queryAudit(store.database, q({ pageSize: 2, continuation: first.continuationToken }));
  assert.deepEqual(second.items.map((e) => e.at), ['2026-12-01T11:00:00.000Z', '2026-12-01T10:00:00.000Z']);
  const third = await queryAudit(store.database, q({ pageSize: 2, continuation: second.continuationToken }));
  assert.deepEqual(third.items.map((e) => e.at), ['2026-11-30T10:00:00.000Z']);
  assert.equal(third.continuationToken, undefined);
});

test('filters: endpoint, event, user (name or id), action, outcome and a time range across months', async () => {
  const ats = async (raw: Record<string, unknown>) => (await queryAudit(store.database, q(raw))).items.map((e) => e.at.slice(0, 13));
  assert.deepEqual(await ats({ endpointId: 'crmendpoint' }), ['2026-12-02T09']);
  assert.deepEqual(await ats({ eventId: 'e1' }), ['2026-11-30T10']);
  assert.deepEqual(await ats({ user: 'bob@test' }), ['2026-12-01T10']);
  assert.deepEqual(await ats({ user: 'oid-2' }), ['2026-12-01T10']);
  assert.deepEqual(await ats({ action: 'skip', outcome: 'denied' }), ['2026-12-01T11']);
  assert.deepEqual(await ats({ from: '2026-11-30T00:00:00Z', to: '2026-12-01T10:30:00Z' }), ['2026-12-01T10', '2026-11-30T10']);
  assert.deepEqual(await ats({ from: '2026-12-01T00:00:00Z', to: '2026-12-01T23:59:59Z' }), ['2026-12-01T11', '2026-12-01T10']);
});

test('a range inside one month is answered from that month\'s partition alone', async () => {
  // The embedded server ignores the partition key of a query (it scans either way), so the rows cannot tell;
  // the options the real client is given can. Recorded on the cached container's Items, then passed through.
  const c = await auditContainer(store.database);
  const partitionKeys: unknown[] = [];
  const query = c.items.query.bind(c.items);
  c.items.query = ((spec: SqlQuerySpec, options?: FeedOptions) => {
    partitionKeys.push(options?.partitionKey);
    return query(spec, options);
  }) as typeof c.items.query;
  try {
    const ats = async (raw: Record<string, unknown>) => (await queryAudit(store.database, q(raw))).items.map((e) => e.at.slice(0, 13));
    assert.deepEqual(await ats({ from: '2026-12-01T00:00:00Z', to: '2026-12-01T23:59:59Z' }), ['2026-12-01T11', '2026-12-01T10']);
    assert.deepEqual(await ats({ from: '2026-11-30T00:00:00Z', to: '2026-12-01T10:30:00Z' }), ['2026-12-01T10', '2026-11-30T10']);
    assert.deepEqual(await ats({ from: '2026-12-01T00:00:00Z' }), ['2026-12-02T10', '2026-12-02T09', '2026-12-01T11', '2026-12-01T10']);
    assert.deepEqual(partitionKeys, ['2026-12', undefined, undefined], 'one month: one partition; otherwise every month');
  } finally {
    delete (c.items as { query?: unknown }).query;
  }
});

test('oversized details are shortened where they are large, the rest kept; bad queries are refused', async () => {
  // Replaced whole by a note, they lost what said which grant it was along with the one large value.
  const [grant] = (await queryAudit(store.database, q({ action: 'grants.manage' }))).items;
  assert.equal(grant?.details?.grant, 'g-1');
  assert.deepEqual(grant?.details?.truncated, ['blob']);
  assert.match(String(grant?.details?.blob), /^x+…\(truncated, \d+ more characters\)$/);
  assert.ok(JSON.stringify(grant?.details).length <= MAX_DETAILS_CHARS);
  assert.equal(auditQuerySchema.safeParse({ from: 'yesterday' }).success, false);
  assert.equal(auditQuerySchema.safeParse({ from: '2026-12-02T00:00:00Z', to: '2026-12-01T00:00:00Z' }).success, false);
  assert.equal(auditQuerySchema.safeParse({ colour: 'red' }).success, false);
});

test('the action filter is a case-insensitive part of the name: "Skip" finds single and bulk skips', async () => {
  // Written here, last, so the tests above see only their own entries.
  await writeAudit(store.database, entry({ at: '2026-12-03T10:00:00.000Z', action: 'operation.skip', target: 'job-1' }));
  const actions = async (action: string) => (await queryAudit(store.database, q({ action }))).items.map((e) => e.action);
  assert.deepEqual(await actions('Skip'), ['operation.skip', 'skip']);
  assert.deepEqual(await actions('skip'), ['operation.skip', 'skip']);
  assert.deepEqual(await actions('GRANTS'), ['grants.manage']);
  assert.deepEqual(await actions('operation.'), ['operation.skip']);
  assert.deepEqual(await actions('nothing-like-it'), []);
});

test('notAction leaves out the actions whose name contains any of its comma-separated parts, ignoring case', async () => {
  // The demo's ledger agent writes an agent.receive or agent.settle entry every few seconds: they must be
  // filtered out to see anything else. Written here, last, after the day of the entries above.
  for (const [at, action] of [
    ['2026-12-04T10:00:00.000Z', 'agent.receive'],
    ['2026-12-04T10:00:01.000Z', 'agent.settle'],
    ['2026-12-04T10:00:02.000Z', 'agent.publish'],
    ['2026-12-04T10:00:03.000Z', 'resubmit'],
  ] as const) {
    await writeAudit(store.database, entry({ at, action }));
  }
  const actions = async (raw: Record<string, unknown>) =>
    (await queryAudit(store.database, q({ from: '2026-12-04T00:00:00Z', ...raw }))).items.map((e) => e.action);
  assert.deepEqual(await actions({}), ['resubmit', 'agent.publish', 'agent.settle', 'agent.receive']);
  assert.deepEqual(await actions({ notAction: 'Agent.' }), ['resubmit']);
  assert.deepEqual(await actions({ notAction: 'agent.receive, agent.settle' }), ['resubmit', 'agent.publish']);
  assert.deepEqual(await actions({ notAction: 'agent.receive,,' }), ['resubmit', 'agent.publish', 'agent.settle']);
  // With the action filter: agent actions other than receive and settle.
  assert.deepEqual(await actions({ action: 'agent', notAction: 'receive,settle' }), ['agent.publish']);
  assert.equal(auditQuerySchema.safeParse({ notAction: 'x'.repeat(201) }).success, false);
});

test('an entry over several endpoints is found under each: by the endpoint filter and by a reader of any of them', async () => {
  // A job or reconcile over billing and crm was filed under the last endpoint authorized: a crm reader never saw it.
  // Written last, by an actor of its own, after the days of the entries above.
  const mine = { actorId: 'oid-multi', actorName: 'multi@test' };
  await writeAudit(store.database, entry({ ...mine, at: '2026-12-05T10:00:00.000Z', action: 'reconcile', endpointId: null, endpoints: ['billingendpoint', 'crmendpoint'] }));
  await writeAudit(store.database, entry({ ...mine, at: '2026-12-05T10:00:01.000Z', action: 'skip', endpointId: 'erpendpoint' }));
  const actions = async (raw: Record<string, unknown>, readable?: string[]) =>
    (await queryAudit(store.database, q({ user: 'oid-multi', ...raw }), readable)).items.map((e) => e.action);
  assert.deepEqual(await actions({ endpointId: 'crmendpoint' }), ['reconcile']);
  assert.deepEqual(await actions({ endpointId: 'billingendpoint' }), ['reconcile']);
  assert.deepEqual(await actions({ endpointId: 'erpendpoint' }), ['skip']);
  assert.deepEqual(await actions({}, ['crmendpoint']), ['reconcile']);
  assert.deepEqual(await actions({}, ['erpendpoint']), ['skip']);
  assert.deepEqual(await actions({}, ['erpendpoint', 'billingendpoint']), ['skip', 'reconcile']);
  assert.deepEqual(await actions({}, []), [], 'no readable endpoint, no entry');
  const [reconcile] = (await queryAudit(store.database, q({ user: 'oid-multi', action: 'reconcile' }))).items;
  assert.deepEqual([reconcile?.endpointId, reconcile?.endpoints], [null, ['billingendpoint', 'crmendpoint']]);
});

test('an edited resubmit with 50 long diff paths keeps edited, the event type change and the message id', async () => {
  // All details were dropped once past the cap (shrinkDetails.test.ts has the cut itself).
  const changes = Array.from({ length: 50 }, (_, i) => ({ path: `/lines/${i}/${'k'.repeat(300)}`, op: 'changed', from: 'string', to: 'number' }));
  const details = { edited: true, eventTypeId: { from: 'OrderPlaced', to: 'OrderPlacedV2' }, payloadDiff: { changes, truncated: false }, messageId: 'resubmit-1a2b', outcome: 'sent' };
  await writeAudit(store.database, entry({ actorId: 'oid-editor', at: '2026-12-05T11:00:00.000Z', eventId: 'e-edit', details }));
  const [stored] = (await queryAudit(store.database, q({ user: 'oid-editor' }))).items;
  assert.deepEqual(
    [stored?.details?.edited, stored?.details?.eventTypeId, stored?.details?.messageId, stored?.details?.truncated],
    [true, { from: 'OrderPlaced', to: 'OrderPlacedV2' }, 'resubmit-1a2b', ['payloadDiff.changes']],
  );
});
