// The ids of the last messages applied to a status row (lib/store/appliedMessages.ts): the pure rule, the row
// schema's reading of the field, and what the store's row writes carry and report, on the embedded Cosmos server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, ResolutionStatus as S } from '@nimbus/sdk/contract';
import { appliedMessageIdsOf, MAX_APPLIED_MESSAGE_IDS, nextAppliedMessageIds } from './appliedMessages.ts';
import { statusRowSchema } from './schemas.ts';
import { msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';

describe('the rule', () => {
  test('a new row knows its first message; a row of an older writer knows its last message only', () => {
    assert.deepEqual(appliedMessageIdsOf(null), []);
    assert.deepEqual(nextAppliedMessageIds(null, 'a'), ['a']);
    assert.deepEqual(appliedMessageIdsOf({ lastMessageId: 'z' }), ['z']);
    assert.deepEqual(nextAppliedMessageIds({ lastMessageId: 'z' }, 'a'), ['a', 'z']);
  });

  test('newest first; a copy applied again moves to the front instead of taking a second place; bounded', () => {
    assert.deepEqual(nextAppliedMessageIds({ lastMessageId: 'y', appliedMessageIds: ['y', 'x'] }, 'x'), ['x', 'y']);
    let row: { lastMessageId: string; appliedMessageIds: string[] } = { lastMessageId: 'm0', appliedMessageIds: ['m0'] };
    for (let i = 1; i <= MAX_APPLIED_MESSAGE_IDS + 2; i++) row = { lastMessageId: `m${i}`, appliedMessageIds: nextAppliedMessageIds(row, `m${i}`) };
    assert.equal(row.appliedMessageIds.length, MAX_APPLIED_MESSAGE_IDS);
    assert.equal(row.appliedMessageIds[0], `m${MAX_APPLIED_MESSAGE_IDS + 2}`);
    assert.ok(!row.appliedMessageIds.includes('m2'), 'the oldest dropped first');
  });

  test("the row schema reads the field when absent (an older writer) or damaged as absent: the row stays readable", () => {
    const field = statusRowSchema.shape.appliedMessageIds;
    assert.equal(field.parse(undefined), undefined);
    assert.deepEqual(field.parse(['a', 'b']), ['a', 'b']);
    for (const damaged of ['x', [1], [null], null, { a: 1 }]) assert.equal(field.parse(damaged), undefined, JSON.stringify(damaged));
  });
});

describe("the store's row writes", () => {
  let f: StoreFixture;
  before(async () => {
    f = await startStoreFixture();
  });
  after(async () => {
    await f.close();
  });

  test('each write carries the ids forward and reports those of the version it replaced', async () => {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
    const first = await f.store.writeStatus(request);
    assert.equal(first.outcome, 'written');
    assert.deepEqual(first.outcome === 'written' && first.previousMessageIds, [], 'a create replaces nothing');
    const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
    await f.store.writeStatus(error);
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId, retryCount: 1 });
    await f.store.writeStatus(retry);
    const applied = await f.store.writeStatus(msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', parentMessageId: retry.messageId }));
    assert.ok(applied.outcome === 'written');
    assert.equal(applied.previousMessageId, retry.messageId, "the replaced version's last message is the retry's");
    assert.deepEqual(applied.previousMessageIds, [retry.messageId, error.messageId, request.messageId]);
    assert.deepEqual((await f.store.getStatusRow(ep, 'e', 's-1'))?.appliedMessageIds, [applied.row.lastMessageId, retry.messageId, error.messageId, request.messageId]);
    // The bulk write (writeStatuses) reports them alike.
    const skip = msg(T.SkipRequest, { endpointId: ep, eventId: 'e', parentMessageId: applied.row.lastMessageId });
    const [bulk] = await f.store.writeStatuses([{ input: skip }]);
    assert.ok(bulk?.ok && bulk.value.outcome === 'written');
    assert.deepEqual(bulk.value.previousMessageIds, [applied.row.lastMessageId, retry.messageId, error.messageId, request.messageId]);
  });

  test('a copy of a message applied before a later one is refused (already-applied), by writeStatus and writeStatuses alike', async () => {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
    await f.store.writeStatus(request);
    const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
    await f.store.writeStatus(error);
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId, retryCount: 1 });
    await f.store.writeStatus(retry);
    const before = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    // The failure's copy, alone: a terminal write, which passed the guard before and set the row back to Failed.
    const copy = await f.store.writeStatus(error);
    assert.equal(copy.outcome, 'ignored');
    assert.equal(copy.outcome === 'ignored' && copy.reason, 'already-applied');
    const [bulk] = await f.store.writeStatuses([{ input: error }]);
    assert.ok(bulk?.ok && bulk.value.outcome === 'ignored');
    assert.equal(bulk.value.reason, 'already-applied');
    const after = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.deepEqual([after.status, after.lastMessageId, after.updatedAt], [S.Pending, retry.messageId, before.updatedAt], 'the row still shows the retry, unwritten');
    assert.deepEqual(after.appliedMessageIds, [retry.messageId, error.messageId, request.messageId]);
    // A copy of the row's last message is decided by the other rules, as before (applied again here).
    assert.equal((await f.store.writeStatus(retry)).outcome, 'written');
    // A conditional write names the version it replaces (Reconcile's repair over the version the operator saw): no
    // redelivered copy, so the rule leaves it to the others, by either write.
    const [named] = await f.store.writeStatuses([{ input: error, expect: { lastMessageId: retry.messageId } }]);
    assert.ok(named?.ok && named.value.outcome === 'written');
    assert.equal((await f.store.writeStatus(retry, { lastMessageId: error.messageId })).outcome, 'written');
    assert.equal((await f.store.writeStatus(error, { lastMessageId: retry.messageId })).outcome, 'written');
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Failed);
  });

  test('over a row written before the field existed: its last message id stands for it', async () => {
    const ep = uniq('ep');
    const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', errorType: 'E', errorText: 'boom' });
    await f.store.writeStatus(error);
    const events = f.raw.database(f.database).container('events');
    const { resources } = await events.items.query({ query: 'SELECT * FROM c WHERE c.endpointId = @e', parameters: [{ name: '@e', value: ep }] }).fetchAll();
    const { appliedMessageIds, ...old } = resources[0] as Record<string, unknown>;
    assert.deepEqual(appliedMessageIds, [error.messageId]);
    await events.items.upsert(old);
    const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId, retryCount: 1 });
    const written = await f.store.writeStatus(retry);
    assert.ok(written.outcome === 'written');
    assert.deepEqual(written.previousMessageIds, [error.messageId]);
    assert.deepEqual((await f.store.getStatusRow(ep, 'e', 's-1'))?.appliedMessageIds, [retry.messageId, error.messageId]);
    // Without the field the guard cannot tell a copy: the failure's copy applies over the retry, as it always did.
    const { resources: now } = await events.items.query({ query: 'SELECT * FROM c WHERE c.endpointId = @e', parameters: [{ name: '@e', value: ep }] }).fetchAll();
    const { appliedMessageIds: _ids, ...older } = now[0] as Record<string, unknown>;
    await events.items.upsert(older);
    assert.equal((await f.store.writeStatus(error)).outcome, 'written');
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, S.Failed);
  });

  test("a claim names the command without applying it, by writeStatus and writeStatuses; the command's record applies it and its later copy is refused", async () => {
    for (const claimBy of ['writeStatus', 'writeStatuses'] as const) {
      const ep = uniq('ep');
      const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', errorType: 'E', errorText: 'boom' });
      await f.store.writeStatus(error);
      const command = msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId });
      const expect = { lastMessageId: error.messageId, status: S.Failed, claim: true };
      if (claimBy === 'writeStatus') assert.equal((await f.store.writeStatus(command, expect)).outcome, 'written', claimBy);
      else {
        const [claimed] = await f.store.writeStatuses([{ input: command, expect }]);
        assert.ok(claimed?.ok && claimed.value.outcome === 'written', claimBy);
      }
      const claimedRow = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
      assert.equal(claimedRow.lastMessageId, command.messageId, claimBy);
      assert.deepEqual(claimedRow.appliedMessageIds, [error.messageId], `${claimBy}: the claim's id is not applied`);
      // A message enqueued before the claim, recorded after it (a Resolver behind on the session), then the command's
      // first record: applied, although the row's last message is no longer the claim's.
      const retry = msg(T.RetryRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId, retryCount: 1 });
      assert.equal((await f.store.writeStatus(retry)).outcome, 'written');
      assert.equal((await f.store.writeStatus(command)).outcome, 'written', `${claimBy}: the command's first record applies`);
      assert.deepEqual((await f.store.getStatusRow(ep, 'e', 's-1'))?.appliedMessageIds, [command.messageId, retry.messageId, error.messageId]);
      // Its answer, a later message, then the command's copy alone: refused, by either write.
      const answer = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', parentMessageId: command.messageId });
      await f.store.writeStatus(answer);
      const later = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', parentMessageId: `${command.messageId}~parked~replayed` });
      await f.store.writeStatus(later);
      const copy = await f.store.writeStatus(command);
      assert.equal(copy.outcome === 'ignored' && copy.reason, 'already-applied', claimBy);
      const [bulk] = await f.store.writeStatuses([{ input: command }]);
      assert.equal(bulk?.ok && bulk.value.outcome === 'ignored' && bulk.value.reason, 'already-applied', claimBy);
      const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
      assert.deepEqual([row.status, row.lastMessageId], [S.Completed, later.messageId], `${claimBy}: the row stays Completed`);
    }
  });

  test("a restore puts the restored message first, keeps the ids of the version it replaces but drops the claim it undoes; the claim's id then applies again", async () => {
    const ep = uniq('ep');
    const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', errorType: 'E', errorText: 'boom' });
    await f.store.writeStatus(error);
    const previous = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    const claim = msg(T.SkipRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId });
    // An older Manager's claim (no `claim: true`), which applied its id: the claim whose id a restore must drop (the
    // Manager's claim now keeps it out, the test above).
    await f.store.writeStatus(claim, { lastMessageId: error.messageId, status: previous.status });
    const restored = await f.store.restoreStatusRow(previous, { lastMessageId: claim.messageId });
    assert.ok(restored.outcome === 'written');
    assert.deepEqual(restored.previousMessageIds, [claim.messageId, error.messageId]);
    const row = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
    assert.equal(row.status, S.Failed);
    // The claim was undone, so its MessageId (derived from the message it answers: the Manager's retry claims the
    // same one, and a send in doubt may still reach the Resolver) is no copy of an applied message.
    assert.deepEqual(row.appliedMessageIds, [error.messageId]);
    // The operator's retry, claimed as the Manager does it now.
    const again = await f.store.writeStatus(claim, { lastMessageId: error.messageId, status: S.Failed, claim: true });
    assert.equal(again.outcome, 'written', 'the same claim applies again');
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.lastMessageId, claim.messageId);
  });
});
