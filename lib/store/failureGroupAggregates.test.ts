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
  applyGroupTransitions,
  failureGroupsContainer,
  groupChanges,
  mergeGroupChanges,
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

describe('mergeGroupChanges (pure)', () => {
  test("a lot's changes summed per document: zeros dropped, the newest entering row kept, the writes counted", () => {
    const b = 'bbbbbbbbbbbbbbbbbbbb';
    const merged = mergeGroupChanges([
      { before: row({ eventId: 'e1' }), after: row({ eventId: 'e1', status: 'Pending', fingerprint: null }) }, // leaves A
      { before: row({ eventId: 'e2', eventTypeId: 'Other' }), after: row({ eventId: 'e2', status: 'Pending', fingerprint: null }) }, // leaves A
      { before: null, after: row({ eventId: 'e3', updatedAt: '2026-12-03T10:20:00.000Z' }) }, // enters A
      { before: null, after: row({ eventId: 'e4', updatedAt: '2026-12-03T10:16:00.000Z' }) }, // enters A, older
      { before: null, after: row({ eventId: 'e5', fingerprint: b }) }, // enters B
      { before: row({ eventId: 'e6', status: 'Completed', fingerprint: null }), after: row({ eventId: 'e6', status: 'Pending', fingerprint: null }) }, // none
    ]);
    assert.deepEqual(
      merged.map((c) => [c.groupId, Object.fromEntries(c.incr), c.entered?.eventId, c.writes]),
      [
        // Two left, two entered: the count and the hour net to zero; one moved from type Other to OrderPlaced.
        ['aaaaaaaaaaaaaaaaaaaa', { '/types/Failed/Other': -1, '/types/Failed/OrderPlaced': 1 }, 'e3', 4],
        [b, { '/counts/Failed': 1, '/types/Failed/OrderPlaced': 1, '/hours/Failed/2026-12-03T10': 1 }, 'e5', 1],
      ],
    );
    // One row leaves the hour another enters: the increments net to nothing, the entering row still sets lastAt.
    const swap = mergeGroupChanges([
      { before: row({ eventId: 'e1' }), after: row({ eventId: 'e1', status: 'Pending', fingerprint: null }) },
      { before: null, after: row({ eventId: 'e2' }) },
    ]);
    assert.deepEqual(swap.map((c) => [c.incr.size, c.entered?.eventId]), [[0, 'e2']]);
    // A row leaving and re-entering nothing: no change at all.
    assert.deepEqual(mergeGroupChanges([{ before: row({}), after: row({ updatedAt: '2026-12-03T10:59:00.000Z' }) }]).map((c) => c.incr.size), [0]);
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

  test("lots (writeStatuses) from two stores at once, repeated, beside single writes: the documents equal a recount", async () => {
    const lotEp = 'crmendpoint';
    const failedIds: Array<{ eventId: string; last: string; requestId: string }> = [];
    for (let i = 0; i < 30; i++) {
      const r = msg(T.EventRequest, { endpointId: lotEp, eventId: `l-${i}`, eventTypeId: `Type${i % 12}`, payload: {} });
      await f.store.writeStatus(r);
      const e = msg(T.ErrorResponse, { endpointId: lotEp, eventId: r.eventId, eventTypeId: r.eventTypeId, parentMessageId: r.messageId, errorType: 'CrmError', errorText: i % 3 ? 'crm offline' : credit(i) });
      await f.store.writeStatus(e);
      failedIds.push({ eventId: r.eventId, last: e.messageId, requestId: r.messageId });
    }
    // The same lot of claims (skips) from both stores at once - two consoles, a repeated step - while the
    // Resolver records retries' errors on some of the same rows: each row is claimed once or moves on, never both.
    const lot = failedIds.slice(0, 20).map((x) => ({
      input: msg(T.SkipRequest, { endpointId: lotEp, eventId: x.eventId, parentMessageId: x.last }),
      expect: { lastMessageId: x.last, status: 'Failed' as const, claim: true },
    }));
    await Promise.all([
      f.store.writeStatuses(lot),
      second.writeStatuses(lot),
      ...failedIds.slice(15, 25).map((x) =>
        second.writeStatus(msg(T.ErrorResponse, { endpointId: lotEp, eventId: x.eventId, parentMessageId: x.requestId, errorType: 'CrmError', errorText: 'crm offline again' })),
      ),
    ]);
    await f.store.writeStatuses(lot); // repeated after the fact: nothing left to claim, nothing applied
    const db = f.store.database;
    const kept = comparable(await readFailureGroupDocs(db, lotEp));
    const rows = await Promise.all(failedIds.map((x) => f.store.getStatusRow(lotEp, x.eventId, 's-1')));
    const stillFailed = rows.filter((r) => r?.status === 'Failed').length;
    assert.ok(stillFailed >= 10, `at least the 10 rows outside the lot are still failed (${stillFailed})`);
    assert.equal(kept.reduce((n, d) => n + d.counts.Failed, 0), stillFailed);
    await rebuildFailureGroups(db, lotEp);
    assert.deepEqual(comparable(await readFailureGroupDocs(db, lotEp)), kept, 'a recount from the rows finds what the lots kept');
  });

  test("a lot's change that cannot be applied is one loss per group, naming its rows; the lot's other groups are applied", async () => {
    const db = f.store.database;
    const container = await failureGroupsContainer(db);
    const broken = 'c'.repeat(20);
    const fine = 'b'.repeat(20);
    await container.items.create({ id: broken, endpointId: ep, groupId: broken });
    const lines: string[] = [];
    const before = aggregateLosses().count;
    const failedRow = (eventId: string, fingerprint: string) => row({ endpointId: ep, eventId, fingerprint, errorText: 'SECRET-PAYLOAD text' });
    const ok = await applyGroupTransitions(
      db,
      [
        { before: null, after: failedRow('lot-1', broken) },
        { before: null, after: failedRow('lot-2', broken) },
        { before: null, after: failedRow('lot-3', broken) },
        { before: null, after: failedRow('lot-4', fine) },
        { before: null, after: failedRow('lot-5', fine) },
      ],
      (l) => lines.push(l),
    );
    assert.equal(ok, false);
    assert.equal(aggregateLosses().count, before + 1, 'one loss: the broken group');
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, new RegExp(`endpoint ${ep}, group ${broken} \\(status 400\\).*off by 3 rows`));
    assert.doesNotMatch(lines[0]!, /SECRET/);
    const applied = (await readFailureGroupDocs(db, ep)).find((d) => d.groupId === fine);
    assert.equal(applied?.counts.Failed, 2, 'the other group got both rows in one patch');
    await container.item(broken, ep).delete();
    await container.item(fine, ep).delete();
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
