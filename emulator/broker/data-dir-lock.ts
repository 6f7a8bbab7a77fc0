// One process per data directory. A start reads the snapshot and journal, compacts them and deletes the
// journals it does not own; a second emulator doing that beside a running one deletes the running one's
// journal, and its later acknowledged sends are gone at its next crash. So the data directory is locked
// before anything in it is read: `<dataDir>/.lock` is created exclusively (O_EXCL) and holds the owner's
// pid and the directory's own path. A lock whose process is gone (a kill -9, a crash, a reboot) is stale
// and is taken over; so is one that names another directory: it was copied along with the data (a backup,
// a test that copies a live directory), and its owner holds the original, not this copy.
//
// A pid alone can lie: after a reboot or a container restart another process may have the lock's pid, and the lock
// then read as live for good. So on Linux the lock also records its owner's start time (field 22 of
// /proc/<pid>/stat, clock ticks after boot), and a lock whose pid runs with another start time is stale. Where
// /proc is not there (macOS, Windows), or for a lock written without it, the pid alone decides, as before.
//
// A lock with this process's own pid is taken over too: either it is left from an earlier run that had the
// same pid (pid 1 in a container restarted), or this process opens the directory again after abandoning a
// broker without close() (what the persistence tests do to simulate a crash). Two brokers of one process on
// one directory are a programming error this lock does not catch.

import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readFileSync, realpathSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

export const LOCK_FILE = '.lock';

const lockSchema = z.object({
  pid: z.number().int().positive(),
  token: z.string(),
  dir: z.string().optional(),
  /** The owner's start time (processStartTime); absent where /proc is not there, or in a lock of an older version. */
  start: z.string().regex(/^\d+$/).optional(),
});

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `The data directory ${dataDir} is in use by process ${pid}: one emulator per data directory. ` +
        `Stop that process, or give this one another data directory. If no such process runs, delete ${join(dataDir, LOCK_FILE)}.`,
    );
    this.name = 'DataDirInUseError';
  }
}

export interface DataDirLock {
  readonly path: string;
  /** Removes the lock file if it is still this lock's (a later owner's lock is left alone). */
  release(): void;
}

/** Takes the lock on `dataDir` (which must exist), or throws DataDirInUseError naming the owner. */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  const token = randomUUID();
  const dir = realpathSync(dataDir);
  const start = processStartTime(process.pid);
  const body = JSON.stringify({ pid: process.pid, token, dir, ...(start !== undefined ? { start } : {}) }) + '\n';
  // Two tries: the second after a stale lock was moved out of the way.
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = readOwner(path, dir);
      if (owner !== undefined && owner.pid !== process.pid && isAlive(owner))
        throw new DataDirInUseError(dataDir, owner.pid);
      // Stale (or unreadable: a crash between create and write). Rename first, so that of two starts that
      // both found it stale only one removes it; the other's rename fails and it tries the create again.
      const aside = `${path}.stale-${token}`;
      try {
        renameSync(path, aside);
        rmSync(aside, { force: true });
      } catch {
        // Someone else moved it; the next attempt decides.
      }
      continue;
    }
    try {
      writeSync(fd, body);
    } finally {
      closeSync(fd);
    }
    return {
      path,
      release() {
        try {
          const current = lockSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
          if (current.success && current.data.token === token) rmSync(path, { force: true });
        } catch {
          // Already gone or unreadable: nothing of ours to remove.
        }
      },
    };
  }
  const owner = readOwner(path, dir);
  throw new DataDirInUseError(dataDir, owner?.pid ?? 0);
}

interface Owner {
  pid: number;
  start?: string;
}

/** The owner of the lock at `path` if it is a lock on `dir` (undefined: unreadable, or a copied lock). */
function readOwner(path: string, dir: string): Owner | undefined {
  try {
    const parsed = lockSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    if (!parsed.success || (parsed.data.dir !== undefined && parsed.data.dir !== dir)) return undefined;
    return parsed.data.start !== undefined ? { pid: parsed.data.pid, start: parsed.data.start } : { pid: parsed.data.pid };
  } catch {
    return undefined;
  }
}

/**
 * Whether the lock's owner still runs: its pid exists and, where both start times are known, the process with that
 * pid started when the owner did (otherwise the pid was reused by another process).
 */
function isAlive(owner: Owner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to another user.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (owner.start === undefined) return true;
  const now = processStartTime(owner.pid);
  return now === undefined || now === owner.start;
}

/**
 * A process's start time on Linux: field 22 of `/proc/<pid>/stat`, in clock ticks after boot; undefined where /proc
 * is not there or the process is not readable. Counted after the command name's closing parenthesis, since the
 * name (field 2) may itself hold spaces and parentheses.
 */
export function processStartTime(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // After ') ' comes field 3 (the state): field 22 is the 20th from there.
  const value = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  return value !== undefined && /^\d+$/.test(value) ? value : undefined;
}
