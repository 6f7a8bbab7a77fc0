// deliveredPayload's walk from the outcome a row is put back to, to the body the handler last got. Pure logic over a
// fake getHistory (the entries parsed by the store's own schema); the restores that use it run on the real Resolver
// and store in server/manager/refusedEdit.test.ts and server/reconcile/refused.test.ts. Two defects it holds, both
// failing before: the walk went through a CommandRefused notice into the refused command and returned its unsent
// edit, and it never accepted the outcome itself, so a dead-lettered request restored its parent's body (or none).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, SELF, WireText } from '@nimbus/sdk/contract';
import { deliveredPayload } from './deliveredPayload.ts';
import { historyEntrySchema, type HistoryEntry } from './schemas.ts';

type Spec = { messageId: string; messageType: string; parentMessageId: string | null } & Record<string, unknown>;

/** One event's history on endpoint `ep`, session `s`, and a getHistory over it that counts its reads. */
function history(...specs: Spec[]) {
  const byId = new Map<string, HistoryEntry>();
  for (const spec of specs) {
    byId.set(
      spec.messageId,
      historyEntrySchema.parse({ endpointId: 'ep', eventId: 'ev', sessionId: 's', enqueuedAt: '2026-01-01T00:00:00.000Z', recordedAt: '2026-01-01T00:00:00.000Z', id: spec.messageId, ...spec }),
    );
  }
  const reads: string[] = [];
  const store = {
    getHistory: async (eventId: string, messageId: string) => {
      reads.push(messageId);
      return eventId === 'ev' ? (byId.get(messageId) ?? null) : null;
    },
  };
  const entry = (id: string) => byId.get(id)!;
  return { store, entry, reads };
}

const refusal = { deadLetterReason: WireText.CommandRefused, deadLetterErrorDescription: 'refused' };

test('an outcome reached through a CommandRefused notice: the body before the refused edit, never the edit', async () => {
  // R0 handed off (H1); the edited resubmission E1 was refused (notice N1, the row put back to H1 under N1); the
  // handoff was then failed (C, naming N1) and the subscriber answered F. The row shows F; a later refused command
  // restores it to F. Before, the walk went F -> C (settlement) -> N1 -> E1 and returned E1's edit.
  const h = history(
    { messageId: 'r0', messageType: T.EventRequest, parentMessageId: SELF, payload: { v: 0 } },
    { messageId: 'h1', messageType: T.PendingHandoffResponse, parentMessageId: 'r0' },
    { messageId: 'mgr-e1', messageType: T.ResubmissionRequest, parentMessageId: 'h1', payload: { v: 'edit never delivered' } },
    { messageId: 'n1', messageType: T.ErrorResponse, parentMessageId: 'mgr-e1', ...refusal },
    { messageId: 'mgr-c', messageType: T.HandoffFailedRequest, parentMessageId: 'n1', payload: { ErrorText: 'x' } },
    { messageId: 'f', messageType: T.ErrorResponse, parentMessageId: 'mgr-c', errorText: 'failed' },
  );
  assert.deepEqual(await deliveredPayload(h.store, h.entry('f')), { payload: { v: 0 }, requestMessageId: 'r0' });
});

test('several refusals in a row are all stepped over', async () => {
  // Three edits refused one after another, each naming the previous notice (the row's last message id after each
  // restore): nine reads from F to R0, more than the walk's old bound of eight.
  const h = history(
    { messageId: 'r0', messageType: T.EventRequest, parentMessageId: SELF, payload: { v: 0 } },
    { messageId: 'h1', messageType: T.PendingHandoffResponse, parentMessageId: 'r0' },
    { messageId: 'mgr-e1', messageType: T.ResubmissionRequest, parentMessageId: 'h1', payload: { v: 1 } },
    { messageId: 'n1', messageType: T.ErrorResponse, parentMessageId: 'mgr-e1', ...refusal },
    { messageId: 'mgr-e2', messageType: T.ResubmissionRequest, parentMessageId: 'n1', payload: { v: 2 } },
    { messageId: 'n2', messageType: T.ErrorResponse, parentMessageId: 'mgr-e2', ...refusal },
    { messageId: 'mgr-e3', messageType: T.ResubmissionRequest, parentMessageId: 'n2', payload: { v: 3 } },
    { messageId: 'n3', messageType: T.ErrorResponse, parentMessageId: 'mgr-e3', ...refusal },
    { messageId: 'mgr-c', messageType: T.HandoffFailedRequest, parentMessageId: 'n3', payload: { ErrorText: 'x' } },
    { messageId: 'f', messageType: T.ErrorResponse, parentMessageId: 'mgr-c', errorText: 'failed' },
  );
  assert.deepEqual(await deliveredPayload(h.store, h.entry('f')), { payload: { v: 0 }, requestMessageId: 'r0' });
  assert.equal(h.reads.length, 9);
});

