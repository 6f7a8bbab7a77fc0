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
// A compaction writes snapshot N+1 to a temporary file, fsyncs it, renames it over snapshot.jsonl, fsyncs the
// directory, starts journal-(N+1) and deletes journal-N. A crash at any point leaves either the old snapshot
// with its journal or the new snapshot with an empty (or missing) journal, never a mix.

import { closeSync, fdatasyncSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { JournalSink, Log } from './core.ts';
import type { JournalRecord } from './journal-records.ts';
import { stringifyRecord } from './journal-records.ts';

export const SNAPSHOT_FILE = 'snapshot.jsonl';
export const journalFile = (gen: number): string => `journal-${gen}.jsonl`;

/** Non-durable records (locks, completions, abandons) reach the disk within this many ms. */
const GROUP_SYNC_MS = 50;
const DEFAULT_COMPACT_BYTES = 64 * 1024 * 1024;

export interface JournalOptions {
  compactBytes?: number;
}

export class FileJournal implements JournalSink {
  readonly enabled = true;
  private fd: number;
  private pending: string[] = [];
  private bytes = 0;
  private dirty = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly compactBytes: number;

  constructor(
    private readonly dir: string,
    private gen: number,
    private readonly log: Log,
    options: JournalOptions = {},
  ) {
    this.compactBytes = options.compactBytes ?? DEFAULT_COMPACT_BYTES;
    this.fd = openSync(join(dir, journalFile(gen)), 'a');
  }

  append(record: JournalRecord): void {
    if (this.closed) return;
    this.pending.push(stringifyRecord(record));
  }

  commit(durable: boolean): void {
    if (this.closed) return;
    if (this.pending.length > 0) {
      // One line per operation: a dead-letter move is a `del` and a `put`, and replay must see both or neither.
      const data = Buffer.from('[' + this.pending.join(',') + ']\n');
      this.pending = [];
      writeAll(this.fd, data);
      this.bytes += data.length;
      this.dirty = true;
    }
    if (!this.dirty) return;
    if (durable) {
      this.sync();
    } else if (!this.syncTimer) {
      this.syncTimer = setTimeout(() => {
        this.syncTimer = undefined;
        if (!this.closed) this.sync();
      }, GROUP_SYNC_MS);
      this.syncTimer.unref();
    }
  }

  maybeCompact(snapshot: () => JournalRecord[]): void {
    if (!this.closed && this.bytes >= this.compactBytes) this.compact(snapshot());
  }

  /** Writes the whole state as snapshot gen+1 and starts an empty journal for it. */
  compact(records: JournalRecord[]): void {
    this.commit(true);
    const next = this.gen + 1;
    const tmp = join(this.dir, `${SNAPSHOT_FILE}.tmp`);
    const fd = openSync(tmp, 'w');
    try {
      const header: JournalRecord = { k: 'gen', g: next };
      let chunk: string[] = [stringifyRecord(header)];
      let size = 0;
      for (const r of records) {
        const line = stringifyRecord(r);
        chunk.push(line);
        size += line.length;
        if (size > 1024 * 1024) {
          writeAll(fd, Buffer.from(chunk.join('\n') + '\n'));
          chunk = [];
          size = 0;
        }
      }
      if (chunk.length > 0) writeAll(fd, Buffer.from(chunk.join('\n') + '\n'));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(this.dir, SNAPSHOT_FILE));
    syncDir(this.dir);
    const oldFd = this.fd;
    const oldGen = this.gen;
    this.fd = openSync(join(this.dir, journalFile(next)), 'w');
    this.gen = next;
    this.bytes = 0;
    this.dirty = false;
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
    }
  }

  private sync(): void {
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    fdatasyncSync(this.fd);
    this.dirty = false;
  }
}

function writeAll(fd: number, data: Buffer): void {
  let off = 0;
  while (off < data.length) off += writeSync(fd, data, off, data.length - off);
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
