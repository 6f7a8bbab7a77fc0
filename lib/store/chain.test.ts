// recordOutcomes: several messages about one status row recorded together (one history batch, one conditional
// row write) must leave exactly what recording them one at a time leaves: the same outcome for every message,
// the same final row, the same history and the same counters. Against the embedded Cosmos server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, ResolutionStatus as S, type MessageType } from '@nimbus/sdk/contract';
import { createStore, type StatusWriteResult } from './store.ts';
import { StoreInputError, StoreThrottledError } from './errors.ts';
import { startFaultProxy } from './testing/faultProxy.ts';
import type { HistoryWrite, StatusWrite } from './schemas.ts';
import { msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f.close();
});

/** The history entry and the status write of one message (the fixtures always set enqueuedAt). */
const item = (w: StatusWrite) => ({ history: { ...w, enqueuedAt: w.enqueuedAt ?? new Date().toISOString() } as HistoryWrite, status: w });

/** What a result says, without the parts that differ between two rows by construction (ids, times). */
function outcomeOf(r: StatusWriteResult): string {
  return r.outcome === 'written' ? `written ${r.row.status}/${r.row.subStatus ?? '-'} created=${r.created}` : `ignored ${r.reason}`;
}

/** A deterministic generator, so a failing sequence can be replayed from its seed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const KINDS: MessageType[] = [
  T.EventRequest,
  T.ResolutionResponse,
  T.ErrorResponse,
  T.DeferralResponse,
  T.SkipResponse,
  T.UnsupportedResponse,
  T.PendingHandoffResponse,
  T.ResubmissionRequest,
  T.SkipRequest,
  T.HandoffCompletedRequest,
  T.HandoffFailedRequest,
  T.RetryRequest,
];

/**
 * A random run of messages about one event: requests and responses, responses answering an earlier request of
 * the run (or a stranger), now and then an exact copy of an earlier message (a redelivery). Built as templates
 * so the same run can be replayed on two rows with fresh ids.
 */
function randomRun(rand: () => number, length: number): Array<{ type: MessageType; copyOf?: number; parent?: number | 'self' | 'stranger'; dead?: boolean }> {
  const run: Array<{ type: MessageType; copyOf?: number; parent?: number | 'self' | 'stranger'; dead?: boolean }> = [];
  for (let i = 0; i < length; i++) {
    if (i > 0 && rand() < 0.15) {
      run.push({ type: run[Math.floor(rand() * i)]!.type, copyOf: Math.floor(rand() * i) });
      continue;
    }
    const type = KINDS[Math.floor(rand() * KINDS.length)]!;
    const requests = run.map((r, k) => ({ r, k })).filter(({ r }) => r.copyOf === undefined && r.type.endsWith('Request'));
    const parent =
      type === T.EventRequest
        ? 'self'
        : requests.length > 0 && rand() < 0.8
          ? requests[Math.floor(rand() * requests.length)]!.k
          : 'stranger';
    run.push({ type, parent, dead: type === T.ErrorResponse && rand() < 0.3 });
  }
  return run;
}

/** The run as status writes for one row of `endpointId`, with fresh message ids. */
function materialise(run: ReturnType<typeof randomRun>, endpointId: string, eventId: string): StatusWrite[] {
  const writes: StatusWrite[] = [];
  for (const t of run) {
    if (t.copyOf !== undefined) {
      writes.push({ ...writes[t.copyOf]! });
      continue;
    }
    const parentMessageId =
      t.parent === 'self' ? undefined : t.parent === 'stranger' ? randomUUID() : writes[t.parent as number]!.messageId;
    writes.push(
      msg(t.type, {
        endpointId,
        eventId,
        ...(parentMessageId !== undefined ? { parentMessageId } : {}),
        ...(t.type === T.EventRequest || t.type === T.ResubmissionRequest ? { payload: { n: writes.length } } : {}),
        ...(t.dead ? { deadLetterErrorDescription: 'poison', deadLetterReason: 'MaxDeliveryCountExceeded' } : {}),
        ...(t.type === T.ErrorResponse ? { errorText: 'boom', errorType: 'Error' } : {}),
        ...(t.type === T.PendingHandoffResponse ? { handoffReason: 'ledger', externalJobId: 'job-1' } : {}),
      }),
    );
  }
  return writes;
}

