// stop() must not wait for the store. A write held at the fault proxy in front of the embedded Cosmos server (a
// store that does not answer) used to keep stop() waiting until the Cosmos client gave up on the request (its
// request time-out, 30 s by default): a CI run logged "resolver did not stop within 20 s" after the chaos test. Now
// the message whose write is in flight is left unsettled on stop; it comes back with its session, and the next
// Resolver records it once.
//
// No timing threshold decides the result: the stopping Resolver's store gives up on a request only after 5 min, so
// a stop() that resolves at all before the test lets the write go is one that did not wait for it. The 60 s bound
// only turns the old code's wait into a failure instead of a hang.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { MessageType as T, Prop } from '@nimbus/sdk/contract';
import { createStore, type MessageStore } from '../lib/store/index.ts';
import { startFaultProxy, type FaultProxy, type Hold, type ProxiedRequest } from '../lib/store/testing/faultProxy.ts';
import type { ResolverHandle } from './index.ts';
import { closeStoreRecordingOwed, COUNTERS_OWED_FILE, recoverOwedCounters } from '../scripts/countersOwed.ts';
import { eventually, orderBody, ResolverHarness } from './testHarness.ts';

let h: ResolverHarness;

before(async () => {
  h = await ResolverHarness.start();
});
after(() => h?.close());

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

interface PatientStore {
  store: MessageStore;
  /** Its counter owner id (a lapsed lease names it). */
  owner: string;
  /** Its own fault proxy in front of the embedded Cosmos server: closed when "the process exits" (closeAsMainDoes). */
  proxy: FaultProxy;
}

/**
 * The harness's database through a fault proxy of its own, with a client that waits 5 min for a request (the SDK's
 * longest) and counters buffered as `npm run resolver` buffers them, under an owner id of its own.
 */
async function patientStore(latencyMs = 0): Promise<PatientStore> {
  const owner = uniq('stopping');
  const proxy = await startFaultProxy(h.cosmos.endpoint, { latencyMs });
  const store = await createStore({
    endpoint: proxy.endpoint,
    key: h.cosmos.key,
    database: h.store.database.id,
    requestTimeoutMs: 300_000,
    counterFlushMs: 250,
    counterOwner: owner,
  });
  return { store, owner, proxy };
}

/**
 * What main.ts does after stop(): store.close(), then the lease released only when close() says every counter delta
 * is applied, then the process exits: here its store's proxy is closed, so nothing it still had running or armed (a
 * write, a counter flush timer) reaches the server afterwards. `meanwhile` runs once the close has started (a held
 * write let go while the close waits for it), `beforeExit` once it has returned.
 */
async function closeAsMainDoes(
  patient: PatientStore,
  t: { diagnostic(m: string): void },
  { meanwhile, beforeExit }: { meanwhile?: () => void; beforeExit?: () => Promise<void> } = {},
): Promise<boolean> {
  const closing = patient.store.close();
  meanwhile?.();
  const clean = await closing;
  t.diagnostic(`store.close(): ${clean ? 'clean, the lease would be released' : 'not clean, the lease would lapse'}`);
  await beforeExit?.();
  await patient.proxy.close();
  return clean;
}

/**
 * After the next Resolver has recorded everything: when the stopping store's close was not clean, its lease lapses
 * and a survivor applies its stamps (as liveness.ts does); a clean close released it and nobody recovers anything.
 */
async function survivorRecovers(clean: boolean, owner: string): Promise<void> {
  if (!clean) await h.store.recoverCounters(owner);
}

/** The maintained counters of `endpoints` are what a recount of their rows finds. */
async function assertCountsMatchRows(endpoints: string[]): Promise<void> {
  const { endpoints: all } = await h.store.getAllCounts();
  for (const ep of endpoints) {
    const kept = all.find((e) => e.endpointId === ep)?.buckets;
    const recounted = (await h.store.recountEndpoint(ep)).buckets;
    const nonZero = (b: Record<string, number> | undefined) => Object.fromEntries(Object.entries(b ?? {}).filter(([, n]) => n !== 0));
    assert.deepEqual(nonZero(kept), nonZero(recounted), `${ep}: the counters match a recount of its rows`);
  }
}

