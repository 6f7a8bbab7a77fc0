// Throttling and transient faults injected at the wire (a fault proxy in front of the embedded Cosmos server):
// the store surfaces a 429 as StoreThrottledError with the server's retry-after, 5xx as StoreTransientError,
// and the guarded write leaves no partial state behind.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, ResolutionStatus as S } from '@nimbus/sdk/contract';
import type { MessageStore } from './store.ts';
import { StoreThrottledError, StoreTransientError } from './errors.ts';
import type { FaultProxy } from './testing/faultProxy.ts';
import { msg, startProxiedStoreFixture, uniq, type ProxiedStoreFixture } from './testing/fixtures.ts';
import { readFailureGroupDocs } from './failureGroupAggregates.ts';
import type { StatusRow } from './schemas.ts';

let wire: ProxiedStoreFixture;
let proxy: FaultProxy;
// `store` meets the faults itself: it reaches the server through the proxy.
let store: MessageStore;

before(async () => {
  wire = await startProxiedStoreFixture({ storeVia: 'proxy' });
  ({ proxy, store } = wire);
});
after(() => wire.close());

const isWrite = (r: { method: string; path: string }) => r.method === 'PUT' || r.method === 'POST';

/** Polls until `probe` holds (a positive signal, not a sleep); the generous limit is for a loaded machine. */
async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('throttling surfaces as a typed error', () => {
  test('a 429 on the status write carries the server retry-after; nothing is half written', async () => {
    const ep = uniq('ep');
    proxy.inject({
      status: 429,
      retryAfterMs: 1234,
      times: 1,
      match: (r) => isWrite(r) && r.path.includes('/colls/events/'),
    });
    const before = proxy.injected;
    await assert.rejects(
      store.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'e' })),
      (e: unknown) => {
        assert.ok(e instanceof StoreThrottledError);
        assert.equal(e.retryAfterMs, 1234);
        assert.equal(e.transient, true);
        assert.doesNotMatch(e.message, /127\.0\.0\.1|key/i, 'no account details in the error');
        return true;
      },
    );
    assert.equal(proxy.injected, before + 1, 'the SDK did not retry on its own (throttleRetries = 0)');
    assert.equal(await store.getStatusRow(ep, 'e', 's-1'), null);
    assert.equal((await store.getCounts(ep)).pending, 0);
    // the fault has passed: the same write now applies
    const again = await store.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'e' }));
    assert.equal(again.outcome, 'written');
  });

  test('a 429 on the read before a guarded write (a deferral reads first), on a history write and on a query', async () => {
    const ep = uniq('ep');
    proxy.inject({
      status: 429,
      retryAfterMs: 50,
      times: 1,
      match: (r) => r.method === 'GET' && r.path.includes('/colls/events/docs/'),
    });
    await assert.rejects(
      store.writeStatus(msg(T.DeferralResponse, { endpointId: ep, eventId: 'e' })),
      StoreThrottledError,
    );

    proxy.inject({ status: 429, times: 1, match: (r) => isWrite(r) && r.path.includes('/colls/history/') });
    await assert.rejects(
      store.recordHistory({
        endpointId: ep,
        eventId: 'e',
        messageId: 'm',
        messageType: T.EventRequest,
        enqueuedAt: new Date().toISOString(),
      }),
      (e: unknown) => e instanceof StoreThrottledError && e.retryAfterMs === undefined,
    );

    // A query is a POST to .../docs (the SDK first asks for a query plan on the same route, and tolerates a
    // failed plan request), so both are throttled here.
    proxy.inject({
      status: 429,
      retryAfterMs: 700,
      times: 2,
      match: (r) => r.method === 'POST' && r.path.endsWith('/colls/events/docs'),
    });
    await assert.rejects(
      store.listEvents({ endpointId: ep }),
      (e: unknown) => e instanceof StoreThrottledError && e.retryAfterMs === 700,
    );
    proxy.clear();
  });

  test('recordOutcome: a throttled history write leaves the status untouched', async () => {
    const ep = uniq('ep');
    const m = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
    proxy.inject({
      status: 429,
      retryAfterMs: 300,
      times: 1,
      match: (r) => isWrite(r) && r.path.includes('/colls/history/'),
    });
    await assert.rejects(
      store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() }, status: m }),
      (e: unknown) => e instanceof StoreThrottledError && e.retryAfterMs === 300,
    );
    assert.equal(await store.getStatusRow(ep, 'e', 's-1'), null);
    assert.equal((await store.listHistory('e')).items.filter((h) => h.endpointId === ep).length, 0);
  });

  test('a 503 is a StoreTransientError', async () => {
    proxy.inject({ status: 503, times: 1, match: isWrite });
    await assert.rejects(
      store.writeStatus(msg(T.ResolutionResponse, { endpointId: uniq('ep'), eventId: 'e' })),
      (e: unknown) => e instanceof StoreTransientError && e.statusCode === 503,
    );
  });

  test('with throttleRetries the SDK absorbs a short throttle itself (for interactive readers)', async () => {
    const patient = await wire.openThroughProxy({ throttleRetries: 3 });
    try {
      const ep = uniq('ep');
      proxy.inject({ status: 429, retryAfterMs: 5, times: 2, match: isWrite });
      const r = await patient.writeStatus(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e' }));
      assert.equal(r.outcome, 'written');
      assert.equal((await patient.getStatusRow(ep, 'e', 's-1'))?.status, S.Completed);
    } finally {
      proxy.clear();
      await patient.close();
    }
  });

  test('a counter flush whose reply was lost (applied, but the client saw an error) is not applied twice', async () => {
    const buffered = await wire.openThroughProxy({ counterFlushMs: 60_000 });
    try {
      const ep = uniq('ep');
      await buffered.writeStatus(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e' }));
      await buffered.flushCounters(); // the counter document exists: the next flush is one patch
      await buffered.writeStatus(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e2' }));
      proxy.inject({ status: 408, afterForward: true, times: 1, match: (r) => r.method === 'PATCH' && r.path.includes('/colls/counters/') });
      await assert.rejects(buffered.flushCounters());
      proxy.clear();
      assert.equal((await store.getCounts(ep)).failed, 2, 'the patch reached the server');
      await buffered.flushCounters();
      assert.equal((await store.getCounts(ep)).failed, 2);
    } finally {
      await buffered.close();
    }
  });

  test('a throttled counter flush keeps its deltas for the next flush', async () => {
    const buffered = await wire.openThroughProxy({ counterFlushMs: 60_000 });
    try {
      const ep = uniq('ep');
      await buffered.writeStatus(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e' }));
      proxy.inject({ status: 429, retryAfterMs: 10, match: (r) => r.path.includes('/colls/counters/') });
      await assert.rejects(buffered.flushCounters(), StoreThrottledError);
      proxy.clear();
      assert.equal((await store.getCounts(ep)).failed, 0);
      await buffered.flushCounters();
      assert.equal((await store.getCounts(ep)).failed, 1);
    } finally {
      proxy.clear();
      await buffered.close();
    }
  });

  test('a counter update that is throttled leaves the row written and reports it for a recount', async () => {
    const ep = uniq('ep');
    proxy.inject({
      status: 429,
      retryAfterMs: 10,
      times: 1,
      match: (r) => r.path.includes('/colls/counters/'),
    });
    const r = await store.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'e' }));
    assert.equal(r.outcome, 'written');
    assert.equal(r.outcome === 'written' && r.counters, 'failed');
    assert.equal((await store.getCounts(ep)).pending, 0, 'the counter missed the transition');
    assert.equal((await store.recountEndpoint(ep)).pending, 1, 'the recount repairs it');
  });
});

