// Reconcile's repair path for rows that nothing will move (issue "no event stuck"): a row is Pending because of a
// control request, and no answer will ever come.
//   - claim: the Manager claimed the row for a command (Pending, its MessageId derived from the message it answers)
//     but there is no "sent" receipt and the Resolver never recorded the command: the send failed and could not
//     be undone, or the console died between claim and receipt. Repair: re-send (same MessageId; resubmit and skip
//     only, a handoff settlement's text was never stored) or restore the row to the version the claim replaced.
//   - unanswered: the Resolver recorded a control request (ContinuationRequest, a handoff command, a resubmission
//     or skip) but no response answers it long after: a v4 subscriber completes a ContinuationRequest without an
//     answer, an old one ignores a handoff command on a session its event does not block. Repair: restore the row
//     to the version before the request.
//   - refused: the only answer to the request is the subscriber's CommandRefused notice. A refusal is not an
//     answer: the refused command changed nothing, and the Resolver puts the row back when it records the notice
//     (resolver-worker/resolve.ts, restoreAfterRefusal), so a row still Pending long after is one whose restore was
//     lost (the notice dead-lettered after its history write, or no earlier state found then). Repair: that restore.
//     The request may be a Manager claim whose command the Resolver never recorded (its copy dead-lettered), with
//     or without a "sent" receipt: the refusal proves it was sent, so it is this kind, not a claim to re-send.
//   - parked: the request's only answer is a deferral (the endpoint parked it behind another event's block). The
//     Resolver's guard keeps a deferral off a command's row, so the row reads Pending until the parked copy is
//     replayed and answered, which never happens if the blocker is never settled or the copy was lost. Listed with
//     no repair: the operator acts on the blocking event (`why` names it), and the parked command runs when the
//     session is released. A restore was offered before, and undid the one thing that stops a second copy: the
//     restored row is the failure the command answered, so a Resubmit derived the same MessageId, the row was no
//     claim for the Manager's repeat check, and the same command went out again, parked under the same id and
//     replayed twice on release (refused.test.ts).
// The version to restore is taken from the event's history (the message the row showed before: the request's
// ParentMessageId), never from the request; the write is a compare-and-swap on the row version the operator saw.
import {
  CONTROL_REQUEST_TYPES,
  MessageType,
  ResolutionStatus,
  resultingStatus,
  WireText,
  type MessageType as MessageTypeT,
} from '@nimbus/sdk/contract';
import { AuditType, type HistoryEntry, type MessageStore, type StatusRow, type StatusRowSummary } from '../../lib/store/index.ts';
import { deliveredPayload } from '../../lib/store/deliveredPayload.ts';
import { log } from '../log.ts';
import { CLAIM_GRACE_MS, type Manager } from '../manager/manager.ts';
import { isManagerClaim } from '../manager/commands.ts';
import { specOfClaim } from '../manager/manager.ts';
import { commandRecorded } from '../manager/repeatConflict.ts';
import { answersOnce, isAnswer, isLaterResponse, isSettling, isStateBearing, laterResponsesOnce, type LaterResponses, type RowAnswers } from './answers.ts';
import { HISTORY_CAP, readEventHistory, type EventHistoryRead } from './history.ts';
import { inHistoryOrder } from '../historyOrder.ts';

/** How long a recorded control request may wait for its answer before Reconcile calls it unanswered. */
export const UNANSWERED_GRACE_MS = 10 * 60_000;

export type RepairAction = 'resend' | 'restore';

/**
 * Why a parked command is offered no repair. A restore would put back the failure the command answered; a Resubmit
 * of it derives the same MessageId as the command still parked, and would send that command a second time.
 */
export const PARKED_NO_REPAIR =
  'No repair is offered: the command is recorded and still parked, and putting the row back to the state before it would let the same command be sent again, to run twice when the session is released.';

