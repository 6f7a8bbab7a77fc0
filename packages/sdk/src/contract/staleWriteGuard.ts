// The stale-write guard: which messages may reopen a settled row (docs/resolver.md). Part of the contract because
// the Resolver applies it to every status write and the SDK's test harness projects outcomes with the same rule.
// Pure: it decides from the incoming write and a few fields of the stored row (status, the type that last wrote
// it, its ParentMessageId, and - when the row keeps them - the ids of the messages applied to it), and, for a copy
// past those ids or an ErrorResponse its own retry may have superseded, the history's answers the caller looked up
// (asksHistoryForCopy, asksHistoryForRetry). The store applies it inside an
// etag-conditional write, so the decision and the write are one atomic step.
import { MAX_APPLIED_MESSAGE_IDS } from './appliedMessageIds.ts';
import { isRequestType } from './attribution.ts';
import { CONTROL_REQUEST_TYPES, MANAGER_ONLY_TYPES, MessageType, type MessageType as MessageTypeT } from './messageTypes.ts';
import { ResolutionStatus, type ResolutionStatus as ResolutionStatusT } from './statuses.ts';

export const TERMINAL_STATUSES: ReadonlySet<ResolutionStatusT> = new Set([
  ResolutionStatus.Completed,
  ResolutionStatus.Skipped,
  ResolutionStatus.Failed,
  ResolutionStatus.DeadLettered,
  ResolutionStatus.Unsupported,
]);

/** Types that may only refresh a row still in the request stage. */
const REQUEST_COPY_TYPES: ReadonlySet<MessageTypeT> = new Set([
  MessageType.EventRequest,
  MessageType.DeferralResponse,
]);

/** The row's last writer counts as "request stage"; null = seeded without a type (lenient, as the spec's Unknown). */
function isRequestStage(type: MessageTypeT | null): boolean {
  return type === null || REQUEST_COPY_TYPES.has(type);
}

export type IgnoreReason =
  /** The row's ParentMessageId is this message: the row already holds this message's answer. */
  | 'already-answered'
  /** A request copy or deferral met a settled row, a handoff park or a control request's projection. */
  | 'not-request-stage'
  /** A handoff park met a Completed or Skipped row. */
  | 'handoff-after-settlement'
  /** A RetryRequest met a Completed or Skipped row: a late retry the subscriber completes without running. */
  | 'retry-after-settlement'
  /** The stored row does not parse (unknown status…): a guarded write fails closed. */
  | 'unreadable-row'
  /**
   * The row has applied this message already and a later message since (its id is among the row's
   * `appliedMessageIds` but not its last, or - past those - the history shows a later message answering it): a copy
   * that came back alone. Asked of terminal writes and console commands.
   */
  | 'already-applied'
  /**
   * A Failed ErrorResponse the row does not show, whose failed delivery the retry policy answered with a
   * RetryRequest too (the history holds one naming the same parent): the SDK sends that retry only beside a failure
   * it will retry, so the failure is not the delivery's last word - a copy, or a throttle replacement, after it.
   */
  | 'superseded-by-retry'
  /**
   * A Failed ErrorResponse that may be late (IncomingWrite.late) over a settled row whose version answers another
   * delivery and was enqueued after the failure: the row holds a later outcome of the event (the retry's success,
   * whose RetryRequest the history may never have stored), so the failure is not the event's last word.
   */
  | 'superseded-by-later-answer';

export type GuardDecision = { apply: true } | { apply: false; reason: IgnoreReason };

export interface GuardedRowView {
  status: ResolutionStatusT;
  messageType: MessageTypeT | null;
  parentMessageId: string | null;
  /** The id of the message that wrote this version; with appliedMessageIds only (the store's rows). */
  lastMessageId?: string;
  /**
   * The ids of the last messages applied to the row, newest first (the store's `appliedMessageIds`). Absent (a
   * row written before the store kept them, a view built from history): the already-applied rule does not apply.
   */
  appliedMessageIds?: readonly string[] | undefined;
  /**
   * The enqueue time of the message that wrote this version (ISO, as stored; a replacement's is its original's).
   * Absent or null (a conditional write's view, a row without it): rule 9 does not apply.
   */
  enqueuedAt?: string | null | undefined;
}