// A failed write forgets the cached version it decided from (it may be stale), but only that one: a concurrent
// write of the same row may have cached a newer version meanwhile, and dropping that costs the next write a read.
describe('a throttled write keeps the version a concurrent write cached', () => {
  const isRowRead = (r: { method: string; path: string }) => r.method === 'GET' && r.path.includes('/colls/events/docs/');
  const isRowReplace = (r: { method: string; path: string }) => r.method === 'PUT' && r.path.includes('/colls/events/docs/');

  test('the next write decides from the newer cached version, without a read', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
      await s.writeStatus(request); // created: its version is cached
      // A decides from the cached version; its replace is held before the server sees it...
      const hold = proxy.hold(isRowReplace, 'request');
      const a = s.writeStatus(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' }));
      a.catch(() => undefined); // observed below
      await hold.held;
      // ...while B, from the same cached version, lands and caches the version it wrote.
      const b = await s.writeStatus(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId }));
      assert.equal(b.outcome, 'written');
      // A is throttled (it never reached the server): the cached version is B's, not the one A used.
      hold.release({ status: 429, retryAfterMs: 10 });
      await assert.rejects(a, StoreThrottledError);

      const from = proxy.seen.length;
      const c = await s.writeStatus(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId }));
      assert.equal(c.outcome, 'written');
      assert.equal(c.outcome === 'written' && c.previousStatus, S.Completed, 'decided from B\'s version');
      assert.equal(proxy.seen.slice(from).filter(isRowRead).length, 0, 'no read: B\'s version was still cached');
    } finally {
      await s.close();
    }
  });
});

