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
// A handoff settlement's MessageId is derived the same way, so a second operator's completion or failure of the same
// handoff finds the first one's claim too: it is a repeat only when its text (a failure's error text, a completion's
// note) is the one sent (handoffMismatch). The claim row does not hold that text; the receipt does, and once the
// Resolver has recorded the command, its history entry.
import { isDeepStrictEqual } from 'node:util';
import { MessageType } from '@nimbus/sdk/contract';
import { AuditType, type AuditEntry, type HistoryEntry, type StatusRow } from '../../lib/store/index.ts';
import { inHistoryOrder } from '../historyOrder.ts';
import { auditorName, type Auditor, type CommandSpec } from './commands.ts';

type HandoffSpec = Extract<CommandSpec, { kind: 'handoffComplete' | 'handoffFail' }>;

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
 * The request the event held before the claim on `row`, from its history (the history's order, every page: the claim's
 * command may be past the first): the last entry with a payload before the claim's own, a handoff settlement's aside. Undefined when the Resolver
 * has not recorded the claim's command (the row's payload is then the claim's own write: an edit): the row's
 * evidence stands.
 */
export function storedBeforeClaim(history: readonly HistoryEntry[], row: StatusRow): StoredRequest | undefined {
  // The history's order (server/historyOrder.ts), not the store's: the claim's command stamped the same millisecond
  // as the request before it is still after it (repeatConflict.test.ts).
  const mine = inHistoryOrder(history.filter((h) => h.endpointId === row.endpointId && h.sessionId === row.sessionId));
  const at = mine.findIndex((h) => h.messageId === row.lastMessageId);
  if (at < 0) return undefined;
  // A handoff settlement's content is recorded on its entry but is not the event: the Resolver never makes it the
  // row's payload (resolver-worker/project.ts, settlesHandoff), so it is not what the claim replaced either.
  const prior = mine.slice(0, at).findLast((h) => h.payload !== undefined && h.messageType !== MessageType.HandoffCompletedRequest && h.messageType !== MessageType.HandoffFailedRequest);
  return prior ? { payload: prior.payload, eventTypeId: prior.eventTypeId } : undefined;
}

/**
 * The Resolver has recorded the command claimed on `row`: it is on the broker. Nothing downstream drops a second
 * copy for an endpoint without the inbox, so such a claim is never sent again (Reconcile's rule too,
 * server/reconcile/stuck.ts). `entry` is the event's history entry under the command's MessageId (a point read,
 * store.getHistory: found however long the history), null when there is none.
 */
export function commandRecorded(entry: HistoryEntry | null, row: Pick<StatusRow, 'lastMessageId' | 'endpointId' | 'sessionId'>): boolean {
  return entry !== null && entry.messageId === row.lastMessageId && entry.endpointId === row.endpointId && entry.sessionId === row.sessionId;
}

/**
 * A handoff settlement as the Resolver recorded it (`entry`, the command's own history entry): its text is what
 * was sent, where a repeat's request carries its own operator's. A failure's ErrorText is recorded as the entry's
 * errorText; a completion's body is recorded as its payload - the note the Manager wrapped ({ note, completedBy }),
 * or the external system's result, which has no note.
 */
export function recordedHandoff(spec: HandoffSpec, entry: HistoryEntry): HandoffSpec {
  if (spec.kind === 'handoffFail') return { kind: 'handoffFail', messageId: spec.messageId, errorText: entry.errorText ?? '', errorType: entry.errorType ?? undefined };
  const wrapped = wrappedNote(entry.payload);
  return wrapped ? { kind: 'handoffComplete', messageId: spec.messageId, note: wrapped.note } : { kind: 'handoffComplete', messageId: spec.messageId, result: entry.payload };
}

/** A completion's body as buildCommand wraps a note alone: { note, completedBy }. */
function wrappedNote(p: unknown): { note: string; completedBy: unknown } | undefined {
  const wrapped = typeof p === 'object' && p !== null && Object.keys(p).sort().join() === 'completedBy,note' && typeof (p as { note: unknown }).note === 'string';
  return wrapped ? (p as { note: string; completedBy: unknown }) : undefined;
}

/** A receipt written by a repeat for a command the Resolver recorded (manager.ts receipt(), `reconstructed`). */
function wasReconstructed(receipt: AuditEntry): boolean {
  if (!receipt.data) return false;
  try {
    return (JSON.parse(receipt.data) as { reconstructed?: unknown }).reconstructed === true;
  } catch {
    return false;
  }
}

