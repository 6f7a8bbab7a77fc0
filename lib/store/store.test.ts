// The store against the embedded Cosmos server through the real @azure/cosmos client: CRUD, the guarded write
// (every rule, and racing writers), counters through transitions and the recount, history idempotency, audits,
// heartbeats and corrupt documents.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, ResolutionStatus as S } from '@nimbus/sdk/contract';
import { createStore } from './store.ts';
import { CorruptDocumentError, StoreInputError } from './errors.ts';
import { statusRowId } from './ids.ts';
import { msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f.close();
});

async function written(p: ReturnType<StoreFixture['store']['writeStatus']>) {
  const r = await p;
  assert.equal(r.outcome, 'written', `expected written, got ${JSON.stringify(r)}`);
  return r as Extract<typeof r, { outcome: 'written' }>;
}
async function ignored(p: ReturnType<StoreFixture['store']['writeStatus']>, reason: string) {
  const r = await p;
  assert.equal(r.outcome, 'ignored', `expected ignored, got ${JSON.stringify(r.outcome)}`);
  assert.equal((r as { reason: string }).reason, reason);
}

/**
 * Status writes for one event (session `s-1`) of an endpoint, through `store` (default: the fixture's): the
 * builders every guard and counter test repeats. `message` builds a write; `apply` / `refuse` write a message
 * (or a type, built on the spot) and assert it was written / ignored for `reason`; `answer` writes a response
 * that names `request` as its parent; `row` reads the row back.
 */
function eventOf(endpointId: string, eventId: string, store: StoreFixture['store'] = f.store) {
  type Over = Partial<Parameters<typeof msg>[1]>;
  const message = (type: T, over: Over = {}) => msg(type, { endpointId, eventId, ...over });
  const asWrite = (m: T | ReturnType<typeof msg>, over?: Over) => (typeof m === 'string' ? message(m, over) : m);
  return {
    message,
    apply: (m: T | ReturnType<typeof msg>, over?: Over) => written(store.writeStatus(asWrite(m, over))),
    refuse: (m: T | ReturnType<typeof msg>, reason: string, over?: Over) => ignored(store.writeStatus(asWrite(m, over)), reason),
    answer: (type: T, request: { messageId: string }, over: Over = {}) =>
      written(store.writeStatus(message(type, { parentMessageId: request.messageId, ...over }))),
    row: () => f.store.getStatusRow(endpointId, eventId, 's-1'),
  };
}

