// Reconcile stale pending on the embedded Cosmos server with the real client: a Pending row whose history holds
// its response (made by writing the row around the guard, as a late copy did before the guard existed) is found
// by the preview and repaired by apply through the guarded write; a second apply changes nothing; an overdue
// handoff is only flagged.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import { createStore, startEmbeddedCosmos, statusRowId, type EmbeddedCosmos, type HistoryEntry, type MessageStore } from '../../lib/store/index.ts';
import { applyReconcile, previewReconcile, settlingEvidence } from './reconcile.ts';

let cosmos: EmbeddedCosmos;
let store: MessageStore;
const ep = 'billingendpoint';

before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'reconcile' });
});
after(async () => {
  await store?.close();
  await cosmos?.close();
});

const at = (s: number) => new Date(Date.UTC(2026, 11, 2, 9, 0, s)).toISOString();

async function settledEvent(): Promise<{ eventId: string; sessionId: string; request: string; response: string }> {
  const eventId = `e-${randomUUID()}`;
  const sessionId = `s-${randomUUID()}`;
  const request = `m-${randomUUID()}`;
  const response = `m-${randomUUID()}`;
  const base = { endpointId: ep, eventId, sessionId, eventTypeId: 'OrderPlaced' };
  await store.recordOutcome({
    history: { ...base, messageId: request, messageType: 'EventRequest', parentMessageId: 'self', enqueuedAt: at(1), to: ep },
    status: { ...base, messageId: request, messageType: 'EventRequest', parentMessageId: 'self', enqueuedAt: at(1), to: ep, payload: { orderId: 1 } },
  });
  const r = await store.recordOutcome({
    history: { ...base, messageId: response, messageType: 'ResolutionResponse', parentMessageId: request, enqueuedAt: at(2), from: ep },
    status: { ...base, messageId: response, messageType: 'ResolutionResponse', parentMessageId: request, enqueuedAt: at(2), from: ep },
  });
  assert.equal(r.status.outcome, 'written');
  return { eventId, sessionId, request, response };
}

/** Puts the row back to Pending as the request copy left it, with a plain replace: the guard is bypassed. */
async function bypassGuardWithLateCopy(eventId: string, sessionId: string, request: string): Promise<void> {
  const client = new CosmosClient({ endpoint: cosmos.endpoint, key: cosmos.key, connectionPolicy: { enableEndpointDiscovery: false } });
  try {
    const item = client.database('reconcile').container('events').item(statusRowId(eventId, sessionId), [ep, eventId]);
    const { resource } = await item.read<Record<string, unknown>>();
    assert.ok(resource);
    await item.replace({ ...resource, status: 'Pending', subStatus: null, messageType: 'EventRequest', lastMessageId: request, parentMessageId: 'self', enqueuedAt: at(3), updatedAt: new Date().toISOString() });
  } finally {
    client.dispose();
  }
}

