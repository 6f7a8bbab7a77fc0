// The payload an event's row should show once a command that never reached the handler is undone: the body of the
// request that was last delivered, found from the outcome the row is put back to. A refused command (the subscriber's
// CommandRefused notice) is undone by the Resolver's restore (resolver-worker/resolve.ts, restoreAfterRefusal); when the command was an
// edited resubmission, the Manager's claim and the Resolver's record of the command both wrote the edit as the row's
// payload, and a restore that wrote only the outcome's fields left the edit there, as if it had been sent. The edit
// belongs to the command's own history entry (and its receipt); the row keeps what the handler last got.
// Shared by the Resolver's restore and Reconcile's restore of a command's row (server/reconcile/stuck.ts).
import { isRequestType, MessageType, SELF, WireText, type MessageType as MessageTypeT } from '@nimbus/sdk/contract';
import type { HistoryEntry } from './schemas.ts';
import type { MessageStore } from './store.ts';

/** A handoff settlement command: its body is the settlement's content, not the event (resolver-worker/project.ts). */
const settlesHandoff = (type: MessageTypeT) => type === MessageType.HandoffCompletedRequest || type === MessageType.HandoffFailedRequest;

/**
 * The subscriber's CommandRefused notice: an answer (ErrorResponse) whose parent is the refused command. The row was
 * put back under the notice's id, so a later command names the notice as its parent; the command behind it never
 * reached the handler.
 */
const isRefusalNotice = (entry: HistoryEntry) => !isRequestType(entry.messageType as MessageTypeT) && entry.deadLetterReason === WireText.CommandRefused;

/** A request whose body is the event the handler was given (a retry or a continuation carries none). */
const carriesEvent = (entry: HistoryEntry) => {
  const type = entry.messageType as MessageTypeT;
  return entry.payload !== undefined && isRequestType(type) && !settlesHandoff(type);
};

export interface DeliveredPayload {
  payload: unknown;
  /** The request that carried it: its history entry says whether it is raw text that did not parse. */
  requestMessageId: string;
}

/**
 * Point reads at most: an outcome's parent is its request, a retry's its failure, then that request; each refusal
 * notice on the way costs two (the refused command, then what it answered), so a few refusals in a row still fit.
 */
const MAX_STEPS = 16;

/**
 * The body of the request `outcome` answers: the outcome itself when it is a request carrying the event (a request
 * recorded as dead-lettered is an outcome, listSessionResponses; its own body is what the handler got), else its
 * parent, or that entry's parent when the parent carried no body (a retry, a continuation), on the same endpoint and
 * session. Never a handoff settlement's content ({ note, completedBy } or the external result: not the event,
 * resolver-worker/project.ts), and never a refused command's: the walk goes from a CommandRefused notice past the
 * command it names to that command's parent (an edited resubmission refused, the row put back under the notice, then
 * answered again, must not hand its unsent edit to a later restore). Undefined when no such request is found within
 * MAX_STEPS point reads: the caller then leaves the row's payload as it is.
 */
export async function deliveredPayload(store: Pick<MessageStore, 'getHistory'>, outcome: HistoryEntry): Promise<DeliveredPayload | undefined> {
  let entry: HistoryEntry = outcome;
  // Set while `entry` is a command a notice says was refused: its body never reached the handler.
  let refused = false;
  for (let step = 0; step < MAX_STEPS; step++) {
    if (!refused && carriesEvent(entry)) return { payload: entry.payload, requestMessageId: entry.messageId };
    const notice = isRefusalNotice(entry);
    const parent = entry.parentMessageId;
    if (parent == null || parent === '' || parent === SELF) return undefined;
    const next = await store.getHistory(entry.eventId, parent);
    if (next === null || next.endpointId !== outcome.endpointId || next.sessionId !== outcome.sessionId) return undefined;
    entry = next;
    refused = notice;
  }
  return undefined;
}
