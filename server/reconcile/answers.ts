// The answers to the message a Pending row shows, read by their link (store.listHistoryAnswers: this endpoint and
// session, newest first), at most once per row and check. The stale check wants a settling one to re-apply, the
// stuck check wants to know whether any answer exists (one that no longer parses included), and the preview lists a
// row whose answer no longer parses: one query serves all three, made only when one of them needs it.
import type { MessageStore, StatusRowSummary } from '../../lib/store/index.ts';

export type RowAnswers = Awaited<ReturnType<MessageStore['listHistoryAnswers']>>;

/** Answers read per row: an endpoint answers a message once, or a few times on redelivery. */
export const ANSWERS_READ = 10;

/** A reader of `row`'s answers that queries the store on its first call only. */
export function answersOnce(store: MessageStore, row: Pick<StatusRowSummary, 'endpointId' | 'eventId' | 'sessionId' | 'lastMessageId'>): () => Promise<RowAnswers> {
  let read: Promise<RowAnswers> | undefined;
  return () => (read ??= store.listHistoryAnswers(row.eventId, row.endpointId, row.sessionId, row.lastMessageId, ANSWERS_READ));
}