/** The text a handoff settlement carries: a failure's error text, a completion's note (null: none). */
const textOf = (spec: HandoffSpec): string | null => (spec.kind === 'handoffFail' ? spec.errorText : spec.note || null);

/**
 * Who asks, as far as a refusal names people: a caller who may read the event's audit trail (`mayReadAudits`: a
 * Reader or above on the endpoint, every operator) sees the names there anyway and is told them; an Agent-only
 * caller (docs/agents.md) is not - it needs to know that its settlement conflicts and when the first was sent, not
 * which operator sent it - and is told "another principal", unless the name is its own (`auditor`).
 */
export interface Asker {
  auditor: Auditor;
  mayReadAudits: boolean;
}

/** Everyone who may read the audit trail: the names as recorded. */
const READS_AUDITS: Asker = { auditor: '', mayReadAudits: true };

/** Whether the entry is the asker's own: by the stable id when both have one (two principals may share a name). */
function isOwn(asker: Asker, entry: { auditor: string; auditorId?: string | undefined }): boolean {
  if (typeof asker.auditor !== 'string' && entry.auditorId !== undefined) return entry.auditorId === asker.auditor.id;
  return entry.auditor === auditorName(asker.auditor);
}

const nameFor = (asker: Asker, entry: { auditor: string; auditorId?: string | undefined }): string => (asker.mayReadAudits || isOwn(asker, entry) ? entry.auditor : 'another principal');

/**
 * Why this handoff settlement is not a repeat of the one claimed on `row` (undefined when it is one, or when what
 * the claim sent cannot be known): its error text or note differs from the one sent, which 'duplicate' would drop
 * without a word. A completion without a note is a repeat of any completion: it asks for nothing that would be lost.
 * What was sent is read from `receipt` (its comment is the error text or the note, null for none; a reconstructed
 * receipt is named as such - its auditor repeated the command, did not send it - and its null comment on a
 * completion means unknown, not "no note"), else from `recorded`, the command's history entry once the Resolver has recorded it
 * (recordedHandoff). Unknown, so no conflict: a claim neither receipted nor recorded (its text was never stored;
 * #repeat refuses it while it may be in flight and re-sends it with the repeat's text once abandoned), and a
 * recorded completion that sent a result (the note, if any, went into the lost receipt only). A completion's
 * result and a failure's error type are not compared: the receipt holds neither. The people it names are named as
 * `asker` may learn them (Asker).
 */
export function handoffMismatch(spec: HandoffSpec, row: StatusRow, receipt: AuditEntry | null | undefined, recorded: HistoryEntry | null, asker: Asker = READS_AUDITS): string | undefined {
  let sent: { text: string | null; by: string } | undefined;
  if (receipt && wasReconstructed(receipt)) {
    // Written by a repeat from the Resolver's record (the sender's receipt was lost): its auditor is the operator
    // who repeated, not the one who sent, and a completion recorded with a result kept no note (comment null: the
    // note, if any, is unknown - no conflict).
    if (receipt.comment || spec.kind === 'handoffFail') sent = { text: receipt.comment || null, by: `receipt reconstructed by ${nameFor(asker, receipt)} at ${receipt.at}` };
  } else if (receipt) {
    sent = { text: receipt.comment || null, by: `by ${nameFor(asker, receipt)} at ${receipt.at}` };
  } else if (recorded) {
    const r = recordedHandoff(spec, recorded);
    const completedBy = wrappedNote(recorded.payload)?.completedBy;
    // A failure's sender is named in its receipt only; a note's wrapping names the operator who completed it.
    const who = typeof completedBy === 'string' ? `, completed by ${nameFor(asker, { auditor: completedBy })}` : '';
    if (r.kind === 'handoffFail' || r.result === undefined || r.result === null)
      sent = { text: textOf(r), by: `claimed at ${row.updatedAt}, recorded by the Resolver at ${recorded.recordedAt}${who}` };
  }
  if (!sent) return undefined;
  // The receipt keeps at most 4,000 characters of an error text (the routes accept no more).
  const asked = spec.kind === 'handoffFail' ? spec.errorText.slice(0, 4000) : textOf(spec);
  // A completion repeated without a note drops nothing (an agent's or script's retry often carries none).
  if (asked === sent.text || asked === null) return undefined;
  const differs = spec.kind === 'handoffFail' ? 'with a different error text' : sent.text === null ? 'without a note' : 'with a different note';
  return `a handoff ${spec.kind === 'handoffFail' ? 'failure' : 'completion'} of this event was already sent (${sent.by}, ${differs}); nothing was sent - reload the event`;
}
