// Messages about one status row that arrive in one receive (a backlog: a request copy and its response, with
// other events' messages between them) are recorded together: one history batch and one row write per row,
// counted at the wire by a proxy in front of the embedded Cosmos server. A group whose write fails falls back to
// one message at a time, and when a session ends early the members already recorded ahead of their turn are
// completed, not redelivered.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import type { FaultProxy, ProxiedRequest } from '../lib/store/testing/faultProxy.ts';
import { ResolverHarness, errorBody, eventually, orderBody } from './testHarness.ts';

let h: ResolverHarness;
let proxy: FaultProxy;
before(async () => {
  ({ harness: h, proxy } = await ResolverHarness.startBehindProxy());
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const kinds = (messageId: string) =>
  h.settled.filter((s) => s.messageId === messageId).map((s) => (s.settlement.kind === 'complete' ? s.settlement.result : s.settlement.kind));
const isDocWrite = (r: ProxiedRequest, container: string) =>
  (r.method === 'POST' || r.method === 'PUT') && r.path.includes(`/colls/${container}/docs`);

/** The messages are all on the topic before a Resolver starts, so they arrive in one receive; it stops after. */
async function resolveBacklog(...messageIds: string[]): Promise<void> {
  const resolver = h.resolver();
  try {
    for (const id of messageIds)
      await eventually(() => h.settled.find((s) => s.messageId === id && s.ok && s.settlement.kind === 'complete'), `${id} recorded`);
  } finally {
    await resolver.stop();
  }
}

describe('messages about one row in one receive', () => {
  test('two events interleaved (request, request, response, response): per event one history batch and one row write', async () => {
    const crm = uniq('crm');
    const sessionId = uniq('s');
    const [e1, e2] = [uniq('e'), uniq('e')];
    const req1 = await h.send({ type: T.EventRequest, eventId: e1, sessionId, to: crm, from: 'shop', body: orderBody({ orderId: 'g1' }) });
    const req2 = await h.send({ type: T.EventRequest, eventId: e2, sessionId, to: crm, from: 'shop', body: orderBody({ orderId: 'g1' }) });
    const res1 = await h.send({ type: T.ResolutionResponse, eventId: e1, sessionId, from: crm, parentMessageId: req1.messageId });
    const res2 = await h.send({ type: T.ErrorResponse, eventId: e2, sessionId, from: crm, parentMessageId: req2.messageId, body: errorBody('boom') });
    const mark = proxy.seen.length;
    await resolveBacklog(req1.messageId, req2.messageId, res1.messageId, res2.messageId);

    const requests = proxy.seen.slice(mark);
    assert.equal(requests.filter((r) => isDocWrite(r, 'history') && r.batch).length, 2, 'one history batch per event');
    assert.equal(requests.filter((r) => isDocWrite(r, 'history') && !r.batch).length, 0, 'no single history writes');
    assert.equal(requests.filter((r) => isDocWrite(r, 'events')).length, 2, 'one row write per event');
    for (const m of [req1, req2, res1, res2]) assert.deepEqual(kinds(m.messageId), ['written']);

    const row1 = await h.store.getStatusRow(crm, e1, sessionId);
    assert.equal(row1?.status, 'Completed');
    assert.equal(row1?.requestMessageId, req1.messageId);
    assert.deepEqual(row1?.payload, { orderId: 'g1' });
    const row2 = await h.store.getStatusRow(crm, e2, sessionId);
    assert.equal(row2?.status, 'Failed');
    assert.equal(row2?.errorText, 'boom');
    for (const [ev, ids] of [[e1, [req1, res1]], [e2, [req2, res2]]] as const) {
      const history = await h.store.listHistory(ev);
      assert.deepEqual(history.items.map((e) => e.messageId).sort(), ids.map((m) => m.messageId).sort());
    }
    const counts = await h.store.getCounts(crm);
    assert.equal(counts.completed, 1);
    assert.equal(counts.failed, 1);
    assert.equal(counts.pending, 0, 'the intermediate Pending is never counted');
  });

  test('a throttled history batch falls back to one entry at a time, with no budget spent', async () => {
    const crm = uniq('crm');
    const ev = uniq('e');
    const sessionId = uniq('s');
    const request = await h.send({ type: T.EventRequest, eventId: ev, sessionId, to: crm, from: 'shop', body: orderBody({ orderId: 'g2' }) });
    const response = await h.send({ type: T.ResolutionResponse, eventId: ev, sessionId, from: crm, parentMessageId: request.messageId });
    const injected = proxy.injected;
    proxy.inject({ status: 429, retryAfterMs: 10, times: 1, match: (r) => r.batch });
    try {
      await resolveBacklog(request.messageId, response.messageId);
    } finally {
      proxy.clear();
    }
    assert.equal(proxy.injected, injected + 1, 'the batch was refused once');
    assert.deepEqual(kinds(request.messageId), ['written']);
    assert.deepEqual(kinds(response.messageId), ['written']);
    assert.equal((await h.store.getStatusRow(crm, ev, sessionId))?.status, 'Completed');
    assert.equal((await h.store.listHistory(ev)).items.length, 2);
  });

  test('a session released early completes the messages its groups already recorded instead of redelivering them', async () => {
    const crm = uniq('crm');
    const first = uniq('e1');
    const second = uniq('e2');
    const sessionId = uniq('s');
    // e1's request and response form a group around e2's request; e2's history write fails (503) on its first try
    // and on its retry in place (the store's probe answers: not an outage), which leaves e2 for redelivery and
    // releases the session after e1's group has recorded its response.
    const r1 = await h.send({ type: T.EventRequest, eventId: first, sessionId, to: crm, from: 'shop', body: orderBody({ orderId: 'g3' }) });
    const r2 = await h.send({ type: T.EventRequest, eventId: second, sessionId, to: crm, from: 'shop', body: orderBody({ orderId: 'g3' }) });
    const done1 = await h.send({ type: T.ResolutionResponse, eventId: first, sessionId, from: crm, parentMessageId: r1.messageId });
    proxy.inject({ status: 503, times: 2, match: (r) => isDocWrite(r, 'history') && !r.batch });
    try {
      await resolveBacklog(r1.messageId, done1.messageId, r2.messageId);
    } finally {
      proxy.clear();
    }
    assert.deepEqual(kinds(r1.messageId), ['written']);
    assert.deepEqual(kinds(done1.messageId), ['written'], 'completed with the rest, not delivered again');
    assert.deepEqual(kinds(r2.messageId), ['redeliver', 'written']);
    const settledDone = h.settled.filter((s) => s.messageId === done1.messageId);
    assert.ok(settledDone.every((s) => s.ok));
    assert.deepEqual(settledDone.map((s) => s.deliveryCount), [0], 'settled on its first delivery');
    assert.equal((await h.store.getStatusRow(crm, first, sessionId))?.status, 'Completed');
    assert.equal((await h.store.getStatusRow(crm, second, sessionId))?.status, 'Pending');
  });
});
