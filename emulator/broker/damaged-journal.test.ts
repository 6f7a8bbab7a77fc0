// Keeping a damaged journal aside: the copy is exact, and a second copy (a start that crashed before its
// compaction, then started again) never overwrites the first. The start-up path is in persistence.test.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keepDamagedJournal } from './damaged-journal.ts';
import { journalFile } from './journal.ts';

test('each keep makes a new exact copy beside the journal; an earlier copy is not overwritten', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nimbus-damaged-'));
  try {
    const at = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6));
    writeFileSync(join(dir, journalFile(7)), 'first\n');
    const one = keepDamagedJournal(dir, 7, at);
    writeFileSync(join(dir, journalFile(7)), 'second\n');
    const two = keepDamagedJournal(dir, 7, at);
    assert.equal(one, join(dir, 'journal-7.damaged-2026-01-02T03-04-05-006Z.jsonl'));
    assert.equal(two, join(dir, 'journal-7.damaged-2026-01-02T03-04-05-006Z-2.jsonl'));
    assert.deepEqual([readFileSync(one, 'utf8'), readFileSync(two, 'utf8')], ['first\n', 'second\n']);
    assert.equal(readdirSync(dir).length, 3, 'the journal itself is left in place');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
