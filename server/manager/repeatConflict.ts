// Whether a repeat of a claimed resubmit asks for what the claim sent. The command's MessageId is derived from the
// failure it answers, not from its payload, so a second resubmit of the same failure finds the first one's claim
// whatever it carries: a double click or a script retry (same request: a duplicate, nothing to send), or another
// operator's different edit (not a duplicate: answering 'duplicate' would silently drop that edit). The claimed
// row holds what was sent: its payload and event type are the edit after an edited resubmit (the claim writes
// them) and the stored ones after a plain one (the claim keeps them); the Resolver records the same values later.
// Once it has, the row alone cannot tell a plain claim from an edited one (both hold the command's payload under the
// command's id); without the receipt, the event's history can: what the claim sent against what was stored before.
// The history also says whether the claim's command reached the broker at all (commandRecorded): a repeat must not
// send a recorded command again, whatever the claim's age.
import { isDeepStrictEqual } from 'node:util';
import { AuditType, type AuditEntry, type HistoryEntry, type StatusRow } from '../../lib/store/index.ts';
import type { CommandSpec } from './commands.ts';

/**
 * Why this resubmit is not a repeat of the claim on `row` (undefined when it is one). `receipt` is the claim's
 * "sent" audit, when written: its type says whether the claim was an edit; without it the row does (an edited
 * claim stored its payload under its own id, see specOfClaim).
 */
export function resubmitMismatch(
  spec: Extract<CommandSpec, { kind: 'resubmit' }>,
  row: StatusRow,
  receipt: AuditEntry | null | undefined,
  /** What the event held before the claim (storedBeforeClaim), when the row alone cannot say. */
  before?: StoredRequest,
): string | undefined {
  const claimEdited = claimWasEdited(row, receipt, before);
  let differs: string | undefined;
  if (spec.edited) {
    // An edit identical to what was sent asks for the same thing, whoever sent it and however.
    const eventTypeId = spec.edited.eventTypeId ?? row.eventTypeId;
    if (eventTypeId !== row.eventTypeId) differs = 'with a different event type';
    else if (!isDeepStrictEqual(spec.edited.payload, row.payload)) differs = claimEdited ? 'with a different payload' : 'with the stored payload, not this edit';
  } else if (claimEdited) {
    // A plain resubmit asks for the stored payload; the claim sent an edit (the row no longer holds the original).
    differs = 'with an edited payload';
  }
  if (!differs) return undefined;
  const sent = receipt ? `was already sent (by ${receipt.auditor} at ${receipt.at}, ${differs})` : `is already being sent (claimed at ${row.updatedAt}, ${differs})`;
  return `a resubmit of this failure ${sent}; nothing was sent - reload the event`;
}

/** Whether the resubmit claimed on `row` sent an edit: its receipt says, else the row and the history before it. */
export function claimWasEdited(row: StatusRow, receipt: AuditEntry | null | undefined, before: StoredRequest | undefined): boolean {
  return receipt ? receipt.type === AuditType.ResubmitWithChanges : rowSaysEdited(row) && !sentAsStored(row, before);
}

export interface StoredRequest {
  payload: unknown;
  eventTypeId: string | null;
}

/**
 * The row's own evidence of an edited claim: its payload was written under the claim's id. Also true of a plain
 * claim once the Resolver has recorded the command (the command carries the payload it sent).
 */
export const rowSaysEdited = (row: StatusRow): boolean => row.requestMessageId === row.lastMessageId;

/** The claim sent what the event held before it: a plain resubmit's payload and event type (or an identical edit). */
function sentAsStored(row: StatusRow, before: StoredRequest | undefined): boolean {
  if (!before) return false;
  return isDeepStrictEqual(before.payload, row.payload) && (before.eventTypeId === null || before.eventTypeId === row.eventTypeId);
}

/**
 * The request the event held before the claim on `row`, from its history (enqueue order, every page: the claim's
 * command may be past the first): the last entry with a payload before the claim's own. Undefined when the Resolver
 * has not recorded the claim's command (the row's payload is then the claim's own write: an edit): the row's
 * evidence stands.
 */
export function storedBeforeClaim(history: readonly HistoryEntry[], row: StatusRow): StoredRequest | undefined {
  const mine = history.filter((h) => h.endpointId === row.endpointId && h.sessionId === row.sessionId);
  const at = mine.findIndex((h) => h.messageId === row.lastMessageId);
  if (at < 0) return undefined;
  const prior = mine.slice(0, at).findLast((h) => h.payload !== undefined);
  return prior ? { payload: prior.payload, eventTypeId: prior.eventTypeId } : undefined;
}

/**
 * The Resolver has recorded the command claimed on `row`: it is on the broker. Nothing downstream drops a second
 * copy for an endpoint without the inbox, so such a claim is never sent again (Reconcile's rule too,
 * server/reconcile/stuck.ts). `entry` is the event's history entry under the command's MessageId (a point read,
 * store.getHistory: found however long the history), null when there is none.
 */
export function commandRecorded(entry: HistoryEntry | null, row: StatusRow): boolean {
  return entry !== null && entry.messageId === row.lastMessageId && entry.endpointId === row.endpointId && entry.sessionId === row.sessionId;
}
