// The Manager never sends again a command the Resolver has recorded, even when the row no longer shows its claim
// (real Service Bus emulator and Cosmos store). A row put back to the failure the command answered - a Reconcile
// restore of a parked or unanswered command; a parked one's was offered until the review that found this - derives
// the same MessageId for the next Resubmit, and the row is no claim for the repeat check to catch it: the Manager
// claimed afresh and sent the same command a second time, which an endpoint without the inbox runs twice. Now a
// point read of the command's history entry before each fresh claim answers 'duplicate' (or 409 for a different
// request), one-event and lot alike, and nothing goes on the wire: a later command of the same session is the next
// message its subscriber receives.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, ResolutionStatus, Topic } from '@nimbus/sdk/contract';
import { msg, uniq } from '../../lib/store/testing/fixtures.ts';
import { rowFromEntry } from '../reconcile/stuck.ts';
import { HttpError } from '../http.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { Manager } from './manager.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let manager: Manager;

before(async () => {
  stack = await startConsoleTestStack();
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});

after(async () => {
  await manager?.close();
  await stack?.close();
});

/** A Failed event (request with a payload, then an error) in session `sessionId`. */
async function seedFailed(eventId: string, sessionId: string): Promise<void> {
  const request = msg(MessageType.EventRequest, { endpointId: EP, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { eventId, qty: 1 } });
  const error = msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
  for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

/**
 * The operator's Resubmit, sent; the Resolver records the command (its row write included); then the row is put back
 * to the failure it answered, as Reconcile's restore of a parked command did. Returns the command's MessageId.
 */
async function resubmittedThenPutBack(eventId: string, sessionId: string): Promise<string> {
  const failed = (await stack.store.getStatusRow(EP, eventId, sessionId))!;
  const sent = await manager.execute(EP, eventId, { kind: 'resubmit' }, 'alice');
  assert.equal(sent.outcome, 'sent');
  const claim = (await stack.store.getStatusRow(EP, eventId, sessionId))!;
  const command = msg(MessageType.ResubmissionRequest, { endpointId: EP, eventId, sessionId, messageId: sent.messageId, parentMessageId: failed.lastMessageId, from: Topic.Manager, to: EP, eventTypeId: 'OrderPlaced', payload: { eventId, qty: 1 } });
  await stack.store.recordOutcome({ history: { ...command, enqueuedAt: new Date().toISOString() } as never, status: command });
  const failure = (await stack.store.getHistory(eventId, failed.lastMessageId))!;
  const restored = await stack.store.restoreStatusRow(rowFromEntry(claim, failure), { status: ResolutionStatus.Pending, lastMessageId: sent.messageId });
  assert.equal(restored.outcome, 'written');
  const row = await stack.store.getStatusRow(EP, eventId, sessionId);
  assert.deepEqual([row?.status, row?.lastMessageId], ['Failed', failed.lastMessageId], 'put back to the failure');
  return sent.messageId;
}

test('a command the Resolver recorded is not sent again after its row was put back: one event, an edit, a lot', async () => {
  const sessionId = uniq('S-recorded');
  const [one, lot, later] = [uniq('evt-one'), uniq('evt-lot'), uniq('evt-later')];
  for (const eventId of [one, lot, later]) await seedFailed(eventId, sessionId);
  const first = await resubmittedThenPutBack(one, sessionId);
  const second = await resubmittedThenPutBack(lot, sessionId);

  // One event: the same Resubmit is answered duplicate, under the recorded command's id.
  const again = await manager.execute(EP, one, { kind: 'resubmit' }, 'bob');
  assert.deepEqual([again.outcome, again.messageId], ['duplicate', first]);
  // A different edit of the same failure asks for something else: refused, never dropped as a duplicate.
  await assert.rejects(
    manager.execute(EP, one, { kind: 'resubmit', edited: { payload: { eventId: one, qty: 2 } } }, 'bob'),
    (e: unknown) => e instanceof HttpError && e.status === 409 && /already sent \(recorded by the Resolver at .*with a different payload/.test(e.detail),
  );
  // A lot (the event's only row, its session known): the same answer, from the lot's own read.
  const [settled] = await manager.executeMany([{ endpointId: EP, eventId: lot, sessionId, rows: 1 }], { kind: 'resubmit' }, 'bob');
  assert.ok(settled?.ok, settled && !settled.ok ? String(settled.error) : 'no answer');
  assert.deepEqual([settled.value.outcome, settled.value.messageId], ['duplicate', second]);
  for (const [eventId, commandId] of [[one, first], [lot, second]] as const) {
    const row = await stack.store.getStatusRow(EP, eventId, sessionId);
    assert.deepEqual([row?.status, row?.messageType], ['Failed', 'ErrorResponse'], 'no claim was written');
    assert.equal((await stack.store.getAudit(eventId, commandId))?.auditor, 'alice', 'the first send\'s receipt only');
  }

  // The positive signal that nothing else went out: a later command of the same session comes right after the two
  // first sends. Before, the two Resubmits above were sent again in between.
  const skip = await manager.execute(EP, later, { kind: 'skip' }, 'bob');
  assert.equal(skip.outcome, 'sent');
  const receiver = await stack.serviceBus.client.acceptSession(EP, EP, sessionId, { receiveMode: 'receiveAndDelete', maxAutoLockRenewalDurationInMs: 120_000 });
  const got: string[] = [];
  try {
    while (!got.includes(skip.messageId)) {
      // Under the 5 s session lock the stack provisions: a longer wait lost the lock on this box.
      const batch = await receiver.receiveMessages(10, { maxWaitTimeInMs: 3000 });
      assert.ok(batch.length > 0, `the skip never arrived; got ${got.join(', ')}`);
      for (const m of batch) got.push(String(m.messageId));
    }
  } finally {
    await receiver.close();
  }
  assert.deepEqual(got, [first, second, skip.messageId]);
});