/**
 * claim: a Manager claim with no receipt, its command never recorded and not refused; unanswered: a recorded
 * request nobody answered; refused: a recorded request, or a Manager claim whose command was never recorded, that
 * the subscriber refused, whose restore by the Resolver was lost; parked: a request, or such a claim, whose only
 * answer is a deferral (listed with no repair: PARKED_NO_REPAIR).
 */
export type StuckKind = 'claim' | 'unanswered' | 'refused' | 'parked';

export interface StuckRow {
  /**
   * A StuckKind, or `unreadable`: the row's message has an answer in history that no longer parses, so Reconcile
   * can neither re-apply it (stale) nor call the row unanswered; listed with why and no repair (./reconcile.ts).
   */
  kind: StuckKind | 'unreadable';
  endpointId: string;
  eventId: string;
  sessionId: string;
  eventTypeId: string | null;
  /** The row version a repair is conditional on. */
  rowMessageId: string;
  rowMessageType: string | null;
  rowUpdatedAt: string;
  /** Why nothing will move it. */
  why: string;
  /**
   * What each possible repair does; the first is the one proposed. Empty when none can be offered (the state to
   * restore is unknown on an event past the history cap, and a re-send is not possible; or a parked command, which
   * is never repaired): the row is still listed, so the operator sees it and `why` says why nothing is offered.
   */
  repairs: Array<{ action: RepairAction; does: string }>;
  /** The version a restore writes back (from history), when known. */
  restoresTo: { status: string; messageType: string; messageId: string } | null;
}

export interface StuckOptions {
  now: Date;
  claimGraceMs?: number;
  unansweredGraceMs?: number;
  /** The cap `history` was read with (readEventHistory's); a test passes its small one. */
  historyCap?: number;
}

/** The history entry whose outcome the row showed before `row`'s own message: what a restore writes back. */
export function previousEntry(row: Pick<StatusRowSummary, 'sessionId' | 'lastMessageId' | 'parentMessageId' | 'enqueuedAt'>, history: HistoryEntry[]): HistoryEntry | undefined {
  const own = history.filter((h) => h.sessionId === row.sessionId && h.messageId !== row.lastMessageId);
  const parent = own.find((h) => h.messageId === row.parentMessageId && isStateBearing(h));
  if (parent) return parent;
  // No parent in history (a ContinuationRequest names none we keep): the newest state-bearing entry before it, by
  // the history's order (server/historyOrder.ts): of a request and its answer stamped the same millisecond, the
  // answer, not whichever the store listed first (historyTies.test.ts).
  const before = own.filter((h) => isStateBearing(h) && (row.enqueuedAt == null || h.enqueuedAt <= row.enqueuedAt));
  return inHistoryOrder(before).at(-1);
}

/**
 * previousEntry on the real store: `history` is capped (oldest first), so on a long event the parent - the state
 * the control request answered, among the newest entries - may be cut off, and the fallback would pick one of
 * the oldest states. A parent not in `history` is read by id (this row's endpoint and session only). With no
 * parent to go by, the fallback (the newest state before the request) is only trusted when the list is complete
 * (the read's own `cutOff`: no second paging to learn it): `cutOff` says it was not, and nothing is restored.
 */
export async function entryToRestore(
  store: MessageStore,
  row: Pick<StatusRowSummary, 'endpointId' | 'eventId' | 'sessionId' | 'lastMessageId' | 'parentMessageId' | 'enqueuedAt'>,
  read: EventHistoryRead,
): Promise<{ entry: HistoryEntry | undefined; cutOff: boolean }> {
  const history = read.entries;
  const inHistory = row.parentMessageId != null && history.some((h) => h.messageId === row.parentMessageId);
  if (row.parentMessageId != null && !inHistory) {
    const parent = await store.getHistory(row.eventId, row.parentMessageId);
    if (parent && parent.endpointId === row.endpointId && parent.sessionId === row.sessionId && parent.messageId !== row.lastMessageId && isStateBearing(parent)) return { entry: parent, cutOff: false };
  }
  if (!inHistory && read.cutOff) return { entry: undefined, cutOff: true };
  return { entry: previousEntry(row, history), cutOff: false };
}

