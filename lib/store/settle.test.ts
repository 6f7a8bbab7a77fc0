// The settle pass for row writes whose reply was lost (docs/store.md, "A row write whose reply is lost"), under
// interleavings held at the wire: a fault proxy in front of the embedded Cosmos server holds one request (before
// the server sees it, or with the server's answer kept back) while the test acts, then lets it go.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, ResolutionStatus as S } from '@nimbus/sdk/contract';
import type { MessageStore } from './store.ts';
import type { StatusWrite } from './schemas.ts';
import { StoreTransientError } from './errors.ts';
import type { FaultProxy, Hold, ProxiedRequest, Release } from './testing/faultProxy.ts';
import { msg, startProxiedStoreFixture, uniq, type ProxiedStoreFixture } from './testing/fixtures.ts';
import { readFailureGroupDocs } from './failureGroupAggregates.ts';
import { raceDeadline } from '../concurrency/deadline.ts';

let wire: ProxiedStoreFixture;
let proxy: FaultProxy;
// `store` reads the truth straight from the server, past the proxy.
let store: MessageStore;

before(async () => {
  wire = await startProxiedStoreFixture({ storeVia: 'server' });
  ({ proxy, store } = wire);
});
after(() => wire.close());

const isRowRead = (r: { method: string; path: string }) => r.method === 'GET' && r.path.includes('/colls/events/docs/');
const isRowReplace = (r: { method: string; path: string }) => r.method === 'PUT' && r.path.includes('/colls/events/docs/');
const isRowCreate = (r: { method: string; path: string; batch: boolean }) =>
  r.method === 'POST' && !r.batch && /\/colls\/events\/docs\/?$/.test(r.path);
const isCounterPatch = (r: { method: string; path: string }) => r.method === 'PATCH' && r.path.includes('/colls/counters/');
/** The container's partition key ranges: read once per client, before its first bulk request. */
const isRangesRead = (r: { method: string; path: string }) => r.method === 'GET' && r.path.includes('/colls/events/pkranges');

/**
 * Waits until `s` has no write in doubt: a positive signal with no limit of its own. It stops with its test (the
 * test's own limit, `signal`), so a wait for a pass that never comes does not outlive a failed test.
 */
async function noneInDoubt(s: MessageStore, signal: AbortSignal): Promise<void> {
  while (s.writesInDoubt > 0) {
    signal.throwIfAborted();
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs `act` with a lost reply armed (the write reaches the server, the client sees a 503), disarmed after. */
async function lostReply<R>(match: (r: { method: string; path: string; batch: boolean }) => boolean, act: () => Promise<R>): Promise<R> {
  proxy.inject({ status: 503, afterForward: true, times: 1, match });
  try {
    return await act();
  } finally {
    proxy.clear();
  }
}

describe('a restore racing a write whose reply is lost', () => {
  test('the restore settles only a write known before its read: one remembered while the read was in flight is counted', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
      await s.writeStatus(request);
      await s.writeStatus(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' }));
      const previous = (await s.getStatusRows([{ endpointId: ep, eventId: 'e', sessionId: 's-1' }]))[0]!;
      const claim = msg(T.SkipRequest, { endpointId: ep, eventId: 'e', parentMessageId: previous.lastMessageId });
      assert.equal((await s.writeStatus(claim, { lastMessageId: previous.lastMessageId, status: previous.status, claim: true })).outcome, 'written');

      // The restore's read is served (the claim) but its answer is slow to come back...
      const hold = proxy.hold(isRowRead, 'response');
      const restoring = s.restoreStatusRow(previous, { status: S.Pending, lastMessageId: claim.messageId });
      await hold.held;
      // ...and meanwhile an error response for the claim lands on the row with its reply lost: in doubt.
      const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: claim.messageId, errorType: 'E', errorText: 'again' });
      await lostReply(isRowReplace, () => assert.rejects(s.writeStatus(error), StoreTransientError));
      assert.equal(s.writesInDoubt, 1);
      assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.lastMessageId, error.messageId, 'the error response landed');

      hold.release();
      // The restore finds the row moved on (412, read again) and refuses; the landed write is not forgotten.
      assert.equal((await restoring).outcome, 'ignored');
      await s.flushCounters();
      assert.equal(s.writesInDoubt, 0);
      const counts = await store.getCounts(ep);
      assert.deepEqual({ pending: counts.pending, failed: counts.failed }, { pending: 0, failed: 1 }, 'the landed write counted once');
      assert.equal((await store.recountEndpoint(ep)).failed, 1, 'the recount agrees');
    } finally {
      await s.close();
    }
  });
});