/** A write the guard decides on: the message's id and type and the status it would write. */
export interface IncomingWrite {
  status: ResolutionStatusT;
  messageType: MessageTypeT;
  messageId: string;
  /**
   * The history's answer to asksHistoryForCopy, when that asked (I/O the caller does, so the guard stays pure):
   * whether an entry of the row's history that is not history-only names this message as its parent. Absent: not
   * asked, and the rule that reads it does not apply.
   */
  supersededInHistory?: boolean | undefined;
  /**
   * The history's answer to asksHistoryForRetry, when that asked: whether an entry of the row's session that is not
   * history-only is a RetryRequest naming the same parent (the failed delivery) as this ErrorResponse, enqueued no
   * earlier than it (the SDK schedules the retry after sending the failure; an older SDK's retry ids repeat from one
   * series to the next, so an earlier series' retry may name the same id). Absent: not asked, and the rule that reads
   * it does not apply.
   */
  retriedInHistory?: boolean | undefined;
  /**
   * Set by a caller that records the message's history when this write may arrive after messages enqueued after it:
   * its history entry was there before this call (a copy, a throttle replacement, a redelivery) or the caller marked
   * it so (the Resolver's throttle replacement, a redelivery). Absent: rule 9 does not apply (a first arrival comes
   * before anything that answers a later delivery of its session).
   */
  late?: boolean | undefined;
  /**
   * The history's answer to asksHistoryForAnswer, when that asked: whether an entry of the row's session that is not
   * history-only names this late RetryRequest as its parent, enqueued no earlier than it (its run was answered).
   * Absent: not asked, and rule 2's history form does not apply.
   */
  answeredInHistory?: boolean | undefined;
  /** With `late`: the message this one answers (its delivery), and its original enqueue time (null: unknown, taken as the oldest). */
  parentMessageId?: string | null | undefined;
  enqueuedAt?: string | null | undefined;
}

/**
 * Whether the incoming message is a copy of one the row applied before a later message: its id is among the row's
 * applied ids but is not the one that wrote the current version. A copy of the current version's own message is
 * left to the other rules (a repeat of the last write changes nothing, and the Manager's claims are re-sent under
 * the claim's id). Asked of terminal writes and console commands only (decideStaleWrite): a response's id is new for
 * every answer and a command's names one command, so one applied again after another message is a copy; other
 * non-terminal ids are not (a retry's id repeats from one retry series to the next), and the other rules judge
 * those. A claim does not apply its id, and a restore that undoes one drops it. The store leaves the applied ids out of the view for a
 * conditional write, which names the version it replaces (docs/resolver.md, "The stale-write guard").
 */
function isAppliedCopy(messageId: string, row: GuardedRowView): boolean {
  if (!row.appliedMessageIds || row.lastMessageId === undefined) return false;
  return row.lastMessageId !== messageId && row.appliedMessageIds.includes(messageId);
}

/**
 * Whether rule 7 needs the history's answer (IncomingWrite.supersededInHistory) for this write: a terminal response
 * whose id is not among the row's applied ids while that list is full, so an id applied before may have dropped off
 * it (a copy that comes back after more than MAX_APPLIED_MESSAGE_IDS - 1 later messages). Only then does the store
 * spend a history query. A response only: a request's id is named as parent by the subscriber's answers to its
 * delivery, which exist whether or not its row write landed, so such an entry proves nothing about the row. A
 * response is never delivered to a subscriber: what names one is a Manager command, whose claim answered a row
 * version showing that response (the Manager claims only over the row's last message), so the response was applied.
 * A row without the list (an older writer's, a view built from history, a conditional write's view) is not asked.
 */