/** 'stopped' when stop() resolves first; the bound only ends the old code's wait (see the top of the file). */
async function stopWithin(resolver: ResolverHandle, ms = 60_000): Promise<string> {
  const bound = new AbortController();
  try {
    return await Promise.race([
      resolver.stop().then(() => 'stopped'),
      delay(ms, 'still stopping', { signal: bound.signal }).catch(() => 'aborted'),
    ]);
  } finally {
    bound.abort(); // the bound's timer must not keep the test process alive
  }
}
/** The status row's create (not a batch) for `eventId`: the last write of a request's row. */
const rowCreateOf = (eventId: string) => (r: ProxiedRequest) =>
  r.method === 'POST' && !r.batch && !r.query && /\/colls\/events\/docs\/?$/.test(r.path) && (r.partitionKey ?? '').includes(eventId);
/** A write (not a query) naming `eventId` in its partition key: the event's history or its status row. */
const writeOf = (eventId: string) => (r: ProxiedRequest) =>
  !r.query && (r.method === 'PUT' || r.method === 'POST') && (r.partitionKey ?? '').includes(eventId);

/**
 * Starts a Resolver on a patient store, waits until a request matching `match` is held at the proxy (and for
 * `ready`), stops it and asserts that the stop did not wait for the held request. The caller closes the store and
 * lets the request go (it was already sent, so it reaches the server after the stop: the copy that comes back must
 * add nothing); on a failure here both are done.
 */
async function stopWhileHeld(
  match: (r: ProxiedRequest) => boolean,
  ready?: () => Promise<unknown>,
): Promise<{ patient: PatientStore; hold: Hold }> {
  const patient = await patientStore();
  const hold = patient.proxy.hold(match, 'request');
  try {
    const first = h.resolver({ store: patient.store });
    await hold.held;
    await ready?.();
    // Positive signal: stop() resolves while the hold is still in place and the client still waits for its answer.
    assert.equal(await stopWithin(first), 'stopped', 'stop() waited for the store write held at the proxy');
    return { patient, hold };
  } catch (err) {
    hold.release();
    await patient.store.close();
    await patient.proxy.close();
    throw err;
  }
}

/** Starts the next Resolver and waits until each message has a completion that landed. */
async function recordedByNext(ids: string[]): Promise<ResolverHandle> {
  const next = h.resolver();
  for (const id of ids) {
    await eventually(() => h.settled.find((s) => s.messageId === id && s.ok && s.settlement.kind === 'complete'), `${id} recorded`, 60_000);
  }
  return next;
}

const settledKinds = (id: string) => h.settled.filter((s) => s.messageId === id).map((s) => s.settlement.kind);

