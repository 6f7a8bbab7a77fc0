// A receive of many messages of one session is resolved as a batch (BatchResolution): every row's store work starts
// together and each message takes its result in its turn. These tests hold the batch to what one-at-a-time
// processing does: the same rows and the same guard decisions for the same messages in the same order; a failed
// row write in the middle of a batch leaves exactly that message for redelivery and the redelivered copy ends in
// the right row; copies of an already recorded batch (a crash after the writes, before the settlements) change
// nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, Prop } from '@nimbus/sdk/contract';
import { statusRowId } from '../lib/store/ids.ts';
import type { StatusRow } from '../lib/store/index.ts';
import type { FaultProxy, ProxiedRequest } from '../lib/store/testing/faultProxy.ts';
import { ResolverHarness, errorBody, eventually, orderBody, type WireMessage } from './testHarness.ts';

let h: ResolverHarness;
let proxy: FaultProxy;
before(async () => {
  ({ harness: h, proxy } = await ResolverHarness.startBehindProxy());
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const results = (messageId: string) =>
  h.settled.filter((s) => s.messageId === messageId).map((s) => (s.settlement.kind === 'complete' ? s.settlement.result : s.settlement.kind));
const isDocWrite = (r: ProxiedRequest, container: string) =>
  (r.method === 'POST' || r.method === 'PUT') && r.path.includes(`/colls/${container}/docs`);

/**
 * Puts `messages` on the topic, then runs one Resolver (with `maxMessagesPerReceive`) until each has a settlement
 * that landed as 'complete', and stops it: with everything on the topic first, a receive of 50 gets the session's
 * whole backlog in one batch, a receive of 1 resolves them one at a time.
 */
async function resolveBacklog(maxMessagesPerReceive: number, messages: WireMessage[]): Promise<void> {
  for (const m of messages) await h.send(m);
  const resolver = h.resolver({ maxMessagesPerReceive });
  try {
    for (const m of messages)
      await eventually(() => h.settled.find((s) => s.messageId === m.messageId && s.ok && s.settlement.kind === 'complete'), `${m.messageId} recorded`);
  } finally {
    await resolver.stop();
  }
}

/**
 * One session's traffic about five events, interleaved as a backlog delivers it, with ids under `prefix`: a plain
 * event (A), a failure, its retry and the retry's success (B), late copies after settlement that the guard refuses
 * (C), a response overtaking its request (D), and a request alone (E).
 */
function script(prefix: string, crm: string): WireMessage[] {
  const sessionId = `${prefix}-s`;
  const id = (name: string) => `${prefix}-${name}`;
  const req = (ev: string): WireMessage => ({ type: T.EventRequest, messageId: id(`req${ev}`), eventId: id(ev), sessionId, to: crm, from: 'shop', body: orderBody({ orderId: ev }) });
  return [
    req('A'),
    req('B'),
    req('C'),
    { type: T.ResolutionResponse, messageId: id('resD'), eventId: id('D'), sessionId, from: crm, parentMessageId: id('reqD') },
    req('E'),
    { type: T.ResolutionResponse, messageId: id('resA'), eventId: id('A'), sessionId, from: crm, parentMessageId: id('reqA') },
    { type: T.ErrorResponse, messageId: id('errB'), eventId: id('B'), sessionId, from: crm, parentMessageId: id('reqB'), body: errorBody('boom') },
    { type: T.ResolutionResponse, messageId: id('resC'), eventId: id('C'), sessionId, from: crm, parentMessageId: id('reqC') },
    req('D'),
    { type: T.RetryRequest, messageId: id('retryB'), eventId: id('B'), sessionId, to: crm, from: 'Retry', parentMessageId: id('errB'), props: { [Prop.RetryCount]: 1 } },
    { type: T.DeferralResponse, messageId: id('deferC'), eventId: id('C'), sessionId, from: crm, parentMessageId: id('reqC') },
    { type: T.ResolutionResponse, messageId: id('resB'), eventId: id('B'), sessionId, from: crm, parentMessageId: id('retryB') },
    { type: T.RetryRequest, messageId: id('retryC'), eventId: id('C'), sessionId, to: crm, from: 'Retry', parentMessageId: id('resC'), props: { [Prop.RetryCount]: 1 } },
  ];
}

/** What a row says, with the run's prefix taken out of its ids (so two runs of the script compare equal). */
function shape(row: StatusRow | null, prefix: string) {
  assert.ok(row, 'the row exists');
  const strip = (v: string | null | undefined) => (v == null ? v : v.replace(prefix, '<p>'));
  return {
    status: row.status,
    subStatus: row.subStatus,
    messageType: row.messageType,
    lastMessageId: strip(row.lastMessageId),
    parentMessageId: strip(row.parentMessageId),
    requestMessageId: strip(row.requestMessageId),
    payload: row.payload,
    errorText: row.errorText,
    retryCount: row.retryCount,
  };
}

describe('a batch of one session’s messages', () => {
  test('gives the same rows and the same guard decisions as one message at a time, in the session’s order', async () => {
    const crm = uniq('crm');
    const [batched, single] = [uniq('b'), uniq('o')];
    const mark = proxy.seen.length;
    const batchScript = script(batched, crm);
    await resolveBacklog(50, batchScript);
    const wire = proxy.seen.slice(mark);
    await resolveBacklog(1, script(single, crm));

    // The batch path was taken: rows with several messages were written once for all of them.
    const written = batchScript.filter((m) => results(m.messageId!).includes('written')).length;
    assert.ok(wire.filter((r) => isDocWrite(r, 'history') && r.batch).length >= 3, 'history batches for the rows with several messages');
    assert.ok(wire.filter((r) => isDocWrite(r, 'events')).length < written, 'fewer row writes than messages written');

    // Each message got the same result both ways, and the ones the guard refuses are the expected ones.
    const outcome = (prefix: string) => script(prefix, crm).map((m): [string, string[]] => [m.messageId!.replace(prefix, '<p>'), results(m.messageId!)]);
    assert.deepEqual(outcome(batched), outcome(single));
    const refused = outcome(batched).filter(([, r]) => r.includes('ignored')).map(([id]) => id);
    assert.deepEqual(refused, ['<p>-reqD', '<p>-deferC', '<p>-retryC']);

    for (const ev of ['A', 'B', 'C', 'D', 'E']) {
      const [rowB, rowO] = await Promise.all([
        h.store.getStatusRow(crm, `${batched}-${ev}`, `${batched}-s`),
        h.store.getStatusRow(crm, `${single}-${ev}`, `${single}-s`),
      ]);
      assert.deepEqual(shape(rowB, batched), shape(rowO, single), `event ${ev}`);
    }
    const final = async (ev: string) => (await h.store.getStatusRow(crm, `${batched}-${ev}`, `${batched}-s`))?.status;
    assert.deepEqual(
      await Promise.all(['A', 'B', 'C', 'D', 'E'].map(final)),
      ['Completed', 'Completed', 'Completed', 'Completed', 'Pending'],
    );
    // The retry's audit once, the refused copies each with their comment.
    const audits = async (ev: string) => (await h.store.listAudits(`${batched}-${ev}`)).items.map((a) => a.type).sort();
    assert.deepEqual(await audits('B'), ['Retry']);
    assert.deepEqual(await audits('C'), ['Comment', 'Comment']);
    const counts = await h.store.getCounts(crm);
    assert.deepEqual(counts.buckets, (await h.store.recountEndpoint(crm)).buckets, 'the counters match a recount');
  });

  test('a row write failing mid-batch leaves that message for redelivery; its copy ends in the right row, the rest are completed once', async () => {
    const crm = uniq('crm');
    const sessionId = uniq('s');
    const events = Array.from({ length: 6 }, (_, k) => uniq(`e${k}`));
    // The requests first (their rows exist and are cached), then a batch of one response per event.
    const requests = events.map((ev): WireMessage => ({ type: T.EventRequest, messageId: randomUUID(), eventId: ev, sessionId, to: crm, from: 'shop', body: orderBody({ ev }) }));
    await resolveBacklog(50, requests);
    const responses = events.map((ev, k): WireMessage => ({ type: T.ResolutionResponse, messageId: randomUUID(), eventId: ev, sessionId, from: crm, parentMessageId: requests[k]!.messageId }));
    // The third event's row write fails (503) twice, its first try and its retry in place once the store's probe
    // answers: a write that keeps failing in the middle of the batch, not an outage, so it is left for redelivery.
    const failing = statusRowId(events[2]!, sessionId);
    const injected = proxy.injected;
    proxy.inject({ status: 503, times: 2, match: (r) => r.method === 'PUT' && isDocWrite(r, 'events') && r.path.includes(failing) });
    try {
      await resolveBacklog(50, responses);
    } finally {
      proxy.clear();
    }
    assert.equal(proxy.injected, injected + 2, 'the write was refused twice');
    const failed = responses[2]!.messageId!;
    assert.deepEqual(results(failed), ['redeliver', 'written']);
    assert.deepEqual(h.settled.filter((s) => s.messageId === failed).map((s) => s.deliveryCount), [0, 1], 'the redelivered copy is the one written');
    for (const m of responses.filter((r) => r.messageId !== failed)) {
      assert.deepEqual(results(m.messageId!), ['written'], 'completed once');
      // Those behind the failed one too: recorded ahead of their turn, they are completed when the session is
      // released rather than delivered again.
      assert.deepEqual(h.settled.filter((s) => s.messageId === m.messageId).map((s) => s.deliveryCount), [0], 'settled on the first delivery');
    }
    for (const ev of events) {
      const row = await h.store.getStatusRow(crm, ev, sessionId);
      assert.equal(row?.status, 'Completed');
      assert.deepEqual(row?.payload, { ev }, 'the request copy’s payload is kept');
    }
    assert.equal((await h.store.listHistory(events[2]!)).items.length, 2, 'one history entry per message');
    const counts = await h.store.getCounts(crm);
    assert.equal(counts.completed, events.length);
    assert.equal(counts.pending, 0);
    assert.deepEqual(counts.buckets, (await h.store.recountEndpoint(crm)).buckets, 'the counters match a recount');
  });

  test('copies of a recorded batch (a crash after its writes, before its settlements) leave every row as it was', async () => {
    const crm = uniq('crm');
    const prefix = uniq('c');
    const messages = script(prefix, crm);
    await resolveBacklog(50, messages);
    const rows = async () =>
      Promise.all(['A', 'B', 'C', 'D', 'E'].map(async (ev) => shape(await h.store.getStatusRow(crm, `${prefix}-${ev}`, `${prefix}-s`), prefix)));
    const before = await rows();
    const countsBefore = (await h.store.getCounts(crm)).buckets;
    // The broker delivers the whole batch again, same MessageIds, as it does when the Resolver dies unsettled.
    const marks = new Map(messages.map((m) => [m.messageId!, results(m.messageId!).length]));
    for (const m of messages) await h.send(m);
    const resolver = h.resolver({ maxMessagesPerReceive: 50 });
    try {
      for (const m of messages) await eventually(() => (results(m.messageId!).length > marks.get(m.messageId!)! ? true : undefined), `${m.messageId} again`);
    } finally {
      await resolver.stop();
    }
    assert.deepEqual(await rows(), before);
    assert.deepEqual((await h.store.getCounts(crm)).buckets, countsBefore, 'the counters did not move');
    for (const ev of ['A', 'B', 'C', 'D', 'E']) {
      const history = (await h.store.listHistory(`${prefix}-${ev}`)).items;
      assert.equal(new Set(history.map((e) => e.messageId)).size, history.length, `no duplicate history entries for ${ev}`);
    }
    // Only the messages that are answers or requests of a still-open row write again; nothing reopens a row.
    for (const m of messages) assert.ok(h.settled.filter((s) => s.messageId === m.messageId).every((s) => s.ok && s.settlement.kind === 'complete'));
  });

  test('a subscriber notice in a batch: the row’s later messages wait for it (the refused claim is put back first)', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const sessionId = uniq('s');
    // A handoff park, then the Manager's claim for a completion written on the row (as the console does).
    const request: WireMessage = { type: T.EventRequest, messageId: randomUUID(), eventId: ev, sessionId, to: ep, from: 'shop', body: orderBody({ ev }) };
    const park: WireMessage = {
      type: T.PendingHandoffResponse, messageId: randomUUID(), eventId: ev, sessionId, from: ep, to: 'Resolver', parentMessageId: request.messageId,
      props: { [Prop.HandoffReason]: 'DMF import', [Prop.ExternalJobId]: 'job-1' },
    };
    await resolveBacklog(50, [request, park]);
    const claim = uniq('cmd');
    const claimed = await h.store.writeStatus(
      { endpointId: ep, eventId: ev, sessionId, messageId: claim, messageType: T.HandoffCompletedRequest, parentMessageId: park.messageId!, from: 'Manager', to: ep, enqueuedAt: new Date().toISOString() },
      { lastMessageId: park.messageId!, claim: true },
    );
    assert.equal(claimed.outcome, 'written');
    // One batch: the subscriber's refusal of the claim, then the endpoint's later answer for the event. Run ahead
    // of the notice, the answer would settle the row first and the notice would find nothing to put back.
    const notice: WireMessage = {
      type: T.ErrorResponse, messageId: randomUUID(), eventId: ev, sessionId, from: ep, to: 'Resolver', parentMessageId: claim,
      props: { [Prop.DeadLetterReason]: 'CommandRefused', [Prop.DeadLetterErrorDescription]: 'HandoffCompletedRequest refused: not the pending handoff' },
    };
    const done: WireMessage = { type: T.ResolutionResponse, messageId: randomUUID(), eventId: ev, sessionId, from: ep, to: 'Resolver', parentMessageId: request.messageId };
    await resolveBacklog(50, [notice, done]);
    const audits = (await h.store.listAudits(ev)).items.filter((a) => a.type === 'CommandRefused');
    assert.equal(audits.length, 1);
    assert.match(audits[0]!.comment ?? '', /the row was put back to Pending \(Handoff\)$/, 'the notice saw the claim: it ran before the answer');
    const row = await h.store.getStatusRow(ep, ev, sessionId);
    assert.equal(row?.status, 'Completed');
    assert.equal(row?.lastMessageId, done.messageId);
  });
});
