// A status row says whether its version was written by a conditional write (`conditional`: the Manager's claim,
// Reconcile's repair) and a write reports that of the version it replaced (`previousConditional`): how the
// Resolver tells its first record of a console command (over the claim, under the same id) from a copy of that
// record (resolver-worker/outcomeMetrics.ts). On the embedded Cosmos server, through both row-write paths.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { rowFromEntry } from '../../server/reconcile/stuck.ts';
import { statusRowId } from './ids.ts';
import { statusRowSchema } from './schemas.ts';
import { CONTAINERS } from './store.ts';
import { msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f.close();
});

test("a claim's version is conditional, the record of its command is not, and each write reports the version it replaced", async () => {
  // The Manager's claim as it is written now (`claim: true`: the command's id is not applied), and one of an older
  // Manager, which applied it: for that one only this mark tells the command's first record from its copy.
  for (const claimed of [true, false]) {
    const ep = uniq('ep');
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
    const created = await f.store.writeStatus(request);
    assert.ok(created.outcome === 'written');
    assert.equal(created.previousConditional, undefined, 'a create replaces nothing');
    const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
    await f.store.writeStatus(error);
    // The claim (conditional), then the Resolver's record of the command under the same id, then a copy of it.
    const command = msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId, from: 'Manager' });
    const claim = await f.store.writeStatus(command, { lastMessageId: error.messageId, status: 'Failed', claim: claimed });
    assert.ok(claim.outcome === 'written');
    assert.equal(claim.previousConditional, false, "the error response's version was a message's record");
    assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.conditional, true);
    const record = await f.store.recordOutcome({ history: { ...command, enqueuedAt: new Date().toISOString() }, status: command });
    assert.ok(record.status.outcome === 'written');
    assert.equal(record.status.previousConditional, true, `claim: ${claimed}: it replaced the claim`);
    const [copy] = await f.store.writeStatuses([{ input: command }]);
    assert.ok(copy?.ok && copy.value.outcome === 'written');
    assert.equal(copy.value.previousConditional, false, `claim: ${claimed}: a copy replaces the command's own record`);
  }
});

test("a restore that asks for a conditional version undoes the claim, not the record of its command (the Manager's undo)", async () => {
  const ep = uniq('ep');
  const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
  await f.store.writeStatus(request);
  const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
  await f.store.writeStatus(error);
  const previous = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
  const command = msg(T.SkipRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId, from: 'Manager' });
  const undo = { status: 'Pending' as const, lastMessageId: command.messageId, conditional: true };
  await f.store.writeStatus(command, { lastMessageId: error.messageId, status: 'Failed', claim: true });
  // The Resolver records the command (same id, same status, unconditional): the undo leaves it.
  await f.store.writeStatus(command);
  const kept = await f.store.restoreStatusRow(previous, undo);
  assert.deepEqual([kept.outcome, kept.outcome === 'ignored' && kept.reason], ['ignored', 'precondition-failed']);
  assert.deepEqual([(await f.store.getStatusRow(ep, 'e', 's-1'))?.status, (await f.store.getStatusRow(ep, 'e', 's-1'))?.conditional], ['Pending', false]);
  // A version that does not say how it was written (a claim of an older writer) is still undone.
  const item = f.store.database.container(CONTAINERS.events).item(statusRowId('e', 's-1'), [ep, 'e']);
  const { resource } = await item.read<Record<string, unknown>>();
  delete resource!.conditional;
  await item.replace(resource!);
  const undone = await f.store.restoreStatusRow(previous, undo);
  assert.equal(undone.outcome, 'written');
  assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.status, 'Failed');
});

test("a restore puts back a message's own record (unconditional); the Resolver's restore after a refusal is conditional", async () => {
  const ep = uniq('ep');
  const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e' });
  await f.store.writeStatus(request);
  const error = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
  await f.store.recordOutcome({ history: { ...error, enqueuedAt: new Date().toISOString() } as never, status: error });
  const command = msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', parentMessageId: error.messageId, from: 'Manager' });
  await f.store.writeStatus(command, { lastMessageId: error.messageId, status: 'Failed', claim: true });
  // Reconcile restores an abandoned claim to the version the error response wrote, rebuilt from its history entry
  // over the claim's row: the error response's own record, not the claim's conditional mark.
  const claim = (await f.store.getStatusRow(ep, 'e', 's-1'))!;
  assert.equal(claim.conditional, true);
  const entry = (await f.store.getHistory('e', error.messageId))!;
  const restored = await f.store.restoreStatusRow(rowFromEntry(claim, entry), { status: 'Pending', lastMessageId: command.messageId });
  assert.ok(restored.outcome === 'written');
  assert.deepEqual([restored.row.status, restored.row.lastMessageId, restored.row.conditional], ['Failed', error.messageId, false]);
  assert.equal((await f.store.getStatusRow(ep, 'e', 's-1'))?.conditional, false);
  // The Resolver's restore after a refusal (resolver-worker/resolve.ts) writes with `expect`, under the notice's id.
  await f.store.writeStatus(command, { lastMessageId: error.messageId, status: 'Failed', claim: true });
  const notice = { ...error, messageId: uniq('notice') };
  const afterRefusal = await f.store.writeStatus(notice, { lastMessageId: command.messageId });
  assert.ok(afterRefusal.outcome === 'written');
  assert.equal(afterRefusal.row.conditional, true);
});

test('the field reads as absent on a row of an older writer or when damaged: the row stays readable', () => {
  const field = statusRowSchema.shape.conditional;
  assert.equal(field.parse(undefined), undefined);
  assert.equal(field.parse(true), true);
  for (const damaged of ['yes', 1, null, {}]) assert.equal(field.parse(damaged), undefined, JSON.stringify(damaged));
});