describe('status rows', () => {
  test('createStore is idempotent on an existing database', async () => {
    const again = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database });
    await again.close();
  });

  test('happy path: request → Pending (payload kept) → response → Completed, counters follow', async () => {
    const ep = uniq('ep');
    const { store } = f;
    const e = eventOf(ep, 'e1');
    const req = e.message(T.EventRequest, { payload: { orderId: 7 }, correlationId: 'c-1' });
    const w1 = await e.apply(req);
    assert.equal(w1.created, true);
    assert.equal(w1.row.status, S.Pending);
    assert.equal(w1.previousStatus, null);
    assert.deepEqual((await store.getCounts(ep)).pending, 1);

    const res = e.message(T.ResolutionResponse, { parentMessageId: req.messageId, eventTypeId: null });
    const w2 = await e.apply(res);
    assert.equal(w2.created, false);
    assert.equal(w2.previousStatus, S.Pending);

    const row = await e.row();
    assert.ok(row);
    assert.equal(row.status, S.Completed);
    assert.equal(row.lastMessageId, res.messageId);
    assert.equal(row.parentMessageId, req.messageId);
    assert.equal(row.requestMessageId, req.messageId, 'the latest request stays the payload source');
    assert.deepEqual(row.payload, { orderId: 7 });
    assert.equal(row.eventTypeId, 'OrderPlaced', 'a response without an event type keeps the known one');
    assert.equal(row.correlationId, 'c-1');
    assert.ok(row.createdAt < row.updatedAt);
    const counts = await store.getCounts(ep);
    assert.equal(counts.pending, 0);
    assert.equal(counts.completed, 1);
  });

  test('a missing row reads as null; bad input is a StoreInputError', async () => {
    assert.equal(await f.store.getStatusRow(uniq('ep'), 'nope'), null);
    await assert.rejects(
      f.store.writeStatus({ endpointId: 'ep', eventId: '', messageId: 'm', messageType: T.EventRequest }),
      StoreInputError,
    );
    await assert.rejects(
      f.store.writeStatus({
        endpointId: 'bad/ep',
        eventId: 'e',
        messageId: 'm',
        messageType: T.EventRequest,
      }),
      StoreInputError,
    );
    await assert.rejects(
      f.store.writeStatus({ endpointId: 'ep', eventId: 'e', messageId: 'm', messageType: 'Bogus' as T }),
      StoreInputError,
    );
    await assert.rejects(
      f.store.writeStatus(msg(T.ProcessDeferredRequest, { endpointId: 'ep', eventId: 'e' })),
      /not classified by the stale-write guard/,
    );
  });

  test('ids with characters Cosmos forbids are stored and read back', async () => {
    const ep = uniq('ep');
    const w = await eventOf(ep, 'a/b?c#d\\e').apply(T.EventRequest, { sessionId: 'cust/42 #x' });
    assert.equal(w.row.id, statusRowId('a/b?c#d\\e', 'cust/42 #x'));
    const row = await f.store.getStatusRow(ep, 'a/b?c#d\\e', 'cust/42 #x');
    assert.equal(row?.sessionId, 'cust/42 #x');
  });
});

