// The order of an event's history entries when the broker stamped two of them with the same enqueuedAt (a batch,
// or a request and its answer inside one millisecond). The store lists history by enqueuedAt alone, so such a pair
// came back in whatever order the database kept them, and the event page's "latest traced message" (a findLast over
// that list) was whichever came last by accident. The entries carry no broker sequence number, so the tie is broken
// by what they do carry: an answer after the message it answers (parentMessageId), whenever either was recorded -
// the Resolver can record an answer before its request, and recordedAt first would then put the answer first;
// otherwise when the Resolver recorded them (it records a session's messages in the broker's order); then the
// message id, so the same history always gives the same order (eventTraceTie.test.ts, historyOrder.test.ts).
import type { HistoryEntry } from '../lib/store/index.ts';

type Ordered = Pick<HistoryEntry, 'enqueuedAt' | 'recordedAt' | 'messageId' | 'parentMessageId'>;

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The entries oldest first, as a new array (the store's page is left as it was): by enqueuedAt; entries of the same
 * enqueuedAt are put parents first, else by recordedAt, then by message id (no two entries share one).
 */
export function inHistoryOrder<T extends Ordered>(entries: readonly T[]): T[] {
  const sorted = [...entries].sort((a, b) => cmp(a.enqueuedAt, b.enqueuedAt) || cmp(a.recordedAt, b.recordedAt) || cmp(a.messageId, b.messageId));
  const out: T[] = [];
  for (let start = 0; start < sorted.length; ) {
    let end = start + 1;
    while (end < sorted.length && sorted[start]!.enqueuedAt === sorted[end]!.enqueuedAt) end += 1;
    out.push(...parentsFirst(sorted.slice(start, end)));
    start = end;
  }
  return out;
}

/**
 * One group of entries of the same enqueuedAt, by recordedAt then message id, with each answer moved after the entry
 * it answers: the first entry whose parent is not still waiting goes next (a cycle, which no real history has, falls
 * back to that order).
 */
function parentsFirst<T extends Ordered>(group: T[]): T[] {
  if (group.length < 2) return group;
  const waiting = [...group];
  const out: T[] = [];
  while (waiting.length > 0) {
    const ids = new Set(waiting.map((h) => h.messageId));
    const at = waiting.findIndex((h) => h.parentMessageId === null || h.parentMessageId === h.messageId || !ids.has(h.parentMessageId));
    out.push(...waiting.splice(at < 0 ? 0 : at, 1));
  }
  return out;
}

/**
 * Whether `entry` came after `than` by what the two carry, for a reader that must not guess: a later enqueuedAt; of
 * the same enqueuedAt, `entry` answering `than` (through answers of that enqueuedAt in `entries`), else - neither
 * answering the other - a strictly later recordedAt. A full tie is not after: the store gives every entry of one
 * receive batch one recordedAt, and inHistoryOrder then puts such a pair by message id, a stable order that says
 * nothing of which the Resolver applied first (a failure and a park of one batch reopened the row or not by how
 * their GUIDs sorted, historyTies.test.ts). Judged pairwise, not by position in inHistoryOrder: parents-first can put
 * an unrelated entry recorded later ahead of `than` (when `than` waits for its own parent).
 */
export function comesAfter<T extends Ordered>(entry: T, than: T, entries: readonly T[]): boolean {
  if (entry.enqueuedAt !== than.enqueuedAt) return entry.enqueuedAt > than.enqueuedAt;
  if (entry.messageId === than.messageId) return false;
  const sameInstant = new Map(entries.filter((h) => h.enqueuedAt === entry.enqueuedAt).map((h) => [h.messageId, h]));
  if (answersThrough(entry, than, sameInstant)) return true;
  if (answersThrough(than, entry, sameInstant)) return false;
  return entry.recordedAt > than.recordedAt;
}

/** Whether `entry`'s chain of parents, within `group`, reaches `ancestor` (a cycle, which no real history has, stops). */
function answersThrough<T extends Ordered>(entry: T, ancestor: T, group: ReadonlyMap<string, T>): boolean {
  const seen = new Set<string>();
  for (let at: T | undefined = entry; at && !seen.has(at.messageId); at = at.parentMessageId === null ? undefined : group.get(at.parentMessageId)) {
    seen.add(at.messageId);
    if (at.parentMessageId === ancestor.messageId && at.messageId !== ancestor.messageId) return true;
  }
  return false;
}
