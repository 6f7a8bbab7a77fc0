// Store throttling and outages injected at the wire: a fault proxy in front of the embedded Cosmos server answers
// 429 (with x-ms-retry-after-ms) or 503 to the real @azure/cosmos client, and the Resolver spends its one budget
// (ThrottleRetryCount + DeliveryCount): same-id replacements that recover, exhaustion into CosmosDbThrottled,
// heartbeats retried in place, transient errors redelivered by the broker.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, Prop, WellKnownSession, eventBody, HEARTBEAT_EVENT_TYPE_ID } from '@nimbus/sdk/contract';
import type { FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { DeadLetterReason } from './index.ts';
import { ResolverHarness, errorBody, eventually, orderBody } from './testHarness.ts';

let h: ResolverHarness;
let proxy: FaultProxy;
before(async () => {
  ({ harness: h, proxy } = await ResolverHarness.startBehindProxy());
  h.resolver();
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const isWrite = (r: { method: string; path: string }) => r.method === 'PUT' || r.method === 'POST';
const kinds = (messageId: string) =>
  h.settled.filter((s) => s.messageId === messageId).map((s) => (s.settlement.kind === 'complete' ? s.settlement.result : s.settlement.kind));

describe('store throttling (429)', () => {
  test('recovers within the budget: same-id replacements, one history entry, the row written', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    proxy.inject({ status: 429, retryAfterMs: 30, times: 2, match: (r) => isWrite(r) && r.path.includes('/colls/events/') });
    const sent = await h.send({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop', body: orderBody({ orderId: 't' }) });
    await h.settledOf(sent.messageId, 3);
    proxy.clear();
    assert.deepEqual(kinds(sent.messageId), ['reschedule', 'reschedule', 'written']);
    const [first, second] = h.settled.filter((s) => s.messageId === sent.messageId).map((s) => s.settlement);
    assert.deepEqual(first, { kind: 'reschedule', attempt: 1, delayMs: 30, source: 'provider' }, 'retry-after longer than the 20 ms backoff wins');
    assert.deepEqual(second, { kind: 'reschedule', attempt: 2, delayMs: 40, source: 'backoff' }, 'backoff doubles');
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Pending');
    const history = await h.store.listHistory(ev);
    assert.equal(history.items.length, 1, 'the throttle chain shares one history entry');
    assert.equal(history.items[0]!.messageId, sent.messageId);
    assert.equal(h.metrics.counts('nimbus.resolver.store_retry', { 'nimbus.retry.action': 'rescheduled' }), 2);
    assert.equal(await h.deadLetters(5, 300).then((d) => d.length), 0);
  });

  // The broker stamps a scheduled replacement when its schedule comes due (5-300 s per reschedule in production), so a
  // row written from a replacement used to carry that late time, while the history entry, created on the first
  // delivery, had the message's own: readers take it as the message's time (Reconcile, the latency histogram).
  test("a rescheduled message is recorded with its first delivery's enqueue time, not its replacements', in the row and the history", async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    // The row write throttled twice with a 1 s retry-after: each replacement becomes active a second or more after
    // the one before, and the second must keep the time the first carried.
    proxy.inject({ status: 429, retryAfterMs: 1000, times: 2, match: (r) => isWrite(r) && r.path.includes('/colls/events/') });
    const sending = Date.now();
    const sent = await h.send({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop', body: orderBody({ orderId: 't' }) });
    const sentBy = Date.now();
    await h.settledOf(sent.messageId, 3, 20_000);
    proxy.clear();
    assert.deepEqual(kinds(sent.messageId), ['reschedule', 'reschedule', 'written']);
    const row = await h.store.getStatusRow(ep, ev, 's-1');
    const history = (await h.store.listHistory(ev)).items;
    assert.equal(history.length, 1);
    assert.equal(row?.enqueuedAt, history[0]!.enqueuedAt, 'the row and its own history entry agree on when the message was enqueued');
    // The broker (in this process: one clock) stamped the first delivery while it was being sent.
    const enqueued = Date.parse(row!.enqueuedAt);
    assert.ok(sending <= enqueued && enqueued <= sentBy, `enqueued at ${row!.enqueuedAt}, sent between ${new Date(sending).toISOString()} and ${new Date(sentBy).toISOString()}`);
  });

  test('exhausts into a dead letter with reason CosmosDbThrottled on the tenth attempt', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    proxy.inject({ status: 429, retryAfterMs: 1, match: (r) => isWrite(r) && r.path.includes('/colls/events/') });
    try {
      const sent = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep });
      await h.settledOf(sent.messageId, 10, 30_000);
      const settlements = h.settled.filter((s) => s.messageId === sent.messageId).map((s) => s.settlement);
      assert.deepEqual(
        settlements.map((s) => s.kind),
        [...Array(9).fill('reschedule'), 'deadLetter'],
      );
      assert.deepEqual(
        settlements.slice(0, 9).map((s) => (s.kind === 'reschedule' ? s.delayMs : -1)),
        [20, 40, 80, 160, 200, 200, 200, 200, 200],
        'backoff doubles up to the cap',
      );
      const dead = await eventually(async () => {
        const d = await h.deadLetters(5, 500);
        return d.length > 0 ? d : undefined;
      }, 'the dead letter');
      assert.equal(dead.length, 1);
      assert.equal(dead[0]!.messageId, sent.messageId, 'the replacement kept the MessageId');
      assert.equal(dead[0]!.deadLetterReason, DeadLetterReason.CosmosDbThrottled);
      assert.equal(dead[0]!.applicationProperties?.[Prop.ThrottleRetryCount], 9);
      assert.match(dead[0]!.deadLetterErrorDescription ?? '', /attempt 10 of 10/);
    } finally {
      proxy.clear();
    }
    assert.equal(await h.store.getStatusRow(ep, ev, 's-1'), null);
    assert.equal((await h.store.listHistory(ev)).items.length, 1);
  });

  test('heartbeats are retried in place, never rescheduled', async () => {
    const ep = uniq('crm');
    const probeId = randomUUID();
    const retriesBefore = h.metrics.counts('nimbus.resolver.store_retry', { 'nimbus.retry.action': 'retried_in_place' });
    proxy.inject({ status: 429, retryAfterMs: 5, times: 3, match: (r) => isWrite(r) && r.path.includes('/colls/heartbeats/') });
    const sent = await h.send({
      type: T.ResolutionResponse,
      eventId: uniq('hb'),
      from: ep,
      sessionId: WellKnownSession.Heartbeat,
      correlationId: probeId,
      eventTypeId: HEARTBEAT_EVENT_TYPE_ID,
      body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { Endpoint: ep }),
    });
    await h.settledOf(sent.messageId);
    proxy.clear();
    assert.deepEqual(kinds(sent.messageId), ['heartbeat'], 'one settlement: no replacement was scheduled');
    assert.equal(h.metrics.counts('nimbus.resolver.store_retry', { 'nimbus.retry.action': 'retried_in_place' }) - retriesBefore, 3);
    const [record] = await h.store.listHeartbeats(ep);
    assert.equal(record?.probeId, probeId);
    assert.equal(record?.status, 'On');
  });
});

describe("a failure whose history create was throttled, replaced after its retry's outcome (rule 8)", () => {
  test('the replacement creates the history entry but is still asked: refused superseded-by-retry, the row stays Completed', async () => {
    // The failure E's history create answers 429: nothing of E is stored and its same-id replacement waits (the
    // retry-after) while the session moves on to the retry policy's RetryRequest Y (naming the same delivery) and
    // the retry's success. The replacement then creates E's history entry itself; on the code before, that skipped
    // rule 8's history question (a "first arrival") and E turned the row Failed for good.
    const ep = uniq('crm');
    const ev = uniq('e');
    const request = await h.send({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop', body: orderBody({ orderId: 't' }) });
    await h.settledOk(request.messageId);
    // The replacement waits the retry-after: long enough for the retry and its success to be recorded first on a
    // loaded machine (2 s was a thin margin for two sends and their records).
    proxy.inject({ status: 429, retryAfterMs: 8000, times: 1, match: (r) => isWrite(r) && r.path.includes('/colls/history/') });
    const failure = await h.send({ type: T.ErrorResponse, eventId: ev, from: ep, parentMessageId: request.messageId, body: errorBody('boom') });
    await h.settledOf(failure.messageId, 1);
    proxy.clear();
    assert.deepEqual(kinds(failure.messageId), ['reschedule']);
    const retry = await h.send({ type: T.RetryRequest, eventId: ev, to: ep, from: 'shop', parentMessageId: request.messageId, props: { [Prop.RetryCount]: 1 } });
    const success = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep, parentMessageId: retry.messageId });
    await h.settledOk(success.messageId);
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
    assert.deepEqual(kinds(failure.messageId), ['reschedule'], 'the replacement comes after the success (else the test proves nothing)');

    const [, replaced] = await h.settledOf(failure.messageId, 2, 40_000);
    assert.equal(replaced!.settlement.kind, 'complete');
    const history = (await h.store.listHistory(ev)).items.filter((e) => e.messageId === failure.messageId);
    assert.equal(history.length, 1, 'the replacement created the history entry');
    const row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.deepEqual([row?.status, row?.lastMessageId], ['Completed', success.messageId]);
    const comments = (await h.store.listAudits(ev)).items.filter((a) => a.type === 'Comment').map((a) => a.comment);
    assert.deepEqual(comments, [`Ignored stale ErrorResponse ${failure.messageId}: the row already holds a later outcome (superseded-by-retry).`]);
  });
});

describe('when the replacement cannot be scheduled', () => {
  test('the original is left to redeliver (not completed), and is recorded once the store recovers', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const admin = h.clients.admin;
    const setStatus = async (status: 'Active' | 'SendDisabled') => {
      const topic = await admin.getTopic('Resolver');
      await admin.updateTopic({ ...topic, status });
    };
    // With no Resolver running, the message is queued, the store throttles and the topic refuses sends (and so the
    // scheduled replacement) while the subscription still delivers; then a Resolver starts.
    for (const r of h.resolvers.splice(0)) await r.stop();
    const sent = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep });
    proxy.inject({ status: 429, retryAfterMs: 1, match: (r) => isWrite(r) && r.path.includes('/colls/events/') });
    await setStatus('SendDisabled');
    h.resolver();
    try {
      await h.settledOf(sent.messageId, 1);
    } finally {
      await setStatus('Active');
      proxy.clear();
    }
    await h.settledOf(sent.messageId, 2);
    const [first, second] = h.settled.filter((s) => s.messageId === sent.messageId);
    assert.equal(first!.settlement.kind, 'reschedule', 'a replacement was attempted');
    assert.equal(second!.deliveryCount, 1, 'the original came back from the broker: it had not been completed');
    assert.equal(second!.settlement.kind === 'complete' && second!.settlement.result, 'written');
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
  });
});

