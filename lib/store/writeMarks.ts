// The marks a status row carries of the writes that made it (`lastWrites`): per writer (a store instance), the number
// of its last write of the row. A store whose write came back in doubt (its reply lost) settles it by reading the
// row: the write landed if the row, or any version known to have been the row's, carries its mark - even after
// another writer moved the row on, since every writer carries the others' marks forward. Only the write that wrote a
// mark can put it there, so the test is exact (docs/store.md, "A row write whose reply is lost").
import type { WriteMark } from './schemas.ts';

/** Writers whose marks a row keeps at most (the oldest dropped first). */
export const MAX_WRITE_MARKS = 8;

/**
 * The marks a row carries after write `n` of writer `o`: that write's mark first, then the other writers' marks as
 * the version it replaces carried them (newest first), at most MAX_WRITE_MARKS in all. The writer's own older mark
 * is replaced: it settles its own earlier writes in doubt from its read before it writes again.
 */
export function nextWriteMarks(
  existing: readonly WriteMark[] | undefined,
  o: string,
  n: number,
): WriteMark[] {
  const others = (existing ?? []).filter((m) => m.o !== o).map((m) => ({ o: m.o, n: m.n }));
  return [{ o, n }, ...others].slice(0, MAX_WRITE_MARKS);
}

/** Whether `row` carries the mark of write `n` of writer `o`. */
export function carriesMark(
  row: { lastWrites?: readonly WriteMark[] | undefined } | null,
  o: string,
  n: number,
): boolean {
  return row?.lastWrites?.some((m) => m.o === o && m.n === n) ?? false;
}