// A status write whose reply is lost (the store applied it; the client saw a reset or a 5xx) must still move the
// counters once: the redelivered copy finds its row already written and moves nothing itself. Seen in the chaos
// test as `Pending: counter -1, rows 0` after a store outage: a request's Pending row created without its +1,
// then answered with its -1.
describe('a status write whose reply was lost is counted once', () => {
  const isRowCreate = (r: { method: string; path: string }) => r.method === 'POST' && /\/colls\/events\/docs\/?$/.test(r.path);
  const isRowReplace = (r: { method: string; path: string }) => r.method === 'PUT' && r.path.includes('/colls/events/docs/');

  for (const mode of ['immediate', 'buffered'] as const) {
    const open = () =>
      wire.openThroughProxy(mode === 'buffered' ? { counterFlushMs: 60_000 } : {});

    test(`${mode} counters: a request's row created under a lost reply, its copy redelivered, then answered`, async () => {
      const s = await open();
      try {
        const ep = uniq('ep');
        const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
        proxy.inject({ status: 503, afterForward: true, times: 1, match: isRowCreate });
        await assert.rejects(s.writeStatus(request), StoreTransientError);
        proxy.clear();
        assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.status, S.Pending, 'the create reached the server');
        await s.writeStatus(request); // the broker's redelivery of the same message
        await s.flushCounters();
        assert.equal((await store.getCounts(ep)).pending, 1, 'the landed create is counted');
        await s.writeStatus(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId }));
        await s.flushCounters();
        const counts = await store.getCounts(ep);
        assert.deepEqual([counts.pending, counts.completed], [0, 1]);
      } finally {
        proxy.clear();
        await s.close();
      }
    });

    test(`${mode} counters: a response's replace under a lost reply, the response redelivered`, async () => {
      const s = await open();
      try {
        const ep = uniq('ep');
        const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
        await s.writeStatus(request);
        const response = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId });
        proxy.inject({ status: 503, afterForward: true, times: 1, match: isRowReplace });
        await assert.rejects(s.writeStatus(response), StoreTransientError);
        proxy.clear();
        assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.status, S.Completed, 'the replace reached the server');
        await s.writeStatus(response);
        await s.flushCounters();
        const counts = await store.getCounts(ep);
        assert.deepEqual([counts.pending, counts.completed], [0, 1]);
      } finally {
        proxy.clear();
        await s.close();
      }
    });
  }
});