export function asksHistoryForCopy(incoming: IncomingWrite, row: GuardedRowView | null): boolean {
  if (row === null || !row.appliedMessageIds || row.lastMessageId === undefined) return false;
  if (!TERMINAL_STATUSES.has(incoming.status) || isRequestType(incoming.messageType)) return false;
  return (
    row.appliedMessageIds.length >= MAX_APPLIED_MESSAGE_IDS &&
    row.lastMessageId !== incoming.messageId &&
    !row.appliedMessageIds.includes(incoming.messageId)
  );
}

/**
 * Whether rule 8 needs the history's answer (IncomingWrite.retriedInHistory): an ErrorResponse writing Failed that
 * the row does not show. The retry policy sends a RetryRequest naming the failed delivery beside the ErrorResponse
 * naming it (buildRetryRequest), so a retry found for the same parent answered that delivery after the failure, and
 * the failure applied now would show as Failed an event that is being, or was, retried. Independent of the applied
 * ids (a copy whose id is still on the list is rule 7's; one past it, or a throttle replacement whose own row write
 * never landed, is this rule's). Not a DeadLettered write (a final answer, not retried), not a write over the row's
 * own failure (it changes nothing), not a view without the row's last message id (a conditional write names the
 * version it replaces, docs/resolver.md). The store asks for a message whose history entry was there before its
 * record (a copy, a throttle replacement, a redelivery) and for one its caller marks as possibly late (the
 * Resolver's throttle replacement or a redelivery, whose earlier history create may have failed too): a first
 * delivery's failure comes before its retry.
 */
export function asksHistoryForRetry(incoming: IncomingWrite, row: GuardedRowView | null): boolean {
  if (row === null || row.lastMessageId === undefined) return false;
  return (
    incoming.messageType === MessageType.ErrorResponse &&
    incoming.status === ResolutionStatus.Failed &&
    row.lastMessageId !== incoming.messageId
  );
}

/**
 * Whether rule 2's history form needs the history's answer (IncomingWrite.answeredInHistory): a late RetryRequest
 * (IncomingWrite.late) over a row that does not name it as parent. Rule 2 reads the row's parent only, so a retry
 * whose answer was applied and then followed by another version (a failure of a later delivery) no longer matched,
 * and the late retry set the row Pending for good: the subscriber ran it already and answers nothing more.
 */
export function asksHistoryForAnswer(incoming: IncomingWrite, row: GuardedRowView | null): boolean {
  return (
    row !== null &&
    incoming.late === true &&
    incoming.messageType === MessageType.RetryRequest &&
    row.parentMessageId !== incoming.messageId
  );
}

/**
 * Whether an incoming write needs the guard at all: a non-terminal status written by a request copy, a
 * deferral, a handoff park or a control request. Terminal writes always apply.
 * Throws for a non-terminal write of a type the guard does not classify (ProcessDeferredRequest): such a type
 * would silently overwrite settled rows, so it is refused loudly rather than let through.
 */
export function isGuarded(incomingStatus: ResolutionStatusT, incomingType: MessageTypeT): boolean {
  if (TERMINAL_STATUSES.has(incomingStatus)) return false;
  if (
    REQUEST_COPY_TYPES.has(incomingType) ||
    incomingType === MessageType.PendingHandoffResponse ||
    CONTROL_REQUEST_TYPES.has(incomingType)
  ) {
    return true;
  }
  throw new UnclassifiedWriteError(incomingType, incomingStatus);
}

export class UnclassifiedWriteError extends Error {
  constructor(type: string, status: string) {
    super(
      `message type ${type} projects ${status} but is not classified by the stale-write guard; refusing to write it`,
    );
    this.name = 'UnclassifiedWriteError';
  }
}