/**
 * What the row's own message got from its endpoint: an answer, only deferrals (the newest), only a refusal (the
 * notice; or, when every notice found no longer parses, the id of the newest damaged one), or nothing.
 */
type Reply = { kind: 'answered' } | { kind: 'parked'; deferral: HistoryEntry } | { kind: 'refused'; notice: HistoryEntry | { unreadable: string } } | { kind: 'none' };

/**
 * A deferral that did not settle (a dead-lettered one does): the endpoint parked the message. Over a control
 * request's row the stale-write guard refuses it (not request stage), so the row never shows it; the row stays
 * Pending from the request until the parked copy is replayed and answered. Counted as answered, such a row was
 * listed nowhere (the stale check has nothing the guard lets onto it): it is listed `parked` instead.
 */
const isParking = (h: HistoryEntry) => h.messageType === MessageType.DeferralResponse && !isSettling(h);

/** `answers` (oldest first) as a Reply: only deferrals is `parked` (the newest), any other answer `answered`. */
function answeredOrParked(answers: HistoryEntry[]): Reply | undefined {
  if (answers.length === 0) return undefined;
  return answers.every(isParking) ? { kind: 'parked', deferral: answers[answers.length - 1]! } : { kind: 'answered' };
}

/** How many of the newest refusal notices replyTo reads to order a same-millisecond tie (more tied than this: none real). */
const REFUSALS_READ = 5;

/**
 * Whether a response on the row's endpoint and session answers the row's own message. `history` is capped (oldest
 * first) and the answer, newer than the request, is among the entries a long event's list lacks: an answer not in
 * it is looked up by the link itself (`answers`, the row's one read of them, which the stale check may have made
 * already; it returns answers only, so no number of newer entries that are none hides one). A stored answer that no
 * longer parses still counts: the endpoint did answer, and a restore would undo what it did. An entry naming the
 * message is an answer by the stale check's rule only (isAnswer): a history-only entry is none (before, any entry
 * but a notice was, so a command that got only the deferred processor's dead-lettered trigger or a refused
 * unauthorised command naming it was "answered", and the row listed nowhere). A subscriber's notice says the
 * command changed nothing: with no answer, the newest CommandRefused one is returned as the refusal, so the row is
 * listed as refused rather than not at all. A whole list (not cut, all parsed) decides alone; otherwise the answers
 * and the refusal are each a query of their own, so neither is hidden however many entries name the message.
 */
async function replyTo(store: MessageStore, row: Pick<StatusRowSummary, 'endpointId' | 'eventId' | 'lastMessageId' | 'sessionId'>, read: EventHistoryRead, answers: () => Promise<RowAnswers>): Promise<Reply> {
  // In the history's order (server/historyOrder.ts), not the store's: of two entries stamped the same millisecond,
  // the newest deferral or refusal named is the one last in that order - recorded last, or by message id when one
  // receive batch recorded both (historyTies.test.ts). The refusal query below is put in the same order.
  const listed = inHistoryOrder(read.entries.filter((h) => h.parentMessageId === row.lastMessageId && h.sessionId === row.sessionId));
  const inList = answeredOrParked(listed.filter(isAnswer));
  if (inList && (inList.kind === 'answered' || (!read.cutOff && read.corrupt === 0))) return inList;
  if (!read.cutOff && read.corrupt === 0) {
    // The whole history was read and parsed: it holds every entry naming the message, so neither query can add one
    // (as settledLater and unreadableAnswer judge). The newest refusal is the last, the list being oldest first.
    const notice = listed.findLast((h) => h.deadLetterReason === WireText.CommandRefused);
    return notice ? { kind: 'refused', notice } : { kind: 'none' };
  }
  const { items, corrupt } = await answers();
  if (corrupt.length > 0) return { kind: 'answered' };
  // The list's answers (only deferrals, or it would have decided) with the query's, each once, oldest first.
  const byId = new Map([...listed, ...items].filter(isAnswer).map((h) => [h.messageId, h]));
  const found = answeredOrParked(inHistoryOrder([...byId.values()]));
  if (found) return found;
  // The query orders by enqueuedAt alone, so its newest of notices stamped one millisecond was whichever the database
  // listed first: a few are read and the last in the history's order named, as the whole list's findLast does.
  const refusals = await store.listHistoryRefusals(row.eventId, row.endpointId, row.sessionId, row.lastMessageId, REFUSALS_READ);
  const notice = inHistoryOrder(refusals.items).at(-1);
  if (notice) return { kind: 'refused', notice };
  // A notice the query matched by its link and reason but that no longer parses still proves the refusal (before, it
  // was listed nowhere or as unanswered / a failed send): listed refused, its document named.
  const [damaged] = refusals.corrupt;
  return damaged ? { kind: 'refused', notice: { unreadable: damaged.id } } : { kind: 'none' };
}

