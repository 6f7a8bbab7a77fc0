// Reconcile's repair path on the embedded servers (real @azure/service-bus and @azure/cosmos clients): rows that
// nothing will move are found with why and what the repair does, repaired on request, audited, and a second apply
// changes nothing.
//   - claims the Manager wrote before its process died (no send, no receipt): a skip is re-sent (once, same
//     MessageId, receipt written), a handoff failure (its text was never stored) is restored to the handoff park;
//   - control requests the Resolver recorded and nobody answered: a ContinuationRequest (current subscribers
//     complete it silently) and a HandoffFailedRequest an older subscriber ignored are restored.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop, Topic } from '@nimbus/sdk/contract';
import { seedConsoleData } from '../testing/seed.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { claimExpectation, Manager } from '../manager/manager.ts';
import { commandMessageId } from '../manager/commands.ts';
import { previewReconcile } from './reconcile.ts';
import { applyStuckRepairs, type RepairTarget, type StuckRow } from './stuck.ts';
import type { StatusRow } from '../../lib/store/index.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
let manager: Manager;
let seeded: Awaited<ReturnType<typeof seedConsoleData>>;
const endpoints = () => stack.catalog.endpoints.map((e) => e.id);
/** The preview and the apply as an operator runs them long after the fact: no grace left. */
const noGrace = { claimGraceMs: 0, unansweredGraceMs: 0 };

before(async () => {
  stack = await startConsoleTestStack('stuck');
  seeded = await seedConsoleData(stack.store);
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});
after(async () => {
  await manager?.close();
  await stack?.close();
});

/** The claim the Manager writes before it sends (manager.ts), left behind as by a process that died right after. */
async function claimAndDie(row: StatusRow, type: typeof MessageType.SkipRequest | typeof MessageType.HandoffFailedRequest): Promise<string> {
  const messageId = commandMessageId(type, row, row.lastMessageId);
  const r = await stack.store.writeStatus(
    {
      endpointId: row.endpointId,
      eventId: row.eventId,
      sessionId: row.sessionId,
      messageId,
      messageType: type,
      eventTypeId: row.eventTypeId,
      parentMessageId: row.lastMessageId,
      originatingMessageId: row.originatingMessageId,
      correlationId: row.correlationId,
      from: Topic.Manager,
      to: row.endpointId,
      enqueuedAt: new Date().toISOString(),
    },
    claimExpectation(row),
  );
  assert.equal(r.outcome, 'written');
  return messageId;
}

const row = async (endpointId: string, eventId: string, sessionId: string) => (await stack.store.getStatusRow(endpointId, eventId, sessionId))!;
const target = (s: { kind: StuckRow['kind']; endpointId: string; eventId: string; sessionId: string; rowMessageId: string }, action: 'resend' | 'restore'): RepairTarget => ({
  kind: s.kind as RepairTarget['kind'], // the rows these tests repair are claims and unanswered requests
  endpointId: s.endpointId,
  eventId: s.eventId,
  sessionId: s.sessionId,
  rowMessageId: s.rowMessageId,
  action,
});