test('a delivered resubmission after a refusal is what the handler got', async () => {
  // E1 refused (N1), then E2 (naming N1) delivered and failed: E2's edit was delivered, so it is the body.
  const h = history(
    { messageId: 'r0', messageType: T.EventRequest, parentMessageId: SELF, payload: { v: 0 } },
    { messageId: 'f0', messageType: T.ErrorResponse, parentMessageId: 'r0' },
    { messageId: 'mgr-e1', messageType: T.ResubmissionRequest, parentMessageId: 'f0', payload: { v: 1 } },
    { messageId: 'n1', messageType: T.ErrorResponse, parentMessageId: 'mgr-e1', ...refusal },
    { messageId: 'mgr-e2', messageType: T.ResubmissionRequest, parentMessageId: 'n1', payload: { v: 2 } },
    { messageId: 'f2', messageType: T.ErrorResponse, parentMessageId: 'mgr-e2' },
  );
  assert.deepEqual(await deliveredPayload(h.store, h.entry('f2')), { payload: { v: 2 }, requestMessageId: 'mgr-e2' });
});

test('a dead-lettered publisher request as the outcome: its own body', async () => {
  // listSessionResponses returns a request recorded as dead-lettered as an outcome. Before, the walk skipped the
  // outcome itself and, its parent being SELF, found nothing: the refused edit stayed on the row.
  const dl = { deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'x' };
  const h = history({ messageId: 'r0', messageType: T.EventRequest, parentMessageId: SELF, payload: { v: 0 }, ...dl });
  assert.deepEqual(await deliveredPayload(h.store, h.entry('r0')), { payload: { v: 0 }, requestMessageId: 'r0' });
  assert.deepEqual(h.reads, []);
});

test('a dead-lettered edited resubmission as the outcome: its own edit, which was delivered', async () => {
  // Before, the walk skipped E1 and returned R0's body, though the row that went DeadLettered showed E1's.
  const dl = { deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'x' };
  const h = history(
    { messageId: 'r0', messageType: T.EventRequest, parentMessageId: SELF, payload: { v: 0 } },
    { messageId: 'f0', messageType: T.ErrorResponse, parentMessageId: 'r0' },
    { messageId: 'mgr-e1', messageType: T.ResubmissionRequest, parentMessageId: 'f0', payload: { v: 1 }, ...dl },
  );
  assert.deepEqual(await deliveredPayload(h.store, h.entry('mgr-e1')), { payload: { v: 1 }, requestMessageId: 'mgr-e1' });
});

test('unchanged: a response answers its request, a retry is followed to the request, a settlement is never the body', async () => {
  const h = history(
    { messageId: 'r0', messageType: T.EventRequest, parentMessageId: SELF, payload: { v: 0 } },
    { messageId: 'f0', messageType: T.ErrorResponse, parentMessageId: 'r0' },
    { messageId: 'retry', messageType: T.RetryRequest, parentMessageId: 'f0' },
    { messageId: 'ok', messageType: T.ResolutionResponse, parentMessageId: 'retry' },
    { messageId: 'h1', messageType: T.PendingHandoffResponse, parentMessageId: 'r0' },
    { messageId: 'mgr-done', messageType: T.HandoffCompletedRequest, parentMessageId: 'h1', payload: { note: 'n', completedBy: 'op' } },
    { messageId: 'done', messageType: T.ResolutionResponse, parentMessageId: 'mgr-done' },
  );
  assert.deepEqual(await deliveredPayload(h.store, h.entry('f0')), { payload: { v: 0 }, requestMessageId: 'r0' });
  assert.deepEqual(await deliveredPayload(h.store, h.entry('ok')), { payload: { v: 0 }, requestMessageId: 'r0' });
  assert.deepEqual(await deliveredPayload(h.store, h.entry('done')), { payload: { v: 0 }, requestMessageId: 'r0' });
  // A dead-lettered settlement as the outcome: its content is not the event either.
  const settled = { ...h.entry('mgr-done'), deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'x' };
  assert.deepEqual(await deliveredPayload(h.store, settled), { payload: { v: 0 }, requestMessageId: 'r0' });
});

test('unchanged: a parent on another session, or none found, gives undefined', async () => {
  const h = history(
    { messageId: 'r0', messageType: T.EventRequest, parentMessageId: SELF, payload: { v: 0 }, sessionId: 'other' },
    { messageId: 'f0', messageType: T.ErrorResponse, parentMessageId: 'r0' },
    { messageId: 'f1', messageType: T.ErrorResponse, parentMessageId: 'missing' },
    { messageId: 'n1', messageType: T.ErrorResponse, parentMessageId: 'missing', ...refusal },
    { messageId: 'f2', messageType: T.ErrorResponse, parentMessageId: 'n1' },
  );
  assert.equal(await deliveredPayload(h.store, h.entry('f0')), undefined);
  assert.equal(await deliveredPayload(h.store, h.entry('f1')), undefined);
  // A notice whose refused command is not in the history: nothing to step over to.
  assert.equal(await deliveredPayload(h.store, h.entry('f2')), undefined);
});