/** The decision for an incoming write against the stored row (null = no row yet). */
export function decideStaleWrite(incoming: IncomingWrite, row: GuardedRowView | null): GuardDecision {
  // Rule 2's history form: a late RetryRequest whose run the history shows answered (an entry that is not
  // history-only names it as parent, enqueued no earlier than it) is already answered, whatever the row shows since.
  if (incoming.answeredInHistory === true && asksHistoryForAnswer(incoming, row) && decideByRules(incoming, row).apply)
    return { apply: false, reason: 'already-answered' };
  const decision = decideByRules(incoming, row);
  // Rule 7, over what the rules below let through (a copy one of them refuses keeps its reason): a message the row
  // applied before a later one is a copy that came back alone (its completion was lost). A terminal copy would
  // otherwise set the row back (Failed over the retry after it), and the later message's copy, whose completion
  // was not lost, never comes back to undo it.
  // Terminal writes only: those are the ones no other rule checks. A non-terminal id can come round again
  // legitimately - earlier SDK versions derived a retry's MessageId from the event and its retry count, so two
  // deliveries of an event that each started a series sent the same ids, and the second series' RetryRequest carried
  // an id the row applied before (refused, the row stayed Failed while the subscriber ran the retry); endpoints on
  // those versions may still be running - and rules 2-6 already judge those.
  // The console's commands (resubmit, skip, handoff completion and failure) too: a command's id is derived from the
  // message it answers, so it names one command, and the Manager's claim does not count it as applied (the store
  // keeps a claim's id out of the applied ids: only the Resolver's record of the command puts it there). So a command
  // found among the applied ids was recorded before a later message, and its copy would set the row back - a
  // Completed row to Pending for good, once the answer's parent no longer names the command (rule 2). Its first
  // record applies wherever it lands: behind messages enqueued before the claim, or after an attempt whose history
  // landed and whose row write did not. A claim undone by a restore drops the id as well (docs/store.md). Over a
  // settled row only: a non-terminal copy is applied again with no such check (a RetryRequest over Pending), so when a
  // batch of a retry, its failure and the command comes back after a lost lock, the retry's copy puts itself over the
  // command and the command's copy must apply after it to put the row right (refused, the row showed the retry and a
  // refusal notice for the command found no row to restore - review). What sets a row back for good is a command over
  // its settled answer; over Pending the command is at worst one Pending shown for another.
  // Past the applied ids (a copy after more than 7 later messages, its id dropped off the list), the history's answer
  // stands in for them: an entry naming the response as its parent answered a row version that showed it.
  if (
    decision.apply &&
    row !== null &&
    (TERMINAL_STATUSES.has(incoming.status) || (MANAGER_ONLY_TYPES.has(incoming.messageType) && TERMINAL_STATUSES.has(row.status))) &&
    (isAppliedCopy(incoming.messageId, row) || (incoming.supersededInHistory === true && asksHistoryForCopy(incoming, row)))
  )
    return { apply: false, reason: 'already-applied' };
  // Rule 8: a failure its own retry superseded. The retry policy's RetryRequest names the failed delivery, as the
  // ErrorResponse beside it does, and is sent only beside a failure it will retry, so once the history holds that
  // retry the failure is not the delivery's last word, whether or not its own row write landed (a copy whose
  // completion was lost, or the Resolver's throttle replacement of it, coming back after the retries and their
  // outcome were applied). Applied, it turned the retry's outcome (Completed) Failed for good. A retry the guard
  // refused as late (rule 5) counts too: the event was settled meanwhile, and that settlement stays.
  if (decision.apply && incoming.retriedInHistory === true && asksHistoryForRetry(incoming, row))
    return { apply: false, reason: 'superseded-by-retry' };
  // Rule 9: a late failure under a later answer of another delivery. Rule 8 finds the retry only when the history
  // stored it: when the failure E and its RetryRequest Y were both throttled (neither's history create landed) and Y's
  // run succeeded meanwhile (C, naming Y, made the row Completed), E's replacement found no retry and turned the row
  // Failed; Y's replacement then met a Failed row no longer naming Y (rule 2) and left it Pending for good. The row
  // itself says enough: a settled version answering a delivery other than E's, enqueued after E, is a later outcome
  // of the event (the spec orders an event's messages by their original enqueue time). Over a settled version
  // enqueued before E (an answer to an earlier delivery), E is the newer word and applies. Late writes only: a first
  // arrival is recorded before anything answering a later delivery of its session.
  if (decision.apply && supersededByLaterAnswer(incoming, row)) return { apply: false, reason: 'superseded-by-later-answer' };
  return decision;
}