describe('reconcile: rows nothing will move', () => {
  test('claims without a receipt: found after the grace period; a skip is re-sent once, a handoff failure restored', async () => {
    const failed = await row('billingendpoint', seeded.failed.eventId, seeded.failed.sessionId);
    const handoff = await row('erpendpoint', seeded.handoff.eventId, seeded.handoff.sessionId);
    const skipId = await claimAndDie(failed, MessageType.SkipRequest);
    const failId = await claimAndDie(handoff, MessageType.HandoffFailedRequest);

    // Within the grace period a claim may be a send in progress elsewhere: not reported.
    const early = await previewReconcile(stack.store, endpoints());
    assert.ok(!early.stuck.some((s) => s.eventId === failed.eventId || s.eventId === handoff.eventId));

    const preview = await previewReconcile(stack.store, endpoints(), new Date(), noGrace);
    const skip = preview.stuck.find((s) => s.eventId === failed.eventId)!;
    const fail = preview.stuck.find((s) => s.eventId === handoff.eventId)!;
    assert.equal(skip.kind, 'claim');
    assert.match(skip.why, /no "sent" receipt/);
    assert.deepEqual(skip.repairs.map((r) => r.action), ['resend', 'restore']);
    assert.match(skip.repairs[0]!.does, /same MessageId/);
    assert.deepEqual(skip.restoresTo, { status: 'Failed', messageType: 'ErrorResponse', messageId: failed.lastMessageId });
    assert.deepEqual(fail.repairs.map((r) => r.action), ['restore'], 'a handoff failure cannot be rebuilt: its text was never stored');
    assert.deepEqual(fail.restoresTo, { status: 'Pending', messageType: 'PendingHandoffResponse', messageId: handoff.lastMessageId });

    const results = await applyStuckRepairs({ store: stack.store, manager }, [target(skip, 'resend'), target(fail, 'restore')], 'operator@test', { now: new Date(), ...noGrace });
    assert.deepEqual(results.map((r) => r.outcome), ['repaired', 'repaired']);

    // The skip went out once, with the claim's MessageId, and its receipt is written.
    const receiver = await stack.serviceBus.client.acceptSession('billingendpoint', 'billingendpoint', failed.sessionId);
    try {
      const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 3000 });
      assert.deepEqual(got.map((m) => [m.messageId, m.applicationProperties?.[Prop.MessageType]]), [[skipId, MessageType.SkipRequest]]);
      for (const m of got) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
    assert.equal((await stack.store.getAudit(failed.eventId, skipId))?.type, 'Skip');
    const restored = await row('erpendpoint', handoff.eventId, handoff.sessionId);
    assert.equal(restored.status, 'Pending');
    assert.equal(restored.subStatus, 'Handoff');
    assert.equal(restored.lastMessageId, handoff.lastMessageId);
    assert.equal(restored.externalJobId, 'JOB-77');
    assert.notEqual(restored.lastMessageId, failId);
    for (const eventId of [failed.eventId, handoff.eventId]) {
      const audits = (await stack.store.listAudits(eventId)).items.filter((a) => a.type === 'ReconcileStuckCommand');
      assert.equal(audits.length, 1, `one repair audit on ${eventId}`);
      assert.equal(audits[0]!.auditor, 'operator@test');
    }

    // A second apply of the same choices changes nothing.
    const again = await applyStuckRepairs({ store: stack.store, manager }, [target(skip, 'resend'), target(fail, 'restore')], 'operator@test', { now: new Date(), ...noGrace });
    assert.deepEqual(again.map((r) => r.outcome), ['unchanged', 'unchanged']);
    const after = await previewReconcile(stack.store, endpoints(), new Date(), noGrace);
    assert.ok(!after.stuck.some((s) => s.eventId === failed.eventId || s.eventId === handoff.eventId));
  });

  test('control requests nobody answered: a ContinuationRequest and an ignored HandoffFailedRequest are restored', async () => {
    const completed = await row('billingendpoint', seeded.completed.eventId, seeded.completed.sessionId);
    const handoff2 = await row('erpendpoint', seeded.handoff2.eventId, seeded.handoff2.sessionId);
    const record = async (r: StatusRow, messageType: string, messageId: string, parentMessageId: string | null, from: string) => {
      const w = { endpointId: r.endpointId, eventId: r.eventId, sessionId: r.sessionId, messageId, messageType: messageType as never, eventTypeId: r.eventTypeId, parentMessageId, from, to: r.endpointId, enqueuedAt: new Date().toISOString() };
      const out = await stack.store.recordOutcome({ history: w, status: w });
      assert.equal(out.status.outcome, 'written');
    };
    await record(completed, MessageType.ContinuationRequest, `${completed.eventId}-cont`, null, 'Continuation');
    await record(handoff2, MessageType.HandoffFailedRequest, `${handoff2.eventId}-hf`, handoff2.lastMessageId, 'Manager');
    assert.equal((await row('billingendpoint', completed.eventId, completed.sessionId)).status, 'Pending');

    assert.ok(!(await previewReconcile(stack.store, endpoints())).stuck.some((s) => s.eventId === completed.eventId), 'not within the grace period');
    const preview = await previewReconcile(stack.store, endpoints(), new Date(), noGrace);
    const cont = preview.stuck.find((s) => s.eventId === completed.eventId)!;
    const hf = preview.stuck.find((s) => s.eventId === handoff2.eventId)!;
    assert.equal(cont.kind, 'unanswered');
    assert.match(cont.why, /ContinuationRequest.*without any answer/);
    assert.deepEqual(cont.restoresTo, { status: 'Completed', messageType: 'ResolutionResponse', messageId: completed.lastMessageId });
    assert.match(hf.why, /did not answer the handoff command/);
    assert.deepEqual(hf.repairs.map((r) => r.action), ['restore']);

    // A row that moved since the preview is left alone.
    const stale = { ...target(cont, 'restore'), rowMessageId: 'some-older-version' };
    const results = await applyStuckRepairs({ store: stack.store, manager }, [stale, target(cont, 'restore'), target(hf, 'restore')], 'operator@test', { now: new Date(), ...noGrace });
    assert.deepEqual(results.map((r) => r.outcome), ['unchanged', 'repaired', 'repaired']);
    assert.match(results[0]!.reason ?? '', /changed since the preview/);
    assert.equal((await row('billingendpoint', completed.eventId, completed.sessionId)).status, 'Completed');
    const h2 = await row('erpendpoint', handoff2.eventId, handoff2.sessionId);
    assert.deepEqual([h2.status, h2.subStatus, h2.lastMessageId], ['Pending', 'Handoff', handoff2.lastMessageId]);
    const audit = (await stack.store.listAudits(completed.eventId)).items.find((a) => a.type === 'ReconcileStuckCommand');
    assert.match(audit?.comment ?? '', /Repair: restored to Completed/);
    // The counters moved with the rows: a recount finds nothing to correct.
    const counts = await stack.store.getCounts('billingendpoint');
    assert.deepEqual((await stack.store.recountEndpoint('billingendpoint')).buckets, counts.buckets);
  });
});
