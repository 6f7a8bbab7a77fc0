// The answers to the message a Pending row shows, read by their link (store.listHistoryAnswers: this endpoint and
// session, newest first), at most once per row and check. The stale check wants a settling one to re-apply, the
// stuck check wants to know whether any answer exists (one that no longer parses included), and the preview lists a
// row whose answer no longer parses: one query serves all three, made only when one of them needs it.
// Beside them, the settling responses enqueued after the row's message (store.listHistoryAfter): a response to an
// earlier message of the session (a redelivered original answered after a skip) settles the event without naming
// the row's message. On a long event the capped list lacks it; the stale check re-applies it (`later-response`) and
// the stuck check must not restore the row under it. Read once per row too, and only for a list cut at the cap.
import { isSubscriberNotice, RESPONSE_TYPES, resultingStatus, STATUS_BY_MESSAGE_TYPE, type MessageType } from '@nimbus/sdk/contract';
import { TERMINAL_STATUSES, type HistoryEntry, type MessageStore, type StatusRowSummary } from '../../lib/store/index.ts';

export type RowAnswers = Awaited<ReturnType<MessageStore['listHistoryAnswers']>>;

/** Answers read per row: an endpoint answers a message once, or a few times on redelivery. */
export const ANSWERS_READ = 10;

/** A reader of `row`'s answers that queries the store on its first call only. */
export function answersOnce(store: MessageStore, row: Pick<StatusRowSummary, 'endpointId' | 'eventId' | 'sessionId' | 'lastMessageId'>): () => Promise<RowAnswers> {
  let read: Promise<RowAnswers> | undefined;
  return () => (read ??= store.listHistoryAnswers(row.eventId, row.endpointId, row.sessionId, row.lastMessageId, ANSWERS_READ));
}

/** A terminal outcome of the event itself; a subscriber's notice (refused command, replay gap) is not one. */
export function isSettling(h: Pick<HistoryEntry, 'messageType' | 'deadLetterReason' | 'deadLetterErrorDescription'>): boolean {
  return !isSubscriberNotice(h) && TERMINAL_STATUSES.has(resultingStatus(h.messageType as MessageType, h.deadLetterErrorDescription).status);
}

/** The response types whose outcome is terminal: the ones a later-response query asks for (a deferral does not settle). */
const SETTLING_RESPONSE_TYPES = [...RESPONSE_TYPES].filter((t) => TERMINAL_STATUSES.has(STATUS_BY_MESSAGE_TYPE[t]));

/**
 * A reader of the settling responses on `row`'s endpoint and session enqueued after its message, newest first,
 * that queries the store on its first call only. None for a row with no enqueue time (nothing to be after).
 */
export function laterResponsesOnce(store: MessageStore, row: Pick<StatusRowSummary, 'endpointId' | 'eventId' | 'sessionId' | 'enqueuedAt'>): () => Promise<HistoryEntry[]> {
  let read: Promise<HistoryEntry[]> | undefined;
  const query = async (after: string) => (await store.listHistoryAfter(row.eventId, row.endpointId, row.sessionId, after, SETTLING_RESPONSE_TYPES, ANSWERS_READ)).items.filter(isSettling);
  return () => (read ??= row.enqueuedAt == null ? Promise.resolve([]) : query(row.enqueuedAt));
}
