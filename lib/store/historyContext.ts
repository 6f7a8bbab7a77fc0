// What one status write call (writeStatus, recordOutcome, recordOutcomes) knows of its messages' history, and the
// history's answers it has asked: the guard's rule 7 past the row's applied ids and rule 8 (superseded-by-retry)
// need them (docs/store.md, "The guarded write"). The guard stays pure; the store does the I/O through `ask`.
// One context per call, handed down the chain write as one argument, so which message is asked which question is
// decided here, in one place, rather than from parameters threaded separately through each function of the chain.
import { asksHistoryForAnswer, asksHistoryForCopy, asksHistoryForRetry, decideStaleWrite, type GuardedRowView, type IncomingWrite } from './guard.ts';
import type { HistoryEntry, StatusWriteParsed } from './schemas.ts';

/** The history's answers the guard reads (IncomingWrite's supersededInHistory, retriedInHistory), those asked. */
export type HistoryAnswer = Pick<IncomingWrite, 'supersededInHistory' | 'retriedInHistory' | 'answeredInHistory'>;

/** A history write's answer (recordHistory, recordOutcome(s)): whether this call created the entry. */
export type RecordedHistory = { recorded: boolean; entry: HistoryEntry };

/**
 * The questions one write needs the history to answer: `copyOf` (rule 7 past the list: does an entry name this
 * message as its parent?) and `retryOf` (rule 8: is there a RetryRequest naming this failed delivery, enqueued no
 * earlier than `at`, the failure's enqueuedAt?).
 */
export type HistoryQuestions = {
  copyOf: string | undefined;
  retryOf: { parent: string; at: string | null } | undefined;
  /** Rule 2's history form: does an entry name this late RetryRequest as its parent, enqueued no earlier than `at`? */
  answerOf?: { id: string; at: string | null };
};

/** The store's query that answers them: one in the event's partition for either or both. */
export type AskHistory = (w: StatusWriteParsed, questions: HistoryQuestions) => Promise<HistoryAnswer>;

/**
 * The questions a write needs answered before the guard decides it, or undefined when none. None when rules 1-7
 * refuse it without them (rule 7 within the list, rules 2-6). Rule 7's for a terminal response not among a full list
 * (asksHistoryForCopy). Rule 8's only when the call records the message's history (`recordsHistory`: recordOutcome(s),
 * the Resolver's path, where a failure can come back after its retry; a plain writeStatus or writeStatuses is decided
 * as before it), for a Failed ErrorResponse the row does not show (asksHistoryForRetry) that names a delivery: a
 * failure without a parent names none a retry could have answered.
 */
export function historyQuestions(
  incoming: IncomingWrite,
  view: GuardedRowView | null,
  w: Pick<StatusWriteParsed, 'messageId' | 'parentMessageId' | 'enqueuedAt'>,
  recordsHistory: boolean,
): HistoryQuestions | undefined {
  // Rules 1-7 without the history, as before rule 9: a write rule 9 would refuse is still asked, so a copy rule 7 or
  // a failure rule 8 refuses keeps that reason (rule 9 is the last word, for what those let through).
  const { late: _late, ...withoutRule9 } = incoming;
  if (!decideStaleWrite(withoutRule9, view).apply) return undefined;
  const copyOf = asksHistoryForCopy(incoming, view) ? w.messageId : undefined;
  const retryOf = recordsHistory && asksHistoryForRetry(incoming, view) && w.parentMessageId ? { parent: w.parentMessageId, at: w.enqueuedAt } : undefined;
  // Only a late message's record is marked `late` (HistoryContext.answer), so only that asks rule 2's history form.
  if (recordsHistory && asksHistoryForAnswer(incoming, view)) return { copyOf, retryOf, answerOf: { id: w.messageId, at: incoming.enqueuedAt ?? null } };
  return copyOf === undefined && retryOf === undefined ? undefined : { copyOf, retryOf };
}

/**
 * A call's history context. `recorded`: the call's own history write (recordOutcome(s)), awaited before any status
 * decision is acted on; absent for a plain writeStatus, which records none. `mayBeLate`: ids of messages the caller
 * says may arrive after messages enqueued after them (the Resolver's throttle replacement, a broker redelivery).
 */