for (const how of [undefined, 'lost'] as const) {
  // 'lost': the row's create reaches the server but its answer is a 503, while the store closes: the write goes in
  // doubt after the close's first settle (its window pinned), and the close's second settle finds it landed.
  const what = how === 'lost' ? "the row's create, which lands with its answer lost while the store closes" : 'a store write';
  test(`stop() returns while ${what} is held, without settling its message; the next Resolver records it once, counted once`, async (t) => {
    const ep = uniq('crm');
    const eventId = uniq('e');
    const sessionId = uniq('s');
    const { messageId } = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId, body: orderBody({}) });
    const { patient, hold } = await stopWhileHeld(how === 'lost' ? rowCreateOf(eventId) : writeOf(eventId));
    const clean = await closeAsMainDoes(patient, t, { meanwhile: () => hold.release(how) });
    assert.deepEqual(settledKinds(messageId), ['leave'], 'left on stop, never settled without its write');
    // The lost answer: when the close answered true, its second settle and flush counted the landed row themselves,
    // before any survivor (a loaded machine can run out the close's budgets: then it answers false and the survivor
    // below repairs it, which the test checks either way).
    if (how === 'lost' && clean) await assertCountsMatchRows([ep]);
    if (how === 'lost') t.diagnostic(`close() answered ${String(clean)}`);
    const next = await recordedByNext([messageId]);
    try {
      const recorded = h.settled.find((s) => s.messageId === messageId && s.settlement.kind === 'complete')!;
      assert.ok(recorded.deliveryCount >= 1, 'a redelivered copy (the stopped Resolver did not settle it)');
      assert.equal((await h.store.getStatusRow(ep, eventId, sessionId))?.status, 'Pending');
      assert.deepEqual((await h.store.listHistory(eventId)).items.map((e) => e.messageId), [messageId], 'one history entry');
      await survivorRecovers(clean, patient.owner);
      await assertCountsMatchRows([ep]);
    } finally {
      await next.stop();
    }
  });
}

test('a batch stopped while one row is being written: that message is left, rows already written are completed, the next Resolver records the rest once', async (t) => {
  const sessionId = uniq('s');
  const [epA, epB] = [uniq('crm'), uniq('crm')];
  const [eventA, eventB] = [uniq('e'), uniq('e')];
  // One receive: A alone (its own row), then B's request and response (one row, recorded together as a group). The
  // rows' writes start side by side as the batch starts, and the messages are then taken in order: A first.
  const a = await h.send({ type: T.EventRequest, eventId: eventA, to: epA, from: 'shop', sessionId, body: orderBody({}) });
  const req = await h.send({ type: T.EventRequest, eventId: eventB, to: epB, from: 'shop', sessionId, body: orderBody({}) });
  const res = await h.send({ type: T.ResolutionResponse, eventId: eventB, from: epB, sessionId, parentMessageId: req.messageId });
  const idsB = [req.messageId, res.messageId];
  // A's first write is held before it reaches the server; the stop comes once B's row is written (the group's last
  // request answered).
  const { patient, hold } = await stopWhileHeld(writeOf(eventA), () =>
    eventually(async () => ((await h.store.getStatusRow(epB, eventB, sessionId))?.status === 'Completed' ? true : undefined), "B's row"),
  );
  const clean = await closeAsMainDoes(patient, t, { meanwhile: () => hold.release() });
  assert.deepEqual(settledKinds(a.messageId), ['leave'], "A's write is still held: A is left, never settled");
  // B's outcomes are stored: completed with the batch (its write ended), or left when the client had not yet read the
  // last answer at the stop; never anything else.
  const b = idsB.flatMap(settledKinds);
  assert.ok(b.every((k) => k === 'complete' || k === 'leave'), b.join(', '));
  t.diagnostic(`B on stop: ${b.join(', ') || 'not settled (left)'}`);
  const next = await recordedByNext([a.messageId, ...idsB]);
  try {
    assert.equal((await h.store.getStatusRow(epA, eventA, sessionId))?.status, 'Pending');
    assert.equal((await h.store.getStatusRow(epB, eventB, sessionId))?.status, 'Completed');
    assert.deepEqual((await h.store.listHistory(eventA)).items.map((e) => e.messageId), [a.messageId]);
    assert.deepEqual((await h.store.listHistory(eventB)).items.map((e) => e.messageId).sort(), [...idsB].sort());
    await survivorRecovers(clean, patient.owner);
    await assertCountsMatchRows([epA, epB]);
  } finally {
    await next.stop();
  }
});

