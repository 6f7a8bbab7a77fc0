// A console resubmit, and a failure, are counted once in the Resolver's stored time series, across a redelivery or a
// replacement whose first attempt recorded the history entry but failed at the row write - also when the guard then
// refuses the replacement (rule 8 for a failure its own retry superseded, rule 2 for a command whose answer landed
// first): the real Service Bus client on the embedded broker, the real Cosmos client on the embedded server behind a
// fault proxy that fails the row writes (503, 429).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Address, MessageType as T, Prop } from '@nimbus/sdk/contract';
import type { FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { TimeSeriesStore, type Series } from '../lib/store/index.ts';
import { ResolverHarness, errorBody, eventually, type Sent } from './testHarness.ts';

let h: ResolverHarness;
let proxy: FaultProxy;
before(async () => {
  ({ harness: h, proxy } = await ResolverHarness.startBehindProxy());
  h.resolver({ history: { flushMs: 100 } });
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const total = (s: Series[], name: string) => s.find((x) => x.name === name)!.points.reduce((a, [, v]) => a + (v ?? 0), 0);
const isRowWrite = (r: { method: string; path: string }) => (r.method === 'PUT' || r.method === 'POST') && r.path.includes('/colls/events/');
const kinds = (messageId: string) =>
  h.settled.filter((s) => s.messageId === messageId).map((s) => (s.settlement.kind === 'complete' ? s.settlement.result : s.settlement.kind));

/**
 * An event of `ep` failed (`error`), then the Manager's claim of a resubmit on its row: the row, conditionally, under
 * the command's own id, written before the command is sent.
 */
async function failedThenClaimed(ep: string, ev: string, error: string): Promise<{ err: Sent; cmd: string }> {
  const req = await h.send({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop' });
  await h.settledOk(req.messageId);
  const err = await h.send({ type: T.ErrorResponse, eventId: ev, from: ep, to: Address.Resolver, parentMessageId: req.messageId, body: errorBody(error) });
  await h.settledOk(err.messageId);
  const cmd = uniq('cmd');
  const claim = await h.store.writeStatus(
    { endpointId: ep, eventId: ev, sessionId: 's-1', messageId: cmd, messageType: T.ResubmissionRequest, eventTypeId: 'OrderPlaced', parentMessageId: err.messageId, from: Address.Manager, to: ep, enqueuedAt: new Date().toISOString() },
    { lastMessageId: err.messageId, status: 'Failed', claim: true },
  );
  assert.equal(claim.outcome, 'written');
  return { err, cmd };
}

/**
 * The endpoint's stored series once a marker after everything above is counted: another event handled. The series is
 * added to in order and flushed every 100 ms, so once the marker is stored, whatever came before it is stored too.
 */
async function seriesAfterMarker(ep: string, started: number, handledBefore: number): Promise<Series[]> {
  const ev = uniq('marker');
  const req = await h.send({ type: T.EventRequest, eventId: ev, sessionId: uniq('s'), to: ep, from: 'shop' });
  await h.settledOk(req.messageId);
  const done = await h.send({ type: T.ResolutionResponse, eventId: ev, sessionId: req.sessionId, from: ep, to: Address.Resolver, parentMessageId: req.messageId });
  await h.settledOk(done.messageId);
  const reader = new TimeSeriesStore(h.store.database);
  const q = { from: started - 60_000, to: Date.now() + 60_000, bucketMs: 60_000, endpointId: ep };
  return eventually(async () => {
    const s = await reader.query(q);
    return total(s, 'handled') >= handledBefore + 1 ? s : undefined;
  }, 'the marker in the stored series', 20_000);
}

test('a resubmit whose row write failed after its history landed is counted once, on the redelivery', async () => {
  const started = Date.now();
  const ep = uniq('crm');
  const ev = uniq('e');
  const { err, cmd } = await failedThenClaimed(ep, ev, 'boom');
  // The command's first delivery: its history entry lands (another container), its row write fails, also when
  // retried in place; the store's probe answers, so the message is left to the broker and comes back.
  proxy.inject({ status: 503, times: 2, match: isRowWrite });
  const sent = await h.send({ type: T.ResubmissionRequest, messageId: cmd, eventId: ev, from: Address.Manager, to: ep, parentMessageId: err.messageId });
  await h.settledOf(cmd, 2);
  proxy.clear();
  assert.deepEqual(kinds(sent.messageId), ['redeliver', 'written']);
  // A copy of it after its record (a settlement lost): the row write applies again over its own record, not counted.
  await h.send({ type: T.ResubmissionRequest, messageId: cmd, eventId: ev, from: Address.Manager, to: ep, parentMessageId: err.messageId });
  await h.settledOf(cmd, 3);

  // A marker after it: once it is stored, whatever the command and its copy added is stored too.
  const again = await seriesAfterMarker(ep, started, 0);
  assert.equal(total(again, 'resubmitted'), 1, 'counted once: not lost with the failed attempt, not again for the copy');
});

test('a failure whose row write failed after its history landed, refused on its replacement by rule 8, is counted once', async () => {
  // E's history lands and its row write answers 429: its same-id replacement waits the retry-after while the retry
  // policy's RetryRequest (naming the same delivery) and the retry's success are recorded; the replacement is then
  // refused superseded-by-retry. On the code before, nothing counted E: its first attempt failed at the row and the
  // replacement was refused (failed 0). Then a copy of the replacement: refused again, not counted again.
  const started = Date.now();
  const ep = uniq('crm');
  const ev = uniq('e');
  const req = await h.send({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop' });
  await h.settledOk(req.messageId);
  proxy.inject({ status: 429, retryAfterMs: 8000, times: 1, match: isRowWrite });
  const failure = await h.send({ type: T.ErrorResponse, eventId: ev, from: ep, to: Address.Resolver, parentMessageId: req.messageId, body: errorBody('boom') });
  await h.settledOf(failure.messageId, 1);
  proxy.clear();
  assert.deepEqual(kinds(failure.messageId), ['reschedule']);
  const retry = await h.send({ type: T.RetryRequest, eventId: ev, to: ep, from: 'shop', parentMessageId: req.messageId, props: { [Prop.RetryCount]: 1 } });
  const success = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep, to: Address.Resolver, parentMessageId: retry.messageId });
  await h.settledOk(success.messageId);
  assert.deepEqual(kinds(failure.messageId), ['reschedule'], 'the replacement comes after the success (else the test proves nothing)');
  await h.settledOf(failure.messageId, 2, 40_000);
  assert.deepEqual(kinds(failure.messageId), ['reschedule', 'ignored'], 'refused superseded-by-retry');
  const enqueuedAt = (await h.store.listHistory(ev)).items.find((e) => e.messageId === failure.messageId)!.enqueuedAt;
  await h.send({
    type: T.ErrorResponse,
    messageId: failure.messageId,
    eventId: ev,
    from: ep,
    to: Address.Resolver,
    parentMessageId: req.messageId,
    body: errorBody('boom'),
    props: { [Prop.ThrottleRetryCount]: 1, [Prop.OriginalEnqueuedTimeUtc]: enqueuedAt },
  });
  await h.settledOf(failure.messageId, 3);
  assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
  const series = await seriesAfterMarker(ep, started, 1);
  assert.equal(total(series, 'failed'), 1, 'the failure happened: counted once (0 before), its copy adds none');
  assert.equal(total(series, 'handled'), 2, "the retry's success and the marker");
});

test("a resubmit whose row write failed after its history landed, refused on its replacement because its answer landed first, is counted once", async () => {
  // The Manager claims the row under the command's id; the command's history lands and its row write answers 429;
  // the subscriber's answer to the command lands over the claim while the replacement waits; the replacement is
  // then refused already-answered (rule 2). On the code before, the resubmit was never counted (resubmitted 0).
  const started = Date.now();
  const ep = uniq('crm');
  const ev = uniq('e');
  const { err, cmd } = await failedThenClaimed(ep, ev, 'final');
  proxy.inject({ status: 429, retryAfterMs: 8000, times: 1, match: isRowWrite });
  await h.send({ type: T.ResubmissionRequest, messageId: cmd, eventId: ev, from: Address.Manager, to: ep, parentMessageId: err.messageId });
  await h.settledOf(cmd, 1);
  proxy.clear();
  assert.deepEqual(kinds(cmd), ['reschedule']);
  const answer = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep, to: Address.Resolver, parentMessageId: cmd });
  await h.settledOk(answer.messageId);
  assert.deepEqual(kinds(cmd), ['reschedule'], 'the replacement comes after the answer (else the test proves nothing)');
  await h.settledOf(cmd, 2, 40_000);
  assert.deepEqual(kinds(cmd), ['reschedule', 'ignored'], 'refused already-answered');
  assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
  const series = await seriesAfterMarker(ep, started, 1);
  assert.equal(total(series, 'resubmitted'), 1, 'counted once (0 before)');
  assert.equal(total(series, 'failed'), 1);
});

test('a failure whose history create landed but whose answer was lost is counted once, on its retry; a copy adds none', async () => {
  // The history create of E reaches the server and is applied, but the store is answered 503 instead (the fault
  // proxy's afterForward: a reply lost): the call fails, and E's retry (the SDK's, or the redelivery) meets its own
  // entry with a 409. On the code before, that retry reported the entry as already recorded, so no call counted the
  // failure (failed 0). Then a copy of E: a genuine duplicate, refused by the guard and not counted again.
  const started = Date.now();
  const ep = uniq('crm');
  const ev = uniq('e');
  const req = await h.send({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop' });
  await h.settledOk(req.messageId);
  const isHistoryCreate = (r: { method: string; path: string; query: boolean }) => r.method === 'POST' && r.path.includes('/colls/history/') && !r.query;
  const injectedBefore = proxy.injected;
  proxy.inject({ status: 503, afterForward: true, times: 1, match: isHistoryCreate });
  const failure = await h.send({ type: T.ErrorResponse, eventId: ev, from: ep, to: Address.Resolver, parentMessageId: req.messageId, body: errorBody('boom') });
  await eventually(() => (kinds(failure.messageId).includes('written') ? true : undefined), 'the failure written', 40_000);
  assert.equal(proxy.injected - injectedBefore, 1, 'the answer of the create was lost');
  proxy.clear();
  assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Failed');
  const before = kinds(failure.messageId).length;
  await h.send({ type: T.ErrorResponse, messageId: failure.messageId, eventId: ev, from: ep, to: Address.Resolver, parentMessageId: req.messageId, body: errorBody('boom') });
  await h.settledOf(failure.messageId, before + 1);
  const series = await seriesAfterMarker(ep, started, 0);
  assert.equal(total(series, 'failed'), 1, 'counted once: not lost with the answer (0 before), not again for the copy');
});