export class HistoryContext {
  readonly #ask: AskHistory;
  readonly #recorded: Promise<RecordedHistory | RecordedHistory[]> | undefined;
  readonly #mayBeLate: ReadonlySet<string>;
  readonly #timeUnknown: ReadonlySet<string>;
  /** By message and question: asked once per call, not per attempt (an entry naming a message, once there, stays). */
  readonly #answers = new Map<string, HistoryAnswer>();
  /** The ids whose history entries this call created, less the late ones (waitForHistory). */
  #firstRecorded: ReadonlySet<string> = new Set();

  /**
   * `timeUnknown`: ids of messages whose write's enqueuedAt is not their original enqueue time (a Resolver
   * replacement whose OriginalEnqueuedTimeUtc was missing or rejected is recorded with its own, later, broker time).
   * Rule 8's question is asked of them without the enqueue-time bound: the failure is taken as the oldest message,
   * so any RetryRequest naming its delivery supersedes it. With the bound at the later time, the retry the SDK sent
   * beside it (enqueued before the replacement came due) was not found, and the failure was applied over the
   * retry's outcome: Completed turned Failed for good.
   */
  constructor(
    ask: AskHistory,
    recorded?: Promise<RecordedHistory | RecordedHistory[]>,
    mayBeLate: Iterable<string> = [],
    timeUnknown: Iterable<string> = [],
  ) {
    this.#ask = ask;
    this.#recorded = recorded;
    this.#mayBeLate = new Set(mayBeLate);
    this.#timeUnknown = new Set(timeUnknown);
  }

  /**
   * Waits for the call's history write (history is stored before the status: a crash in between leaves history
   * without status, which redelivery completes) and notes which entries it created. Rethrows its failure.
   */
  async waitForHistory(): Promise<void> {
    if (this.#recorded === undefined) return;
    const recorded = await this.#recorded;
    const all = Array.isArray(recorded) ? recorded : [recorded];
    this.#firstRecorded = new Set(all.filter((h) => h.recorded && !this.#mayBeLate.has(h.entry.messageId)).map((h) => h.entry.messageId));
  }

  /**
   * `incoming` with the history's answers when the guard needs them (historyQuestions). Not for a message whose
   * history entry this call created: its first arrival, which no row can have applied (the Resolver records history
   * before the row, and Reconcile re-applies from history) and which comes before its own retry (the same session,
   * enqueued first), so a new response costs no query; a copy, a throttle replacement and a redelivery whose history
   * landed before find their entry there and are asked. So is one marked `mayBeLate`, whose entry this call may have
   * created only because its earlier attempt's history create failed too - its retry may have been applied meanwhile.
   * Such a write (a message's record, not its first arrival) is also marked `late` for rule 9.
   */
  async answer(plain: IncomingWrite, view: GuardedRowView | null, w: StatusWriteParsed): Promise<IncomingWrite> {
    if (this.#firstRecorded.has(w.messageId)) return plain;
    // A message's record that is not its first arrival may be late: rule 9 orders it by its original enqueue time
    // against the row's version (unknown: null, the oldest, as rule 8's bound takes it).
    const incoming: IncomingWrite =
      this.#recorded === undefined
        ? plain
        : { ...plain, late: true, parentMessageId: w.parentMessageId, enqueuedAt: this.#timeUnknown.has(w.messageId) ? null : w.enqueuedAt };
    const asked = historyQuestions(incoming, view, w, this.#recorded !== undefined);
    if (asked === undefined) return incoming;
    const questions =
      asked.retryOf !== undefined && this.#timeUnknown.has(w.messageId) ? { ...asked, retryOf: { ...asked.retryOf, at: null } } : asked;
    // Keyed on the questions too: a later attempt over another version may ask one the first did not.
    const key = `${w.messageId}\u0000${questions.copyOf !== undefined}\u0000${questions.retryOf?.parent ?? ''}\u0000${questions.answerOf !== undefined}`;
    let answer = this.#answers.get(key);
    if (answer === undefined) {
      answer = await this.#ask(w, questions);
      this.#answers.set(key, answer);
    }
    return { ...incoming, ...answer };
  }
}