describe('flushCounters() and close() wait for a settle pass already running', () => {
  for (const end of ['flushCounters', 'close'] as const) {
    test(`${end}() returns only once the timed pass's counter patch has landed`, async () => {
      const s = await wire.openThroughProxy({ settleIntervalMs: 20 });
      const ep = uniq('ep');
      try {
        await s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'x' })); // the counter document exists
        // The timed pass reads the row, takes its entry and sends the counter patch, which is held here.
        const hold = proxy.hold(isCounterPatch, 'request');
        await lostReply(isRowCreate, () => assert.rejects(s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'e' })), StoreTransientError));
        await hold.held;
        assert.equal(s.writesInDoubt, 0, 'the pass took the entry');
        // Let the patch go only from a later turn of the event loop: a call that does not wait has returned by then.
        let released = false;
        const ending = end === 'flushCounters' ? s.flushCounters() : s.close();
        setImmediate(() => {
          released = true;
          hold.release();
        });
        await ending;
        assert.ok(released, `${end}() waited for the pass in flight`);
        assert.equal((await store.getCounts(ep)).pending, 2, 'the landed create is counted');
      } finally {
        await s.close();
      }
    });
  }
});

describe('a settle pass counts the writes that landed together', () => {
  test('one counter patch per endpoint for the lot, not one per landed write', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    const ep = uniq('ep');
    try {
      await s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'x' })); // the counter document exists
      for (const eventId of ['e1', 'e2', 'e3'])
        await lostReply(isRowCreate, () => assert.rejects(s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId })), StoreTransientError));
      assert.equal(s.writesInDoubt, 3);
      const from = proxy.seen.length;
      await s.flushCounters();
      assert.equal(s.writesInDoubt, 0);
      assert.equal(proxy.seen.slice(from).filter(isCounterPatch).length, 1, 'one counter patch for the three');
      assert.equal((await store.getCounts(ep)).pending, 4, 'each landed create counted once');
    } finally {
      await s.close();
    }
  });
});

describe('two writes of one row in doubt at once', () => {
  /**
   * A row V0 (a request, Pending, written by another store: `s` has no cached version, so each of its writes reads
   * the row first), and an error response for it (W1) whose replace lands but whose reply is held.
   */
  async function w1Held(s: MessageStore, ep: string) {
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
    await store.writeStatus(request);
    const hold = proxy.hold(isRowReplace, 'response');
    const w1 = s.writeStatus(msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' }));
    w1.catch(() => undefined); // observed by the test
    await hold.held;
    // W2, a later success of the same request: it reads W1's version and builds on it.
    const w2 = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId });
    return { hold, w1, w2 };
  }

  async function counts(ep: string) {
    const c = await store.getCounts(ep);
    return { pending: c.pending, failed: c.failed, completed: c.completed };
  }

  test('the later one remembered first is kept with the earlier: both landed, both counted', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      const { hold, w1, w2 } = await w1Held(s, ep);
      await lostReply(isRowReplace, () => assert.rejects(s.writeStatus(w2), StoreTransientError)); // W2 lands, in doubt
      hold.release('lost'); // W1's reply is lost after all: in doubt too, remembered after W2
      await assert.rejects(w1, StoreTransientError);
      assert.equal(s.writesInDoubt, 1, 'one row');
      await s.flushCounters();
      assert.equal(s.writesInDoubt, 0);
      assert.equal((await store.getStatusRow(ep, 'e', 's-1'))?.status, S.Completed);
      assert.deepEqual(await counts(ep), { pending: 0, failed: 0, completed: 1 }, 'each landed write counted once');
    } finally {
      await s.close();
    }
  });

  test('one remembered while a later write of the row was in flight is settled by that write: it read its version', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      const { hold, w1, w2 } = await w1Held(s, ep);
      // W2 reads W1's version; its replace is held before the server sees it while W1's reply is lost.
      const held2 = proxy.hold(isRowReplace, 'request');
      const writing = s.writeStatus(w2);
      await held2.held;
      hold.release('lost');
      await assert.rejects(w1, StoreTransientError);
      assert.equal(s.writesInDoubt, 1);
      held2.release();
      assert.equal((await writing).outcome, 'written');
      assert.equal(s.writesInDoubt, 0, 'settled by W2, which replaced the version W1 built');
      assert.deepEqual(await counts(ep), { pending: 0, failed: 0, completed: 1 }, 'each landed write counted once');
    } finally {
      await s.close();
    }
  });
});