describe('one budget for reschedules and broker deliveries', () => {
  test('ThrottleRetryCount 8 + a redelivery: the 429 on that second delivery is attempt 10 and dead-letters', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    // Twice: the first try and the retry in place once the store's probe answers (a write that keeps failing).
    proxy.inject({ status: 503, times: 2, match: (r) => isWrite(r) && r.path.includes('/colls/events/') });
    const sent = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep, props: { [Prop.ThrottleRetryCount]: 8 } });
    try {
      await h.settledOf(sent.messageId, 1);
      proxy.inject({ status: 429, match: (r) => isWrite(r) && r.path.includes('/colls/events/') });
      await h.settledOf(sent.messageId, 2);
    } finally {
      proxy.clear();
    }
    const [first, second] = h.settled.filter((s) => s.messageId === sent.messageId);
    assert.equal(first!.settlement.kind, 'redeliver');
    assert.equal(first!.settlement.kind === 'redeliver' && first!.settlement.attempt, 9);
    assert.equal(second!.deliveryCount, 1);
    assert.equal(second!.settlement.kind === 'deadLetter' && second!.settlement.reason, DeadLetterReason.CosmosDbThrottled);
    const dead = await eventually(async () => {
      const d = await h.deadLetters(5, 500);
      return d.length > 0 ? d : undefined;
    }, 'the dead letter');
    assert.deepEqual(dead.map((d) => d.messageId), [sent.messageId]);
  });
});