describe('guarded writes (the specification rules, through Cosmos)', () => {
  test('a request copy arriving after its response is refused; the row stays Completed', async () => {
    const ep = uniq('ep');
    const e = eventOf(ep, 'e');
    const req = e.message(T.EventRequest);
    await e.apply(req);
    await e.answer(T.ResolutionResponse, req);
    // the same request again (late fan-out copy / throttle reschedule keeps the MessageId)
    await e.refuse({ ...req }, 'already-answered');
    // a different request copy of the event (another id) cannot reopen a settled row either
    await e.refuse(T.EventRequest, 'not-request-stage');
    assert.equal((await e.row())?.status, S.Completed);
    assert.equal((await f.store.getCounts(ep)).completed, 1);
  });

  test('a rescheduled copy of a request the row already answers is refused, even a control request', async () => {
    const e = eventOf(uniq('ep'), 'e');
    const req = e.message(T.EventRequest);
    await e.apply(req);
    await e.answer(T.ErrorResponse, req, { errorText: 'boom' });
    const resubmit = e.message(T.ResubmissionRequest, { payload: { v: 2 } });
    const reopened = await e.apply(resubmit);
    assert.equal(reopened.row.status, S.Pending, 'a resubmission reopens a Failed row');
    assert.equal(reopened.row.errorText, null);
    await e.answer(T.ResolutionResponse, resubmit);
    await e.refuse({ ...resubmit }, 'already-answered');
    const row = await e.row();
    assert.equal(row?.status, S.Completed);
    assert.deepEqual(row?.payload, { v: 2 });
  });

  test('request copies and deferrals refresh only request-stage rows', async () => {
    const e = eventOf(uniq('ep'), 'e');
    const req = e.message(T.EventRequest);
    await e.apply(req);
    // broker redelivery of the same request (no answer yet) re-stamps its own row
    await e.apply({ ...req });
    await e.answer(T.DeferralResponse, req, { blockedBy: 'e0' });
    // deferred-drain republish: a new request copy over the Deferred row applies
    const replay = e.message(T.EventRequest);
    await e.apply(replay);
    await e.answer(T.ErrorResponse, replay);
    await e.refuse(T.DeferralResponse, 'not-request-stage');
    // a retry (control request) reopens; a request copy cannot replace the control request's projection
    await e.apply(T.RetryRequest);
    await e.refuse(T.EventRequest, 'not-request-stage');
    assert.equal((await e.row())?.messageType, T.RetryRequest);
  });

  test('handoff park over Failed applies (Pending/Handoff); over Completed and Skipped it is refused', async () => {
    const ep = uniq('ep');
    const e = eventOf(ep, 'f');
    const req = e.message(T.EventRequest);
    await e.apply(req);
    await e.answer(T.ErrorResponse, req);
    const park = await e.apply(T.PendingHandoffResponse, {
      handoffReason: 'DMF import',
      externalJobId: 'job-1',
      expectedBy: '2026-12-02T12:00:00.000Z',
    });
    assert.equal(park.row.status, S.Pending);
    assert.equal(park.row.subStatus, 'Handoff');
    assert.equal(park.row.externalJobId, 'job-1');
    let counts = await f.store.getCounts(ep);
    assert.equal(counts.pending, 1, 'Pending includes handoffs');
    assert.equal(counts.handoff, 1);
    assert.equal(counts.failed, 0);
    // settlement request clears the sub-status; the response completes
    const settle = await e.apply(T.HandoffCompletedRequest);
    assert.equal(settle.row.subStatus, null);
    await e.apply(T.ResolutionResponse);
    await e.refuse(T.PendingHandoffResponse, 'handoff-after-settlement');

    const g = eventOf(ep, 'g');
    await g.apply(T.SkipResponse);
    await g.refuse(T.PendingHandoffResponse, 'handoff-after-settlement');
    counts = await f.store.getCounts(ep);
    assert.deepEqual([counts.pending, counts.handoff, counts.completed, counts.skipped], [0, 0, 1, 1]);
  });

  test('dead-letter notification → DeadLettered (counted in the Failed column); empty description does not', async () => {
    const ep = uniq('ep');
    const dl = await eventOf(ep, 'd').apply(T.ErrorResponse, {
      deadLetterReason: 'Poison',
      deadLetterErrorDescription: 'bad body',
    });
    assert.equal(dl.row.status, S.DeadLettered);
    const failed = await eventOf(ep, 'x').apply(T.ErrorResponse, { deadLetterErrorDescription: '  ' });
    assert.equal(failed.row.status, S.Failed);
    await eventOf(ep, 'u').apply(T.UnsupportedResponse);
    const counts = await f.store.getCounts(ep);
    assert.equal(counts.failed, 3, 'Failed + DeadLettered + Unsupported');
    assert.equal(counts.deadLettered, 1);
    assert.equal(counts.unsupported, 1);
  });

  test('racing writers on one row: every write is decided against the row it replaces (no lost update)', async () => {
    const ep = uniq('ep');
    const e = eventOf(ep, 'r');
    const req = e.message(T.EventRequest);
    await e.apply(req);
    // Terminal and control writes all apply; request copies race them and may or may not apply.
    const racers = [
      e.message(T.ErrorResponse, { parentMessageId: req.messageId }),
      e.message(T.ResubmissionRequest),
      e.message(T.ResolutionResponse),
      e.message(T.SkipRequest),
      e.message(T.EventRequest),
      e.message(T.DeferralResponse),
      e.message(T.UnsupportedResponse),
      e.message(T.EventRequest),
    ];
    const results = await Promise.all(racers.map((m) => f.store.writeStatus(m)));
    const mustApply = [0, 1, 2, 3, 6];
    for (const i of mustApply)
      assert.equal(results[i]?.outcome, 'written', `racer ${i} (${racers[i]?.messageType})`);
    for (const r of results) if (r.outcome === 'written') assert.notEqual(r.counters, 'failed');
    // The row is the last applied write, and the counters telescoped exactly: one row, counted once.
    const row = await e.row();
    assert.ok(racers.some((m) => m.messageId === row?.lastMessageId));
    const counts = await f.store.getCounts(ep);
    const total = Object.values(counts.buckets).reduce((a, b) => a + b, 0);
    assert.equal(total, 1, JSON.stringify(counts.buckets));
    assert.deepEqual((await f.store.recountEndpoint(ep)).buckets, counts.buckets);
    // No lost update: every applied write replaced a different row version, and following the versions from
    // the original request visits every applied write and ends at the stored row.
    const applied = results.filter((r) => r.outcome === 'written');
    const replaced = applied.map((r) => r.previousMessageId);
    assert.equal(new Set(replaced).size, replaced.length, 'two writes replaced the same version');
    const next = new Map(applied.map((r) => [r.previousMessageId, r.row.lastMessageId]));
    let cursor: string | null | undefined = req.messageId;
    let steps = 0;
    while (next.has(cursor ?? null)) {
      cursor = next.get(cursor ?? null);
      steps++;
    }
    assert.equal(steps, applied.length);
    assert.equal(cursor, row?.lastMessageId);
  });
});