/**
 * Whether a settling response on the row's endpoint and session was enqueued after the row's message without
 * answering it (a redelivered original answered after a skip): the event moved on, so the row is stale (the stale
 * check re-applies that response), not stuck, and a restore would write an older state over a real outcome. Looked
 * for in the list, and - when the list cannot be trusted alone (cut at the cap, or holding entries that do not
 * parse) - by the row's one read of its later responses (`later`, shared with the stale check), so a restore's
 * apply, which re-checks here, refuses what the preview lists as stale. A later entry that no longer parses counts,
 * as an unreadable answer does (isAnswered): it may have settled the event, and a restore would undo that.
 */
async function settledLater(row: Pick<StatusRowSummary, 'sessionId' | 'enqueuedAt' | 'parentMessageId'>, read: EventHistoryRead, later: () => Promise<LaterResponses>): Promise<boolean> {
  if (row.enqueuedAt == null) return false;
  if (read.entries.some((h) => isLaterResponse(row, h))) return true;
  if (!read.cutOff && read.corrupt === 0) return false;
  const { items, corrupt } = await later();
  return items.length > 0 || corrupt.length > 0;
}

/** `current` as it was when `entry` last wrote it: the outcome fields from the entry, the event's fields kept. */
export function rowFromEntry(current: StatusRow, entry: HistoryEntry): StatusRow {
  const { status, subStatus } = resultingStatus(entry.messageType as MessageTypeT, entry.deadLetterErrorDescription);
  return {
    ...current,
    status,
    subStatus: subStatus ?? null,
    messageType: entry.messageType as MessageTypeT,
    lastMessageId: entry.messageId,
    parentMessageId: entry.parentMessageId,
    originatingMessageId: entry.originatingMessageId ?? current.originatingMessageId,
    correlationId: entry.correlationId ?? current.correlationId,
    from: entry.from,
    to: entry.to,
    enqueuedAt: entry.enqueuedAt,
    errorText: entry.errorText,
    errorType: entry.errorType,
    deadLetterReason: entry.deadLetterReason,
    deadLetterErrorDescription: entry.deadLetterErrorDescription,
    retryCount: entry.retryCount,
    handoffReason: entry.handoffReason,
    externalJobId: entry.externalJobId,
    expectedBy: entry.expectedBy,
    blockedBy: null,
    // The entry's message's own record, not the claim's conditional write this is built over (docs/store.md).
    conditional: false,
  };
}

// isManagerClaim lives beside commandMessageId (manager/commands.ts): the Manager asks it too (a settlement refused
// while another command's claim is unsent is not "settled"), and manager.ts importing this file would be a cycle.
export { isManagerClaim };