/**
 * A store of the test's (`s`, through the proxy) with a create on endpoint `ep` that landed under a lost reply (in
 * doubt), and the next request matching `match` (the first settle pass's read) held before the server sees it.
 */
async function inDoubtWithReadHeld(s: MessageStore, ep: string, match: (r: ProxiedRequest) => boolean): Promise<Hold> {
  await s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'x' })); // the counter document exists
  const hold = proxy.hold(match, 'request');
  await lostReply(isRowCreate, () => assert.rejects(s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'e' })), StoreTransientError));
  assert.equal(s.writesInDoubt, 1);
  await hold.held;
  return hold;
}

/** After `s` has settled the create of inDoubtWithReadHeld: it is counted once, as a recount of the rows counts. */
async function countedOnce(s: MessageStore, ep: string): Promise<void> {
  await s.flushCounters();
  const kept = await store.getCounts(ep);
  assert.equal(kept.pending, 2, 'the landed create is counted once');
  assert.deepEqual(kept.buckets, (await store.recountEndpoint(ep)).buckets, 'the counters match a recount of the rows');
}

/**
 * The held request is closed by the client (the proxy sees its connection end before an answer was sent) well before
 * the client's own request time-out (30 s): the pass that gave up on it cancelled it.
 */
async function cancelledByClient(hold: Hold): Promise<void> {
  const end = await raceDeadline(
    hold.answered.then(
      () => 'answered',
      () => 'closed by the client',
    ),
    { ms: 15_000 },
  );
  assert.equal(end, 'closed by the client', 'the read given up on is cancelled, not left to the client’s 30 s time-out');
}

describe('a settle pass whose read never answers', () => {
  // The bulk read of the rows in doubt (a batch request that is not atomic; the store's writes here are single).
  const isBulkRowRead = (r: { method: string; path: string; batch: boolean }) =>
    r.method === 'POST' && r.batch && /\/colls\/events\/docs\/?$/.test(r.path);

  // A generous limit of its own (the pass is given up within seconds), so the old hang fails here, not at the runner's.
  test('is given up and cancelled: the write stays in doubt, a later pass settles it once, the held request is closed', { timeout: 120_000 }, async (t) => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 20 });
    const ep = uniq('ep');
    try {
      // The first pass's read is held and never answered (the proxy holds one request: the reads of later passes go
      // through). Before the give-up, every later pass queued behind it for good.
      const hold = await inDoubtWithReadHeld(s, ep, isBulkRowRead);
      const reads = proxy.seen.filter(isBulkRowRead).length;
      await noneInDoubt(s, t.signal);
      assert.ok(proxy.seen.filter(isBulkRowRead).length > reads, 'settled by a later pass, which read the row itself');
      // Before the abort, the request given up on stayed open until the client's own time-out.
      await cancelledByClient(hold);
      await countedOnce(s, ep);
    } finally {
      await s.close();
    }
  });

  test("a point read of the fallback is cancelled too: its failure is the ordinary 'not read'", { timeout: 120_000 }, async (t) => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 20 });
    const ep = uniq('ep');
    try {
      // The ranges read fails (503, kept by the client for good): every pass falls back to point reads, the first held.
      const ranges = await inDoubtWithReadHeld(s, ep, isRangesRead);
      const point = proxy.hold(isRowRead, 'request');
      ranges.release({ status: 503 });
      await point.held;
      await noneInDoubt(s, t.signal);
      await cancelledByClient(point);
      await countedOnce(s, ep);
    } finally {
      await s.close();
    }
  });
});

describe('a settle pass after the read of the partition key ranges failed', () => {
  test('reads the rows one by one and settles the write: the client fails every bulk request from then on', { timeout: 120_000 }, async (t) => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 20 });
    const ep = uniq('ep');
    try {
      // The first pass's bulk read first reads the container's partition key ranges (a fresh client): held, then
      // answered 503, as a stalled endpoint's read ends at the client's time-out. @azure/cosmos 4.9 keeps that failure.
      const hold = await inDoubtWithReadHeld(s, ep, isRangesRead);
      hold.release({ status: 503 });
      await hold.answered;
      const from = proxy.seen.length;
      await noneInDoubt(s, t.signal);
      assert.equal(proxy.seen.slice(from).filter(isRangesRead).length, 0, 'the client never read the ranges again (@azure/cosmos 4.9 keeps the failure): a point read settled it');
      await countedOnce(s, ep);
    } finally {
      await s.close();
    }
  });
});