describe('two store instances (separate row caches) on one database', () => {
  test('a write decided from a stale cached row loses its etag race and is decided again', async () => {
    const other = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database });
    try {
      const ep = uniq('ep');
      const mine = eventOf(ep, 'e');
      const theirs = eventOf(ep, 'e', other);
      const req = mine.message(T.EventRequest);
      await mine.apply(req); // f.store now caches the Pending version
      await theirs.answer(T.ResolutionResponse, req);
      // The cached Pending row would let this copy apply; the If-Match on the cached etag refuses, the re-read sees Completed.
      await mine.refuse(T.EventRequest, 'not-request-stage');
      assert.equal((await mine.row())?.status, S.Completed);

      // A refusal decided from the cache is confirmed by a fresh read: the other instance reopened the row.
      await eventOf(ep, 'h').apply(T.ResolutionResponse); // cached Completed
      await eventOf(ep, 'h', other).apply(T.ResubmissionRequest);
      const park = await eventOf(ep, 'h').apply(T.PendingHandoffResponse);
      assert.equal(park.previousStatus, S.Pending);
      assert.equal(park.row.subStatus, 'Handoff');

      const counts = await f.store.getCounts(ep);
      assert.deepEqual((await f.store.recountEndpoint(ep)).buckets, counts.buckets);
    } finally {
      await other.close();
    }
  });
});

describe('buffered counters (counterFlushMs)', () => {
  test('deltas are applied on flush, netted per endpoint, and flushed on close', async () => {
    const buffered = await createStore({
      endpoint: f.cosmos.endpoint,
      key: f.cosmos.key,
      database: f.database,
      counterFlushMs: 60_000,
    });
    const ep = uniq('ep');
    const e = eventOf(ep, 'e', buffered);
    const x = eventOf(ep, 'x', buffered);
    const req = e.message(T.EventRequest);
    const first = await e.apply(req);
    assert.equal(first.counters, 'queued');
    await e.answer(T.ResolutionResponse, req);
    await x.apply(T.ErrorResponse);
    assert.equal((await f.store.getCounts(ep)).completed, 0, 'nothing applied before the flush');
    await buffered.flushCounters();
    let counts = await f.store.getCounts(ep);
    assert.deepEqual([counts.pending, counts.completed, counts.failed], [0, 1, 1]);
    await x.apply(T.SkipRequest);
    await buffered.close();
    counts = await f.store.getCounts(ep);
    assert.deepEqual([counts.pending, counts.completed, counts.failed], [1, 1, 0]);
  });
});