describe('recordOutcomes (one row, several messages)', () => {
  test('a request and its response: both in history, one row write, Completed with the request payload, counters', async () => {
    const ep = uniq('ep');
    const req = msg(T.EventRequest, { endpointId: ep, eventId: 'e1', payload: { orderId: 7 } });
    const res = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e1', parentMessageId: req.messageId, eventTypeId: null });
    const [r1, r2] = await f.store.recordOutcomes([item(req), item(res)]);
    assert.equal(r1!.history.recorded, true);
    assert.equal(r2!.history.recorded, true);
    assert.equal(outcomeOf(r1!.status), 'written Pending/- created=true');
    assert.equal(outcomeOf(r2!.status), 'written Completed/- created=false');
    const row = await f.store.getStatusRow(ep, 'e1', 's-1');
    assert.equal(row?.status, S.Completed);
    assert.equal(row?.lastMessageId, res.messageId);
    assert.equal(row?.requestMessageId, req.messageId);
    assert.deepEqual(row?.payload, { orderId: 7 });
    assert.equal(row?.eventTypeId, 'OrderPlaced');
    const history = await f.store.listHistory('e1', { pageSize: 50 });
    const ids = new Set(history.items.map((h) => h.messageId));
    assert.ok(ids.has(req.messageId) && ids.has(res.messageId));
    const counts = await f.store.getCounts(ep);
    assert.equal(counts.completed, 1);
    assert.equal(counts.pending, 0, 'the intermediate Pending is never counted');
  });

  test('random runs leave what recording one message at a time leaves (outcomes, row, counters)', async () => {
    for (let seed = 1; seed <= 40; seed++) {
      const rand = prng(seed);
      const run = randomRun(rand, 2 + Math.floor(rand() * 5));
      // Half the runs start from an existing row (so the cache and the read path are both exercised).
      const start = rand() < 0.5 ? [T.EventRequest, T.ErrorResponse][Math.floor(rand() * 2)]! : undefined;
      const eventId = `ev-${seed}`;
      const one = uniq('one');
      const all = uniq('all');
      for (const ep of [one, all]) if (start) await f.store.recordOutcome(item(msg(start, { endpointId: ep, eventId })));

      const singly: string[] = [];
      for (const w of materialise(run, one, eventId)) singly.push(outcomeOf((await f.store.recordOutcome(item(w))).status));
      const together = (await f.store.recordOutcomes(materialise(run, all, eventId).map(item))).map((r) => outcomeOf(r.status));
      const context = `seed ${seed}: start ${start ?? 'none'}, run ${run.map((r) => r.type + (r.copyOf !== undefined ? `(copy of ${r.copyOf})` : '')).join(', ')}`;
      assert.deepEqual(together, singly, context);

      const a = await f.store.getStatusRow(one, eventId, 's-1');
      const b = await f.store.getStatusRow(all, eventId, 's-1');
      const shape = (r: typeof a) => r && { status: r.status, subStatus: r.subStatus, messageType: r.messageType, payload: r.payload, errorText: r.errorText, deadLetterReason: r.deadLetterReason, handoffReason: r.handoffReason };
      assert.deepEqual(shape(b), shape(a), context);
      const ca = await f.store.getCounts(one);
      const cb = await f.store.getCounts(all);
      assert.deepEqual({ ...cb, endpointId: '' }, { ...ca, endpointId: '' }, context);
    }
  });

  test('a message already in history (a redelivered copy) is recorded once; the others still are', async () => {
    const ep = uniq('ep');
    const req = msg(T.EventRequest, { endpointId: ep, eventId: 'e-dup' });
    await f.store.recordHistory(item(req).history);
    const res = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e-dup', parentMessageId: req.messageId });
    const [r1, r2] = await f.store.recordOutcomes([item(req), item(res)]);
    assert.equal(r1!.history.recorded, false);
    assert.equal(r2!.history.recorded, true);
    assert.equal(r2!.status.outcome, 'written');
    const history = await f.store.listHistory('e-dup', { pageSize: 50 });
    assert.equal(history.items.filter((h) => h.messageId === req.messageId).length, 1);
    assert.equal(history.items.filter((h) => h.messageId === res.messageId).length, 1);
  });

  test('a row changed by another writer since this store cached it: the chain re-reads and decides against it', async () => {
    const ep = uniq('ep');
    const other = await createStore({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database });
    try {
      const req = msg(T.EventRequest, { endpointId: ep, eventId: 'e-race' });
      await f.store.recordOutcome(item(req)); // cached here as Pending
      const done = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e-race', parentMessageId: req.messageId });
      await other.recordOutcome(item(done)); // Completed behind this store's back
      // A copy of the request and a deferral: against the cached Pending row both would apply; against the real
      // Completed row both are refused.
      const copy = { ...req };
      const deferral = msg(T.DeferralResponse, { endpointId: ep, eventId: 'e-race', parentMessageId: randomUUID() });
      const results = await f.store.recordOutcomes([item(copy), item(deferral)]);
      assert.deepEqual(results.map((r) => outcomeOf(r.status)), ['ignored already-answered', 'ignored not-request-stage']);
      const row = await f.store.getStatusRow(ep, 'e-race', 's-1');
      assert.equal(row?.status, S.Completed);
      assert.equal(row?.lastMessageId, done.messageId);
    } finally {
      await other.close();
    }
  });

  test('a throttled store surfaces as StoreThrottledError (the SDK drops a failed batch\'s status; the single writes keep it)', async () => {
    const proxy = await startFaultProxy(f.cosmos.endpoint);
    const throttled = await createStore({ endpoint: proxy.endpoint, key: f.cosmos.key, database: f.database });
    try {
      const ep = uniq('ep');
      const req = msg(T.EventRequest, { endpointId: ep, eventId: 'e-429' });
      const res = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e-429', parentMessageId: req.messageId });
      proxy.inject({ status: 429, retryAfterMs: 50, match: (r) => r.method === 'POST' && r.path.includes('/colls/history/docs') });
      await assert.rejects(throttled.recordOutcomes([item(req), item(res)]), StoreThrottledError);
      assert.ok(proxy.seen.some((r) => r.batch), 'the batch was tried first');
      assert.equal(await f.store.getStatusRow(ep, 'e-429', 's-1'), null, 'no status without its history');
    } finally {
      await throttled.close();
      await proxy.close();
    }
  });

  test('messages about different rows are refused as input, and nothing is written', async () => {
    const ep = uniq('ep');
    const a = msg(T.EventRequest, { endpointId: ep, eventId: 'x1' });
    const b = msg(T.EventRequest, { endpointId: ep, eventId: 'x2' });
    await assert.rejects(f.store.recordOutcomes([item(a), item(b)]), StoreInputError);
    assert.equal(await f.store.getStatusRow(ep, 'x1', 's-1'), null);
    assert.equal(await f.store.getStatusRow(ep, 'x2', 's-1'), null);
  });
});