describe('a buffering writer that dies after a write in doubt was settled', () => {
  test("the settled delta joins the window on the row's stamp, which stayed unflushed meanwhile: a survivor's recovery counts it once", async () => {
    const owner = uniq('writer');
    // Buffered as the Resolver buffers, but no timer flush during the test (only the explicit one below).
    const s = await wire.openThroughProxy({ counterFlushMs: 3_600_000, counterOwner: owner, settleIntervalMs: 20 });
    const ep = uniq('ep');
    try {
      // A's create lands with its reply lost: in doubt, its row stamped with the open window.
      await lostReply(isRowCreate, () => assert.rejects(s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'a' })), StoreTransientError));
      // B, on the same endpoint, in the same window.
      await s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'b' }));
      // A flush while A's row cannot be read back (A stays in doubt; the partition-key-range read is spared: the client
      // would keep its failure for good, docs/store.md). Before, it applied the window, B's delta with `flushed[owner]` set to it,
      // covering A's stamp although A's delta was not in it.
      proxy.inject({ status: 500, match: (r) => r.path.includes('/colls/events/docs') });
      try {
        await s.flushCounters();
      } finally {
        proxy.clear();
      }
      assert.equal(s.writesInDoubt, 1, 'A still in doubt after the flush');
      // The settle pass then finds A landed and counts it (in the buffer: no flush follows before the "crash").
      while (s.writesInDoubt > 0) await new Promise((r) => setTimeout(r, 20));
    } finally {
      // The writer dies: nothing more of it reaches the counters (its close's flush is refused at the wire).
      proxy.inject({ status: 503, match: isCounterPatch });
      await s.close();
      proxy.clear();
    }
    // A survivor recovers the dead writer's stamps above its `flushed` entry.
    await store.recoverCounters(owner);
    const kept = await store.getCounts(ep);
    const recounted = await store.recountEndpoint(ep);
    assert.deepEqual(kept.buckets, recounted.buckets, 'the counters match a recount of the rows');
    assert.equal(kept.pending, 2);
  });
});

/** The endpoint's counters and failure groups equal a recount and a rebuild from the rows, and read `expected`. */
async function assertExact(ep: string, expected: Partial<Record<'pending' | 'completed' | 'failed', number>>): Promise<void> {
  const kept = await store.getCounts(ep);
  const groupsFailed = (await readFailureGroupDocs(store.database, ep)).reduce((n, g) => n + g.counts.Failed, 0);
  const recounted = await store.recountEndpoint(ep);
  assert.deepEqual(
    { counters: kept.buckets, groupsFailed },
    { counters: recounted.buckets, groupsFailed: recounted.buckets.Failed },
    "the counters match a recount of the rows, the failure groups' Failed total the Failed rows",
  );
  for (const [column, n] of Object.entries(expected)) assert.equal(kept[column as keyof typeof expected], n, column);
}

