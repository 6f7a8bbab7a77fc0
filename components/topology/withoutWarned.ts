// The selection a confirmed replay sends after its preview, kept apart from the dialog's components so the server's
// tests exercise the very function the console uses (server/subscriptions/replayWarnedListed.test.ts).
import type { ReplayPreview, ReplaySelection } from './opsApi.ts';

/**
 * The selection to replay after a preview. Unless the operator opted in (`includeWarned`), dead letters listed one by
 * one lose the warned ones, which the server would refuse (409) while they are listed: all of them, from the
 * preview's uncapped `warnedSequenceNumbers` (its `warnedItems` stop at 100, so with more warned ones ticked the
 * replay was refused before). A filter or the whole queue is sent as it is (the server skips them).
 */
export function withoutWarned(sel: ReplaySelection, p: Pick<ReplayPreview, 'warnedSequenceNumbers'>): ReplaySelection {
  if (sel.includeWarned === true || !sel.sequenceNumbers || p.warnedSequenceNumbers.length === 0) return sel;
  const warned = new Set(p.warnedSequenceNumbers);
  return { ...sel, sequenceNumbers: sel.sequenceNumbers.filter((s) => !warned.has(s)) };
}
