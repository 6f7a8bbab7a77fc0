// A console resubmit is counted once in the Resolver's stored time series (`resubmitted`), across a redelivery whose
// first attempt recorded the history entry but failed at the row write: the real Service Bus client on the embedded
// broker, the real Cosmos client on the embedded server behind a fault proxy that fails the row writes (503).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Address, MessageType as T } from '@nimbus/sdk/contract';
import type { FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { TimeSeriesStore, type Series } from '../lib/store/index.ts';
import { ResolverHarness, errorBody, eventually } from './testHarness.ts';

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

test('a resubmit whose row write failed after its history landed is counted once, on the redelivery', async () => {
  const started = Date.now();
  const ep = uniq('crm');
  const ev = uniq('e');
  const req = await h.send({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop' });
  await h.settledOk(req.messageId);
  const err = await h.send({ type: T.ErrorResponse, eventId: ev, from: ep, to: Address.Resolver, parentMessageId: req.messageId, body: errorBody('boom') });
  await h.settledOk(err.messageId);
  // The Manager's claim: the row, conditionally, under the command's own id, before the command is sent.
  const cmd = uniq('cmd');
  const claim = await h.store.writeStatus(
    { endpointId: ep, eventId: ev, sessionId: 's-1', messageId: cmd, messageType: T.ResubmissionRequest, eventTypeId: 'OrderPlaced', parentMessageId: err.messageId, from: Address.Manager, to: ep, enqueuedAt: new Date().toISOString() },
    { lastMessageId: err.messageId, status: 'Failed', claim: true },
  );
  assert.equal(claim.outcome, 'written');
  // The command's first delivery: its history entry lands (another container), its row write fails, also when
  // retried in place; the store's probe answers, so the message is left to the broker and comes back.
  proxy.inject({ status: 503, times: 2, match: (r) => (r.method === 'PUT' || r.method === 'POST') && r.path.includes('/colls/events/') });
  const sent = await h.send({ type: T.ResubmissionRequest, messageId: cmd, eventId: ev, from: Address.Manager, to: ep, parentMessageId: err.messageId });
  await h.settledOf(cmd, 2);
  proxy.clear();
  const kinds = h.settled.filter((s) => s.messageId === sent.messageId).map((s) => (s.settlement.kind === 'complete' ? s.settlement.result : s.settlement.kind));
  assert.deepEqual(kinds, ['redeliver', 'written']);
  // A copy of it after its record (a settlement lost): the row write applies again over its own record, not counted.
  await h.send({ type: T.ResubmissionRequest, messageId: cmd, eventId: ev, from: Address.Manager, to: ep, parentMessageId: err.messageId });
  await h.settledOf(cmd, 3);

  // A marker after it: another event of the endpoint handled. The series is added to in order and flushed every
  // 100 ms, so once the marker is stored, whatever the command and its copy added is stored too.
  const ev2 = uniq('e');
  const req2 = await h.send({ type: T.EventRequest, eventId: ev2, sessionId: 's-2', to: ep, from: 'shop' });
  await h.settledOk(req2.messageId);
  const done = await h.send({ type: T.ResolutionResponse, eventId: ev2, sessionId: 's-2', from: ep, to: Address.Resolver, parentMessageId: req2.messageId });
  await h.settledOk(done.messageId);
  const reader = new TimeSeriesStore(h.store.database);
  const q = { from: started - 60_000, to: Date.now() + 60_000, bucketMs: 60_000, endpointId: ep };
  const again = await eventually(async () => {
    const s = await reader.query(q);
    return total(s, 'handled') >= 1 ? s : undefined;
  }, 'the marker in the stored series', 20_000);
  assert.equal(total(again, 'resubmitted'), 1, 'counted once: not lost with the failed attempt, not again for the copy');
});
