// The answers to the message a Pending row shows, read by their link (store.listHistoryAnswers: this endpoint and
// session, newest first), at most once per row and check. The stale check wants one to re-apply (settling, or any
// the row can show), the stuck check wants to know whether any answer exists (one that no longer parses included), and the preview lists a
// row whose answer no longer parses: one query serves all three, made only when one of them needs it. The query
// returns answers only, by Reconcile's one rule (isAnswer, which it also applies as a query term), so entries naming
// the message that are no answer - notices, other history-only entries - never fill its ANSWERS_READ and hide an
// answer behind them on a list cut at the cap. The stuck check's refusal (the newest CommandRefused notice naming
// the message) is a query of its own (store.listHistoryRefusals), made only for a row whose message got no answer and
// whose list is cut or holds entries that do not parse (a whole list decides alone, server/reconcile/stuck.ts).
// Beside them, the settling entries enqueued after the row's message (store.listHistoryAfter: terminal outcomes,
// a request a dead-letter description settled included, never a subscriber's notice): a response to an
// earlier message of the session (a redelivered original answered after a skip) settles the event without naming
// the row's message. On a long event the capped list lacks it; the stale check re-applies it (`later-response`) and
// the stuck check must not restore the row under it. Read once per row too, and only when the list cannot be trusted
// alone (cut at the cap, or holding entries that do not parse). One that no longer parses counts as settling for the
// stuck check, as an unreadable answer does, and the preview lists the row as unreadable.
import { isAnswer, isSettling, isStateBearing, TERMINAL_STATUSES, type HistoryEntry, type MessageStore, type StatusRowSummary } from '../../lib/store/index.ts';

export type RowAnswers = Awaited<ReturnType<MessageStore['listHistoryAnswers']>>;

/** Answers read per row: an endpoint answers a message once, or a few times on redelivery. */
export const ANSWERS_READ = 10;

/** A reader of `row`'s answers that queries the store on its first call only. */
export function answersOnce(store: MessageStore, row: Pick<StatusRowSummary, 'endpointId' | 'eventId' | 'sessionId' | 'lastMessageId'>): () => Promise<RowAnswers> {
  let read: Promise<RowAnswers> | undefined;
  return () => (read ??= store.listHistoryAnswers(row.eventId, row.endpointId, row.sessionId, row.lastMessageId, ANSWERS_READ));
}

// Reconcile's one rule for "answered" (isAnswer, with isSettling and isStateBearing) lives beside the query that
// applies it (lib/store/answerRule.ts): re-exported here for the checks.
export { isAnswer, isSettling, isStateBearing };

/**
 * The outcomes a later-response query asks for: the terminal ones (a deferral does not settle). The store leaves
 * notices out and counts an entry of any type that a dead-letter description made DeadLettered (a dead-lettered
 * request), as isSettling does on the list.
 */
const SETTLING_STATUSES = [...TERMINAL_STATUSES];

type LaterRow = Pick<StatusRowSummary, 'sessionId' | 'enqueuedAt' | 'parentMessageId'>;

/**
 * The later-response rule: a settling entry of `row`'s session enqueued after its message. Never the row's own
 * parent: it came before the row's message by definition, whatever the times say (a Manager claim is stamped with
 * the console's clock, its parent with the broker's, and a console behind the broker dates the claim first).
 */
export function isLaterResponse(row: LaterRow, h: HistoryEntry): boolean {
  return row.enqueuedAt != null && h.sessionId === row.sessionId && h.messageId !== row.parentMessageId && isSettling(h) && h.enqueuedAt > row.enqueuedAt;
}

/**
 * The settling responses on `row`'s endpoint and session enqueued after its message, newest first, and the stored
 * entries of those types after it that no longer parse (`corrupt`: such an entry may have settled the event, so a
 * check must not take its absence from `items` as "nothing since").
 */
export type LaterResponses = RowAnswers;

/**
 * A reader of `row`'s later responses (LaterResponses) that queries the store on its first call only. None for a
 * row with no enqueue time (nothing to be after).
 */
export function laterResponsesOnce(store: MessageStore, row: Pick<StatusRowSummary, 'endpointId' | 'eventId'> & LaterRow): () => Promise<LaterResponses> {
  let read: Promise<LaterResponses> | undefined;
  const query = async (after: string): Promise<LaterResponses> => {
    const { items, corrupt } = await store.listHistoryAfter(row.eventId, row.endpointId, row.sessionId, after, SETTLING_STATUSES, ANSWERS_READ);
    return { items: items.filter((h) => isLaterResponse(row, h)), corrupt };
  };
  return () => (read ??= row.enqueuedAt == null ? Promise.resolve({ items: [], corrupt: [] }) : query(row.enqueuedAt));
}