describe('other transient store errors', () => {
  test('a 503 blip: the store answers its probe, the write is retried in place and recorded on the first delivery', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    proxy.inject({ status: 503, times: 1, match: (r) => isWrite(r) && r.path.includes('/colls/events/') });
    const inPlaceBefore = h.metrics.counts('nimbus.resolver.store_retry', { 'nimbus.retry.action': 'retried_in_place' });
    const sent = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep });
    await h.settledOf(sent.messageId, 1);
    proxy.clear();
    assert.deepEqual(kinds(sent.messageId), ['written']);
    assert.deepEqual(h.settled.filter((s) => s.messageId === sent.messageId).map((s) => s.deliveryCount), [0], 'no delivery spent');
    assert.equal(h.metrics.counts('nimbus.resolver.store_retry', { 'nimbus.retry.action': 'retried_in_place' }) - inPlaceBefore, 1);
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
  });

  test('a write that keeps failing while the store answers is left to the broker: abandoned, redelivered with a higher DeliveryCount, then recorded', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    // The first try and the retry in place fail; the store's probe (another container) answers.
    proxy.inject({ status: 503, times: 2, match: (r) => isWrite(r) && r.path.includes('/colls/events/') });
    const abandonedBefore = h.metrics.counts('nimbus.resolver.store_retry', { 'nimbus.retry.action': 'abandoned' });
    const sent = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep });
    await h.settledOf(sent.messageId, 2);
    proxy.clear();
    assert.deepEqual(kinds(sent.messageId), ['redeliver', 'written']);
    assert.deepEqual(h.settled.filter((s) => s.messageId === sent.messageId).map((s) => s.deliveryCount), [0, 1]);
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
    assert.equal(h.metrics.counts('nimbus.resolver.store_retry', { 'nimbus.retry.action': 'abandoned' }) - abandonedBefore, 1);
  });
});
