// Failure-group aggregates (failureGroupAggregates.ts): the delta of one write is right for every kind of move
// (pure), and on the embedded Cosmos server the documents the store keeps equal a recount from the rows under
// concurrent writers on two stores ("two Resolvers"), redelivered and duplicated messages, operator claims and
// restores; a drifted aggregate is repaired by the recount.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { createStore, type MessageStore } from './store.ts';
import type { StatusRow, StatusWrite } from './schemas.ts';
import {
  aggregateLosses,
  applyGroupTransition,
  failureGroupsContainer,
  groupChanges,
  readFailureGroupDocs,
  rebuildFailureGroups,
  type FailureGroupDoc,
} from './failureGroupAggregates.ts';
import { msg, startStoreFixture, type StoreFixture } from './testing/fixtures.ts';

const row = (over: Partial<StatusRow>): StatusRow =>
  ({
    endpointId: 'billingendpoint',
    eventId: 'e1',
    sessionId: 's',
    status: 'Failed',
    eventTypeId: 'OrderPlaced',
    updatedAt: '2026-12-03T10:15:00.000Z',
    fingerprint: 'aaaaaaaaaaaaaaaaaaaa',
    errorText: 'boom',
    errorType: 'X',
    ...over,
  }) as StatusRow;

describe('groupChanges (pure)', () => {
  test('enter, leave, nothing', () => {
    const enter = groupChanges(row({ status: 'Pending', fingerprint: null }), row({}));
    assert.equal(enter.length, 1);
    assert.deepEqual(Object.fromEntries(enter[0]!.incr), {
      '/counts/Failed': 1,
      '/types/Failed/OrderPlaced': 1,
      '/hours/Failed/2026-12-03T10': 1,
    });
    assert.equal(enter[0]!.entered?.eventId, 'e1');
    const leave = groupChanges(row({}), row({ status: 'Pending', fingerprint: null }));
    assert.deepEqual(Object.fromEntries(leave[0]!.incr), {
      '/counts/Failed': -1,
      '/types/Failed/OrderPlaced': -1,
      '/hours/Failed/2026-12-03T10': -1,
    });
    assert.equal(leave[0]!.entered, null);
    assert.deepEqual(groupChanges(row({ status: 'Completed', fingerprint: null }), row({ status: 'Pending', fingerprint: null })), []);
    assert.deepEqual(groupChanges(null, row({ status: 'Failed', fingerprint: null })), [], 'a row without a fingerprint is in no group');
  });

  test('a move within a group nets out; a move between groups touches both', () => {
    const again = groupChanges(row({}), row({ updatedAt: '2026-12-03T11:01:00.000Z', eventTypeId: 'OrderPlaced' }));
    assert.deepEqual(Object.fromEntries(again[0]!.incr), { '/hours/Failed/2026-12-03T10': -1, '/hours/Failed/2026-12-03T11': 1 });
    const dead = groupChanges(row({}), row({ status: 'DeadLettered' }));
    assert.deepEqual(Object.fromEntries(dead[0]!.incr), {
      '/counts/Failed': -1,
      '/types/Failed/OrderPlaced': -1,
      '/hours/Failed/2026-12-03T10': -1,
      '/counts/DeadLettered': 1,
      '/types/DeadLettered/OrderPlaced': 1,
      '/hours/DeadLettered/2026-12-03T10': 1,
    });
    const other = groupChanges(row({}), row({ fingerprint: 'bbbbbbbbbbbbbbbbbbbb' }));
    assert.deepEqual(other.map((c) => [c.groupId, c.incr.get('/counts/Failed')]), [
      ['aaaaaaaaaaaaaaaaaaaa', -1],
      ['bbbbbbbbbbbbbbbbbbbb', 1],
    ]);
    const slash = groupChanges(null, row({ eventTypeId: 'a/b~c' }));
    assert.ok(slash[0]!.incr.has('/types/Failed/a~1b~0c'), 'event type ids are escaped as JSON Pointer segments');
  });
});

/** The aggregate documents without what a rebuild sets differently (when, and zero entries the patches leave). */
function comparable(docs: FailureGroupDoc[]) {
  const nz = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).filter(([, n]) => n !== 0).sort());
  return docs
    .map((d) => ({
      key: `${d.endpointId}/${d.groupId}`,
      title: d.title,
      counts: d.counts,
      types: Object.fromEntries(Object.entries(d.types).map(([s, m]) => [s, nz(m)])),
      hours: Object.fromEntries(Object.entries(d.hours).map(([s, m]) => [s, nz(m)])),
    }))
    .filter((d) => Object.values(d.counts).some((n) => n !== 0))
    .sort((a, b) => a.key.localeCompare(b.key));
}

