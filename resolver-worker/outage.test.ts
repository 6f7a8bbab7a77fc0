// A store outage must not spend the broker's delivery budget of the batch in hand. The fault proxy in front of the
// embedded Cosmos server answers 503 to every request of the real @azure/cosmos client (the store is down for
// everyone), or only to the event writes (this write keeps failing while the store answers). Before the outage
// circuit, each failure abandoned the message and released the session, the broker counted a delivery for every
// message of the batch, and a long outage ended with the batch in the dead-letter queue.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { HEARTBEAT_EVENT_TYPE_ID, MessageType as T, Topic, eventBody } from '@nimbus/sdk/contract';
import type { FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { DeadLetterReason } from './index.ts';
import { startStoreFaultHarness, type StoreFaultHarness } from './storeFaultHarness.ts';
import { eventually, orderBody, type ResolverHarness } from './testHarness.ts';
import { endProcessAfterResults } from '../packages/sdk/e2e/harness.ts';

// What the Service Bus client leaves pending once the Resolver and the hosts are closed (a receiver still opening
// keeps a 60 s timer) held this process up for about 50 s after its last result; harness.ts explains the exit.
endProcessAfterResults();

let faults: StoreFaultHarness;
let h: ResolverHarness;
let proxy: FaultProxy;

before(async () => {
  // ready() reads the console's own store, which reaches Cosmos directly: it shows the Resolver's word, not the outage's.
  faults = await startStoreFaultHarness();
  ({ harness: h, proxy } = faults);
});
after(() => faults?.close());

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const isEventWrite = (r: { method: string; path: string }) => (r.method === 'PUT' || r.method === 'POST') && r.path.includes('/colls/events/');
const probes = () => proxy.seen.filter((r) => r.path.includes('/colls/platform/')).length;
const deadLetterCount = async () => (await h.clients.admin.getSubscriptionRuntimeProperties(Topic.Resolver, Topic.Resolver)).deadLetterMessageCount;
const recorded = (messageId: string) =>
  eventually(() => h.settled.find((s) => s.messageId === messageId && s.ok && s.settlement.kind === 'complete'), `${messageId} recorded`, 60_000);
const ready = () => faults.ready();

async function sendBatch(n: number, sessionId: string, ep: string): Promise<Array<{ messageId: string; eventId: string }>> {
  const sent: Array<{ messageId: string; eventId: string }> = [];
  for (let i = 0; i < n; i++) {
    const eventId = uniq('e');
    const { messageId } = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId, body: orderBody({ i }) });
    sent.push({ messageId, eventId });
  }
  return sent;
}