// The same lost reply when nothing writes the row again (the broker dead-lettered the message, or its copy went to
// another instance): the settle pass reads the rows in doubt on its own, periodically and at close/flushCounters.
describe('a status write whose reply was lost and whose row is not written again', () => {
  const isRowCreate = (r: { method: string; path: string; batch: boolean }) =>
    r.method === 'POST' && !r.batch && /\/colls\/events\/docs\/?$/.test(r.path);
  const isRowBulk = (r: { method: string; path: string; batch: boolean }) => r.batch && r.path.includes('/colls/events/');

  /** A request whose row create reaches the server but whose reply is lost. */
  async function lostCreate(s: MessageStore, ep: string, eventId = 'e'): Promise<void> {
    proxy.inject({ status: 503, afterForward: true, times: 1, match: isRowCreate });
    try {
      await assert.rejects(s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId })), StoreTransientError);
    } finally {
      proxy.clear();
    }
    assert.equal((await store.getStatusRow(ep, eventId, 's-1'))?.status, S.Pending, 'the create reached the server');
  }

  for (const mode of ['immediate', 'buffered'] as const) {
    test(`${mode} counters: the periodic settle pass counts the landed write`, async () => {
      const s = await wire.openThroughProxy({
        settleIntervalMs: 20,
        ...(mode === 'buffered' ? { counterFlushMs: 20 } : {}),
      });
      try {
        const ep = uniq('ep');
        await lostCreate(s, ep);
        await eventually('the landed create to be counted', async () => (await store.getCounts(ep)).pending === 1);
        assert.equal(s.writesInDoubt, 0);
        await s.flushCounters();
        assert.equal((await store.getCounts(ep)).pending, 1, 'counted once');
      } finally {
        await s.close();
      }
    });
  }

  test('close() settles what is still in doubt before it flushes', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0, counterFlushMs: 60_000 });
    const ep = uniq('ep');
    try {
      await lostCreate(s, ep);
      assert.equal((await store.getCounts(ep)).pending, 0, 'nothing settled it yet');
    } finally {
      await s.close();
    }
    assert.equal((await store.getCounts(ep)).pending, 1, 'the close-time settle counted it and flushed');
    assert.equal(s.writesInDoubt, 0);
  });

  test('a settle read that fails keeps the write for the next pass; a write that never landed is forgotten', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      await lostCreate(s, ep);
      // The bulk read and the point reads a pass falls back to when the bulk request fails as a whole.
      proxy.inject({ status: 503, match: (r) => isRowBulk(r) || (r.method === 'GET' && r.path.includes('/colls/events/docs/')) });
      try {
        await s.flushCounters(); // settles what it can read: nothing
      } finally {
        proxy.clear();
      }
      assert.equal(s.writesInDoubt, 1, 'kept for the next pass');
      assert.equal((await store.getCounts(ep)).pending, 0);
      await s.flushCounters();
      assert.equal(s.writesInDoubt, 0);
      assert.equal((await store.getCounts(ep)).pending, 1);

      // Refused before it reached the server, but a 503 cannot say so: in doubt, then found not to have landed.
      proxy.inject({ status: 503, times: 1, match: isRowCreate });
      try {
        await assert.rejects(s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'e2' })), StoreTransientError);
      } finally {
        proxy.clear();
      }
      assert.equal(s.writesInDoubt, 1);
      await s.flushCounters();
      assert.equal(s.writesInDoubt, 0, 'forgotten');
      assert.equal((await store.getCounts(ep)).pending, 1, 'and not counted');
    } finally {
      await s.close();
    }
  });

  test('the settle pass and the redelivered copy racing for one row count it once', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
      proxy.inject({ status: 503, afterForward: true, times: 1, match: isRowCreate });
      try {
        await assert.rejects(s.writeStatus(request), StoreTransientError);
      } finally {
        proxy.clear();
      }
      await Promise.all([s.flushCounters(), s.writeStatus(request)]);
      assert.equal(s.writesInDoubt, 0);
      assert.equal((await store.getCounts(ep)).pending, 1);
    } finally {
      await s.close();
    }
  });
});

