// Reconcile's stuck check and a subscriber's CommandRefused notice that no longer parses (review of the answers
// query change): the refusals query pages past it, so a readable older notice is still found, and a damaged one
// alone still proves the refusal - before, such a row was listed nowhere, or as unanswered / a failed send.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { msg, startStoreFixture, uniq, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import { AuditType } from '../../lib/store/index.ts';
import { commandMessageId } from '../manager/commands.ts';
import { claimExpectation } from '../manager/manager.ts';
import { previewReconcile } from './reconcile.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
let f: StoreFixture;
before(async () => { f = await startStoreFixture(); });
after(async () => { await f?.close(); });

const endpointId = 'erpendpoint';
const noGrace = { claimGraceMs: 0, unansweredGraceMs: 0 };
const entry = (m: ReturnType<typeof msg>) => ({ ...m, enqueuedAt: m.enqueuedAt ?? new Date().toISOString() });

async function claimRefused(recorded: boolean, validOlderRefusal: boolean, receipt = true) {
  const eventId = uniq('dmg');
  const park = entry(msg(MessageType.PendingHandoffResponse, { endpointId, eventId, from: endpointId, handoffReason: 'x', externalJobId: 'J', expectedBy: new Date(Date.now() + 3_600_000).toISOString() }));
  await f.store.recordOutcome({ history: park, status: park });
  const row = (await f.store.getStatusRow(endpointId, eventId, 's-1'))!;
  const commandId = commandMessageId(MessageType.HandoffCompletedRequest, row, row.lastMessageId);
  const command = { endpointId, eventId, sessionId: row.sessionId, messageId: commandId, messageType: MessageType.HandoffCompletedRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: new Date().toISOString() };
  const claimed = await f.store.writeStatus(command, claimExpectation(row));
  assert.ok(claimed.outcome === 'written');
  if (recorded) await f.store.recordHistory(command);
  else if (receipt) await f.store.recordAudit({ id: commandId, eventId, endpointId, eventTypeId: row.eventTypeId, type: AuditType.CompleteHandoff, auditor: 'operator', comment: 'sent' });
  if (validOlderRefusal) await f.store.recordHistory(entry(msg(MessageType.ErrorResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, to: 'Resolver', deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'refused (first copy)', enqueuedAt: new Date(Date.now() - 1000).toISOString() })));
  // The subscriber's CommandRefused notice as stored, newest, but no longer parsing (a traceId stored differently).
  const good = { ...entry(msg(MessageType.ErrorResponse, { endpointId, eventId, parentMessageId: commandId, from: endpointId, to: 'Resolver', deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'refused' })) };
  const id = uniq('notice');
  await f.raw.database(f.database).container('history').items.create({ ...good, id, messageId: id, sessionId: row.sessionId, eventTypeId: null, originatingMessageId: null, correlationId: null, errorText: null, errorType: null, retryCount: null, handoffReason: null, externalJobId: null, expectedBy: null, queueTimeMs: null, processingTimeMs: null, properties: {}, recordedAt: new Date().toISOString(), traceId: 'NOT-A-TRACE' });
  return { eventId, commandId, damagedId: id };
}


const cases = [
  { name: 'a claim the Resolver never recorded, with its receipt', recorded: false, older: false, receipt: true },
  { name: 'a claim the Resolver never recorded, without a receipt', recorded: false, older: false, receipt: false },
  { name: 'a recorded command', recorded: true, older: false, receipt: true },
] as const;
for (const c of cases) {
  test(`${c.name}, refused by a notice that no longer parses: listed refused, the notice's document named, no re-send`, async () => {
    const { eventId, damagedId } = await claimRefused(c.recorded, c.older, c.receipt);
    const p = await previewReconcile(f.store, [endpointId], new Date(), noGrace);
    assert.deepEqual(p.stale.filter((s) => s.eventId === eventId), []);
    const stuck = p.stuck.filter((s) => s.eventId === eventId);
    assert.deepEqual(stuck.map((s) => s.kind), ['refused'], JSON.stringify(stuck.map((s) => s.why)));
    assert.match(stuck[0]!.why, new RegExp(`no longer parses, document ${damagedId}`));
    assert.ok(!stuck[0]!.repairs.some((r) => r.action === 'resend'), 'no re-send of a command its subscriber refused');
    assert.deepEqual(stuck[0]!.repairs.map((r) => r.action), ['restore'], 'the restore to the park');
  });
}

test('a readable older refusal behind a newer damaged one is found and named', async () => {
  const { eventId } = await claimRefused(false, true);
  const p = await previewReconcile(f.store, [endpointId], new Date(), noGrace);
  const stuck = p.stuck.filter((s) => s.eventId === eventId);
  assert.deepEqual(stuck.map((s) => s.kind), ['refused'], JSON.stringify(stuck.map((s) => s.why)));
  assert.match(stuck[0]!.why, /refused \(first copy\)/);
});
