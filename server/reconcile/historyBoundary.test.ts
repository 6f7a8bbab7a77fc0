// Reconcile's history read at exactly its cap, through a proxy that answers as Azure Cosmos DB may
// (lib/store/testing/boundaryProxy.ts): a last page that holds results ends with a continuation that leads to an
// empty page. A continuation alone is no proof that an entry lies beyond the cap: an event with exactly the cap's
// entries is whole, and a stuck row on it keeps its restore (the newest state before its request, found in that
// whole list) instead of a false "history longer than the cap" reason. One entry more is cut, and says so.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { startBoundaryStoreFixture, type BoundaryStoreFixture } from '../../lib/store/testing/boundaryProxy.ts';
import { at, msg, uniq } from '../../lib/store/testing/fixtures.ts';
import { commandMessageId } from '../manager/commands.ts';
import { claimExpectation } from '../manager/manager.ts';
import { readEventHistory } from './history.ts';
import { stuckFinding } from './stuck.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const CAP = 3;

let f: BoundaryStoreFixture;
before(async () => {
  f = await startBoundaryStoreFixture();
});
after(async () => {
  await f?.close();
});

/**
 * A recorded skip of a failure that was never recorded (so the request's parent is in no entry), on an event whose
 * history holds an older state of the row's session, `others` entries of another session, and the skip.
 */
async function skipOfUnrecordedFailure(others: number) {
  const endpointId = 'billingendpoint';
  const eventId = uniq('edge');
  const old = { ...msg(MessageType.ResolutionResponse, { endpointId, eventId }), enqueuedAt: at(0) };
  await f.store.recordHistory(old);
  for (let i = 1; i <= others; i++) await f.store.recordHistory({ ...msg(MessageType.EventRequest, { endpointId, eventId, sessionId: 's-other' }), enqueuedAt: at(i) });
  const failed = await f.store.writeStatus(msg(MessageType.ErrorResponse, { endpointId, eventId, enqueuedAt: at(5), errorText: 'boom' }));
  assert.ok(failed.outcome === 'written');
  const row = failed.row;
  const skip = { endpointId, eventId, sessionId: row.sessionId, messageId: commandMessageId(MessageType.SkipRequest, row, row.lastMessageId), messageType: MessageType.SkipRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: at(10) };
  const claimed = await f.store.writeStatus(skip, claimExpectation(row));
  assert.ok(claimed.outcome === 'written');
  await f.store.recordHistory(skip);
  return { old, claimed: claimed.row };
}

test('a history of exactly the cap\'s entries whose last page ends with a continuation is whole: the restore is offered', async () => {
  const { old, claimed } = await skipOfUnrecordedFailure(CAP - 2);
  const served = f.proxy.trailingServed();

  const history = await readEventHistory(f.store, claimed.endpointId, claimed.eventId, CAP);
  assert.equal(history.entries.length, CAP);
  assert.equal(history.cutOff, false, 'a continuation followed by nothing is no entry past the cap');
  assert.ok(f.proxy.trailingServed() > served, 'the empty page after the last one was asked for: the boundary was exercised');

  const finding = await stuckFinding(f.store, claimed, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap: CAP });
  assert.equal(finding?.kind, 'unanswered', finding?.why);
  assert.deepEqual(finding?.repairs.map((r) => r.action), ['restore'], finding?.why);
  assert.deepEqual(finding?.restoresTo, { status: 'Completed', messageType: MessageType.ResolutionResponse, messageId: old.messageId });
});

test('one entry more than the cap: the read stops at the cap and says it was cut', async () => {
  const { old, claimed } = await skipOfUnrecordedFailure(CAP - 1);

  const history = await readEventHistory(f.store, claimed.endpointId, claimed.eventId, CAP);
  assert.equal(history.entries.length, CAP, 'the entry past the cap is not in the list');
  assert.ok(!history.entries.some((h) => h.messageId === claimed.lastMessageId), 'the newest entry (the skip) is the one left out');
  assert.equal(history.cutOff, true);

  const finding = await stuckFinding(f.store, claimed, history, { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0, historyCap: CAP });
  assert.deepEqual(finding?.repairs, [], `the state before the skip is unknown: not the old ${old.messageId}`);
  assert.match(finding?.why ?? '', /no restore is offered: the event's history is longer than the 3 entries/);
});
