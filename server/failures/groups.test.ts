// Failure groups on the embedded Cosmos store: the demo's failures (billing's credit check, the CRM's throttling,
// the CRM's unsupported CustomerUpdated, a dead-lettered payload) written through the store fall into the expected
// groups across endpoints; the read scope limits what is counted; the backfill gives old rows their fingerprint.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, backfillFingerprints, fingerprintOf } from '../../lib/store/index.ts';
import { msg, startStoreFixture, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import { failureGroupsContainer, readFailureGroupDocs } from '../../lib/store/failureGroupAggregates.ts';
import { failureGroups } from './groups.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture({ now: () => new Date() });
});
after(async () => {
  await f.close();
});

async function fail(endpointId: string, eventId: string, answer: Partial<Parameters<typeof msg>[1]> & { type?: T }) {
  const request = msg(T.EventRequest, { endpointId, eventId, eventTypeId: 'OrderPlaced', payload: { eventId } });
  await f.store.writeStatus(request);
  const r = await f.store.writeStatus(msg(answer.type ?? T.ErrorResponse, { endpointId, eventId, parentMessageId: request.messageId, ...answer }));
  assert.equal(r.outcome, 'written');
}

const credit = (order: number, total: string, customer: number) =>
  `Order ORD-${order}: invoice total ${total} EUR exceeds the credit limit of 1000.00 for CUST-${customer}; approve the credit and resubmit`;
const crm = (order: number) => `CRM API answered 503 Service Unavailable (rate limit) while adding order ORD-${order}`;