test('a batch of more rows than are written at a time, stopped on a slow store: rows not started stay unwritten, the counters match the rows', async (t) => {
  // Every request to this store takes 300 ms more: a row (its history, then its status) takes several, so when the
  // first row is written most of the batch's 90 rows still wait for one of the 16 slots. Before the fix those started
  // after the stop, when their writes ended, and after the close's last counter flush: stamped with a window no flush
  // applied, and lost to the counters once the lease was released.
  const patient = await patientStore(300);
  let closed = false;
  try {
    const sessionId = uniq('s');
    const ep = uniq('crm');
    const events = Array.from({ length: 90 }, () => uniq('e'));
    const ids: string[] = [];
    for (const eventId of events) ids.push((await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId, body: orderBody({}) })).messageId);
    // Ten of the rows get their response in the same batch (recorded together with their request): 100 messages,
    // one receive.
    for (const [i, eventId] of events.slice(0, 10).entries())
      ids.push((await h.send({ type: T.ResolutionResponse, eventId, from: ep, sessionId, parentMessageId: ids[i] })).messageId);
    const first = h.resolver({ store: patient.store, maxMessagesPerReceive: 100 });
    const rowsWritten = async () => (await Promise.all(events.map((e) => h.store.getStatusRow(ep, e, sessionId)))).filter(Boolean).length;
    await eventually(async () => ((await rowsWritten()) > 0 ? true : undefined), 'a first row written', 60_000);
    assert.equal(await stopWithin(first), 'stopped');
    const seenAtStop = patient.proxy.seen.length;
    t.diagnostic(`rows written when stop() returned: ${await rowsWritten()} of ${events.length}`);
    const clean = await closeAsMainDoes(patient, t);
    closed = true;
    t.diagnostic(`rows written when the store was closed: ${await rowsWritten()} of ${events.length}`);
    // A row's work starts with its history write. One that starts after stop() has returned runs into the close:
    // with its ticket taken after the final flush closed its window, its count is never applied, and the lease is
    // released as if nothing were left. (Which of them land before the process exits is a race; this is not.)
    const startedAfterStop = patient.proxy.seen.slice(seenAtStop).filter((r) => !r.query && r.method === 'POST' && r.path.includes('/colls/history/'));
    assert.equal(startedAfterStop.length, 0, 'row writes started after stop() returned');
    const next = await recordedByNext(ids);
    try {
      await survivorRecovers(clean, patient.owner);
      await assertCountsMatchRows([ep]);
      assert.equal((await h.store.getCounts(ep)).completed, 10);
      assert.equal((await h.store.getCounts(ep)).pending, 80);
    } finally {
      await next.stop();
    }
  } finally {
    if (!closed) await closeAsMainDoes(patient, t);
  }
});

test('a row write the store never answers: store.close() gives up within its bound, says so, and a survivor counts the row once the lease lapses', async (t) => {
  const ep = uniq('crm');
  const sessionId = uniq('s');
  // The endpoint already has counts (a counters document): a survivor's recovery walks the counters documents.
  const earlier = uniq('e');
  await h.send({ type: T.EventRequest, eventId: earlier, to: ep, from: 'shop', sessionId: uniq('s'), body: orderBody({}) });
  const warm = h.resolver();
  await eventually(async () => ((await h.store.getCounts(ep)).pending === 1 ? true : undefined), 'the earlier request counted');
  await warm.stop();
  const eventId = uniq('e');
  const { messageId } = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId, body: orderBody({}) });
  const { patient, hold } = await stopWhileHeld(rowCreateOf(eventId));
  // The write goes on after the close (it was sent): let go before "the process exits", it lands, stamped above what
  // the close flushed. The race's bound only turns an unbounded close into a failure (its own bound is 5 s a step).
  const landed = async () => {
    hold.release();
    await eventually(async () => (await h.store.getStatusRow(ep, eventId, sessionId)) ?? undefined, 'the held write landed');
  };
  const bound = new AbortController();
  const clean = await Promise.race([
    closeAsMainDoes(patient, t, { beforeExit: landed }),
    delay(60_000, 'still closing', { signal: bound.signal }).catch(() => 'aborted'),
  ]).finally(() => bound.abort());
  if (clean === 'still closing') hold.release();
  assert.equal(clean, false, 'close() reports the write it could not wait for');
  const next = await recordedByNext([messageId]);
  try {
    await survivorRecovers(clean, patient.owner);
    await assertCountsMatchRows([ep]);
    assert.equal((await h.store.getCounts(ep)).pending, 2);
  } finally {
    await next.stop();
  }
});