/** The row a finding is about, and the version a repair of it is conditional on (stale, stuck and unreadable rows). */
export function findingRow(row: StatusRowSummary): Pick<StuckRow, 'endpointId' | 'eventId' | 'sessionId' | 'eventTypeId' | 'rowMessageId' | 'rowMessageType' | 'rowUpdatedAt'> {
  return {
    endpointId: row.endpointId,
    eventId: row.eventId,
    sessionId: row.sessionId,
    eventTypeId: row.eventTypeId,
    rowMessageId: row.lastMessageId,
    rowMessageType: row.messageType,
    rowUpdatedAt: row.updatedAt,
  };
}

const describe = (h: HistoryEntry) => `${resultingStatus(h.messageType as MessageTypeT, h.deadLetterErrorDescription).status} (${h.messageType} ${h.messageId})`;

/**
 * Whether `row` is stuck, and how, by the checks that cost little: its age first (no read at all for a row still
 * within its grace), then whether its own message was recorded (a point read, Manager claims only), then the
 * answer (a query on its link) and, for an unrecorded claim neither answered nor refused, the receipt (a point read).
 * Nothing about what a repair would restore is read here: entryToRestore can make a point read, so it runs only for
 * a row this says is stuck.
 */
async function stuckKind(
  store: MessageStore,
  row: StatusRowSummary,
  read: EventHistoryRead,
  answers: () => Promise<RowAnswers>,
  o: StuckOptions,
  age: number,
): Promise<{ kind: StuckKind; notice?: HistoryEntry | { unreadable: string }; recorded: boolean } | undefined> {
  const claim = isManagerClaim(row);
  const claimDue = claim && age >= (o.claimGraceMs ?? CLAIM_GRACE_MS); // before it, a send may be in progress
  const answerDue = age >= (o.unansweredGraceMs ?? UNANSWERED_GRACE_MS);
  if (!claimDue && !answerDue) return undefined;
  // Recorded: the row's own message is in the history. `history` is capped (oldest first), so on a long event the
  // newest entries - a claim's command among them - may be cut off; a Manager claim not found there is decided by
  // a point read of its entry, as the Manager's repeat does (commandRecorded): "resend" for a command the Resolver
  // recorded would put a second copy on the wire.
  const recorded =
    read.entries.some((h) => h.messageId === row.lastMessageId) ||
    (claim && commandRecorded(await store.getHistory(row.eventId, row.lastMessageId), row));
  if (claim && !recorded) {
    if (!claimDue) return undefined;
    // The endpoint's reply decides before the receipt: the Resolver can record the subscriber's refusal (or answer)
    // without ever recording the command (its copy dead-lettered), and either proves the command was sent. Refused:
    // the row is stuck whatever the receipt says (with one, it was taken for "sent; the Resolver is behind" and
    // never listed; without one, offered a re-send of a command the subscriber refuses). Answered: a restore would
    // undo what the endpoint did; the row is stale instead (./reconcile.ts, answers-row: any answer the row can show).
    const reply = await replyTo(store, row, read, answers);
    if (reply.kind === 'answered') return undefined;
    if (reply.kind === 'refused') return answerDue ? { kind: 'refused', notice: reply.notice, recorded } : undefined;
    if (reply.kind === 'parked') return answerDue ? { kind: 'parked', notice: reply.deferral, recorded } : undefined;
    if (await store.getAudit(row.eventId, row.lastMessageId)) return undefined; // sent; the Resolver is behind
    return { kind: 'claim', recorded };
  }
  if (!recorded || !answerDue) return undefined;
  const reply = await replyTo(store, row, read, answers);
  if (reply.kind === 'answered') return undefined;
  if (reply.kind === 'parked') return { kind: 'parked', notice: reply.deferral, recorded };
  return reply.kind === 'refused' ? { kind: 'refused', notice: reply.notice, recorded } : { kind: 'unanswered', recorded };
}