describe('the store is down for everyone (503 on every request)', () => {
  test('the batch is held: once the store is back every message is recorded once, no delivery spent, nothing dead-lettered', async () => {
    const ep = uniq('crm');
    const sessionId = uniq('s');
    // The whole batch is queued before the Resolver starts, so one receive takes all 20.
    const sent = await sendBatch(20, sessionId, ep);
    proxy.inject({ status: 503 });
    const resolver = h.resolver({ outageProbeMs: 100 });
    try {
      // The outage lasts until 60 probes of the store have failed (6 s at the least; on the old code, which does
      // not probe, each failure released the session and spent a delivery of all 20, so the outage ended in the
      // dead-letter queue within ten redeliveries).
      const probesAtStart = probes();
      const first = await eventually(async () => {
        if ((await deadLetterCount()) > 0) return 'dead-lettered';
        const state = (resolver as Partial<typeof resolver>).state?.();
        return state?.storeUnavailable && probes() >= probesAtStart + 60 ? 'held' : undefined;
      }, 'sixty failed probes while held (or a dead letter)', 45_000);
      assert.equal(first, 'held');
      const ids = new Set(sent.map((m) => m.messageId));
      assert.deepEqual(h.settled.filter((s) => ids.has(s.messageId)), [], 'nothing settled, abandoned or dead-lettered while the store is down');
      assert.equal(resolver.state().receiving, false);
      assert.match((await ready()).resolver ?? '', /the store does not answer; no session is taken until it does/);
    } finally {
      proxy.clear();
    }

    for (const m of sent) {
      const done = await recorded(m.messageId);
      // Held in place, the first delivery records it; one more is tolerated for a session lost on a loaded machine.
      assert.ok(done.deliveryCount <= 1, `${m.messageId} spent ${done.deliveryCount + 1} deliveries`);
    }
    assert.ok(
      h.settled.every((s) => !sent.some((m) => m.messageId === s.messageId) || s.settlement.kind !== 'redeliver'),
      'no message of the batch was abandoned',
    );
    for (const m of sent) {
      assert.equal((await h.store.getStatusRow(ep, m.eventId, sessionId))?.status, 'Pending', 'the row is written');
      const history = await h.store.listHistory(m.eventId);
      assert.deepEqual(history.items.map((e) => e.messageId), [m.messageId], 'recorded once');
    }
    await eventually(() => (resolver.state().receiving ? true : undefined), 'receiving again');
    assert.equal(resolver.state().storeUnavailable, null);
    assert.equal((await ready()).resolver, 'ok');
    assert.equal(await deadLetterCount(), 0);
    assert.equal((await h.deadLetters(50, 300)).length, 0);
    await resolver.stop();
  });

  test('an outage past the lock-renewal horizon: the batch is released once, no session is taken until the store is back', async () => {
    const ep = uniq('crm');
    const sessionId = uniq('s');
    const sent = await sendBatch(5, sessionId, ep);
    const ids = new Set(sent.map((m) => m.messageId));
    proxy.inject({ status: 503 });
    // A 2 s horizon stands for the production 5 min: held that long, the session would lose its lock anyway.
    const resolver = h.resolver({ outageProbeMs: 100, maxAutoLockRenewalDurationInMs: 2_000 });
    try {
      const released = await eventually(() => h.settled.find((s) => ids.has(s.messageId)), 'the release at the horizon', 30_000);
      assert.equal(released.messageId, sent[0]!.messageId, 'the held message, first in the session');
      assert.equal(released.settlement.kind, 'redeliver');
      // Abandoned at once (the hold was its back-off): a wait after the horizon would abandon with a lapsed lock.
      assert.equal(released.settlement.kind === 'redeliver' && released.settlement.delayMs, 0, 'no back-off after the hold');
      assert.ok(released.ok, 'the release landed (the lock was still held)');
      assert.ok(resolver.state().storeUnavailable, 'still down');
      // The store stays down for 30 more probes: no worker takes the session again meanwhile.
      const probesAtRelease = probes();
      await eventually(() => (probes() >= probesAtRelease + 30 ? true : undefined), 'thirty more failed probes', 30_000);
      assert.equal(h.settled.filter((s) => ids.has(s.messageId)).length, 1, 'nothing taken or settled while the store is down');
    } finally {
      proxy.clear();
    }
    for (const m of sent) {
      const done = await recorded(m.messageId);
      assert.ok(done.deliveryCount <= 2, `${m.messageId} spent ${done.deliveryCount + 1} deliveries`);
    }
    assert.equal(h.settled.filter((s) => ids.has(s.messageId) && s.settlement.kind === 'redeliver').length, 1, 'released once');
    for (const m of sent) assert.deepEqual((await h.store.listHistory(m.eventId)).items.map((e) => e.messageId), [m.messageId]);
    assert.equal(await deadLetterCount(), 0);
    await resolver.stop();
  });

  test('a heartbeat reply held past the lock-renewal horizon is dropped, never dead-lettered; the session behind it is released once', async () => {
    const ep = uniq('crm');
    const sessionId = uniq('s');
    const probeId = randomUUID();
    // The heartbeat is first in its session, so it is the message held at the horizon.
    const hb = await h.send({
      type: T.ResolutionResponse,
      eventId: uniq('hb'),
      from: ep,
      sessionId,
      correlationId: probeId,
      parentMessageId: probeId,
      eventTypeId: HEARTBEAT_EVENT_TYPE_ID,
      body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: new Date().toISOString(), Endpoint: ep }),
    });
    const sent = await sendBatch(3, sessionId, ep);
    const ids = new Set(sent.map((m) => m.messageId));
    proxy.inject({ status: 503 });
    // A 2 s horizon stands for the production 5 min. On the old code the heartbeat spent its whole budget retrying
    // in place against the down store and was dead-lettered StoreUnavailable at the horizon.
    const resolver = h.resolver({ outageProbeMs: 100, maxAutoLockRenewalDurationInMs: 2_000 });
    try {
      const heartbeat = await eventually(() => h.settled.find((s) => s.messageId === hb.messageId), 'the heartbeat settled', 30_000);
      assert.deepEqual(heartbeat.settlement, { kind: 'complete', result: 'dropped' }, 'dropped, not dead-lettered');
      assert.ok(heartbeat.ok, 'completed while the session lock was held');
      assert.equal(heartbeat.deliveryCount, 0);
      const released = await eventually(() => h.settled.find((s) => ids.has(s.messageId)), 'the release of the message behind', 30_000);
      assert.equal(released.messageId, sent[0]!.messageId);
      assert.equal(released.settlement.kind, 'redeliver');
      assert.ok(released.ok, 'released with the lock still held');
    } finally {
      proxy.clear();
    }
    for (const m of sent) {
      const done = await recorded(m.messageId);
      assert.ok(done.deliveryCount <= 2, `${m.messageId} spent ${done.deliveryCount + 1} deliveries`);
    }
    assert.equal(h.settled.filter((s) => s.messageId === hb.messageId).length, 1, 'the heartbeat settled once');
    assert.equal(await deadLetterCount(), 0);
    await resolver.stop();
  });

  test('stop() while holding returns, leaves the messages unsettled, and a later Resolver records them', async () => {
    const ep = uniq('crm');
    const sessionId = uniq('s');
    const sent = await sendBatch(3, sessionId, ep);
    proxy.inject({ status: 503 });
    const resolver = h.resolver({ outageProbeMs: 100 });
    try {
      await eventually(() => ((resolver as Partial<typeof resolver>).state?.().storeUnavailable ? true : undefined), 'the outage circuit', 30_000);
      // Bounded: a stop must not wait for the store (a generous bound, far below the minutes of the old failure mode).
      const stopped = await Promise.race([resolver.stop().then(() => 'stopped'), delay(60_000).then(() => 'still stopping')]);
      assert.equal(stopped, 'stopped');
    } finally {
      proxy.clear();
    }
    const ids = new Set(sent.map((m) => m.messageId));
    const onStop = h.settled.filter((s) => ids.has(s.messageId));
    assert.equal(onStop[0]?.messageId, sent[0]!.messageId, 'the held message was let go on stop');
    assert.ok(onStop.every((s) => s.settlement.kind === 'leave'), 'nothing settled on stop');
    const next = h.resolver({ outageProbeMs: 100 });
    for (const m of sent) await recorded(m.messageId);
    for (const m of sent) assert.equal((await h.store.getStatusRow(ep, m.eventId, sessionId))?.status, 'Pending');
    assert.equal(await deadLetterCount(), 0);
    await next.stop();
  });
});