describe('aggregates kept by the store', () => {
  let f: StoreFixture;
  let second: MessageStore;
  before(async () => {
    f = await startStoreFixture({ now: () => new Date() });
    // A second store on the same database: another Resolver (or console) writing rows of the same groups.
    second = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database });
  });
  after(async () => {
    await second.close();
    await f.close();
  });

  const ep = 'billingendpoint';
  const credit = (i: number) => `Order ORD-${1000 + i}: credit limit exceeded for CUST-${i}`;

  test('concurrent writers, redelivery and duplicates: the documents equal a recount from the rows', async () => {
    const requests = new Map<string, StatusWrite>();
    for (let i = 0; i < 40; i++) {
      const r = msg(T.EventRequest, { endpointId: ep, eventId: `c-${i}`, eventTypeId: i % 2 ? 'OrderPlaced' : 'OrderCancelled', payload: {} });
      requests.set(r.eventId, r);
      await f.store.writeStatus(r);
    }
    // Each failure written by both stores at once (the same message delivered to two Resolvers), then redelivered.
    const errors = [...requests.values()].map((r, i) =>
      msg(T.ErrorResponse, { endpointId: ep, eventId: r.eventId, parentMessageId: r.messageId, errorType: 'CreditError', errorText: credit(i) }),
    );
    await Promise.all(errors.flatMap((e) => [f.store.writeStatus(e), second.writeStatus(e)]));
    await Promise.all(errors.map((e, i) => (i % 2 ? f.store : second).writeStatus(e)));
    // Some leave: resolved on a retry (either store); some become dead letters; one becomes unsupported.
    await Promise.all(
      errors.slice(0, 10).map((e, i) =>
        (i % 2 ? f.store : second).writeStatus(msg(T.ResolutionResponse, { endpointId: ep, eventId: e.eventId, parentMessageId: requests.get(e.eventId)!.messageId })),
      ),
    );
    await Promise.all(
      errors.slice(10, 15).map((e) =>
        second.writeStatus(
          msg(T.ErrorResponse, {
            endpointId: ep,
            eventId: e.eventId,
            parentMessageId: requests.get(e.eventId)!.messageId,
            errorType: 'CreditError',
            errorText: e.errorText!,
            deadLetterReason: 'MaxDeliveryCountExceeded',
            deadLetterErrorDescription: 'dead',
          }),
        ),
      ),
    );
    const db = f.store.database;
    const kept = comparable(await readFailureGroupDocs(db, ep));
    const total = kept.reduce((n, d) => n + d.counts.Failed + d.counts.DeadLettered + d.counts.Unsupported, 0);
    assert.equal(total, 30, '40 failed, 10 resolved');
    await rebuildFailureGroups(db, ep);
    assert.deepEqual(comparable(await readFailureGroupDocs(db, ep)), kept, 'a recount from the rows finds what the writes kept');
  });

  test('a change that cannot be applied is counted and logged without payload or error text', async () => {
    const db = f.store.database;
    const container = await failureGroupsContainer(db);
    // A document the patch cannot apply to (no `counts`, `types` or `hours` to increment under): refused with 400.
    const groupId = 'e'.repeat(20);
    await container.items.create({ id: groupId, endpointId: ep, groupId });
    const lines: string[] = [];
    const before = aggregateLosses().count;
    const failed = row({ endpointId: ep, eventId: 'lost-1', status: 'Failed', fingerprint: groupId, errorType: 'X', errorText: 'card 4111-1111 declined for SECRET-PAYLOAD' });
    assert.equal(await applyGroupTransition(db, null, failed, (l) => lines.push(l)), false);
    assert.equal(aggregateLosses().count, before + 1);
    assert.equal(aggregateLosses().lastEndpointId, ep);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, new RegExp(`endpoint ${ep}, group ${groupId} \\(status 400\\)`));
    assert.doesNotMatch(lines[0]!, /4111|SECRET|declined/);
    // An applied change logs nothing.
    const kept = 'd'.repeat(20);
    assert.equal(await applyGroupTransition(db, null, { ...failed, eventId: 'kept-1', fingerprint: kept }, (l) => lines.push(l)), true);
    assert.equal(lines.length, 1);
    await container.item(groupId, ep).delete();
    await container.item(kept, ep).delete();
  });

  test('a drifted aggregate is repaired by the recount', async () => {
    const db = f.store.database;
    const before = comparable(await readFailureGroupDocs(db, ep));
    const container = await failureGroupsContainer(db);
    const [doc] = await readFailureGroupDocs(db, ep);
    // Drift: a lost delta, and a stale document of a group with no rows left.
    await container.item(doc!.id, ep).patch([{ op: 'incr', path: '/counts/Failed', value: 7 }]);
    await container.items.create({ ...doc!, id: 'ffffffffffffffffffff', groupId: 'ffffffffffffffffffff' });
    assert.notDeepEqual(comparable(await readFailureGroupDocs(db, ep)), before);
    await f.store.recountEndpoint(ep);
    assert.deepEqual(comparable(await readFailureGroupDocs(db, ep)), before);
  });
});