/** A query of `eventId`'s history (not the query plan beside it): how a refused command's restore finds the outcome. */
const historyQueryOf = (eventId: string) => (r: ProxiedRequest) =>
  r.query && !r.queryPlan && r.path.includes('/colls/history/') && (r.partitionKey ?? '').includes(eventId);

/**
 * The next Resolver records `ids` (then `check` runs); a survivor recovers the stopped store's stamps when its close
 * was not clean; the counters of `ep` then match a recount of its rows.
 */
async function countedOnceAfterNext(ids: string[], clean: boolean, owner: string, ep: string, check?: () => Promise<void>): Promise<void> {
  const next = await recordedByNext(ids);
  try {
    await check?.();
    await survivorRecovers(clean, owner);
    await assertCountsMatchRows([ep]);
  } finally {
    await next.stop();
  }
}

/** The outcome (or the error's name) of the next call of `store.writeStatus`: a positive signal that it ran. */
function nextWriteStatus(store: MessageStore): Promise<string> {
  return new Promise((resolve) => {
    const original = store.writeStatus.bind(store);
    store.writeStatus = (...args) => {
      const written = original(...args);
      written.then(
        (r) => resolve(r.outcome),
        (err: unknown) => resolve(err instanceof Error ? err.name : String(err)),
      );
      return written;
    };
  });
}

test("a refused command's row restore that comes after the store closed is refused, not counted into a window no flush applies; the next Resolver restores the row once", async (t) => {
  const ep = uniq('crm');
  const eventId = uniq('e');
  const sessionId = uniq('s');
  // A handoff park, recorded, then claimed by the Manager for a completion (as the console does, notices.test.ts).
  const req = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId, body: orderBody({}) });
  const park = await h.send({
    type: T.PendingHandoffResponse,
    eventId,
    from: ep,
    to: 'Resolver',
    sessionId,
    parentMessageId: req.messageId,
    props: { [Prop.HandoffReason]: 'DMF import', [Prop.ExternalJobId]: 'job-1' },
  });
  const warm = h.resolver();
  await eventually(async () => ((await h.store.getStatusRow(ep, eventId, sessionId))?.subStatus === 'Handoff' ? true : undefined), 'the park recorded');
  await warm.stop();
  const claim = uniq('cmd');
  const claimed = await h.store.writeStatus(
    { endpointId: ep, eventId, sessionId, messageId: claim, messageType: T.HandoffCompletedRequest, parentMessageId: park.messageId, from: 'Manager', to: ep, enqueuedAt: new Date().toISOString() },
    { lastMessageId: park.messageId, claim: true },
  );
  assert.equal(claimed.outcome, 'written');
  const notice = await h.send({
    type: T.ErrorResponse,
    eventId,
    from: ep,
    to: 'Resolver',
    sessionId,
    parentMessageId: claim,
    props: { [Prop.DeadLetterReason]: 'CommandRefused', [Prop.DeadLetterErrorDescription]: 'HandoffCompletedRequest refused: not the pending handoff' },
  });
  // The restore reads the event's history before it writes the row: held there, its row write comes after the close.
  const { patient, hold } = await stopWhileHeld(historyQueryOf(eventId));
  const restore = nextWriteStatus(patient.store);
  const clean = await closeAsMainDoes(patient, t, {
    beforeExit: async () => {
      hold.release();
      t.diagnostic(`the restore's row write after the close: ${await restore}`);
    },
  });
  assert.deepEqual(settledKinds(notice.messageId), ['leave'], 'left on stop');
  await countedOnceAfterNext([notice.messageId], clean, patient.owner, ep, async () => {
    const row = await h.store.getStatusRow(ep, eventId, sessionId);
    assert.deepEqual([row?.status, row?.subStatus], ['Pending', 'Handoff'], 'the claim put back to the park');
  });
});

