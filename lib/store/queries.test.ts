// The console's reads against the embedded Cosmos server: filters, bounded pages with continuation tokens,
// parked siblings, cross-endpoint search, one event's details, and the all-endpoint counts read.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, ResolutionStatus as S } from '@nimbus/sdk/contract';
import type { MessageType } from '@nimbus/sdk/contract';
import { StoreInputError } from './errors.ts';
import type { Page } from './paging.ts';
import { msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
const A = uniq('orders');
const B = uniq('billing');
/** updatedAt of each seeded row, by event id (the fixture clock makes every write distinct and ordered). */
const updated = new Map<string, string>();

async function put(
  endpointId: string,
  eventId: string,
  type: MessageType,
  over: Parameters<typeof msg>[1] extends infer O ? Partial<O> : never = {},
) {
  const r = await f.store.writeStatus(msg(type, { endpointId, eventId, ...over }));
  assert.equal(r.outcome, 'written');
  if (r.outcome === 'written') updated.set(`${endpointId}/${eventId}`, r.row.updatedAt);
}

async function all<T>(
  fetch: (token: string | undefined) => Promise<Page<T>>,
): Promise<{ items: T[]; pages: number[] }> {
  const items: T[] = [];
  const pages: number[] = [];
  let token: string | undefined;
  do {
    const p = await fetch(token);
    items.push(...p.items);
    pages.push(p.items.length);
    token = p.continuationToken;
  } while (token !== undefined);
  return { items, pages };
}

before(async () => {
  f = await startStoreFixture();
  // Endpoint A: 12 Pending (sessions p-0..p-2), 5 Failed (type PaymentFailed), 3 Completed.
  for (let i = 0; i < 12; i++)
    await put(A, `evt-${String(i).padStart(2, '0')}`, T.EventRequest, { sessionId: `p-${i % 3}` });
  for (let i = 0; i < 5; i++)
    await put(A, `fail-${i}`, T.ErrorResponse, { eventTypeId: 'PaymentFailed', sessionId: 'Cust-7' });
  for (let i = 0; i < 3; i++) await put(A, `done-${i}`, T.ResolutionResponse);
  // A blocked session on A: the blocker failed, four siblings parked behind it.
  await put(A, 'blocker', T.ErrorResponse, { sessionId: 'blocked-1' });
  for (let i = 0; i < 4; i++)
    await put(A, `parked-${i}`, T.DeferralResponse, { sessionId: 'blocked-1', blockedBy: 'blocker' });
  // Endpoint B: two rows sharing an event id prefix with A's rows.
  await put(B, 'evt-00-b', T.EventRequest, { sessionId: 'Cust-7' });
  await put(B, 'other', T.ErrorResponse);
});
after(async () => {
  await f.close();
});

describe('listEvents', () => {
  test('pages through an endpoint newest first, every row exactly once', async () => {
    const { items, pages } = await all((t) =>
      f.store.listEvents({ endpointId: A, pageSize: 7, continuationToken: t }),
    );
    assert.equal(items.length, 25);
    assert.ok(pages.every((n) => n <= 7));
    assert.ok(pages.length >= 4);
    assert.equal(new Set(items.map((r) => r.id)).size, 25);
    const times = items.map((r) => r.updatedAt);
    assert.deepEqual(times, [...times].sort().reverse());
    assert.ok(
      items.every((r) => !('payload' in r)),
      'pages carry no payloads',
    );
  });

  test('filters by status, event type, session, event id', async () => {
    const failed = await all((t) =>
      f.store.listEvents({ endpointId: A, statuses: [S.Failed], pageSize: 2, continuationToken: t }),
    );
    assert.equal(failed.items.length, 6);
    const pendingOrDeferred = await f.store.listEvents({
      endpointId: A,
      statuses: [S.Pending, S.Deferred],
      pageSize: 100,
    });
    assert.equal(pendingOrDeferred.items.length, 16);
    const byType = await f.store.listEvents({ endpointId: A, eventTypeId: 'PaymentFailed' });
    assert.deepEqual(byType.items.map((r) => r.eventId).sort(), [
      'fail-0',
      'fail-1',
      'fail-2',
      'fail-3',
      'fail-4',
    ]);
    const bySession = await all((t) =>
      f.store.listEvents({ endpointId: A, sessionId: 'p-1', pageSize: 3, continuationToken: t }),
    );
    assert.deepEqual(bySession.items.map((r) => r.eventId).sort(), ['evt-01', 'evt-04', 'evt-07', 'evt-10']);
    const byEvent = await f.store.listEvents({ endpointId: A, eventId: 'done-1' });
    assert.deepEqual(
      byEvent.items.map((r) => r.status),
      [S.Completed],
    );
  });

  test('filters by a time range (from inclusive, to exclusive)', async () => {
    const from = updated.get(`${A}/evt-03`) ?? '';
    const to = updated.get(`${A}/evt-08`) ?? '';
    const { items } = await all((t) =>
      f.store.listEvents({
        endpointId: A,
        updatedFrom: from,
        updatedTo: to,
        pageSize: 2,
        continuationToken: t,
      }),
    );
    assert.deepEqual(
      items.map((r) => r.eventId),
      ['evt-07', 'evt-06', 'evt-05', 'evt-04', 'evt-03'],
    );
  });

  test('a token from another query, a forged token and a bad page size are refused clearly', async () => {
    const first = await f.store.listEvents({ endpointId: A, pageSize: 2 });
    assert.ok(first.continuationToken);
    await assert.rejects(
      f.store.listEvents({
        endpointId: A,
        statuses: [S.Failed],
        pageSize: 2,
        continuationToken: first.continuationToken,
      }),
      (e: unknown) => e instanceof StoreInputError && /different query/.test(e.message),
    );
    await assert.rejects(
      f.store.listEvents({ endpointId: A, continuationToken: 'not-a-token' }),
      StoreInputError,
    );
    await assert.rejects(f.store.listEvents({ endpointId: A, pageSize: 0 }), StoreInputError);
    await assert.rejects(f.store.listEvents({ endpointId: 'no/slashes' }), StoreInputError);
    await assert.rejects(f.store.listEvents({ endpointId: A, updatedFrom: 'last tuesday' }), StoreInputError);
    await assert.rejects(f.store.listEvents({ endpointId: A, statuses: ['Lost' as S] }), StoreInputError);
    // an oversized request is clamped, not refused
    assert.equal((await f.store.listEvents({ endpointId: A, pageSize: 10_000 })).items.length, 25);
  });
});

describe('parked siblings', () => {
  test('the Deferred rows of a blocked session, oldest first, without the blocker, paged', async () => {
    const { items, pages } = await all((t) =>
      f.store.listParkedSiblings({
        endpointId: A,
        sessionId: 'blocked-1',
        blockedBy: 'blocker',
        pageSize: 3,
        continuationToken: t,
      }),
    );
    assert.deepEqual(
      items.map((r) => r.eventId),
      ['parked-0', 'parked-1', 'parked-2', 'parked-3'],
    );
    assert.deepEqual(pages, [3, 1]);
    assert.ok(items.every((r) => r.blockedBy === 'blocker'));
  });
});

describe('search across endpoints', () => {
  test('by event id prefix, case-insensitive, newest first', async () => {
    const { items } = await all((t) =>
      f.store.searchEvents({ eventIdPrefix: 'EVT-00', pageSize: 1, continuationToken: t }),
    );
    assert.deepEqual(
      items.map((r) => `${r.endpointId}/${r.eventId}`),
      [`${B}/evt-00-b`, `${A}/evt-00`],
    );
  });

  test('by session id prefix, optionally restricted to endpoints; a miss is an empty page', async () => {
    const both = await f.store.searchEvents({ sessionIdPrefix: 'cust-7', pageSize: 50 });
    assert.equal(both.items.length, 6);
    const onlyB = await f.store.searchEvents({ sessionIdPrefix: 'cust-7', endpointIds: [B] });
    assert.deepEqual(
      onlyB.items.map((r) => r.eventId),
      ['evt-00-b'],
    );
    const miss = await f.store.searchEvents({ eventIdPrefix: 'vt-00' });
    assert.deepEqual(miss.items, [], 'prefix, not substring');
    await assert.rejects(f.store.searchEvents({}), StoreInputError);
  });
});

describe('one event', () => {
  test('its row, history and audits; a missing event is null', async () => {
    const ep = uniq('ep');
    const req = msg(T.EventRequest, { endpointId: ep, eventId: 'one', payload: { x: 1 } });
    await f.store.writeStatus(req);
    await f.store.recordHistory({ ...req, enqueuedAt: '2026-12-01T10:00:00.000Z' });
    await f.store.recordHistory({
      endpointId: ep,
      eventId: 'one',
      messageId: 'resp-1',
      messageType: T.ErrorResponse,
      enqueuedAt: '2026-12-01T10:00:01.000Z',
      errorText: 'boom',
    });
    await f.store.recordAudit({ eventId: 'one', endpointId: ep, type: 'Comment', auditor: 'ops' });
    const details = await f.store.getEvent(ep, 'one');
    assert.ok(details);
    assert.equal(details.rows.length, 1);
    assert.deepEqual(details.rows[0]?.payload, { x: 1 }, 'the detail view carries the payload');
    assert.deepEqual(
      details.history.items.map((h) => h.messageId),
      [req.messageId, 'resp-1'],
    );
    assert.equal(details.audits.items.length, 1);
    assert.equal(await f.store.getEvent(ep, 'missing'), null);
  });

  test('listEventRows: the rows of one event, one per session, newest update first; none for an unknown event', async () => {
    const ep = uniq('ep');
    await f.store.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'two', sessionId: 's-a' }));
    await f.store.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'two', sessionId: 's-b' }));
    await f.store.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'other', sessionId: 's-a' }));
    const rows = await f.store.listEventRows(ep, 'two');
    assert.deepEqual(rows.map((r) => r.sessionId), ['s-b', 's-a']);
    assert.deepEqual(await f.store.listEventRows(ep, 'missing'), []);
  });
});

describe('counts for all endpoints', () => {
  test('one read returns every endpoint with the display columns', async () => {
    const { endpoints } = await f.store.getAllCounts();
    const a = endpoints.find((e) => e.endpointId === A);
    const b = endpoints.find((e) => e.endpointId === B);
    assert.deepEqual(
      a && { pending: a.pending, deferred: a.deferred, failed: a.failed, completed: a.completed },
      { pending: 12, deferred: 4, failed: 6, completed: 3 },
    );
    assert.deepEqual(b && { pending: b.pending, failed: b.failed }, { pending: 1, failed: 1 });
  });
});