/**
 * Rule 9: a Failed ErrorResponse the caller says may be late (IncomingWrite.late), the row not showing it
 * (asksHistoryForRetry), over a settled version answering another delivery and enqueued after the failure (a failure
 * whose original time is unknown, null, is taken as the oldest, as rule 8 takes it). Not over a view without the
 * row's enqueue time or last message id (a conditional write's), nor a version without a parent.
 */
function supersededByLaterAnswer(incoming: IncomingWrite, row: GuardedRowView | null): boolean {
  if (incoming.late !== true || row === null || !asksHistoryForRetry(incoming, row)) return false;
  if (!TERMINAL_STATUSES.has(row.status) || row.enqueuedAt == null) return false;
  const rowParent = row.parentMessageId;
  const parent = incoming.parentMessageId;
  if (rowParent == null || rowParent === '' || parent == null || parent === '' || rowParent === parent) return false;
  return incoming.enqueuedAt == null || incoming.enqueuedAt < row.enqueuedAt;
}

function decideByRules(
  incoming: { status: ResolutionStatusT; messageType: MessageTypeT; messageId: string },
  row: GuardedRowView | null,
): GuardDecision {
  // Rule 1: first write, or an unguarded (terminal) write. isGuarded runs first so an unclassified type is
  // refused even on a first write.
  const guarded = isGuarded(incoming.status, incoming.messageType);
  if (row === null || !guarded) return { apply: true };
  // Rule 2: every response stamps ParentMessageId with the message it answers, so a row whose parent is this
  // very message already records its outcome: this is a late or rescheduled copy (same MessageId).
  if (
    row.parentMessageId != null &&
    row.parentMessageId !== '' &&
    row.parentMessageId === incoming.messageId
  ) {
    return { apply: false, reason: 'already-answered' };
  }
  // Rule 3: a request copy or a deferral only refreshes its own request-stage row.
  if (REQUEST_COPY_TYPES.has(incoming.messageType)) {
    return !TERMINAL_STATUSES.has(row.status) && isRequestStage(row.messageType)
      ? { apply: true }
      : { apply: false, reason: 'not-request-stage' };
  }
  // Rule 4: a handoff park is refused over Completed and Skipped only. Failed stays open (a policy retry parks
  // straight from Failed); DeadLettered and Unsupported too (a resubmission's park can overtake its own Pending).
  if (incoming.messageType === MessageType.PendingHandoffResponse) {
    return row.status === ResolutionStatus.Completed || row.status === ResolutionStatus.Skipped
      ? { apply: false, reason: 'handoff-after-settlement' }
      : { apply: true };
  }
  // Rule 5: a RetryRequest is not operator intent but a retry policy's schedule, decided before whatever settled
  // the row since. Over Completed or Skipped it is late (the event was skipped, resubmitted or completed by a
  // handoff): the subscriber completes it without running the handler and without a response, so letting it
  // reopen the row would leave the row Pending forever and, before that, show Skipped as something else.
  if (
    incoming.messageType === MessageType.RetryRequest &&
    (row.status === ResolutionStatus.Completed || row.status === ResolutionStatus.Skipped)
  ) {
    return { apply: false, reason: 'retry-after-settlement' };
  }
  // Rule 6: the operator's control requests are intent; the ancestor check above is their only limit.
  return { apply: true };
}