describe('a write in doubt that landed and was moved on by another writer before it was settled', () => {
  // The row read at settle time is not the version the write built: another store (another writer id: the console's,
  // another Resolver) read that version and wrote a newer one, counting from it. The write's mark, which that writer
  // carried forward, says it landed (docs/store.md, "A row write whose reply is lost"). Before, it was taken for
  // "never landed": its delta was dropped while the other writer's moved the row out of its bucket.

  /** `s`'s request create lands with its reply lost; then `store` (another writer) answers it, Pending -> Completed. */
  async function createLandedThenAnswered(s: MessageStore, ep: string): Promise<void> {
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'a' });
    await lostReply(isRowCreate, () => assert.rejects(s.writeStatus(request), StoreTransientError));
    assert.equal(s.writesInDoubt, 1);
    const other = await store.writeStatus(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'a', parentMessageId: request.messageId }));
    assert.equal(other.outcome, 'written');
    assert.equal(other.outcome === 'written' && other.previousStatus, S.Pending, "the other writer read the landed create's version");
  }

  test('settled by the settle pass: counted once, the counters match a recount', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      await createLandedThenAnswered(s, ep);
      await s.flushCounters(); // runs the settle pass
      assert.equal(s.writesInDoubt, 0);
      await assertExact(ep, { pending: 0, completed: 1 });
    } finally {
      await s.close();
    }
  });

  test("settled by the row's next write through the same store: counted before that write's own delta", async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      await createLandedThenAnswered(s, ep);
      const row = await store.getStatusRow(ep, 'a', 's-1');
      const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'a', parentMessageId: row!.parentMessageId, errorType: 'E', errorText: 'boom' });
      const written = await s.writeStatus(error);
      assert.equal(written.outcome, 'written');
      assert.equal(s.writesInDoubt, 0, 'settled from the write’s own read');
      await assertExact(ep, { pending: 0, completed: 0, failed: 1 });
    } finally {
      await s.close();
    }
  });

  test('failure groups too: a landed error moved on by another writer is in its group until that writer moves it out', async () => {
    const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
    try {
      const ep = uniq('ep');
      const request = msg(T.EventRequest, { endpointId: ep, eventId: 'a' });
      assert.equal((await s.writeStatus(request)).outcome, 'written');
      const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'a', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
      await lostReply(isRowReplace, () => assert.rejects(s.writeStatus(error), StoreTransientError));
      assert.equal(s.writesInDoubt, 1);
      // Another writer moves the landed Failed row on (a later success of the same request): Failed -> Completed.
      const other = await store.writeStatus(msg(T.ResolutionResponse, { endpointId: ep, eventId: 'a', parentMessageId: request.messageId }));
      assert.equal(other.outcome === 'written' && other.previousStatus, S.Failed);
      await s.flushCounters();
      assert.equal(s.writesInDoubt, 0);
      await assertExact(ep, { pending: 0, failed: 0, completed: 1 });
    } finally {
      await s.close();
    }
  });

  /**
   * W1 and W2, two writes of one row through `s` (a buffering writer, as the Resolver) that both read V0 (written by
   * `store`, so `s` reads it first): W1's replace never reaches the server but comes back in doubt; W2's lands.
   * `w2Reply` says how W2's reply comes back.
   */
  async function twoWritesOfOneVersion(s: MessageStore, ep: string, w2Reply: 'answered' | 'lost') {
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'a' });
    await store.writeStatus(request);
    const response = () => msg(T.ResolutionResponse, { endpointId: ep, eventId: 'a', parentMessageId: request.messageId });
    const held1 = proxy.hold(isRowReplace, 'request');
    const w1 = s.writeStatus(response());
    w1.catch(() => undefined); // observed below
    await held1.held;
    const held2 = proxy.hold(isRowReplace, 'request');
    const w2 = s.writeStatus(response());
    w2.catch(() => undefined); // observed below
    await held2.held;
    held1.release({ status: 503 }); // never reached the server: in doubt, not landed
    await assert.rejects(w1, StoreTransientError);
    assert.equal(s.writesInDoubt, 1);
    if (w2Reply === 'answered') {
      held2.release();
      assert.equal((await w2).outcome, 'written');
      assert.equal(s.writesInDoubt, 0, 'W1 settled by W2, which replaced the version both read');
    } else {
      held2.release('lost');
      await assert.rejects(w2, StoreTransientError);
      assert.equal(s.writesInDoubt, 1, 'both kept, on one row');
    }
    return request;
  }

  const bufferingWriter = () => wire.openThroughProxy({ counterFlushMs: 3_600_000, counterOwner: uniq('writer'), settleIntervalMs: 0 });

  test('two writes of one store that read one version, the second landed and answered: the first is not counted', async () => {
    const s = await bufferingWriter();
    const ep = uniq('ep');
    let clean: boolean | undefined;
    try {
      await twoWritesOfOneVersion(s, ep, 'answered');
    } finally {
      clean = await s.close();
    }
    assert.equal(clean, true);
    await assertExact(ep, { pending: 0, completed: 1 });
  });

  test('the same with both replies lost and the row then moved on by another writer: only the second is counted', async () => {
    const s = await bufferingWriter();
    const ep = uniq('ep');
    let clean: boolean | undefined;
    try {
      const request = await twoWritesOfOneVersion(s, ep, 'lost');
      const other = await store.writeStatus(msg(T.ErrorResponse, { endpointId: ep, eventId: 'a', parentMessageId: request.messageId, errorType: 'E', errorText: 'late' }));
      assert.equal(other.outcome === 'written' && other.previousStatus, S.Completed, "the other writer read W2's version");
    } finally {
      clean = await s.close();
    }
    assert.equal(s.writesInDoubt, 0);
    assert.equal(clean, true);
    await assertExact(ep, { pending: 0, completed: 0, failed: 1 });
  });
});