describe('conditional writes (reconcile, operator claims)', () => {
  test('a write with an expectation applies only while the row still matches', async () => {
    const ep = uniq('ep');
    const e = eventOf(ep, 'c');
    const req = e.message(T.EventRequest);
    await e.apply(req);
    const response = e.message(T.ResolutionResponse, { parentMessageId: req.messageId });
    await ignored(
      f.store.writeStatus(response, { status: S.Pending, lastMessageId: 'someone-else' }),
      'precondition-failed',
    );
    await ignored(f.store.writeStatus(response, { status: S.Failed }), 'precondition-failed');
    await ignored(f.store.writeStatus(response, { lastMessageId: null }), 'precondition-failed');
    await written(f.store.writeStatus(response, { status: S.Pending, lastMessageId: req.messageId }));
    await ignored(
      f.store.writeStatus(response, { status: S.Pending, lastMessageId: req.messageId }),
      'precondition-failed',
    );
    assert.equal((await f.store.getCounts(ep)).completed, 1);
  });
});

describe('counters', () => {
  test('follow transitions across events, and a recount repairs drift', async () => {
    const ep = uniq('ep');
    const { store } = f;
    for (const e of ['a', 'b', 'c', 'd', 'h']) await eventOf(ep, e).apply(T.EventRequest);
    await eventOf(ep, 'a').apply(T.ResolutionResponse);
    await eventOf(ep, 'b').apply(T.ErrorResponse);
    await eventOf(ep, 'c').apply(T.DeferralResponse, { blockedBy: 'b' });
    await eventOf(ep, 'h').apply(T.PendingHandoffResponse);
    const expected = {
      Pending: 1,
      Handoff: 1,
      Deferred: 1,
      Failed: 1,
      DeadLettered: 0,
      Unsupported: 0,
      Completed: 1,
      Skipped: 0,
    };
    assert.deepEqual((await store.getCounts(ep)).buckets, expected);

    // Simulate a crash between a row write and its counter patch: the counter document drifts.
    await f.raw
      .database(f.database)
      .container('counters')
      .item('counts', ep)
      .patch([
        { op: 'incr', path: '/counts/Pending', value: 41 },
        { op: 'incr', path: '/counts/Failed', value: -3 },
      ]);
    assert.equal((await store.getCounts(ep)).pending, 43);
    const repaired = await store.recountEndpoint(ep);
    assert.deepEqual(repaired.buckets, expected);
    assert.ok(repaired.recountedAt);
    assert.deepEqual((await store.getCounts(ep)).buckets, expected);

    const all = await store.getAllCounts();
    const mine = all.endpoints.find((x) => x.endpointId === ep);
    assert.deepEqual(mine?.buckets, expected);
    assert.equal(mine?.failed, 1);
    assert.equal(mine?.pending, 2);
  });

  test('a recount of an endpoint without a counter document creates it', async () => {
    const ep = uniq('ep');
    await f.raw
      .database(f.database)
      .container('events')
      .items.create({ ...(await seedRow(ep)) });
    const counts = await f.store.recountEndpoint(ep);
    assert.equal(counts.pending, 1);
  });
});

async function seedRow(ep: string) {
  // Build a valid row through a throwaway endpoint, then re-home it: a row whose counter patch never happened.
  const tmp = uniq('tmp');
  const w = await eventOf(tmp, 'seed').apply(T.EventRequest);
  return { ...w.row, endpointId: ep };
}

