// Counter deltas a stack's stop could not apply, repaired at its next start. `npm run resolver` leaves its lease to
// lapse when store.close() reports deltas left (a write still running, in doubt, a patch unanswered), and a surviving
// Resolver applies them from the row stamps. A stack started by `npm start` has no survivor and no scheduled recount:
// so it records its writer id in a small file beside its data, and its next start runs that same recovery
// (recoverCounters) before anything writes. At the next start nothing of the old process runs any more: each of its
// writes has landed (stamped above `flushed[owner]`) or not, so the recovery is exact, unlike a recount now, which a
// write still running could land after.
import { readFileSync, renameSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Logger } from 'pino';
import type { MessageStore } from '../lib/store/index.ts';

/** The file, in the stack's data folder, naming the writers whose deltas are owed. */
export const COUNTERS_OWED_FILE = 'counters-owed.json';

const owedSchema = z.object({ owners: z.array(z.string().regex(/^[\w.:@-]+$/)) });

function readOwed(dir: string): string[] {
  let text: string;
  try {
    text = readFileSync(join(dir, COUNTERS_OWED_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = owedSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(
      `${join(dir, COUNTERS_OWED_FILE)} is not a list of writer ids: delete it to start, and recount the endpoints afterwards (npm run recount -- --all, with the stack running)`,
    );
  return parsed.data.owners;
}

/**
 * Closes the store. When close() reports counter deltas left unapplied, records the store's writer id in `dir` for
 * the next start (recoverOwedCounters) and logs it. Without `dir` (an embedded server in memory, whose rows go with
 * the process; an account of one's own) it only logs that a recount is owed. Resolves close()'s answer.
 */
export async function closeStoreRecordingOwed(store: MessageStore, dir: string | undefined, log: Pick<Logger, 'warn'>): Promise<boolean> {
  const exact = await store.close();
  const owner = store.counterOwner;
  if (exact || owner === undefined) return exact;
  if (dir === undefined) {
    log.warn({}, 'counter deltas left unapplied at the stop, with no data folder to record it in: recount the endpoints (the rows are the truth)');
    return exact;
  }
  const owners = [...new Set([...readOwed(dir), owner])];
  mkdirSync(dir, { recursive: true });
  // Written whole, then renamed: a crash leaves the old list or the new one, never half of it.
  const tmp = join(dir, `${COUNTERS_OWED_FILE}.tmp`);
  writeFileSync(tmp, JSON.stringify({ owners }));
  renameSync(tmp, join(dir, COUNTERS_OWED_FILE));
  log.warn({ file: join(dir, COUNTERS_OWED_FILE) }, 'counter deltas left unapplied at the stop; the next start recovers them from the rows');
  return exact;
}

/**
 * At a start, before anything writes: applies what each writer named in `dir` left unapplied (store.recoverCounters,
 * exact and safe to repeat), then removes the file. Returns how many row stamps were applied. A recovery that fails
 * throws and keeps the file, so the next start tries again.
 */
export async function recoverOwedCounters(store: MessageStore, dir: string | undefined, log: Pick<Logger, 'info'>): Promise<number> {
  if (dir === undefined) return 0;
  const owners = readOwed(dir);
  if (owners.length === 0) return 0;
  let applied = 0;
  for (const owner of owners) applied += await store.recoverCounters(owner);
  rmSync(join(dir, COUNTERS_OWED_FILE), { force: true });
  log.info({ writers: owners.length, stamps: applied }, 'counter deltas left by the last stop recovered from the rows');
  return applied;
}