/** One row of a fresh endpoint, makers of the messages about it, and `s`, the test's store (through the proxy). */
interface OneRow {
  s: MessageStore;
  ep: string;
  /** V0, written by `store`: `s` has no cached version and reads the row first. */
  request: StatusWrite;
  error: (errorText: string) => StatusWrite;
  resolved: () => StatusWrite;
}

/**
 * The race the tests below share, on one row: V0 (a request, Pending); a first write through `s` (`first`) that is
 * served with its reply held at the wire (the request matching `held`); `meanwhile` acts while it is held; the reply
 * is then let go (`how`, default: as the server gave it) and `settled` checks the first write's end. A settle pass
 * (flushCounters) then leaves nothing in doubt and the endpoint's counters and failure groups exact: `expected`.
 */
async function raceOnOneRow<R>(race: {
  held: (r: ProxiedRequest) => boolean;
  first: (row: OneRow) => Promise<R>;
  meanwhile: (row: OneRow) => Promise<void>;
  how?: Release;
  settled: (first: Promise<R>, row: OneRow) => Promise<void>;
  expected: Parameters<typeof assertExact>[1];
}): Promise<void> {
  const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
  try {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'a' });
    const row: OneRow = {
      s,
      ep,
      request,
      error: (errorText) => msg(T.ErrorResponse, { endpointId: ep, eventId: 'a', parentMessageId: request.messageId, errorType: 'E', errorText }),
      resolved: () => msg(T.ResolutionResponse, { endpointId: ep, eventId: 'a', parentMessageId: request.messageId }),
    };
    await store.writeStatus(request);
    const hold = proxy.hold(race.held, 'response');
    const first = race.first(row);
    first.catch(() => undefined); // observed by `settled`
    await hold.held;
    await race.meanwhile(row);
    hold.release(race.how);
    await race.settled(first, row);
    await s.flushCounters(); // a settle pass, for whatever is left in doubt
    assert.equal(s.writesInDoubt, 0);
    await assertExact(ep, race.expected);
  } finally {
    await s.close();
  }
}

/** The second bulk request on the events container: a bulk write's, after its bulk read of the rows. */
function bulkWriteOfEvents(): (r: ProxiedRequest) => boolean {
  let bulkRequests = 0;
  return (r) => r.batch && r.path.includes('/colls/events/') && ++bulkRequests === 2;
}

/** A write of `row.s` that lands with its reply lost: in doubt. */
async function landsInDoubt(row: OneRow, write: StatusWrite): Promise<void> {
  await lostReply(isRowReplace, () => assert.rejects(row.s.writeStatus(write), StoreTransientError));
  assert.equal(row.s.writesInDoubt, 1);
}

describe('a bulk write of a row whose earlier write through the same store comes back in doubt while the bulk is in flight', () => {
  test('the bulk write settles it from the version it replaced: a landed write is counted', async () => {
    let error!: StatusWrite;
    let heldBulk!: Hold;
    let claiming!: ReturnType<MessageStore['writeStatuses']>;
    await raceOnOneRow({
      // W, an error response through `s`, lands; its reply is held.
      held: isRowReplace,
      first: (row) => row.s.writeStatus((error = row.error('boom'))),
      meanwhile: async ({ s, ep }) => {
        // The Manager's claim of a skip through `s`, in bulk: its bulk read finds W's version, its bulk write is held.
        heldBulk = proxy.hold(bulkWriteOfEvents(), 'request');
        const claim = msg(T.SkipRequest, { endpointId: ep, eventId: 'a', parentMessageId: error.messageId });
        claiming = s.writeStatuses([{ input: claim, expect: { lastMessageId: error.messageId, status: S.Failed, claim: true } }]);
        await heldBulk.held;
      },
      how: 'lost', // W is in doubt only now, after the bulk write decided from its version
      settled: async (w, { s }) => {
        await assert.rejects(w, StoreTransientError);
        assert.equal(s.writesInDoubt, 1);
        heldBulk.release();
        const [claimed] = await claiming;
        assert.equal(claimed?.ok && claimed.value.outcome, 'written');
      },
      expected: { pending: 1, failed: 0 },
    });
  });
});

