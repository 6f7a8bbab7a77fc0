// Reconcile's restore of an unsent claim leaves the Resolver's record of the command alone when that record lands
// between the apply's re-check and its write: the record has the claim's id and status, so a restore that asked for
// those two alone put the row back to the failure while the command ran, and the next Resubmit derived the same
// MessageId and sent a second copy. The restore asks for the version it assessed (`conditional` as read), as the
// Manager's undo of its claim does. Real store on the embedded Cosmos server; the Resolver's record is written through
// the store, as the Resolver writes it, right before the restore reaches the row.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { ServiceBusClient } from '@azure/service-bus';
import { at, msg, startStoreFixture, uniq, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import { resolverRecordsBeforeRestore } from '../../lib/store/testing/resolverRecordsBeforeRestore.ts';
import { commandMessageId } from '../manager/commands.ts';
import { claimExpectation, Manager } from '../manager/manager.ts';
import { applyStuckRepairs } from './stuck.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

test("a restore of an unsent claim leaves the Resolver's record of the command that landed meanwhile as it is", async () => {
  const endpointId = 'billingendpoint';
  const eventId = uniq('restore-race');
  const failure = msg(MessageType.ErrorResponse, { endpointId, eventId, enqueuedAt: at(0), errorText: 'boom' });
  const failed = await f.store.writeStatus(failure);
  assert.ok(failed.outcome === 'written');
  await f.store.recordHistory({ ...failure, enqueuedAt: at(0) });
  const row = failed.row;
  const skipId = commandMessageId(MessageType.SkipRequest, row, row.lastMessageId);
  const claimed = await f.store.writeStatus(
    { endpointId, eventId, sessionId: row.sessionId, messageId: skipId, messageType: MessageType.SkipRequest, eventTypeId: row.eventTypeId, parentMessageId: row.lastMessageId, from: Topic.Manager, to: endpointId, enqueuedAt: at(10) },
    claimExpectation(row),
  );
  assert.ok(claimed.outcome === 'written');
  assert.equal(claimed.row.conditional, true, 'precondition: the claim is a conditional version');

  const client = new ServiceBusClient('Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=unused;SharedAccessKey=unused;UseDevelopmentEmulator=true');
  const raced = resolverRecordsBeforeRestore(f.store);
  const { store } = raced;
  const manager = new Manager({ store, client });
  try {
    const [result] = await applyStuckRepairs(
      { store, manager },
      [{ kind: 'claim', endpointId, eventId, sessionId: row.sessionId, rowMessageId: skipId, action: 'restore' }],
      'reconcile-test',
      { now: new Date(), claimGraceMs: 0, unansweredGraceMs: 0 },
    );
    assert.deepEqual(raced.recorded, [skipId], 'the Resolver recorded the command right before the restore');
    assert.equal(result?.outcome, 'unchanged', JSON.stringify(result));
    assert.match((result as { reason?: string }).reason ?? '', /changed while it was being restored/);
  } finally {
    await manager.close();
    await client.close();
  }
  const after = await f.store.getStatusRow(endpointId, eventId, row.sessionId);
  assert.deepEqual([after?.status, after?.lastMessageId, after?.conditional], ['Pending', skipId, false], "the Resolver's record stays, not put back to Failed");
});