test('a row write whose answer is lost while the store closes, its row unreadable after: its window stays unflushed, close() says so, and a survivor counts it once', async (t) => {
  const ep = uniq('crm');
  const [eventA, eventB] = [uniq('e'), uniq('e')];
  const a = await h.send({ type: T.EventRequest, eventId: eventA, to: ep, from: 'shop', sessionId: uniq('s'), body: orderBody({}) });
  // A's row create is held. B, on the same endpoint and sent once A is held, takes its ticket after A's: a flush of
  // B's window sets `flushed[owner]` on this endpoint at or past A's stamp.
  const sessionB = uniq('s');
  let b = '';
  const { patient, hold } = await stopWhileHeld(rowCreateOf(eventA), async () => {
    b = (await h.send({ type: T.EventRequest, eventId: eventB, to: ep, from: 'shop', sessionId: sessionB, body: orderBody({}) })).messageId;
    await eventually(async () => (await h.store.getStatusRow(ep, eventB, sessionB)) ?? undefined, "B's row");
  });
  const clean = await closeAsMainDoes(patient, t, {
    meanwhile: () => {
      // From now on every request for a row fails (the close's settle reads A's row in vain), and A's create lands
      // with its answer lost: A is in doubt to the end.
      patient.proxy.inject({ status: 503, match: (r) => r.path.includes('/colls/events/') });
      hold.release('lost');
    },
  });
  assert.equal(clean, false, 'close() reports the write still in doubt');
  await countedOnceAfterNext([a.messageId, b], clean, patient.owner, ep);
  assert.equal((await h.store.getCounts(ep)).pending, 2);
});

test('a stack whose store.close() leaves deltas records that it owes them, and its next start recovers them before anything writes: counted once', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nimbus-owed-'));
  const log = pino({ level: 'silent' });
  try {
    const ep = uniq('crm');
    const eventId = uniq('e');
    const sessionId = uniq('s');
    const { messageId } = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId, body: orderBody({}) });
    const { patient, hold } = await stopWhileHeld(rowCreateOf(eventId));
    // As scripts/start-stack.ts stops its store; the bound only turns an unbounded close into a failure.
    const bound = new AbortController();
    const clean = await Promise.race([
      closeStoreRecordingOwed(patient.store, dir, log),
      delay(60_000, 'still closing', { signal: bound.signal }).catch(() => 'aborted'),
    ]).finally(() => bound.abort());
    // The write was sent: it lands before the process exits, stamped above what the close flushed.
    hold.release();
    await eventually(async () => (await h.store.getStatusRow(ep, eventId, sessionId)) ?? undefined, 'the held write landed');
    await patient.proxy.close();
    assert.equal(clean, false, 'close() reports the write it could not wait for');
    const owed = await readFile(join(dir, COUNTERS_OWED_FILE), 'utf8').catch(() => 'nothing recorded');
    // The next start, before its Resolver.
    const recovered = await recoverOwedCounters(h.store, dir, log);
    const next = await recordedByNext([messageId]);
    try {
      await assertCountsMatchRows([ep]);
      assert.equal((await h.store.getCounts(ep)).pending, 1);
    } finally {
      await next.stop();
    }
    assert.deepEqual(JSON.parse(owed), { owners: [patient.owner] }, 'the stop recorded what it owes');
    assert.equal(recovered, 1, "the row's stamp applied");
    await assert.rejects(readFile(join(dir, COUNTERS_OWED_FILE)), { code: 'ENOENT' }, 'nothing owed any more');
    assert.equal(await recoverOwedCounters(h.store, dir, log), 0, 'a second start recovers nothing');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