describe('history and audits', () => {
  test('history is idempotent per MessageId and ordered by enqueue time', async () => {
    const ep = uniq('ep');
    const eventId = uniq('ev');
    const base = { endpointId: ep, eventId, sessionId: 's' };
    const first = await f.store.recordHistory({
      ...base,
      messageId: 'm2',
      messageType: T.ResolutionResponse,
      enqueuedAt: '2026-12-01T10:00:02.000Z',
    });
    assert.equal(first.recorded, true);
    const again = await f.store.recordHistory({
      ...base,
      messageId: 'm2',
      messageType: T.ResolutionResponse,
      enqueuedAt: '2026-12-01T10:09:02.000Z',
    });
    assert.equal(again.recorded, false);
    assert.equal(again.entry.enqueuedAt, '2026-12-01T10:00:02.000Z', 'the first entry is kept');
    await f.store.recordHistory({
      ...base,
      messageId: 'm1',
      messageType: T.EventRequest,
      enqueuedAt: '2026-12-01T10:00:01.000Z',
      payload: { a: 1 },
    });
    const page = await f.store.listHistory(eventId);
    assert.deepEqual(
      page.items.map((h) => h.messageId),
      ['m1', 'm2'],
    );
    assert.deepEqual(page.items[0]?.payload, { a: 1 });
    await assert.rejects(
      f.store.recordHistory({
        ...base,
        messageId: 'm3',
        messageType: T.EventRequest,
        enqueuedAt: 'yesterday',
      }),
      StoreInputError,
    );
  });

  test('audits: newest first per event and per endpoint; a caller id makes the write idempotent', async () => {
    const ep = uniq('ep');
    const eventId = uniq('ev');
    await f.store.recordAudit({
      eventId,
      endpointId: ep,
      type: 'Resubmit',
      auditor: 'ops@x',
      at: '2026-12-01T10:00:00.000Z',
    });
    await f.store.recordAudit({
      id: 'stale-1',
      eventId,
      endpointId: ep,
      type: 'Comment',
      auditor: 'Resolver',
      data: 'Ignored stale EventRequest m1',
      at: '2026-12-01T10:00:01.000Z',
    });
    await f.store.recordAudit({
      id: 'stale-1',
      eventId,
      endpointId: ep,
      type: 'Comment',
      auditor: 'Resolver',
      data: 'Ignored stale EventRequest m1',
      at: '2026-12-01T10:00:01.000Z',
    });
    const audits = await f.store.listAudits(eventId);
    assert.deepEqual(
      audits.items.map((a) => a.type),
      ['Comment', 'Resubmit'],
    );
    const byEndpoint = await f.store.listEndpointAudits(ep);
    assert.equal(byEndpoint.items.length, 2);
  });
});

describe('recordOutcome (history + guarded status)', () => {
  test('records the history entry and the status; a redelivered copy keeps one entry and is refused', async () => {
    const ep = uniq('ep');
    const eventId = uniq('ev');
    const req = msg(T.EventRequest, { endpointId: ep, eventId, payload: { n: 1 } });
    const history = { ...req, enqueuedAt: '2026-12-01T10:00:00.000Z' };
    const first = await f.store.recordOutcome({ history, status: req });
    assert.equal(first.history.recorded, true);
    assert.equal(first.status.outcome, 'written');
    const response = msg(T.ResolutionResponse, { endpointId: ep, eventId, parentMessageId: req.messageId });
    await f.store.recordOutcome({
      history: { ...response, enqueuedAt: '2026-12-01T10:00:01.000Z' },
      status: response,
    });
    const late = await f.store.recordOutcome({ history, status: req });
    assert.equal(late.history.recorded, false);
    assert.equal(late.status.outcome, 'ignored');
    assert.equal((await f.store.listHistory(eventId)).items.length, 2);
    assert.equal((await f.store.getStatusRow(ep, eventId, 's-1'))?.status, S.Completed);
  });
});

