// The Manager's undo of a claim after a failed send leaves the Resolver's record of the command alone: a send that
// failed as far as the Manager can tell (timed out) may have landed, and once the Resolver has recorded the command
// the row has the claim's id and status too. Undoing that record would show the event as before while the command
// runs, and a retry would claim and send it again. Real emulator (the send fails: the Manager topic is removed) and
// the real Cosmos client on the embedded server; the Resolver's record is written, through the store as the Resolver
// writes it, right before the Manager's undo reaches the row.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { resolverRecordsBeforeRestore } from '../../lib/store/testing/resolverRecordsBeforeRestore.ts';
import { HttpError } from '../http.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { Manager } from './manager.ts';

const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let manager: Manager | undefined;

before(async () => {
  stack = await startConsoleTestStack('undoclaim');
});

after(async () => {
  await manager?.close();
  await stack?.close();
});

/** A Failed event (request, then an error) in its own session `S-<eventId>`. */
async function seedFailed(eventId: string): Promise<void> {
  const sessionId = `S-${eventId}`;
  const request = msg(MessageType.EventRequest, { endpointId: EP, eventId, sessionId, payload: { eventId } });
  const error = msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
  for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

test("a failed send's undo leaves the Resolver's record of the command as it is: only the claim itself is undone", async () => {
  const eventId = 'evt-undo-recorded';
  await seedFailed(eventId);
  // Right before the undo reaches the row, the Resolver records the claimed command: the broker did take the send
  // whose answer the Manager lost.
  const raced = resolverRecordsBeforeRestore(stack.store);
  manager = new Manager({ store: raced.store, client: stack.serviceBus.client });
  await stack.serviceBus.admin.deleteTopic(Topic.Manager);
  await assert.rejects(
    manager.execute(EP, eventId, { kind: 'skip' }, 'tester'),
    (e: unknown) => e instanceof HttpError && e.status === 503 && /moved on meanwhile and was left as it is/.test(e.detail),
  );
  assert.equal(raced.recorded.length, 1, 'the Resolver recorded the command right before the undo');
  const row = await stack.store.getStatusRow(EP, eventId, `S-${eventId}`);
  assert.deepEqual([row?.status, row?.messageType, row?.conditional], ['Pending', MessageType.SkipRequest, false], "the Resolver's record stays, not put back to Failed");
  const notSent = (await stack.store.listAudits(eventId)).items.filter((a) => a.type === 'CommandNotSent');
  assert.equal((JSON.parse(notSent[0]!.data!) as { claim: string }).claim, 'moved');
});