describe('a write of the same store built on a bulk write whose reply is still in flight is newer, not older', () => {
  test('W builds on the bulk version, lands with its reply lost, then the bulk reply arrives: W must still be counted', async () => {
    await raceOnOneRow({
      // The bulk write (an error response, Pending -> Failed) through `s` lands; its reply is held.
      held: bulkWriteOfEvents(),
      first: (row) => row.s.writeStatuses([{ input: row.error('boom') }]),
      meanwhile: async (row) => {
        // W through `s`: reads the bulk's version (VB, Failed) from the server and moves it to Completed; its reply is lost.
        await landsInDoubt(row, row.resolved());
        assert.equal((await store.getStatusRow(row.ep, 'a', 's-1'))?.status, S.Completed, 'W landed');
      },
      settled: async (bulk) => {
        const [b] = await bulk;
        assert.equal(b?.ok && b.value.outcome, 'written');
      },
      expected: { pending: 0, failed: 0, completed: 1 },
    });
  });
});

describe('the same race with a single writeStatus in place of the bulk write', () => {
  test('W builds on W2 version while W2 reply is held, lands with reply lost; W2 reply then arrives', async () => {
    await raceOnOneRow({
      held: isRowReplace,
      first: (row) => row.s.writeStatus(row.error('boom')),
      meanwhile: (row) => landsInDoubt(row, row.resolved()),
      settled: async (w2) => assert.equal((await w2).outcome, 'written'),
      expected: { pending: 0, failed: 0, completed: 1 },
    });
  });
});

describe('a later write of the same store keeps the mark of its earlier write whose reply is still in flight', () => {
  test('W1 lands (reply held), W2 of the same store reads V1 and lands, then W1 reply is lost', async () => {
    await raceOnOneRow({
      held: isRowReplace,
      first: (row) => row.s.writeStatus(row.error('boom')),
      meanwhile: async (row) => {
        const w2 = await row.s.writeStatus(row.resolved());
        assert.equal(w2.outcome === 'written' && w2.previousStatus, S.Failed, 'W2 read W1 version');
      },
      how: 'lost',
      settled: async (w1, { s }) => {
        await assert.rejects(w1, StoreTransientError);
        assert.equal(s.writesInDoubt, 1);
      },
      expected: { pending: 0, failed: 0, completed: 1 },
    });
  });
});

describe('a newer write in doubt two writes of this store removed from the settling one is left for a fresh read too', () => {
  test('S held; W1, W2 of the same store land on top; W3 lands with reply lost; S reply then arrives', async () => {
    await raceOnOneRow({
      held: isRowReplace,
      first: (row) => row.s.writeStatus(row.error('s')),
      meanwhile: async (row) => {
        assert.equal((await row.s.writeStatus(row.error('w1'))).outcome, 'written');
        assert.equal((await row.s.writeStatus(row.error('w2'))).outcome, 'written');
        await landsInDoubt(row, row.resolved());
        assert.equal((await store.getStatusRow(row.ep, 'a', 's-1'))?.status, S.Completed, 'W3 landed');
      },
      settled: async (sWrite) => assert.equal((await sWrite).outcome, 'written'),
      expected: { pending: 0, failed: 0, completed: 1 },
    });
  });
});

test('a settle pass falling back to point reads for 15 rows prints no MaxListenersExceededWarning', { timeout: 120_000 }, async () => {
  // The pass's give-up signal is shared by every point read in flight; the client adds a listener to it per request.
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  process.on('warning', onWarning);
  const s = await wire.openThroughProxy({ settleIntervalMs: 0 });
  const ep = uniq('ep');
  try {
    await s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: 'x' }));
    for (let i = 0; i < 15; i++)
      await lostReply(isRowCreate, () => assert.rejects(s.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: `e${i}` })), StoreTransientError));
    assert.equal(s.writesInDoubt, 15);
    proxy.inject({ status: 503, match: isRangesRead }); // the bulk read fails as a whole: point reads, all at once
    try {
      await s.flushCounters();
    } finally {
      proxy.clear();
    }
    assert.equal(s.writesInDoubt, 0, 'settled by point reads');
    assert.equal((await store.getCounts(ep)).pending, 16);
    await new Promise((r) => setImmediate(r)); // a warning is emitted on the next tick
    assert.deepEqual(warnings, []);
  } finally {
    process.off('warning', onWarning);
    await s.close();
  }
});