// The same lost reply on the Manager's paths: a lot of claims written in bulk (writeStatuses) and a claim undone
// (restoreStatusRow, also Reconcile's restore). Neither caller writes the row again after an error it cannot read
// (the Manager reports it to the operator; Reconcile finds the row changed and leaves it), so the store settles
// the write itself: from the single write writeStatuses falls back to, from a retry's read, or in the settle pass.
describe('a bulk claim or a restore whose reply was lost is counted once', () => {
  const onEvents = (r: { path: string }) => r.path.includes('/colls/events/');
  const isRowBulk = (r: { path: string; batch: boolean }) => r.batch && onEvents(r);
  const isRowReplace = (r: { method: string; path: string }) => r.method === 'PUT' && r.path.includes('/colls/events/docs/');

  /** Runs `act` with a fault armed, and disarms it whatever happens. */
  async function withFault<R>(fault: Parameters<FaultProxy['inject']>[0], act: () => Promise<R>): Promise<R> {
    proxy.inject(fault);
    try {
      return await act();
    } finally {
      proxy.clear();
    }
  }

  /** A Failed row (request, then an error): the row, as the Manager reads it before claiming it. */
  async function failedRow(s: MessageStore, ep: string): Promise<StatusRow> {
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', payload: { n: 1 } });
    await s.writeStatus(request);
    await s.writeStatus(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' }));
    return (await s.getStatusRows([{ endpointId: ep, eventId: 'e', sessionId: 's-1' }]))[0]!;
  }

  /** The Manager's claim of a skip on `row` (a SkipRequest written over it, conditional on its last message). */
  const claimOf = (row: StatusRow) => ({
    input: msg(T.SkipRequest, { endpointId: row.endpointId, eventId: row.eventId, parentMessageId: row.lastMessageId }),
    expect: { lastMessageId: row.lastMessageId, status: row.status, claim: true },
  });

  /** Counters (flushed first in buffered mode) and the failure groups' Failed total of one endpoint. */
  async function tally(s: MessageStore, ep: string): Promise<{ pending: number; failed: number; groupsFailed: number }> {
    await s.flushCounters();
    const counts = await store.getCounts(ep);
    const groups = await readFailureGroupDocs(store.database, ep);
    return { pending: counts.pending, failed: counts.failed, groupsFailed: groups.reduce((n, g) => n + g.counts.Failed, 0) };
  }
  const claimed = { pending: 1, failed: 0, groupsFailed: 0 };
  const unclaimed = { pending: 0, failed: 1, groupsFailed: 1 };

  for (const mode of ['immediate', 'buffered'] as const) {
    const open = (settleIntervalMs = 0) =>
      wire.openThroughProxy({ settleIntervalMs, ...(mode === 'buffered' ? { counterFlushMs: 60_000 } : {}) });

    test(`${mode} counters: writeStatuses, the bulk write landed; the single write it falls back to counts it`, async () => {
      const s = await open();
      try {
        const ep = uniq('ep');
        const claim = claimOf(await failedRow(s, ep));
        const [r] = await withFault({ status: 503, afterForward: true, times: 1, match: isRowBulk }, () => s.writeStatuses([claim]));
        assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.lastMessageId, claim.input.messageId, 'the bulk write reached the server');
        // The fallback found the row claimed already by this very write: nothing written twice, and answered as
        // written (a refusal would have the Manager answer 409 "being sent" for a command nothing sends).
        assert.ok(r?.ok && r.value.outcome === 'written', `answered ${JSON.stringify(r?.ok && r.value.outcome)}`);
        assert.equal(r.value.row.lastMessageId, claim.input.messageId);
        assert.equal(r.value.previousStatus, S.Failed);
        assert.equal(r.value.previousMessageId, claim.expect.lastMessageId);
        assert.equal(r.value.created, false);
        assert.equal(r.value.counters, mode === 'buffered' ? 'queued' : 'updated');
        assert.equal(s.writesInDoubt, 0, 'settled by the fallback read');
        assert.deepEqual(await tally(s, ep), claimed);
        // The operator tries the same claim again: refused, counted nothing.
        const [again] = await s.writeStatuses([claim]);
        assert.ok(again?.ok && again.value.outcome === 'ignored');
        assert.deepEqual(await tally(s, ep), claimed);
        assert.equal((await store.recountEndpoint(ep)).pending, 1, 'the recount agrees');
      } finally {
        await s.close();
      }
    });

    test(`${mode} counters: writeStatuses, the bulk write landed and the fallback failed; the settle pass counts it`, async () => {
      const s = await open();
      try {
        const ep = uniq('ep');
        const claim = claimOf(await failedRow(s, ep));
        const [r] = await withFault({ status: 503, afterForward: true, match: onEvents }, () => s.writeStatuses([claim]));
        assert.ok(r && !r.ok && r.error instanceof StoreTransientError, 'the operator is told it failed');
        assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.lastMessageId, claim.input.messageId, 'the bulk write reached the server');
        assert.equal(s.writesInDoubt, 1);
        assert.deepEqual(await tally(s, ep), claimed, 'the settle pass (run by flushCounters) counted it');
        assert.equal(s.writesInDoubt, 0);
        const [again] = await s.writeStatuses([claim]);
        assert.ok(again?.ok && again.value.outcome === 'ignored');
        assert.deepEqual(await tally(s, ep), claimed);
      } finally {
        await s.close();
      }
    });

    test(`${mode} counters: writeStatuses, the bulk write never landed; not counted, then written once by the retry`, async () => {
      const s = await open();
      try {
        const ep = uniq('ep');
        const claim = claimOf(await failedRow(s, ep));
        const [r] = await withFault({ status: 503, match: onEvents }, () => s.writeStatuses([claim]));
        assert.ok(r && !r.ok && r.error instanceof StoreTransientError);
        assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.status, S.Failed, 'nothing reached the server');
        assert.equal(s.writesInDoubt, 1, 'a 503 on the whole request cannot say so: in doubt');
        assert.deepEqual(await tally(s, ep), unclaimed, 'found not to have landed: not counted');
        assert.equal(s.writesInDoubt, 0);
        const [again] = await s.writeStatuses([claim]);
        assert.ok(again?.ok && again.value.outcome === 'written');
        assert.deepEqual(await tally(s, ep), claimed);
      } finally {
        await s.close();
      }
    });

    test(`${mode} counters: restoreStatusRow landed under a lost reply; the periodic settle pass counts it once`, async () => {
      const s = await open(20);
      try {
        const ep = uniq('ep');
        const previous = await failedRow(s, ep);
        const claim = claimOf(previous);
        assert.equal((await s.writeStatus(claim.input, claim.expect)).outcome, 'written');
        assert.deepEqual(await tally(s, ep), claimed);
        const undo = () => s.restoreStatusRow(previous, { status: S.Pending, lastMessageId: claim.input.messageId });
        await withFault({ status: 503, afterForward: true, times: 1, match: isRowReplace }, () => assert.rejects(undo(), StoreTransientError));
        assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.lastMessageId, previous.lastMessageId, 'the restore reached the server');
        // Nothing writes the row again (the Manager reported the failure; Reconcile finds the row changed).
        // Polls the failure groups themselves (the pass moves them last, after its counter patch or buffered
        // delta), not writesInDoubt: the pass forgets the entry before it has counted it.
        await eventually('the landed restore to be counted', async () =>
          (await readFailureGroupDocs(store.database, ep)).reduce((n, g) => n + g.counts.Failed, 0) === 1,
        );
        assert.deepEqual(await tally(s, ep), unclaimed);
        // A retry after all: refused, counted nothing.
        assert.equal((await undo()).outcome, 'ignored');
        assert.deepEqual(await tally(s, ep), unclaimed);
        assert.equal((await store.recountEndpoint(ep)).failed, 1, 'the recount agrees');
      } finally {
        await s.close();
      }
    });

    test(`${mode} counters: restoreStatusRow landed under a lost reply; the retry's read counts it once`, async () => {
      const s = await open();
      try {
        const ep = uniq('ep');
        const previous = await failedRow(s, ep);
        const claim = claimOf(previous);
        await s.writeStatus(claim.input, claim.expect);
        const undo = () => s.restoreStatusRow(previous, { status: S.Pending, lastMessageId: claim.input.messageId });
        await withFault({ status: 503, afterForward: true, times: 1, match: isRowReplace }, () => assert.rejects(undo(), StoreTransientError));
        assert.equal(s.writesInDoubt, 1);
        assert.equal((await undo()).outcome, 'ignored', 'the row is restored already');
        assert.equal(s.writesInDoubt, 0, 'settled by the retry read');
        assert.deepEqual(await tally(s, ep), unclaimed);
      } finally {
        await s.close();
      }
    });

    test(`${mode} counters: a claim landed under a lost reply, then restored: the restore's read counts the claim first`, async () => {
      const s = await open();
      try {
        const ep = uniq('ep');
        const previous = await failedRow(s, ep);
        const claim = claimOf(previous);
        await withFault({ status: 503, afterForward: true, times: 1, match: isRowReplace }, () =>
          assert.rejects(s.writeStatus(claim.input, claim.expect), StoreTransientError),
        );
        assert.equal(s.writesInDoubt, 1);
        // Reconcile restores the claim it finds stuck: the restore moves the row out of the claim's Pending.
        const r = await s.restoreStatusRow(previous, { status: S.Pending, lastMessageId: claim.input.messageId });
        assert.equal(r.outcome, 'written');
        assert.equal(s.writesInDoubt, 0);
        assert.deepEqual(await tally(s, ep), unclaimed);
      } finally {
        await s.close();
      }
    });

    test(`${mode} counters: restoreStatusRow that never landed is not counted; the retry restores once`, async () => {
      const s = await open();
      try {
        const ep = uniq('ep');
        const previous = await failedRow(s, ep);
        const claim = claimOf(previous);
        await s.writeStatus(claim.input, claim.expect);
        const undo = () => s.restoreStatusRow(previous, { status: S.Pending, lastMessageId: claim.input.messageId });
        await withFault({ status: 503, times: 1, match: isRowReplace }, () => assert.rejects(undo(), StoreTransientError));
        assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.lastMessageId, claim.input.messageId, 'nothing reached the server');
        assert.equal(s.writesInDoubt, 1);
        assert.deepEqual(await tally(s, ep), claimed, 'found not to have landed: not counted');
        assert.equal(s.writesInDoubt, 0);
        assert.equal((await undo()).outcome, 'written');
        assert.deepEqual(await tally(s, ep), unclaimed);
      } finally {
        await s.close();
      }
    });
  }
});