describe('corrupt documents are reported, not crashes', () => {
  test('an unparsable row: point read throws CorruptDocumentError, lists report it, guarded writes fail closed, terminal writes repair', async () => {
    const ep = uniq('ep');
    const good = await eventOf(ep, 'ok').apply(T.EventRequest);
    await f.raw
      .database(f.database)
      .container('events')
      .items.create({
        ...good.row,
        id: statusRowId('bad', 's-1'),
        eventId: 'bad',
        eventIdLower: 'bad',
        status: 'Exploded',
      });
    await assert.rejects(f.store.getStatusRow(ep, 'bad', 's-1'), CorruptDocumentError);
    const page = await f.store.listEvents({ endpointId: ep });
    assert.deepEqual(
      page.items.map((r) => r.eventId),
      ['ok'],
    );
    assert.equal(page.corrupt.length, 1);
    assert.match(page.corrupt[0]?.issues ?? '', /status/);
    const bad = eventOf(ep, 'bad');
    await bad.refuse(T.EventRequest, 'unreadable-row');
    const repaired = await bad.apply(T.ResolutionResponse);
    assert.equal(
      repaired.counters,
      'recounted',
      'the old bucket is unknown: the store recounts the endpoint (unreadableRecount.test.ts)',
    );
    assert.equal((await f.store.getCounts(ep)).pending, 1);
    assert.equal((await f.store.recountEndpoint(ep)).pending, 1);
  });
});

describe('heartbeats and platform records', () => {
  test('a probe record and its reply merge on the probe id', async () => {
    const ep = uniq('ep');
    await f.store.recordHeartbeat({
      endpointId: ep,
      probeId: 'p1',
      status: 'Pending',
      sentAt: '2026-12-01T10:00:00.000Z',
      intervalSeconds: 300,
    });
    const reply = await f.store.recordHeartbeat({
      endpointId: ep,
      probeId: 'p1',
      status: 'On',
      answeredAt: '2026-12-01T10:00:01.000Z',
      sdkVersion: '1.2.0',
    });
    assert.equal(reply.sentAt, '2026-12-01T10:00:00.000Z');
    assert.equal(reply.intervalSeconds, 300);
    const list = await f.store.listHeartbeats(ep);
    assert.equal(list.length, 1);
    assert.equal(list[0]?.status, 'On');
  });

  test('heartbeat settings: defaults, and an etag claim only one instance wins', async () => {
    const { settings, etag } = await f.store.getHeartbeatSettings();
    assert.equal(settings.intervalSeconds, 300);
    assert.equal(etag, undefined);
    // Two saves conditional on "never saved": the first creates the document, the second finds it and is refused.
    const [first, second] = await Promise.all([
      f.store.saveHeartbeatSettings({ enabled: true, intervalSeconds: 60 }, null),
      f.store.saveHeartbeatSettings({ enabled: false, intervalSeconds: 90 }, null),
    ]);
    assert.equal([first, second].filter(Boolean).length, 1);
    await f.store.saveHeartbeatSettings({ enabled: true, intervalSeconds: 60 });
    const current = await f.store.getHeartbeatSettings();
    assert.equal(current.settings.enabled, true);
    const claim = { lastSentAt: '2026-12-01T10:00:00.000Z' };
    const [a, b] = await Promise.all([
      f.store.saveHeartbeatSettings(claim, current.etag),
      f.store.saveHeartbeatSettings(claim, current.etag),
    ]);
    assert.equal([a, b].filter(Boolean).length, 1);
    await f.store.saveHeartbeatSettings({ intervalSeconds: 120 });
    const merged = (await f.store.getHeartbeatSettings()).settings;
    assert.deepEqual(
      [merged.enabled, merged.intervalSeconds, merged.lastSentAt],
      [true, 120, '2026-12-01T10:00:00.000Z'],
    );
    await assert.rejects(f.store.saveHeartbeatSettings({ intervalSeconds: 10 }), StoreInputError);
    await assert.rejects(f.store.saveHeartbeatSettings({ timeoutSeconds: 500 }), StoreInputError);
  });

  test('service health round trip', async () => {
    await f.store.setServiceHealth({
      serviceId: 'Resolver',
      status: 'On',
      version: '0.1.0',
      lastSeenAt: '2026-12-01T10:00:00.000Z',
      roundTripMs: 12,
    });
    assert.equal((await f.store.getServiceHealth('Resolver'))?.roundTripMs, 12);
    assert.equal(await f.store.getServiceHealth('Nobody'), null);
  });
});
