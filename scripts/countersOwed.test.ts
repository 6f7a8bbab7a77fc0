// A counters-owed file that is not a list of writer ids stops the start with what to do, not a bare SyntaxError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MessageStore } from '../lib/store/index.ts';
import { COUNTERS_OWED_FILE, recoverOwedCounters } from './countersOwed.ts';

test('a counters-owed file that does not parse names itself and the way out; no recovery is tried', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'owed-'));
  // Never reached: the file is read before the store is asked anything.
  const store = {
    recoverCounters: () => {
      throw new Error('recovery tried');
    },
  } as unknown as MessageStore;
  const log = { info: () => undefined };
  try {
    for (const text of ['{"owners": ["store-1"', '{"owners": ["no spaces allowed"]}', '[]']) {
      await writeFile(join(dir, COUNTERS_OWED_FILE), text);
      await assert.rejects(recoverOwedCounters(store, dir, log), (e: unknown) => {
        assert.ok(e instanceof Error);
        assert.equal(e.name, 'Error');
        assert.ok(e.message.includes(join(dir, COUNTERS_OWED_FILE)), e.message);
        assert.match(e.message, /delete it to start/);
        return true;
      });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