describe('reconcile stale pending', () => {
  test('evidence: a settling response that answers the row, not one that answered an earlier message', () => {
    const h = (messageId: string, messageType: string, parentMessageId: string, enqueuedAt: string) =>
      ({ messageId, messageType, parentMessageId, enqueuedAt, sessionId: 's', deadLetterErrorDescription: null }) as unknown as HistoryEntry;
    const row = { lastMessageId: 'resubmit-1', messageType: 'ResubmissionRequest' as const, parentMessageId: 'req', sessionId: 's', enqueuedAt: at(10), status: 'Pending' as const, subStatus: null };
    // An ErrorResponse to the original request, before the resubmission: not evidence.
    assert.equal(settlingEvidence(row, [h('err', 'ErrorResponse', 'req', at(5))]), undefined);
    assert.equal(settlingEvidence(row, [h('ok', 'ResolutionResponse', 'resubmit-1', at(11))])?.rule, 'answers-row');
    // A deferral of a resubmission: the Resolver's guarded write refuses it over the resubmission (not request stage),
    // so the row never showed it and re-applying it would be refused too.
    assert.equal(settlingEvidence(row, [h('def', 'DeferralResponse', 'resubmit-1', at(11))]), undefined, 'the guard refuses a deferral over a resubmission');
    assert.equal(settlingEvidence({ ...row, subStatus: 'Handoff' }, [h('ok', 'ResolutionResponse', 'resubmit-1', at(11))]), undefined);
    // The row's own parent dated after the row (a console clock behind the broker's) is not a later response.
    assert.equal(settlingEvidence({ ...row, parentMessageId: 'err' }, [h('err', 'ErrorResponse', 'req', at(12))]), undefined);
    assert.equal(settlingEvidence(row, [h('err', 'ErrorResponse', 'req', at(12))])?.rule, 'later-response');
    // The subscriber's notice that it refused the command (an ErrorResponse with a dead-letter description) is about
    // the command, not the event: re-applying it would turn the row DeadLettered.
    const notice = (reason: string) =>
      ({ ...h('n', 'ErrorResponse', 'resubmit-1', at(11)), deadLetterReason: reason, deadLetterErrorDescription: 'refused' }) as unknown as HistoryEntry;
    assert.equal(settlingEvidence(row, [notice('CommandRefused')]), undefined);
    assert.equal(settlingEvidence(row, [notice('ReplayGap')]), undefined);
    assert.equal(settlingEvidence(row, [notice('MaxDeliveryCountExceeded')])?.status, 'DeadLettered', 'a real dead letter still settles');
  });

  test('evidence: a non-settling answer to the row\'s own message is re-applied, unless a newer outcome wins', () => {
    const h = (messageId: string, messageType: string, parentMessageId: string, enqueuedAt: string) =>
      ({ messageId, messageType, parentMessageId, enqueuedAt, sessionId: 's', deadLetterErrorDescription: null }) as unknown as HistoryEntry;
    const claim = { lastMessageId: 'complete-1', messageType: 'HandoffCompletedRequest' as const, parentMessageId: 'park-0', sessionId: 's', enqueuedAt: at(10), status: 'Pending' as const, subStatus: null };
    const request = { ...claim, lastMessageId: 'req-1', messageType: 'EventRequest' as const, parentMessageId: 'self' };
    const pick = (r: typeof claim | typeof request, history: HistoryEntry[]): unknown[] | undefined => {
      const e = settlingEvidence(r, history);
      return e && [e.messageId, e.rule, e.status];
    };
    // A new handoff park answering the claim: the row should show it (Pending, a handoff park again).
    assert.deepEqual(pick(claim, [h('park-1', 'PendingHandoffResponse', 'complete-1', at(11))]), ['park-1', 'answers-row', 'Pending']);
    // Answered, then answered again: the newest answer, as the Resolver's writes would have left the row.
    assert.deepEqual(pick(claim, [h('park-1', 'PendingHandoffResponse', 'complete-1', at(11)), h('park-2', 'PendingHandoffResponse', 'complete-1', at(13))]), ['park-2', 'answers-row', 'Pending']);
    assert.deepEqual(pick(claim, [h('err', 'ErrorResponse', 'complete-1', at(11)), h('park-1', 'PendingHandoffResponse', 'complete-1', at(13))]), ['park-1', 'answers-row', 'Pending'], 'a park after a failure reopens the row');
    assert.deepEqual(pick(claim, [h('park-1', 'PendingHandoffResponse', 'complete-1', at(11)), h('ok', 'ResolutionResponse', 'complete-1', at(13))]), ['ok', 'answers-row', 'Completed']);
    assert.deepEqual(pick(claim, [h('ok', 'ResolutionResponse', 'complete-1', at(11)), h('park-1', 'PendingHandoffResponse', 'complete-1', at(13))]), ['ok', 'answers-row', 'Completed'], 'the guard refuses a park over Completed');
    // A settling response after the row's message wins over an older non-settling answer; a newer answer wins over it
    // when the guard lets it (a park over Failed).
    assert.deepEqual(pick(claim, [h('park-1', 'PendingHandoffResponse', 'complete-1', at(11)), h('late', 'ErrorResponse', 'other', at(13))]), ['late', 'later-response', 'Failed']);
    assert.deepEqual(pick(claim, [h('late', 'ErrorResponse', 'other', at(11)), h('park-1', 'PendingHandoffResponse', 'complete-1', at(13))]), ['park-1', 'answers-row', 'Pending']);
    // A non-settling response that does not answer the row's message is no evidence (later-response stays settling-only).
    assert.equal(pick(claim, [h('park-x', 'PendingHandoffResponse', 'other', at(11))]), undefined);
    // Control requests and the subscriber's notices are not the event's state.
    assert.equal(pick(claim, [h('retry', 'RetryRequest', 'complete-1', at(11)), h('pdr', 'ProcessDeferredRequest', 'complete-1', at(12))]), undefined);
    // A deferral of the event's own request: the row should read Deferred.
    assert.deepEqual(pick(request, [h('def', 'DeferralResponse', 'req-1', at(11))]), ['def', 'answers-row', 'Deferred']);
  });

  test('a stale Pending row is found, repaired through the guarded write and audited; a second apply changes nothing', async () => {
    const ev = await settledEvent();
    const healthy = await settledEvent();
    await bypassGuardWithLateCopy(ev.eventId, ev.sessionId, ev.request);

    // A fresh store: the seeding one caches the version it wrote, which the bypass changed behind its back.
    const fresh = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'reconcile' });
    try {
      assert.equal((await fresh.getStatusRow(ep, ev.eventId, ev.sessionId))?.status, 'Pending');
      const preview = await previewReconcile(fresh, [ep]);
      assert.deepEqual(preview.stale.map((s) => s.eventId), [ev.eventId]);
      assert.equal(preview.stale[0]!.evidence.messageId, ev.response);
      assert.equal(preview.stale[0]!.evidence.status, 'Completed');
      assert.ok(!preview.stale.some((s) => s.eventId === healthy.eventId));

      const targets = preview.stale.map((s) => ({ endpointId: s.endpointId, eventId: s.eventId, sessionId: s.sessionId, rowMessageId: s.rowMessageId }));
      const first = await applyReconcile(fresh, targets, 'tester');
      assert.equal(first.repaired, 1);
      const row = await fresh.getStatusRow(ep, ev.eventId, ev.sessionId);
      assert.equal(row?.status, 'Completed');
      assert.equal(row?.lastMessageId, ev.response);
      const audits = await fresh.listAudits(ev.eventId);
      assert.equal(audits.items.filter((a) => a.type === 'ReconcileStalePending').length, 1);

      const second = await applyReconcile(fresh, targets, 'tester');
      assert.equal(second.repaired, 0);
      assert.equal(second.unchanged, 1);
      assert.equal((await fresh.getStatusRow(ep, ev.eventId, ev.sessionId))?.updatedAt, row?.updatedAt, 'nothing written');
      assert.equal((await previewReconcile(fresh, [ep])).stale.length, 0);
      assert.equal((await fresh.listAudits(ev.eventId)).items.filter((a) => a.type === 'ReconcileStalePending').length, 1);
    } finally {
      await fresh.close();
    }
  });

  test("another endpoint's response to the same event is no evidence: one eventId, one row per subscriber", async () => {
    // The event went to two subscribers: erpendpoint answered it, billingendpoint has not yet (its row is Pending by
    // the request, legitimately). Both rows live under one eventId and one session, and the event's history holds
    // both endpoints' entries; only billingendpoint's own may settle its row.
    const other = 'erpendpoint';
    const eventId = `e-${randomUUID()}`;
    const sessionId = `s-${randomUUID()}`;
    for (const endpointId of [ep, other]) {
      const base = { endpointId, eventId, sessionId, eventTypeId: 'OrderPlaced' };
      const request = { ...base, messageId: `${eventId}-req-${endpointId}`, messageType: 'EventRequest' as const, parentMessageId: 'self', enqueuedAt: at(1), to: endpointId };
      await store.recordOutcome({ history: request, status: { ...request, payload: { orderId: 2 } } });
    }
    const response = { endpointId: other, eventId, sessionId, eventTypeId: 'OrderPlaced', messageId: `${eventId}-res`, messageType: 'ResolutionResponse' as const, parentMessageId: `${eventId}-req-${other}`, enqueuedAt: at(2), from: other };
    await store.recordOutcome({ history: response, status: response });

    const preview = await previewReconcile(store, [ep, other]);
    assert.deepEqual(preview.stale.filter((s) => s.eventId === eventId), [], "billing's row is not stale by erp's answer");
    const apply = await applyReconcile(store, [{ endpointId: ep, eventId, sessionId, rowMessageId: `${eventId}-req-${ep}` }], 'tester');
    assert.equal(apply.unchanged, 1, 'an apply naming the row does not settle it either');
    assert.equal((await store.getStatusRow(ep, eventId, sessionId))?.status, 'Pending');
  });

  test('a handoff past its ExpectedBy is flagged, not settled', async () => {
    const eventId = `e-${randomUUID()}`;
    const sessionId = `s-${randomUUID()}`;
    const base = { endpointId: ep, eventId, sessionId };
    await store.writeStatus({ ...base, messageId: `m-${randomUUID()}`, messageType: 'EventRequest', parentMessageId: 'self', enqueuedAt: at(1) });
    await store.writeStatus({ ...base, messageId: `m-${randomUUID()}`, messageType: 'PendingHandoffResponse', parentMessageId: 'x', enqueuedAt: at(2), handoffReason: 'DMF import', expectedBy: at(30) });
    const preview = await previewReconcile(store, [ep]);
    const flagged = preview.overdueHandoffs.find((h) => h.eventId === eventId);
    assert.ok(flagged);
    assert.equal(flagged.handoffReason, 'DMF import');
    assert.ok(!preview.stale.some((s) => s.eventId === eventId));
    assert.equal((await store.getStatusRow(ep, eventId, sessionId))?.subStatus, 'Handoff');
  });
});