/**
 * Whether `row` (Pending, not a handoff park, not stale) is stuck, with why and what a repair would do. The cheap
 * checks decide first (stuckKind); the state a restore would write back is read only for a row they call stuck.
 * Undefined when it is not (or not yet) stuck. `history`: the row's endpoint's capped history as read for it;
 * `answers`: the row's answers reader, shared with the stale check so the row costs one query for them at most;
 * `later`: its later-responses reader, shared the same way (a row settled after its message is stale, not stuck).
 */
export async function stuckFinding(
  store: MessageStore,
  row: StatusRowSummary,
  history: EventHistoryRead,
  o: StuckOptions,
  answers: () => Promise<RowAnswers> = answersOnce(store, row),
  later: () => Promise<LaterResponses> = laterResponsesOnce(store, row),
): Promise<StuckRow | undefined> {
  return (await assessStuck(store, row, history, o, answers, later))?.finding;
}

/** stuckFinding with the entry a restore writes back, so an apply uses the one the check found (no second search). */
async function assessStuck(
  store: MessageStore,
  row: StatusRowSummary,
  read: EventHistoryRead,
  o: StuckOptions,
  answers: () => Promise<RowAnswers>,
  later: () => Promise<LaterResponses>,
): Promise<{ finding: StuckRow; previous: HistoryEntry | undefined } | undefined> {
  if (row.status !== ResolutionStatus.Pending || row.messageType == null || !CONTROL_REQUEST_TYPES.has(row.messageType)) return undefined;
  if (row.messageType === MessageType.RetryRequest) return undefined; // the retry policy's own traffic: the SDK answers it
  const age = o.now.getTime() - Date.parse(row.updatedAt);
  const stuck = await stuckKind(store, row, read, answers, o, age);
  if (!stuck || (await settledLater(row, read, later))) return undefined;
  const { kind, notice, recorded } = stuck;
  const cap = o.historyCap ?? HISTORY_CAP;
  // A parked command is offered no restore (PARKED_NO_REPAIR): the state before it is not read.
  const { entry: previous, cutOff } = kind === 'parked' ? { entry: undefined, cutOff: false } : await entryToRestore(store, row, read);
  const noRestore = cutOff ? `; no restore is offered: the event's history is longer than the ${cap} entries Reconcile reads and the state before the ${row.messageType} is not among them` : '';
  const restoresTo = previous ? { status: resultingStatus(previous.messageType as MessageTypeT, previous.deadLetterErrorDescription).status, messageType: previous.messageType, messageId: previous.messageId } : null;
  const restore = previous ? [{ action: 'restore' as const, does: `put the row back to ${describe(previous)}, as it was before the ${row.messageType}` }] : [];
  const base = { ...findingRow(row), restoresTo };
  if (kind === 'claim') {
    const canResend = specOfClaim(row as StatusRow) !== undefined;
    const resend = canResend ? [{ action: 'resend' as const, does: `send the ${row.messageType} again with the same MessageId (the subscriber's inbox drops a copy it already has) and write its receipt` }] : [];
    const repairs = [...resend, ...restore];
    if (repairs.length === 0 && !cutOff) return undefined;
    return {
      previous,
      finding: {
        ...base,
        kind: 'claim',
        why: `claimed by a ${row.messageType} ${Math.round(age / 1000)} s ago with no "sent" receipt, and the Resolver never recorded the command: its send failed and could not be undone, or the console stopped before it finished${noRestore}`,
        repairs,
      },
    };
  }
  if (kind === 'refused' && notice) {
    // Listed even with nothing to restore: a refused row is otherwise invisible, and the operator can settle it.
    const noState = restore.length === 0 && !cutOff ? '; no restore is offered: no earlier state of the session is in its history' : '';
    const refusal =
      'unreadable' in notice
        ? `its endpoint refused (a CommandRefused notice that no longer parses, document ${notice.unreadable}: who refused it and why cannot be read)`
        : `${notice.from ?? notice.endpointId} refused (CommandRefused notice ${notice.messageId}: ${notice.deadLetterErrorDescription ?? notice.errorText ?? 'no reason given'})`;
    return {
      previous,
      finding: {
        ...base,
        kind: 'refused',
        why: `Pending from a ${row.messageType} ${recorded ? 'recorded' : 'claimed'} ${Math.round(age / 60_000)} min ago that ${refusal}: a refused command changes nothing, and the Resolver puts the row back when it records the refusal, but that restore was lost${recorded ? '' : '; the Resolver never recorded the command itself, only its refusal'}${noRestore}${noState}`,
        repairs: restore,
      },
    };
  }
  if (kind === 'parked' && notice && !('unreadable' in notice)) {
    // Listed so the operator finds it, with no repair (PARKED_NO_REPAIR): the command is on its way, held back.
    return {
      previous: undefined,
      finding: {
        ...base,
        restoresTo: null,
        kind: 'parked',
        why: `Pending from a ${row.messageType} ${recorded ? 'recorded' : 'claimed'} ${Math.round(age / 60_000)} min ago that ${notice.from ?? notice.endpointId} only parked (DeferralResponse ${notice.messageId}: ${notice.errorText ?? 'no reason given'}): the Resolver keeps a deferral off a command's row, so the row reads Pending until the parked copy is replayed and answered, which never happens if the session's blocker is never settled or the parked copy was lost. Settle the blocking event: the parked copy then runs when the session is released, and its answer settles the row. ${PARKED_NO_REPAIR}`,
        repairs: [],
      },
    };
  }
  if (restore.length === 0 && !cutOff) return undefined; // nothing before the request to go back to
  const reason =
    row.messageType === MessageType.ContinuationRequest
      ? 'a ContinuationRequest is completed by current subscribers without any answer'
      : row.messageType === MessageType.HandoffCompletedRequest || row.messageType === MessageType.HandoffFailedRequest
        ? 'the endpoint did not answer the handoff command (an older subscriber ignores one for a session its event does not block)'
        : 'the endpoint has not answered the command';
  return { previous, finding: { ...base, kind: 'unanswered', why: `Pending from a ${row.messageType} recorded ${Math.round(age / 60_000)} min ago that nobody answered: ${reason}${noRestore}`, repairs: restore } };
}

