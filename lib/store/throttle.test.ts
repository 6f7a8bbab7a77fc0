// Throttling and transient faults injected at the wire (a fault proxy in front of the embedded Cosmos server):
// the store surfaces a 429 as StoreThrottledError with the server's retry-after, 5xx as StoreTransientError,
// and the guarded write leaves no partial state behind.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, ResolutionStatus as S } from '@nimbus/sdk/contract';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { createStore, type MessageStore } from './store.ts';
import { StoreThrottledError, StoreTransientError } from './errors.ts';
import { startFaultProxy, type FaultProxy } from './testing/faultProxy.ts';
import { msg, steppingClock, uniq } from './testing/fixtures.ts';

let cosmos: EmbeddedCosmos;
let proxy: FaultProxy;
let store: MessageStore;
const database = `t-${randomUUID().slice(0, 8)}`;

before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  proxy = await startFaultProxy(cosmos.endpoint);
  store = await createStore({ endpoint: proxy.endpoint, key: cosmos.key, database, now: steppingClock() });
});
after(async () => {
  await store.close();
  await proxy.close();
  await cosmos.close();
});

const isWrite = (r: { method: string; path: string }) => r.method === 'PUT' || r.method === 'POST';

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
    const patient = await createStore({
      endpoint: proxy.endpoint,
      key: cosmos.key,
      database,
      throttleRetries: 3,
    });
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
    const buffered = await createStore({ endpoint: proxy.endpoint, key: cosmos.key, database, counterFlushMs: 60_000 });
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
    const buffered = await createStore({
      endpoint: proxy.endpoint,
      key: cosmos.key,
      database,
      counterFlushMs: 60_000,
    });
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

// A status write whose reply is lost (the store applied it; the client saw a reset or a 5xx) must still move the
// counters once: the redelivered copy finds its row already written and moves nothing itself. Seen in the chaos
// test as `Pending: counter -1, rows 0` after a store outage: a request's Pending row created without its +1,
// then answered with its -1.
describe('a status write whose reply was lost is counted once', () => {
  const isRowCreate = (r: { method: string; path: string }) => r.method === 'POST' && /\/colls\/events\/docs\/?$/.test(r.path);
  const isRowReplace = (r: { method: string; path: string }) => r.method === 'PUT' && r.path.includes('/colls/events/docs/');

  for (const mode of ['immediate', 'buffered'] as const) {
    const open = () =>
      createStore({ endpoint: proxy.endpoint, key: cosmos.key, database, ...(mode === 'buffered' ? { counterFlushMs: 60_000 } : {}) });

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

  /** Polls until `probe` holds (a positive signal, not a sleep); the generous limit is for a loaded machine. */
  async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

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
      const s = await createStore({
        endpoint: proxy.endpoint,
        key: cosmos.key,
        database,
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
    const s = await createStore({ endpoint: proxy.endpoint, key: cosmos.key, database, settleIntervalMs: 0, counterFlushMs: 60_000 });
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
    const s = await createStore({ endpoint: proxy.endpoint, key: cosmos.key, database, settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      await lostCreate(s, ep);
      proxy.inject({ status: 503, match: isRowBulk });
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
    const s = await createStore({ endpoint: proxy.endpoint, key: cosmos.key, database, settleIntervalMs: 0 });
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
