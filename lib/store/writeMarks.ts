// The marks a status row carries of the writes that made it (`lastWrites`): per writer (a store instance), the number
// of its last write of the row. A store whose write came back in doubt (its reply lost) settles it by reading the
// row: the write landed if the row, or any version known to have been the row's, carries its mark - even after
// another writer moved the row on, since every writer carries the others' marks forward. Only the write that wrote a
// mark can put it there, so the test is exact (docs/store.md, "A row write whose reply is lost").
import type { WriteMark } from './schemas.ts';

/** Marks a row keeps at most (the oldest dropped first). */
export const MAX_WRITE_MARKS = 8;

/**
 * The marks a row carries after write `n` of writer `o`: that write's mark first, then the marks of the version it
 * replaces (newest first): the other writers' unchanged, and of the writer's own only its last one, at most
 * MAX_WRITE_MARKS in all. The writer's own last mark stays because its write may still be waiting for its reply
 * (two writes of one row in flight at once: the second read the first's version and landed, then the first's reply
 * is lost); a mark is only ever carried from a version that had it, so it still proves that write landed. Its older
 * ones go: it settles its earlier writes in doubt from its read before it writes again.
 */
export function nextWriteMarks(
  existing: readonly WriteMark[] | undefined,
  o: string,
  n: number,
): WriteMark[] {
  let ownKept = false;
  const carried = (existing ?? []).filter((m) => m.o !== o || (!ownKept && (ownKept = true))).map((m) => ({ o: m.o, n: m.n }));
  return [{ o, n }, ...carried].slice(0, MAX_WRITE_MARKS);
}

/** Whether `row` carries the mark of write `n` of writer `o`. */
export function carriesMark(
  row: { lastWrites?: readonly WriteMark[] | undefined } | null,
  o: string,
  n: number,
): boolean {
  return row?.lastWrites?.some((m) => m.o === o && m.n === n) ?? false;
}