export interface RepairTarget {
  kind: StuckKind;
  endpointId: string;
  eventId: string;
  sessionId: string;
  rowMessageId: string;
  action: RepairAction;
}

export interface RepairResult {
  target: RepairTarget;
  outcome: 'repaired' | 'unchanged';
  reason?: string;
  status?: string;
}

/**
 * Carries out repairs chosen from the preview. Everything is re-checked here from the store (only the row version
 * comes from the request): the row must still be that version and still stuck for the same reason, and a restore
 * is a compare-and-swap on it. Every repair is audited on the event (ReconcileStuckCommand).
 */
export async function applyStuckRepairs(
  deps: { store: MessageStore; manager: Manager },
  targets: RepairTarget[],
  auditor: string,
  o: StuckOptions,
): Promise<RepairResult[]> {
  const { store } = deps;
  const results: RepairResult[] = [];
  for (const target of targets) {
    const unchanged = (reason: string) => results.push({ target, outcome: 'unchanged', reason });
    if (target.kind === 'parked') {
      // Never offered (the preview lists the row with no repair); refused by name, before any read, for a caller
      // that asks anyway (a page loaded before this rule).
      unchanged(`a parked command is listed only, never repaired: settle the event that blocks its session. ${PARKED_NO_REPAIR}`);
      continue;
    }
    const row = await store.getStatusRow(target.endpointId, target.eventId, target.sessionId);
    if (!row || row.lastMessageId !== target.rowMessageId) {
      unchanged(row ? `the row changed since the preview (now ${row.status})` : 'the row no longer exists');
      continue;
    }
    const assessed = await assessStuck(store, row, await readEventHistory(store, row.endpointId, row.eventId, o.historyCap ?? HISTORY_CAP), o, answersOnce(store, row), laterResponsesOnce(store, row));
    const finding = assessed?.finding;
    if (!assessed || !finding || finding.kind !== target.kind) {
      unchanged(`the row is ${row.status} and no longer stuck that way`);
      continue;
    }
    if (finding.repairs.length === 0) {
      unchanged('no repair is offered for this row: the state before its command is unknown (the event\'s history is past the cap Reconcile reads)');
      continue;
    }
    if (!finding.repairs.some((r) => r.action === target.action)) {
      unchanged(`${target.action} is not possible for this row (${finding.repairs.map((r) => r.action).join(' or ')} is)`);
      continue;
    }
    let status: string;
    let detail: string;
    try {
      if (target.action === 'resend') {
        const sent = await deps.manager.resendClaim(row, auditor);
        status = row.status;
        // 'duplicate': this process sent it and only its receipt was lost (the Manager wrote it now, sent nothing).
        detail = sent.outcome === 'duplicate' ? `${sent.messageType} ${sent.messageId} was sent already (its receipt is written now); nothing was sent again` : `re-sent ${sent.messageType} ${sent.messageId}`;
      } else {
        // The entry the check above found (it is re-checked on this apply, never taken from the preview).
        const { previous } = assessed;
        if (!previous) {
          unchanged('no earlier state to restore was found in the event\'s history');
          continue;
        }
        // The version assessed, `conditional` included: the Resolver's record of a claimed command has the claim's
        // id and status, and landing between the check above and this write it must not be taken for the claim and
        // put back (a Resubmit would then send the same command again; restoreRace.test.ts). An older writer's
        // version (no flag) matches as before.
        const restored = rowFromEntry(row, previous);
        // The row's payload came from the command being undone (an edited resubmission's claim or record): put back
        // the body last delivered, as the Resolver's restore after a refusal does, or the edit stays on the row as if
        // it had been sent (refused.test.ts, "an edited resubmission ...").
        if (row.requestMessageId === row.lastMessageId) {
          const delivered = await deliveredPayload(store, previous);
          if (delivered) Object.assign(restored, delivered);
        }
        const written = await store.restoreStatusRow(restored, { status: ResolutionStatus.Pending, lastMessageId: row.lastMessageId, conditional: row.conditional });
        if (written.outcome === 'ignored') {
          unchanged('the row changed while it was being restored');
          continue;
        }
        status = written.row.status;
        detail = `restored to ${describe(previous)}`;
      }
    } catch (err) {
      const why = err instanceof Error && 'detail' in err ? String((err as { detail: unknown }).detail) : err instanceof Error ? err.message : String(err);
      // A re-send that did not go says so first: its detail alone (a 413's size and limit) read as a repair's failure.
      unchanged(target.action === 'resend' ? `not re-sent: ${why}` : why);
      continue;
    }
    await store.recordAudit({
      id: `reconcile-${target.action}-${row.lastMessageId}`.slice(0, 200),
      eventId: row.eventId,
      endpointId: row.endpointId,
      eventTypeId: row.eventTypeId,
      type: AuditType.ReconcileStuckCommand,
      auditor,
      comment: `${finding.why}. Repair: ${detail}`.slice(0, 4096),
      data: JSON.stringify({ kind: target.kind, action: target.action, sessionId: row.sessionId, stuckMessageId: row.lastMessageId, stuckMessageType: row.messageType, restoredTo: target.action === 'restore' ? finding.restoresTo : null }).slice(0, 4096),
    });
    log.info({ endpointId: row.endpointId, eventId: row.eventId, kind: target.kind, action: target.action }, 'stuck row repaired');
    results.push({ target, outcome: 'repaired', status });
  }
  return results;
}