describe('failure groups', () => {
  test("the demo's failures fall into their groups, sorted by count, across endpoints", async () => {
    for (let i = 0; i < 5; i++)
      await fail('billingendpoint', `credit-${i}`, { errorType: 'CreditApprovalRequiredError', errorText: credit(1000 + i, `${1200 + i * 37}.50`, i) });
    for (let i = 0; i < 3; i++) await fail('crmendpoint', `crm-${i}`, { errorType: 'CrmUnavailableError', errorText: crm(2000 + i) });
    // The same CRM outage seen by another endpoint: one cause, one group.
    await fail('erpendpoint', 'crm-erp', { errorType: 'CrmUnavailableError', errorText: crm(3000) });
    for (let i = 0; i < 2; i++) await fail('crmendpoint', `unsupported-${i}`, { type: T.UnsupportedResponse, eventTypeId: 'CustomerUpdated' });
    await fail('billingendpoint', 'dead-1', {
      errorType: 'PayloadError',
      errorText: 'body is not JSON',
      deadLetterReason: 'Permanent failure: PayloadError: body is not JSON',
      deadLetterErrorDescription: 'body is not JSON',
    });
    // A completed event is in no group.
    const ok = msg(T.EventRequest, { endpointId: 'billingendpoint', eventId: 'ok-1', eventTypeId: 'OrderPlaced', payload: {} });
    await f.store.writeStatus(ok);
    await f.store.writeStatus(msg(T.ResolutionResponse, { endpointId: 'billingendpoint', eventId: 'ok-1', parentMessageId: ok.messageId }));

    const view = await failureGroups(f.store, { status: [] });
    assert.deepEqual(
      view.groups.map((g) => [g.errorType, g.count]),
      [
        ['CreditApprovalRequiredError', 5],
        ['CrmUnavailableError', 4],
        ['Unsupported', 2],
        ['PayloadError', 1],
      ],
    );
    const [creditGroup, crmGroup, unsupported, dead] = view.groups;
    assert.equal(creditGroup!.title, 'Order <id>: invoice total <amount> EUR exceeds the credit limit of <amount> for <id>; approve the credit and resubmit');
    assert.deepEqual(crmGroup!.endpoints, [
      { endpointId: 'crmendpoint', count: 3 },
      { endpointId: 'erpendpoint', count: 1 },
    ]);
    assert.equal(unsupported!.title, 'no handler for event type CustomerUpdated');
    assert.equal(dead!.example?.eventId, 'dead-1');
    assert.equal(view.total, 12);
    assert.equal(creditGroup!.spark.reduce((a, b) => a + b, 0), 5, 'every arrival of the last 24 hours is in the spark');
    assert.ok(creditGroup!.firstAt <= creditGroup!.lastAt);

    // Filters: one endpoint; one status; the read scope of an endpoint's Reader.
    const crmOnly = await failureGroups(f.store, { endpointId: 'crmendpoint', status: [] });
    assert.deepEqual(crmOnly.groups.map((g) => g.count), [3, 2]);
    const unsupportedOnly = await failureGroups(f.store, { status: ['Unsupported'] });
    assert.deepEqual(unsupportedOnly.groups.map((g) => g.groupId), [unsupported!.groupId]);
    const scoped = await failureGroups(f.store, { status: [] }, { all: false, endpointIds: ['erpendpoint'] });
    assert.deepEqual(scoped.groups.map((g) => [g.groupId, g.count]), [[crmGroup!.groupId, 1]]);
    // `since` is honoured to the hour (the aggregates count per hour): the next hour has nothing yet.
    const future = await failureGroups(f.store, { status: [], since: new Date(Date.now() + 3600_000).toISOString() });
    assert.equal(future.groups.length, 0);
    const thisHour = await failureGroups(f.store, { status: [], since: new Date().toISOString() });
    assert.equal(thisHour.total, 12, "since's hour counts whole");
  });

  test('a row leaving the failed state leaves its group', async () => {
    const request = msg(T.EventRequest, { endpointId: 'shippingendpoint', eventId: 'recovers', eventTypeId: 'OrderPlaced', payload: {} });
    await f.store.writeStatus(request);
    const error = msg(T.ErrorResponse, { endpointId: 'shippingendpoint', eventId: 'recovers', parentMessageId: request.messageId, errorType: 'X', errorText: 'transient 42' });
    const failed = await f.store.writeStatus(error);
    assert.equal(failed.outcome === 'written' && failed.row.fingerprint, fingerprintOf(failed.outcome === 'written' ? failed.row : (null as never))!.groupId);
    const before = await failureGroups(f.store, { endpointId: 'shippingendpoint', status: [] });
    assert.equal(before.groups[0]?.count, 1);
    const done = await f.store.writeStatus(msg(T.ResolutionResponse, { endpointId: 'shippingendpoint', eventId: 'recovers', parentMessageId: request.messageId }));
    assert.equal(done.outcome === 'written' && done.row.fingerprint, null);
    const afterwards = await failureGroups(f.store, { endpointId: 'shippingendpoint', status: [] });
    assert.equal(afterwards.groups.length, 0);
  });

  test("rows whose error names their own event id are one group, the id with digits or without", async () => {
    // The store passes the row's ids to the fingerprint: without them `wh-bare` (no digits) stayed in the title.
    for (const eventId of ['wh-bare', 'wh-0']) await fail('warehouseendpoint', eventId, { errorType: 'BinFullError', errorText: `Warehouse rejected ${eventId}: bin full` });
    const { groups } = await failureGroups(f.store, { endpointId: 'warehouseendpoint', status: [] });
    assert.deepEqual(groups.map((g) => [g.title, g.count]), [['Warehouse rejected <id>: bin full', 2]]);
  });

  test('the backfill gives rows written before groups existed their fingerprint, once', async () => {
    const events = f.raw.database(f.database).container(CONTAINERS.events);
    await fail('ledgerendpoint', 'old-1', { errorType: 'LedgerError', errorText: 'ledger LEDGER-1 rejected' });
    await fail('ledgerendpoint', 'old-2', { errorType: 'LedgerError', errorText: 'ledger LEDGER-2 rejected' });
    // Make them look like rows of an older store: no fingerprint.
    const { resources } = await events.items
      .query({ query: "SELECT * FROM c WHERE c.endpointId = 'ledgerendpoint'" }, { partitionKey: ['ledgerendpoint'] })
      .fetchAll();
    for (const doc of resources) {
      delete (doc as Record<string, unknown>).fingerprint;
      await events.item(doc.id as string, ['ledgerendpoint', doc.eventId as string]).replace(doc);
    }
    // An older store kept no aggregates either.
    const aggregates = await failureGroupsContainer(f.store.database);
    for (const d of await readFailureGroupDocs(f.store.database, 'ledgerendpoint')) await aggregates.item(d.id, 'ledgerendpoint').delete();
    assert.equal((await failureGroups(f.store, { endpointId: 'ledgerendpoint', status: [] })).groups.length, 0);
    const first = await backfillFingerprints(f.store);
    assert.equal(first.updated, 2);
    assert.ok(first.groupsRebuilt >= 1, 'the backfill builds the aggregates of the rows it fingerprinted');
    const groups = await failureGroups(f.store, { endpointId: 'ledgerendpoint', status: [] });
    assert.deepEqual(groups.groups.map((g) => [g.title, g.count]), [['ledger <id> rejected', 2]]);
    const second = await backfillFingerprints(f.store);
    assert.equal(second.updated, 0, 'a second run finds nothing to do');
  });
});
