// The selection a confirmed replay sends after its preview, and its confirm button's label, kept apart from the
// dialog's components so the server's tests exercise the very functions the console uses
// (server/subscriptions/replayWarnedListed.test.ts, replayWarnedJournal.test.ts).
import type { ReplayPreview, ReplaySelection } from './opsApi.ts';

/**
 * The selection to replay after a preview. Unless the operator opted in (`includeWarned`), dead letters listed one by
 * one lose the warned ones, which the server would refuse (409) while they are listed: all of them, from the
 * preview's uncapped `warnedSequenceNumbers` (its `warnedItems` stop at 100, so with more warned ones ticked the
 * replay was refused before). A filter or the whole queue is sent as it is (the server skips them).
 */
/**
 * The preview's confirm button: what will be sent, and with the opt-in how many of those will likely be refused again
 * (`warnedToSend`: not the uncertain warned ones, left in the queue, nor already-sent ones, only removed; before, the
 * button named every warned one selected).
 */
export function replayConfirmLabel(p: Pick<ReplayPreview, 'toSend' | 'warnedToSend'>, includeWarned: boolean): string {
  return includeWarned && p.warnedToSend > 0 ? `Replay ${p.toSend}, including ${p.warnedToSend} likely refused again` : `Replay ${p.toSend}`;
}

export function withoutWarned(sel: ReplaySelection, p: Pick<ReplayPreview, 'warnedSequenceNumbers'>): ReplaySelection {
  if (sel.includeWarned === true || !sel.sequenceNumbers || p.warnedSequenceNumbers.length === 0) return sel;
  const warned = new Set(p.warnedSequenceNumbers);
  return { ...sel, sequenceNumbers: sel.sequenceNumbers.filter((s) => !warned.has(s)) };
}