describe('this write keeps failing while the store answers (503 on event writes only)', () => {
  test('not held: the message spends its budget and is dead-lettered by the Resolver as StoreUnavailable', async () => {
    const ep = uniq('crm');
    const eventId = uniq('e');
    proxy.inject({ status: 503, match: isEventWrite });
    const resolver = h.resolver({ outageProbeMs: 100 });
    try {
      const m = await h.send({ type: T.ResolutionResponse, eventId, from: ep, sessionId: uniq('s') });
      // A session lost on a loaded machine spends a delivery without a settlement of ours: the counts may skip one.
      const last = await eventually(
        () => h.settled.find((s) => s.messageId === m.messageId && s.settlement.kind === 'deadLetter'),
        'the StoreUnavailable dead letter',
        120_000,
      );
      assert.ok(last.settlement.kind === 'deadLetter' && /attempt 10 of 10/.test(last.settlement.description), 'dead-lettered on the last attempt');
      const settlements = h.settled.filter((s) => s.messageId === m.messageId);
      assert.deepEqual(settlements.map((s) => s.settlement.kind), [...Array(settlements.length - 1).fill('redeliver'), 'deadLetter']);
      const counts = settlements.map((s) => s.deliveryCount);
      assert.ok(counts.every((c, i) => i === 0 || c > counts[i - 1]!), `delivery counts strictly increase: ${counts.join(',')}`);
      assert.equal(resolver.state().storeUnavailable, null, 'the store answers its probes: no outage');
      const dead = await eventually(async () => {
        const d = await h.deadLetters(5, 500);
        return d.length > 0 ? d : undefined;
      }, 'the dead letter');
      assert.deepEqual(dead.map((d) => d.messageId), [m.messageId]);
      assert.equal(dead[0]!.deadLetterReason, DeadLetterReason.StoreUnavailable);
      assert.match(dead[0]!.deadLetterErrorDescription ?? '', /attempt 10 of 10/);
    } finally {
      proxy.clear();
      await resolver.stop();
    }
  });
});
