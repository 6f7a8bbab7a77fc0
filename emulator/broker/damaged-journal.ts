// Keeps a journal that is damaged in the middle aside before start-up's compaction deletes it. Replay stops
// at the damage, so the acknowledged operations after it are not in the new snapshot; without this copy they
// would be gone, with nothing left for an operator to recover them from (docs/emulator-durability.md,
// Recovery).

import { closeSync, constants, copyFileSync, fsyncSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { journalFile, syncDir } from './journal.ts';

/**
 * The name of a kept copy of journal `gen`. It starts with the journal's own name so that it sorts beside it,
 * but neither start-up's clean-up of stale journals (`journal-N.jsonl` only) nor replay ever matches it.
 */
export function damagedJournalFile(gen: number, at: Date, attempt = 1): string {
  // No ':' in the name: Windows does not allow it in a file name.
  const stamp = at.toISOString().replace(/[:.]/g, '-');
  return `journal-${gen}.damaged-${stamp}${attempt > 1 ? `-${attempt}` : ''}.jsonl`;
}

/**
 * Copies journal `gen` of `dir`, byte for byte, to a new kept file, durably, and returns the copy's path.
 * A copy, not a rename: a crash before the new snapshot is in place must still find journal `gen`, or the
 * next start would lose the operations before the damage too (it then keeps a second copy). An earlier copy
 * is never overwritten.
 */
export function keepDamagedJournal(dir: string, gen: number, at: Date = new Date()): string {
  const source = join(dir, journalFile(gen));
  for (let attempt = 1; ; attempt++) {
    const kept = join(dir, damagedJournalFile(gen, at, attempt));
    try {
      copyFileSync(source, kept, constants.COPYFILE_EXCL);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    // The compaction that follows deletes the original: the copy and its directory entry must reach the disk
    // first.
    // Read-only is enough for fsync, and a copy of a read-only journal (mode 0444) cannot be opened for writing.
    const fd = openSync(kept, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    syncDir(dir);
    return kept;
  }
}
