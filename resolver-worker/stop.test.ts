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
import { MessageType as T } from '@nimbus/sdk/contract';
import { createStore, type MessageStore } from '../lib/store/index.ts';
import type { FaultProxy, ProxiedRequest } from '../lib/store/testing/faultProxy.ts';
import type { ResolverHandle } from './index.ts';
import { eventually, orderBody, ResolverHarness } from './testHarness.ts';

let h: ResolverHarness;
let proxy: FaultProxy;

before(async () => {
  ({ harness: h, proxy } = await ResolverHarness.startBehindProxy());
});
after(() => h?.close());

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

/** The harness's database through the proxy, with a client that waits 5 min for a request (the SDK's longest). */
const patientStore = (): Promise<MessageStore> =>
  createStore({ endpoint: h.cosmosEndpoint, key: h.cosmos.key, database: h.store.database.id, requestTimeoutMs: 300_000 });

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
/** A write (not a query) naming `eventId` in its partition key: the event's history or its status row. */
const writeOf = (eventId: string) => (r: ProxiedRequest) =>
  !r.query && (r.method === 'PUT' || r.method === 'POST') && (r.partitionKey ?? '').includes(eventId);

/**
 * Starts a Resolver on a patient store, waits until a request matching `match` is held at the proxy (and for
 * `ready`), stops it and asserts that the stop did not wait for the held request; then lets the request through (it
 * was already sent, so it reaches the server after the stop: the copy that comes back must add nothing).
 */
async function stopWhileHeld(match: (r: ProxiedRequest) => boolean, ready?: () => Promise<unknown>): Promise<void> {
  const hold = proxy.hold(match, 'request');
  const patient = await patientStore();
  try {
    const first = h.resolver({ store: patient });
    await hold.held;
    await ready?.();
    // Positive signal: stop() resolves while the hold is still in place and the client still waits for its answer.
    assert.equal(await stopWithin(first), 'stopped', 'stop() waited for the store write held at the proxy');
  } finally {
    hold.release();
    await patient.close();
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

test('stop() returns while a store write is held, without settling its message; the next Resolver records it once', async () => {
  const ep = uniq('crm');
  const eventId = uniq('e');
  const sessionId = uniq('s');
  const { messageId } = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId, body: orderBody({}) });
  await stopWhileHeld(writeOf(eventId));
  assert.deepEqual(settledKinds(messageId), ['leave'], 'left on stop, never settled without its write');
  const next = await recordedByNext([messageId]);
  try {
    const recorded = h.settled.find((s) => s.messageId === messageId && s.settlement.kind === 'complete')!;
    assert.ok(recorded.deliveryCount >= 1, 'a redelivered copy (the stopped Resolver did not settle it)');
    assert.equal((await h.store.getStatusRow(ep, eventId, sessionId))?.status, 'Pending');
    assert.deepEqual((await h.store.listHistory(eventId)).items.map((e) => e.messageId), [messageId], 'one history entry');
  } finally {
    await next.stop();
  }
});

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
  await stopWhileHeld(writeOf(eventA), () =>
    eventually(async () => ((await h.store.getStatusRow(epB, eventB, sessionId))?.status === 'Completed' ? true : undefined), "B's row"),
  );
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
  } finally {
    await next.stop();
  }
});
