// The Resolver's stored time series (issue 16): each applied outcome lands in its endpoint's and event type's
// minute bucket once (a redelivered copy the guard ignores is not counted again), with its handling latency in the
// histogram; the series are read back through the same store API the console's /api/metrics uses, and a fresh
// TimeSeriesStore (a restarted console) reads what was stored. Real emulator and embedded Cosmos.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, Prop } from '@nimbus/sdk/contract';
import { LATENCY_BOUNDS_MS, quantileOf, TimeSeriesStore, type Series } from '../lib/store/index.ts';
import { createOutcomeRecorder, handlingLatencyMs, outcomeCountOf } from './outcomeMetrics.ts';
import { errorBody, ResolverHarness } from './testHarness.ts';

let h: ResolverHarness;
before(async () => {
  h = await ResolverHarness.start();
  h.resolver({ history: { flushMs: 100 } });
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const total = (s: Series[], name: string) => s.find((x) => x.name === name)!.points.reduce((a, [, v]) => a + (v ?? 0), 0);

describe('pure parts', () => {
  test('the count of a written row, and the latency read from a response', () => {
    assert.equal(outcomeCountOf(T.ResolutionResponse, 'Completed'), 'handled');
    assert.equal(outcomeCountOf(T.ErrorResponse, 'Failed'), 'failed');
    assert.equal(outcomeCountOf(T.ErrorResponse, 'DeadLettered'), 'deadLettered');
    assert.equal(outcomeCountOf(T.ResubmissionRequest, 'Pending'), 'resubmitted');
    assert.equal(outcomeCountOf(T.EventRequest, 'Pending'), undefined);
    assert.equal(outcomeCountOf(T.DeferralResponse, 'Deferred'), undefined);
    const m = { messageId: 'm', messageType: T.ResolutionResponse, eventTypeId: 'x', enqueuedAt: '2026-01-01T00:00:10.000Z', queueTimeMs: 2000, processingTimeMs: 3000 };
    assert.equal(handlingLatencyMs(m, new Date('2026-01-01T00:00:11.000Z')), 6000);
    assert.equal(handlingLatencyMs({ ...m, queueTimeMs: undefined }, new Date()), undefined);
  });

  test('a response is counted when first applied; a copy applied again over its own version or a later message\'s is not', () => {
    const added: string[] = [];
    const recorder = createOutcomeRecorder({ add: (p) => void added.push(p.count) }, () => new Date());
    const x = { messageId: 'x', messageType: T.ResolutionResponse, eventTypeId: 'E', enqueuedAt: new Date().toISOString(), queueTimeMs: undefined, processingTimeMs: undefined };
    const completed = { status: 'Completed' as const, eventTypeId: 'E' };
    // A throttled write: its history landed on the first attempt, its row write only on the replacement's.
    recorder.applied(x, 'ep', { row: completed, previousMessageIds: ['req'] });
    assert.deepEqual(added, ['handled'], 'first applied: counted');
    recorder.applied(x, 'ep', { row: completed, previousMessageIds: ['x', 'req'] });
    recorder.applied(x, 'ep', { row: completed, previousMessageIds: ['y', 'x', 'req'] });
    assert.deepEqual(added, ['handled'], 'over its own version, and over a message after it: not again');
    recorder.historyCreated(x, 'ep');
    assert.deepEqual(added, ['handled'], 'its history entry does not count it');
  });

  test('a failure and a console command are counted by the call that creates their history entry, never by their row write', () => {
    const added: string[] = [];
    const recorder = createOutcomeRecorder({ add: (p) => void added.push(p.count) }, () => new Date());
    const base = { eventTypeId: 'E', enqueuedAt: new Date().toISOString(), queueTimeMs: undefined, processingTimeMs: undefined };
    const failure = { ...base, messageId: 'x', messageType: T.ErrorResponse };
    // Its history created by a call whose row write then applied, was refused (rule 8) or failed: counted there, once.
    recorder.historyCreated(failure, 'ep');
    assert.deepEqual(added, ['failed']);
    // The row write applied (first, or a replacement after a failed attempt, or a copy): not counted by it.
    recorder.applied(failure, 'ep', { row: { status: 'Failed', eventTypeId: 'E' }, previousMessageIds: ['req'] });
    assert.deepEqual(added, ['failed'], 'the applied write adds none');
    // A dead-lettering ErrorResponse is a final answer the guard never refuses: counted when applied, as before.
    recorder.historyCreated({ ...failure, messageId: 'd', deadLetterErrorDescription: 'poison' }, 'ep');
    assert.deepEqual(added, ['failed']);
    recorder.applied({ ...failure, messageId: 'd' }, 'ep', { row: { status: 'DeadLettered', eventTypeId: 'E' }, previousMessageIds: ['req'] });
    assert.deepEqual(added, ['failed', 'deadLettered']);
    // A resubmit: by its history entry; its write over the claim or another version adds none.
    const cmd = { ...base, messageId: 'cmd', messageType: T.ResubmissionRequest };
    recorder.historyCreated(cmd, 'ep');
    recorder.applied(cmd, 'ep', { row: { status: 'Pending', eventTypeId: 'E' }, previousMessageIds: ['x'] });
    assert.deepEqual(added, ['failed', 'deadLettered', 'resubmitted']);
    // A skip command has no count of its own (the row is Pending until the subscriber's SkipResponse, counted then).
    recorder.historyCreated({ ...cmd, messageId: 'skip', messageType: T.SkipRequest }, 'ep');
    // A request copy: no count either way.
    recorder.historyCreated({ ...cmd, messageId: 'req', messageType: T.EventRequest }, 'ep');
    assert.deepEqual(added, ['failed', 'deadLettered', 'resubmitted']);
  });

  test('percentiles from the histogram land in the right bin', () => {
    const hist = new Array(LATENCY_BOUNDS_MS.length + 1).fill(0);
    hist[3] = 90; // 50..100 ms
    hist[7] = 10; // 1000..2500 ms
    const p50 = quantileOf(hist, 0.5)!;
    const p99 = quantileOf(hist, 0.99)!;
    assert.ok(p50 > 50 && p50 <= 100, `p50 ${p50}`);
    assert.ok(p99 > 1000 && p99 <= 2500, `p99 ${p99}`);
    assert.equal(quantileOf(new Array(15).fill(0), 0.5), null);
  });
});

describe('recorded by the Resolver', () => {
  test('handled and failed outcomes are counted once per event, with latency, and survive a new reader', async () => {
    const ep = uniq('crm');
    const started = Date.now();
    const events: string[] = [];
    for (let i = 0; i < 3; i++) {
      const ev = uniq('e');
      events.push(ev);
      const sessionId = uniq('s');
      const req = await h.send({ type: T.EventRequest, eventId: ev, sessionId, to: ep, from: 'shop', eventTypeId: 'OrderPlaced' });
      await h.settledOk(req.messageId);
      const isFailure = i === 2;
      const res = await h.send({
        type: isFailure ? T.ErrorResponse : T.ResolutionResponse,
        eventId: ev,
        sessionId,
        from: ep,
        to: 'Resolver',
        parentMessageId: req.messageId,
        eventTypeId: 'OrderPlaced',
        ...(isFailure ? { body: errorBody('boom') } : {}),
        props: { [Prop.QueueTimeMs]: 40, [Prop.ProcessingTimeMs]: 30 },
      });
      await h.settledOk(res.messageId);
      // The same response again (a redelivery or a duplicate send): the guard ignores it; not counted again.
      if (i === 0) {
        const dup = await h.send({
          type: T.ResolutionResponse,
          messageId: res.messageId,
          eventId: ev,
          sessionId,
          from: ep,
          to: 'Resolver',
          parentMessageId: req.messageId,
        });
        await h.settledOf(dup.messageId, 2);
      }
    }
    const reader = new TimeSeriesStore(h.store.database);
    const q = { from: started - 60_000, to: Date.now() + 60_000, bucketMs: 60_000, endpointId: ep };
    let series: Series[] = [];
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      series = await reader.query(q);
      if (total(series, 'handled') >= 2 && total(series, 'failed') >= 1) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(total(series, 'handled'), 2, 'two handled, the duplicate not counted');
    assert.equal(total(series, 'failed'), 1);
    assert.equal(total(series, 'deadLettered'), 0);
    const p50 = series.find((s) => s.name === 'latencyP50')!.points.filter(([, v]) => v !== null);
    assert.ok(p50.length >= 1, 'a latency percentile where outcomes were recorded');
    assert.ok(p50.every(([, v]) => v! >= 70), 'latency includes the queue and processing times the responses carry');
    // By event type, and a type nobody sent.
    assert.equal(total(await reader.query({ ...q, eventTypeId: 'OrderPlaced' }), 'handled'), 2);
    assert.equal(total(await reader.query({ ...q, eventTypeId: 'NoSuchType' }), 'handled'), 0);
    // Platform-wide and restricted to a list of endpoints.
    assert.ok(total(await reader.query({ ...q, endpointId: undefined }), 'handled') >= 2);
    assert.equal(total(await reader.query({ from: q.from, to: q.to, bucketMs: 60_000, endpointIds: ['someone-else'] }), 'handled'), 0);
    assert.equal(total(await reader.query({ from: q.from, to: q.to, bucketMs: 60_000, endpointIds: [ep] }), 'handled'), 2);
  });
});

describe('retention', () => {
  test('minute buckets older than the roll-up age become hour buckets with the same sums; past the keep age they go', async () => {
    const now = Date.parse('2026-03-10T12:00:00.000Z');
    const ep = uniq('roll');
    const writer = new TimeSeriesStore(h.store.database, { flushMs: 60_000, now: () => now });
    const threeDaysAgo = Date.parse('2026-03-07T08:00:00.000Z');
    for (let i = 0; i < 5; i++) writer.add({ endpointId: ep, eventTypeId: 'T', at: new Date(threeDaysAgo + i * 60_000), count: 'failed', latencyMs: 200 });
    writer.add({ endpointId: ep, eventTypeId: 'T', at: new Date(now - 60_000), count: 'handled', latencyMs: 20 });
    writer.add({ endpointId: ep, eventTypeId: 'T', at: new Date(now - 40 * 86_400_000), count: 'handled' });
    await writer.flush();
    const q = { from: now - 31 * 86_400_000, to: now, bucketMs: 3_600_000, endpointId: ep };
    const before = await writer.query(q);
    const result = await writer.maintain();
    assert.ok(result.rolledUp >= 5, JSON.stringify(result));
    const after = await writer.query(q);
    assert.equal(total(after, 'failed'), 5, 'the rolled-up hour keeps the sum');
    assert.equal(total(after, 'failed'), total(before, 'failed'));
    assert.equal(total(after, 'handled'), 1, 'the recent minute stays; the 40-day-old one is gone');
    const c = await writer.container();
    const { resources } = await c.items
      .query<{ res: string }>({ query: 'SELECT c.res FROM c WHERE c.endpointId = @e', parameters: [{ name: '@e', value: ep }] })
      .fetchAll();
    assert.deepEqual(resources.map((r) => r.res).sort(), ['c', 'f']);
  });
});
