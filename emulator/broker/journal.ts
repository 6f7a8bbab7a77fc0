// The append-only journal and its snapshots (see docs/emulator-durability.md).
//
// Files in the data directory:
//   snapshot.jsonl        first line {"k":"gen","g":N}, then the full state as records
//   journal-N.jsonl       every change since snapshot N, one line per operation: a JSON array of its records
//                         (so a torn write loses a whole operation, never half of one; journals written
//                         before this hold one record per line, and are still read)
//   journal-N.damaged-<time>.jsonl
//                         a copy of journal N kept by a start that found it damaged in the middle
//                         (damaged-journal.ts); never read or deleted by the broker
// A compaction writes snapshot N+1 to a temporary file, fsyncs it, opens journal-(N+1), renames the snapshot
// over snapshot.jsonl, fsyncs the directory and deletes journal-N. A crash at any point leaves either the old snapshot
// with its journal or the new snapshot with an empty (or missing) journal, never a mix.

import {
  closeSync,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { JournalSink, Log } from './core.ts';
import type { JournalRecord } from './journal-records.ts';
import { stringifyRecord } from './journal-records.ts';

export const SNAPSHOT_FILE = 'snapshot.jsonl';
export const journalFile = (gen: number): string => `journal-${gen}.jsonl`;

/** Non-durable records (locks, completions, abandons) reach the disk within this many ms. */
const GROUP_SYNC_MS = 50;
const DEFAULT_COMPACT_BYTES = 64 * 1024 * 1024;
/** After a compaction failed (disk full), the size-triggered one is not tried again for this long. */
const COMPACT_RETRY_MS = 5_000;

/**
 * The file system calls the journal writes with. Tests replace one to make it fail as a full or failing disk
 * does (ENOSPC, EIO), which a test cannot otherwise cause without a mount.
 */
export interface JournalIo {
  openSync: typeof openSync;
  writeSync: (fd: number, buffer: Buffer, offset: number, length: number, position: number | null) => number;
  fdatasyncSync: typeof fdatasyncSync;
}

const realIo: JournalIo = { openSync, writeSync, fdatasyncSync };

export interface JournalOptions {
  compactBytes?: number;
  /** Tests only: the file system calls (default node:fs). */
  io?: Partial<JournalIo>;
  /** Released after the last compaction of close(). */
  lock?: { release(): void };
}

export class FileJournal implements JournalSink {
  readonly enabled = true;
  private fd: number;
  private pending: string[] = [];
  /** Bytes appended since this journal file was started (what size-triggered compaction counts). */
  private bytes = 0;
  /** The file's length: everything up to here is whole lines; a failed write is cut back to it. */
  private end: number;
  private dirty = false;
  /**
   * The journal no longer matches memory: a write could not be cut back, an fdatasync failed (the kernel may
   * have dropped the written pages), or an operation failed to write but kept its change in memory. Until a
   * compaction from memory succeeds, every commit is one, so nothing is appended to an untrusted file.
   */
  private behind = false;
  private compactFailedAt = -Infinity;
  private syncTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly compactBytes: number;
  private readonly io: JournalIo;

  constructor(
    private readonly dir: string,
    private gen: number,
    private readonly log: Log,
    private readonly options: JournalOptions = {},
  ) {
    this.compactBytes = options.compactBytes ?? DEFAULT_COMPACT_BYTES;
    this.io = { ...realIo, ...options.io };
    this.fd = this.io.openSync(join(dir, journalFile(gen)), 'a');
    this.end = fstatSync(this.fd).size;
  }

  append(record: JournalRecord): void {
    if (this.closed) return;
    this.pending.push(stringifyRecord(record));
  }

  commit(durable: boolean, snapshot: () => JournalRecord[]): void {
    if (this.closed) return;
    if (this.behind) {
      // Memory already holds this operation: a snapshot of it replaces the line that would be appended.
      this.pending = [];
      this.compact(snapshot());
      return;
    }
    if (this.pending.length > 0) {
      // One line per operation: a dead-letter move is a `del` and a `put`, and replay must see both or neither.
      const data = Buffer.from('[' + this.pending.join(',') + ']\n');
      this.pending = [];
      this.appendLine(data);
      this.bytes += data.length;
      this.dirty = true;
    }
    if (!this.dirty) return;
    if (durable) {
      this.sync();
    } else if (!this.syncTimer) {
      this.syncTimer = setTimeout(() => this.timedSync(), GROUP_SYNC_MS);
      this.syncTimer.unref();
    }
  }

  /** An operation failed to write and its change stays in memory: the next commit rewrites the state. */
  markBehind(): void {
    this.behind = true;
  }

  maybeCompact(snapshot: () => JournalRecord[]): void {
    if (this.closed || this.bytes < this.compactBytes) return;
    if (Date.now() - this.compactFailedAt < COMPACT_RETRY_MS) return;
    try {
      this.compact(snapshot());
    } catch (err) {
      // The operation that got here is already in the journal: it succeeded. Journal N stays valid, so the
      // broker goes on appending to it and tries again later.
      this.compactFailedAt = Date.now();
      this.log.error({ err: String(err) }, 'journal compaction failed; appending to the current journal');
    }
  }

  /** Writes the whole state as snapshot gen+1 and starts an empty journal for it. */
  compact(records: JournalRecord[]): void {
    if (!this.behind) {
      // Journal N must hold everything up to here in case this compaction fails or the process dies in it.
      // If that write fails the snapshot below still carries it; until the snapshot is in place, it is behind.
      try {
        this.commit(true, () => records);
      } catch {
        this.behind = true;
      }
    }
    const next = this.gen + 1;
    const tmp = join(this.dir, `${SNAPSHOT_FILE}.tmp`);
    try {
      const fd = this.io.openSync(tmp, 'w');
      try {
        const header: JournalRecord = { k: 'gen', g: next };
        let chunk: string[] = [stringifyRecord(header)];
        let size = 0;
        for (const r of records) {
          const line = stringifyRecord(r);
          chunk.push(line);
          size += line.length;
          if (size > 1024 * 1024) {
            this.writeAll(fd, Buffer.from(chunk.join('\n') + '\n'));
            chunk = [];
            size = 0;
          }
        }
        if (chunk.length > 0) this.writeAll(fd, Buffer.from(chunk.join('\n') + '\n'));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      // A partial snapshot must not stay on a full disk; snapshot N and journal N are untouched.
      rmSync(tmp, { force: true });
      throw err;
    }
    // The new journal is opened before the snapshot is renamed into place: if the open fails, snapshot N and
    // journal N stay the pair in use. Renaming first and then failing to open left the broker appending to
    // journal N behind snapshot N+1, and the next start deleted journal N as stale, with everything in it.
    let newFd: number;
    try {
      newFd = this.io.openSync(join(this.dir, journalFile(next)), 'w');
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
    try {
      renameSync(tmp, join(this.dir, SNAPSHOT_FILE));
    } catch (err) {
      closeSync(newFd);
      rmSync(join(this.dir, journalFile(next)), { force: true });
      rmSync(tmp, { force: true });
      throw err;
    }
    syncDir(this.dir);
    const oldFd = this.fd;
    const oldGen = this.gen;
    this.fd = newFd;
    this.gen = next;
    this.bytes = 0;
    this.end = 0;
    this.dirty = false;
    this.behind = false;
    this.compactFailedAt = -Infinity;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    closeSync(oldFd);
    rmSync(join(this.dir, journalFile(oldGen)), { force: true });
    this.log.info({ generation: next, records: records.length }, 'broker state compacted into a snapshot');
  }

  async close(snapshot: () => JournalRecord[]): Promise<void> {
    if (this.closed) return;
    try {
      this.compact(snapshot());
    } finally {
      this.closed = true;
      if (this.syncTimer) clearTimeout(this.syncTimer);
      this.syncTimer = undefined;
      closeSync(this.fd);
      this.options.lock?.release();
    }
  }

  /**
   * Appends one operation's line. A failed write (disk full) may have left part of it: the file is cut back
   * to where the line began, so the next line does not follow half a line (replay took that for damage in
   * the middle and dropped every acknowledged operation after it). If even that fails, the journal is behind.
   */
  private appendLine(data: Buffer): void {
    try {
      // At the file's known end, not at the fd's position: a write that failed part-way moved that past the
      // end the file is cut back to, and the next line went there with a hole of zero bytes before it.
      this.writeAll(this.fd, data, this.end);
      this.end += data.length;
    } catch (err) {
      try {
        ftruncateSync(this.fd, this.end);
      } catch (cut) {
        this.behind = true;
        this.log.error({ err: String(cut) }, 'journal could not be cut back after a failed write');
      }
      throw err;
    }
  }

  private sync(): void {
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    try {
      this.io.fdatasyncSync(this.fd);
    } catch (err) {
      // After a failed fdatasync the kernel may have dropped the written pages and a later one can succeed
      // without them: nothing written so far can be trusted to be on disk.
      this.behind = true;
      throw err;
    }
    this.dirty = false;
  }

  /**
   * The group-commit timer. Nothing waits on it (non-durable operations were answered when written), so a
   * failure is not thrown from a timer callback, which killed the whole process (console, Resolver, Cosmos
   * with it): it is logged, and the journal is behind, so the next operation rewrites the state from memory
   * as a new snapshot before it returns.
   */
  private timedSync(): void {
    this.syncTimer = undefined;
    if (this.closed) return;
    try {
      this.sync();
    } catch (err) {
      this.log.error(
        { err: String(err) },
        'journal sync failed; the next operation rewrites the state from memory before it returns',
      );
    }
  }

  /** Writes all of `data`, at `position` (or at the fd's position when null). */
  private writeAll(fd: number, data: Buffer, position: number | null = null): void {
    let off = 0;
    while (off < data.length)
      off += this.io.writeSync(fd, data, off, data.length - off, position === null ? null : position + off);
  }
}

/** Makes a rename durable: the directory entry itself must reach the disk. */
export function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
