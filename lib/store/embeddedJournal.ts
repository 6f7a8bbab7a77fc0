// Durability for the embedded Cosmos server (`@vercel/cosmosdb-server` keeps everything in memory).
//
// Design (docs/store.md#durability-of-the-embedded-server): a redo journal of *after-images*, written below the
// HTTP front, plus a snapshot that compacts it.
//
// - Every change to the server's in-memory model goes through two methods of its `Items` class: `_set(data)` (the
//   whole new document, with the `_rid`, `_etag` and `_ts` the server gave it) and `delete(idOrRid, partition)`.
//   Both are wrapped: a change to a journaled server's model is appended, as an after-image, to that server's
//   pending buffer.
// - The server changes its model synchronously once a request's body is read (a transactional batch included),
//   so the buffer never holds half of a request's changes when any response is about to leave. The buffer is
//   written (one `write` call, one checksummed line) just before every response, so a write is on disk before its
//   acknowledgement, and a `kill -9` loses only changes nobody was told about. The page cache is enough for a
//   process crash; `fsync` (power loss) is not paid per request.
// - Replay applies the after-images in order through the same methods, so the documents come back exactly as
//   they were: same `_etag` (a client's If-Match still matches), same `_ts`, same `_rid`.
// - Compaction writes the whole model as a snapshot of after-images, atomically (temporary file, fsync, rename),
//   into a new generation, then removes the older files. It runs when the journal has grown past a threshold
//   and at a clean close. Replaying after-images is idempotent, which is what makes this simple: a journal that
//   a crash left beside a newer snapshot changes nothing when replayed again.
// - A torn or corrupt journal tail (a crash mid-write, a damaged disk) is found by the line's CRC-32 and length: the
//   valid prefix is kept, the rest cut off, and the start says so. Damage in the middle (valid records after the bad
//   one: acknowledged writes) is cut the same way, but only after a copy of the whole journal is kept aside. A damaged *snapshot* is not a torn write (it is
//   synced before it is renamed into place): the start refuses it and changes nothing, since the next compaction
//   would otherwise replace the only copy of the documents after the damage.
// - Every write is written whole or not at all: a short write (a nearly full disk) is continued, and a failed one
//   is cut back (ftruncate) so the journal never holds a partial record before later good ones. A response whose
//   changes could not be written is a 503, never an acknowledgement. Every write names its file offset (pwrite):
//   the cut-back moves no descriptor's position.
//
// Journaling at the model (not replaying HTTP requests) is what keeps `_etag`/`_ts` stable and needs no second
// copy of the server's request semantics.
import {
  closeSync,
  constants as fsConstants,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  ftruncateSync,
} from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

type Doc = Record<string, unknown> & { _rid: string; id: string };

interface ItemLike {
  read(): Doc | undefined;
}
interface ItemsLike {
  _data: Map<string, ItemLike & { collections?: ItemsLike; documents?: ItemsLike }>;
  _ridCount: number;
  _parent: ItemLike;
  _set(data: Doc): unknown;
  delete(idOrRid: string, partition: unknown): void;
  _item(keyPath: string, idOrRid: string, partition: unknown): ItemLike;
}
interface AccountLike {
  databases: ItemsLike;
}

/** Where a change happened: the account's databases, one database's collections, one collection's documents. */
type Scope = { k: 'dbs' } | { k: 'colls'; db: string } | { k: 'docs'; db: string; coll: string };
type Op = { op: 'set'; s: Scope; n: number; d: Doc } | { op: 'del'; s: Scope; rid: string };

/**
 * `fs.writeSync(fd, buffer, offset, length, position)`: writes at the file offset `position` (pwrite), and returns the
 * number of bytes written, which may be fewer than `length`.
 */
export type JournalWrite = (fd: number, buffer: Buffer, offset: number, length: number, position: number) => number;

export interface JournalOptions {
  /** The folder that holds the snapshot and the journal (created when missing). */
  dir: string;
  /** Compact when the journal has grown past this many bytes (default 64 MiB, or the last snapshot's size). */
  compactAfterBytes?: number;
  /**
   * The write every journal and snapshot byte goes through (default `fs.writeSync`). A seam for tests, which
   * simulate a short write or a full disk with it: a test cannot mount a small file system.
   */
  write?: JournalWrite;
  /** Where a problem nobody waits for is reported (a compaction at the size threshold that failed). */
  onProblem?: (message: string) => void;
}

export interface JournalRecovery {
  /** Documents, collections and databases in the model after recovery. */
  documents: number;
  /** Journal records replayed on top of the snapshot. */
  records: number;
  /** Set when a torn or corrupt journal tail was cut off: which file, which record, what was dropped. */
  truncated?: string;
  /**
   * Set when the journal was damaged in the middle (an invalid record with valid ones after it): those later records
   * were acknowledged, so the whole journal was copied to `kept` before the cut. No document contents.
   */
  damaged?: {
    file: string;
    /** The damaged record's line (1-based; a journal has one record per line). */
    line: number;
    /** Its byte offset: where the journal was cut. */
    offset: number;
    /** Valid records after it, not replayed: they are in the copy only. */
    recordsAfter: number;
    kept: string;
  };
  /**
   * The last stop was not clean: journal records were replayed (no clean stop compacted them) or a damaged tail
   * was cut off. Buffered state derived from the documents (the store's counters) may then be behind.
   */
  unclean: boolean;
  /** Milliseconds the recovery took. */
  ms: number;
}

const SNAPSHOT = 'snapshot.ndjson';
const SNAPSHOT_HEADER = '# nimbus-embedded-cosmos generation ';
const journalName = (generation: number) => `journal-${String(generation).padStart(8, '0')}.ndjson`;
const JOURNAL_PATTERN = /^journal-(\d{8})\.ndjson$/;
const DEFAULT_COMPACT_AFTER = 64 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------------------------
// The server's model classes, from the same copy of the package the server uses.

type ItemsClass = new (...a: unknown[]) => ItemsLike;
interface ServerModel {
  accountModule: { default: new (host: string, port: number) => AccountLike };
  itemsProto: ItemsLike;
  Databases: ItemsClass;
  Collections: ItemsClass;
  Documents: ItemsClass;
}
let serverModel: ServerModel | undefined;

/**
 * Loaded on first use, not at import: the console's server bundle imports the store (and so this module) without
 * ever starting an embedded server, and a bundler gives `import.meta.url` no file URL there.
 */
function model(): ServerModel {
  if (serverModel) return serverModel;
  const serverRequire = createRequire(createRequire(import.meta.url).resolve('@vercel/cosmosdb-server'));
  const cls = (path: string) => (serverRequire(path) as { default: ItemsClass }).default;
  serverModel = {
    accountModule: serverRequire('./account/index.js') as ServerModel['accountModule'],
    itemsProto: (serverRequire('./account/items.js') as { default: { prototype: ItemsLike } }).default
      .prototype,
    Databases: cls('./account/databases.js'),
    Collections: cls('./account/collections.js'),
    Documents: cls('./account/documents.js'),
  };
  return serverModel;
}

/**
 * Which journal a change belongs to: every Items instance of a journaled account carries its journal, put on the
 * account's databases when the journal attaches and handed down to each database's collections and each
 * collection's documents as they are created. A property, not an AsyncLocalStorage: on Node 20 the latter turns on
 * promise hooks for the whole process, which measured as half the throughput of a Cosmos client in that process.
 */
const JOURNAL = Symbol('nimbus.embeddedJournal');
type Tagged = { [JOURNAL]?: EmbeddedJournal };
const journalOf = (items: ItemsLike): EmbeddedJournal | undefined => (items as Tagged)[JOURNAL];
let lastAccount: AccountLike | undefined;
let installed = false;

/** `instanceof` without TypeScript's narrowing (the three classes have the same shape for the compiler). */
const isA = (items: ItemsLike, cls: new (...a: unknown[]) => ItemsLike): boolean =>
  (items as object) instanceof cls;

function scopeOf(items: ItemsLike): Scope | undefined {
  const { Databases, Collections, Documents } = model();
  if (isA(items, Databases)) return { k: 'dbs' };
  if (isA(items, Collections)) return { k: 'colls', db: items._parent.read()!._rid };
  if (isA(items, Documents)) {
    // A collection's _self is `dbs/{dbRid}/colls/{collRid}` (with or without a leading slash).
    const self = String(items._parent.read()?._self ?? '');
    const m = /dbs\/([^/]+)\/colls\/([^/]+)/.exec(self);
    if (!m) return undefined;
    return { k: 'docs', db: m[1]!, coll: m[2]! };
  }
  // Partition key ranges are derived from their collection; user-defined functions are not kept (docs/store.md).
  return undefined;
}

/** Wraps the model's two mutating methods and the account's constructor, once per process. */
function install(): void {
  if (installed) return;
  installed = true;
  const { accountModule, itemsProto: proto } = model();
  const Account = accountModule.default;
  // The server creates its account when it starts listening and keeps it private: remember the newest one so the
  // journal can restore into it (the 'listening' listener below runs right after the server's own).
  accountModule.default = class extends (Account as new (host: string, port: number) => object) {
    constructor(host: string, port: number) {
      super(host, port);
      lastAccount = this as unknown as AccountLike;
    }
  } as unknown as typeof Account;

  const originalSet = proto._set;
  const originalDelete = proto.delete;
  proto._set = function (this: ItemsLike, data: Doc) {
    const result = originalSet.call(this, data);
    const journal = journalOf(this);
    if (journal) {
      // A new database's collections and a new collection's documents belong to the same journal.
      const holder = this._data.get(data._rid);
      if (holder?.collections) (holder.collections as Tagged)[JOURNAL] = journal;
      if (holder?.documents) (holder.documents as Tagged)[JOURNAL] = journal;
      const s = scopeOf(this);
      if (s) journal.append({ op: 'set', s, n: this._ridCount, d: data });
    }
    return result;
  };
  proto.delete = function (this: ItemsLike, idOrRid: string, partition: unknown) {
    const journal = journalOf(this);
    const existing = journal ? this._item('/id', idOrRid, partition).read() : undefined;
    originalDelete.call(this, idOrRid, partition);
    if (journal && existing) {
      const s = scopeOf(this);
      if (s) journal.append({ op: 'del', s, rid: existing._rid });
    }
  };
}

/** The Items a scope names in an account, or undefined when its parent is gone. */
function itemsOf(account: AccountLike, s: Scope): ItemsLike | undefined {
  if (s.k === 'dbs') return account.databases;
  const db = account.databases._data.get(s.db);
  if (s.k === 'colls') return db?.collections;
  const coll = db?.collections?._data.get(s.coll);
  return coll?.documents;
}

function apply(account: AccountLike, op: Op): boolean {
  const items = itemsOf(account, op.s);
  if (!items) return false;
  if (op.op === 'set') {
    const existing = items._data.get(op.d._rid);
    if (existing && op.s.k !== 'docs') {
      // A database or collection is replaced in place: recreating it would drop its children. (The server's own
      // replace of a collection is journaled as a delete followed by a set, and replays as such.)
      (existing as unknown as { _data: Doc })._data = op.d;
    } else {
      // A document's after-image is the whole document: it replaces what is there under the same _rid.
      if (existing) items.delete(op.d._rid, undefined);
      items._set(op.d);
    }
    items._ridCount = Math.max(items._ridCount, op.n);
  } else if (items._data.has(op.rid)) {
    items.delete(op.rid, undefined);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// The file format: one line per record, `<crc32 hex 8>\t<length>\t<JSON array of ops>\n`.

const defaultWrite: JournalWrite = (fd, buffer, offset, length, position) =>
  writeSync(fd, buffer, offset, length, position);

/**
 * Writes all of `buffer` at the file offset `position`: `write(2)` may write fewer bytes than asked (a nearly full
 * disk writes what fits and says how much), and ignoring that count left a snapshot cut short and renamed into
 * place. A write that makes no progress fails instead of looping. The position is explicit, never the descriptor's:
 * a failed journal write is cut back with ftruncate, which does not move a descriptor's position, so the next write
 * through a descriptor opened with 'w' (as a compaction's new journal was) landed past the end and left a run of
 * zero bytes that the next start cut off, with every acknowledged write after it.
 */
export function writeFully(write: JournalWrite, fd: number, buffer: Buffer, position: number, what: string): void {
  let offset = 0;
  while (offset < buffer.length) {
    const n = write(fd, buffer, offset, buffer.length - offset, position + offset);
    if (!Number.isInteger(n) || n <= 0)
      throw Object.assign(
        new Error(`${what}: the write made no progress after ${offset} of ${buffer.length} bytes (disk full?)`),
        { code: 'ENOSPC' },
      );
    offset += n;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function encode(ops: Op[]): Buffer {
  const body = Buffer.from(JSON.stringify(ops), 'utf8');
  const head = Buffer.from(`${crc32(body).toString(16).padStart(8, '0')}\t${body.length}\t`, 'latin1');
  return Buffer.concat([head, body, Buffer.from('\n')]);
}

interface ReadResult {
  records: number;
  /** Bytes of valid records from the start of the file. */
  validBytes: number;
  totalBytes: number;
  problem?: string;
  /**
   * With a problem: how many whole, valid records follow the invalid one (not replayed). More than 0 means damage in
   * the middle, not a torn last write: those records were acknowledged.
   */
  validAfter?: number;
}

/**
 * Reads a file's records in order from byte `from` (after a snapshot's header line), calling `onOps` for each
 * valid one; stops replaying at the first invalid one, and only counts the valid records after it.
 */
function readRecords(path: string, from: number, onOps: (ops: Op[]) => void): ReadResult {
  const fd = openSync(path, 'r');
  try {
    const totalBytes = statSync(path).size;
    const chunk = Buffer.allocUnsafe(8 * 1024 * 1024);
    let carry = Buffer.alloc(0);
    let offset = from;
    let validBytes = from;
    let records = 0;
    let problem: string | undefined;
    let validAfter = 0;
    const countOnly = () => undefined;
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, offset);
      if (n === 0) break;
      offset += n;
      const buf = carry.length ? Buffer.concat([carry, chunk.subarray(0, n)]) : chunk.subarray(0, n);
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(10, start);
        if (nl < 0) break;
        const line = buf.subarray(start, nl);
        start = nl + 1;
        if (problem !== undefined) {
          // Past the damage: a record that checks here tells damage in the middle from a torn tail.
          if (decodeLine(line, countOnly) === undefined) validAfter += 1;
          continue;
        }
        const lineProblem = decodeLine(line, onOps);
        if (lineProblem) {
          problem = `record ${records + 1}: ${lineProblem}`;
          continue;
        }
        records += 1;
        validBytes += line.length + 1;
      }
      // Copy the unfinished line: `chunk` is reused by the next read.
      carry = Buffer.from(buf.subarray(start));
    }
    if (problem === undefined && carry.length > 0) problem = `record ${records + 1}: no end of line`;
    return problem === undefined
      ? { records, validBytes, totalBytes }
      : { records, validBytes, totalBytes, problem, validAfter };
  } finally {
    closeSync(fd);
  }
}

/** The name of a kept copy of a damaged journal: beside it, but never matched by JOURNAL_PATTERN (never replayed or removed). */
export function damagedJournalName(journal: string, at: Date, attempt = 1): string {
  // No ':' in the name: Windows does not allow it in a file name.
  const stamp = at.toISOString().replace(/[:.]/g, '-');
  return `${journal.replace(/\.ndjson$/, '')}.damaged-${stamp}${attempt > 1 ? `-${attempt}` : ''}.ndjson`;
}

/**
 * Copies a journal byte for byte to a new file beside it, synced with its folder entry, and returns the copy's path:
 * the cut that follows removes the records after the damage from the journal. An earlier copy is never overwritten.
 */
function keepDamagedJournal(dir: string, name: string, at: Date = new Date()): string {
  for (let attempt = 1; ; attempt++) {
    const kept = join(dir, damagedJournalName(name, at, attempt));
    try {
      copyFileSync(join(dir, name), kept, fsConstants.COPYFILE_EXCL);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    // Read-only is enough for fsync (and a copy of a read-only journal cannot be opened for writing).
    const fd = openSync(kept, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const dirFd = openSync(dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    return kept;
  }
}

function decodeLine(line: Buffer, onOps: (ops: Op[]) => void): string | undefined {
  const tab1 = line.indexOf(9);
  const tab2 = tab1 < 0 ? -1 : line.indexOf(9, tab1 + 1);
  if (tab1 !== 8 || tab2 < 0) return 'malformed header';
  const crc = Number.parseInt(line.subarray(0, 8).toString('latin1'), 16);
  const length = Number(line.subarray(tab1 + 1, tab2).toString('latin1'));
  const body = line.subarray(tab2 + 1);
  if (!Number.isInteger(length) || body.length !== length) return `length ${body.length}, expected ${length}`;
  if (crc32(body) !== crc) return 'checksum mismatch';
  let ops: unknown;
  try {
    ops = JSON.parse(body.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  if (!Array.isArray(ops)) return 'not a list of changes';
  onOps(ops as Op[]);
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------

export class EmbeddedJournal {
  readonly dir: string;
  private account: AccountLike | undefined;
  /** Changes applied in memory and not yet in the journal: no response that covers them has been sent. */
  private pending: Op[] = [];
  private fd: number | undefined;
  private journalPath = '';
  private generation = 0;
  /** The journal's length up to its last whole record: where a failed write is cut back to. */
  private journalBytes = 0;
  /** A failed write left bytes after `journalBytes` that could not be cut off yet: no record may follow them. */
  private torn = false;
  private compactAfter: number;
  private readonly baseCompactAfter: number;
  private readonly write: JournalWrite;
  private readonly onProblem: (message: string) => void;
  private compacting = false;
  /** While the start replays the files, changes are not journaled again. */
  private replaying = false;
  private closed = false;
  recovery: JournalRecovery | undefined;
  /** Set when the start could not restore the folder: the server must not serve (startEmbeddedCosmos rejects). */
  failure: Error | undefined;

  private constructor(options: JournalOptions) {
    this.dir = options.dir;
    this.baseCompactAfter = options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER;
    this.compactAfter = this.baseCompactAfter;
    this.write = options.write ?? defaultWrite;
    this.onProblem = options.onProblem ?? ((message) => console.error(`[cosmos] ${message}`));
  }

  /**
   * Makes `server` (created by `createHttpServer`, not yet listening) durable in `options.dir`: when it starts
   * listening, the snapshot and journal are replayed into its account before its first request is handled.
   */
  static attach(server: Server, options: JournalOptions): EmbeddedJournal {
    install();
    mkdirSync(options.dir, { recursive: true });
    const journal = new EmbeddedJournal(options);
    // Runs after the server's own 'listening' listener, which has just created the account (so the recovery cannot
    // run before listen); synchronous, so no request is handled before the data is back. It must not throw: an
    // exception here is uncaught (it killed the whole process on a read-only folder) and startEmbeddedCosmos never
    // rejected. The failure is kept instead; startEmbeddedCosmos closes the server and rejects with it.
    server.on('listening', () => {
      try {
        if (!lastAccount) throw new Error('the server created no account');
        journal.account = lastAccount;
        (lastAccount.databases as Tagged)[JOURNAL] = journal;
        journal.recover();
      } catch (error) {
        journal.closed = true;
        if (journal.fd !== undefined) closeSync(journal.fd);
        journal.fd = undefined;
        journal.failure = new Error(
          `the embedded Cosmos server could not restore its data folder ${options.dir}: ${errorText(error)}`,
          { cause: error },
        );
      }
    });
    const handlers = server.listeners('request') as Array<
      (req: IncomingMessage, res: ServerResponse) => void
    >;
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (journal.failure) {
        // Between the failed recovery and the close: nothing is served from a half-restored model.
        req.resume();
        res.statusCode = 503;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ code: 'ServiceUnavailable', message: 'the embedded Cosmos server did not start' }));
        return;
      }
      const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
      // Before the answer leaves: the changes it acknowledges (and any other request's, all complete) on disk. When
      // they cannot be written, the answer is a 503 instead: its changes stay pending (in memory, written by the
      // next flush that succeeds) but nobody is told they are durable; the client retries.
      res.end = ((...args: unknown[]) => {
        try {
          journal.flush();
        } catch (error) {
          return refuse(res, end, error);
        }
        return end(...args);
      }) as typeof res.end;
      for (const handler of handlers) handler.call(server, req, res);
    });
    return journal;
  }

  /** Queues a change; written by the next flush. */
  append(op: Op): void {
    if (!this.closed && !this.replaying) this.pending.push(op);
  }

  /**
   * Writes the queued changes as one record, whole: on a failure (a full disk, an I/O error) the file is cut back to
   * its last whole record and the changes stay queued, and the error is thrown so that no response acknowledges
   * them. Before, the queue was emptied first and a short count ignored: a partial record stayed in the journal
   * (recovery stops at it, so every later acknowledged write was lost at the next start), and the changes of other
   * requests were dropped yet acknowledged.
   */
  flush(): void {
    if (this.pending.length === 0 || this.fd === undefined) return;
    if (this.torn) {
      ftruncateSync(this.fd, this.journalBytes);
      this.torn = false;
    }
    const record = encode(this.pending);
    try {
      // At the end of the last whole record, wherever the descriptor's position is (writeFully).
      writeFully(this.write, this.fd, record, this.journalBytes, `journal ${this.journalPath}`);
    } catch (error) {
      try {
        ftruncateSync(this.fd, this.journalBytes);
      } catch {
        // Cut back by the next flush, before anything else is written.
        this.torn = true;
      }
      throw error;
    }
    this.pending = [];
    this.journalBytes += record.length;
    if (this.journalBytes > this.compactAfter && !this.compacting) setImmediate(() => this.compactInBackground());
  }

  /** A compaction at the size threshold: nobody waits for it, so its failure is reported, and tried again later. */
  private compactInBackground(): void {
    try {
      this.compact();
    } catch (error) {
      // Not at every flush from now on (each would write the whole model): after another threshold's worth.
      this.compactAfter = this.journalBytes + this.baseCompactAfter;
      this.onProblem(errorText(error));
    }
  }

  /**
   * Writes the whole model as a new snapshot generation and starts an empty journal. Throws when the snapshot
   * could not be written whole; the previous snapshot and journal are then kept, unchanged, and appends continue.
   */
  compact(): void {
    if (this.closed || !this.account || this.compacting) return;
    this.compacting = true;
    try {
      this.writeSnapshot();
    } finally {
      this.compacting = false;
    }
  }

  private writeSnapshot(): void {
    const next = this.generation + 1;
    const tmp = join(this.dir, `${SNAPSHOT}.tmp`);
    const journalPath = join(this.dir, journalName(next));
    let bytes = 0;
    let newFd: number | undefined;
    try {
      const fd = openSync(tmp, 'w');
      try {
        // Synchronous, so the snapshot is one consistent state; the server answers nothing meanwhile (about a
        // second per 100,000 documents). Every buffer is written whole: a short write ignored here was renamed
        // into place, and the journals that still held the data were removed.
        const put = (buffer: Buffer) => {
          writeFully(this.write, fd, buffer, bytes, `snapshot ${tmp}`);
          bytes += buffer.length;
        };
        put(Buffer.from(`${SNAPSHOT_HEADER}${next}\n`, 'latin1'));
        const batch: Buffer[] = [];
        let batchBytes = 0;
        for (const op of this.model()) {
          const rec = encode([op]);
          batch.push(rec);
          batchBytes += rec.length;
          if (batchBytes > 4 * 1024 * 1024) {
            put(Buffer.concat(batch));
            batch.length = 0;
            batchBytes = 0;
          }
        }
        if (batch.length) put(Buffer.concat(batch));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      // The new journal exists before the snapshot that names its generation does.
      newFd = openSync(journalPath, 'w');
      fsyncSync(newFd);
      renameSync(tmp, join(this.dir, SNAPSHOT));
    } catch (error) {
      // Nothing was replaced: the old snapshot and journal stay, and appends go on where they were.
      try {
        if (newFd !== undefined) closeSync(newFd);
        rmSync(journalPath, { force: true });
        rmSync(tmp, { force: true });
      } catch {
        // A leftover temporary file or empty newer journal is harmless: the next compaction rewrites both.
      }
      throw new Error(
        `could not write a snapshot of ${this.dir} (${errorText(error)}): the previous snapshot and the journal ${this.journalPath} are kept`,
        { cause: error },
      );
    }
    // The snapshot now names generation `next`: from here on, appends must go to its journal.
    const oldFd = this.fd;
    this.fd = newFd;
    this.journalPath = journalPath;
    this.generation = next;
    this.journalBytes = 0;
    this.torn = false;
    // Changes still queued are in the model, so in the snapshot.
    this.pending = [];
    if (oldFd !== undefined) closeSync(oldFd);
    try {
      const dirFd = openSync(this.dir, 'r');
      try {
        fsyncSync(dirFd);
      } finally {
        closeSync(dirFd);
      }
    } catch (error) {
      // The rename is visible (a process crash keeps it); only a power loss could undo it.
      this.onProblem(`could not sync the folder ${this.dir} after writing its snapshot: ${errorText(error)}`);
    }
    for (const name of readdirSync(this.dir)) {
      const m = JOURNAL_PATTERN.exec(name);
      if (m && Number(m[1]) < next) rmSync(join(this.dir, name), { force: true });
    }
    // A journal as large as the snapshot costs about as much to replay: compact again at that point.
    this.compactAfter = Math.max(this.baseCompactAfter, bytes);
  }

  /**
   * Flushes, compacts (so the next start reads one snapshot) and closes the files. Throws when the snapshot could
   * not be written: the stop was not clean, and the journal, kept, is what the next start replays.
   */
  close(): void {
    if (this.closed) return;
    let flushProblem: string | undefined;
    try {
      this.flush();
    } catch (error) {
      flushProblem = errorText(error);
    }
    let compactProblem: string | undefined;
    if (this.account && (this.journalBytes > 0 || this.pending.length > 0)) {
      try {
        this.compact();
      } catch (error) {
        compactProblem = errorText(error);
      }
    }
    const unwritten = this.pending.length;
    this.closed = true;
    this.pending = [];
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    if (compactProblem !== undefined || unwritten > 0) {
      const lost =
        unwritten > 0
          ? `; ${unwritten} changes that no client was told of were not written (${flushProblem ?? 'no snapshot'})`
          : '';
      throw new Error(
        `the embedded Cosmos server did not stop cleanly: ${compactProblem ?? 'no snapshot was written'}${lost}; the next start replays the journal`,
      );
    }
  }

  /** Every database, collection and document of the model, parents first, as after-images. */
  private *model(): Generator<Op> {
    const account = this.account!;
    const dbs = account.databases;
    for (const db of dbs._data.values()) {
      const dbDoc = db.read();
      if (!dbDoc) continue;
      yield { op: 'set', s: { k: 'dbs' }, n: dbs._ridCount, d: dbDoc };
      const colls = db.collections!;
      for (const coll of colls._data.values()) {
        const collDoc = coll.read();
        if (!collDoc) continue;
        yield { op: 'set', s: { k: 'colls', db: dbDoc._rid }, n: colls._ridCount, d: collDoc };
        const docs = coll.documents!;
        const s: Scope = { k: 'docs', db: dbDoc._rid, coll: collDoc._rid };
        for (const doc of docs._data.values()) {
          const d = doc.read();
          if (d) yield { op: 'set', s, n: docs._ridCount, d };
        }
      }
    }
  }

  /** Loads the snapshot, replays the journals after it, cuts off a bad tail, and opens the journal for appends. */
  private recover(): void {
    this.replaying = true;
    try {
      this.replay();
    } finally {
      this.replaying = false;
    }
  }

  private replay(): void {
    const started = Date.now();
    const account = this.account!;
    const problems: string[] = [];
    let records = 0;
    let generation = 0;
    const snapshotPath = join(this.dir, SNAPSHOT);
    if (existsSync(snapshotPath)) {
      const header = snapshotHeader(snapshotPath);
      if (!header)
        throw new Error(
          `${snapshotPath} has no snapshot header line. Nothing was read or changed; restore the file from a backup, or move the folder aside to start empty`,
        );
      generation = header.generation;
      // The snapshot was written, synced and renamed into place whole: a problem inside it is damage, not a torn
      // write. Carrying on with the valid prefix lost the documents after it for good (the next compaction
      // replaced the only copy), so the start stops and changes nothing, as the emulator does with its snapshot.
      const r = readRecords(snapshotPath, header.bytes, (ops) => ops.forEach((op) => apply(account, op)));
      if (r.problem) {
        const line = r.records + 2;
        throw new Error(
          `${snapshotPath} is damaged at ${r.problem} (line ${line}): a snapshot is synced before it is renamed into place, so this is not a torn write. ` +
            `Nothing was changed. Restore the file from a backup; or, to start without that record (one document, or a container or database with its documents, is lost), ` +
            `keep a copy of the file, delete that line (sed -i '${line}d' ${snapshotPath}) and start again`,
        );
      }
    }
    // The journal of the snapshot's generation (and later ones, should a start ever find them). Older journals
    // are what the snapshot already holds: a crash between the snapshot's rename and their removal leaves them.
    const journals = readdirSync(this.dir)
      .map((name) => ({ name, generation: Number(JOURNAL_PATTERN.exec(name)?.[1] ?? NaN) }))
      .filter((j) => Number.isInteger(j.generation))
      .sort((a, b) => a.generation - b.generation);
    let appendTo: { path: string; bytes: number } | undefined;
    let damaged: JournalRecovery['damaged'];
    for (const j of journals) {
      const path = join(this.dir, j.name);
      if (j.generation < generation) {
        rmSync(path, { force: true });
        continue;
      }
      const r = readRecords(path, 0, (ops) => ops.forEach((op) => apply(account, op)));
      records += r.records;
      generation = j.generation;
      appendTo = { path, bytes: r.validBytes };
      if (r.problem) {
        let keptNote = '';
        if ((r.validAfter ?? 0) > 0) {
          // Damage in the middle, not a torn last write: the records after it were acknowledged, and the cut below
          // removes them. Replaying past the damage could build a state that never existed, so they are not
          // replayed; a copy of the whole journal is kept aside first, as the emulator does. When no copy can be
          // made the start stops with the journal untouched rather than cut the only one.
          try {
            const kept = keepDamagedJournal(this.dir, j.name);
            damaged = { file: path, line: r.records + 1, offset: r.validBytes, recordsAfter: r.validAfter!, kept };
            keptNote = `; it is damaged in the middle (${r.validAfter} valid records after it, not replayed): the whole journal was copied to ${kept} first`;
          } catch (error) {
            throw new Error(
              `${path} is damaged at ${r.problem} (line ${r.records + 1}, byte ${r.validBytes}) with ${r.validAfter} valid records after it, and keeping a copy before cutting it failed, so the start stops with the journal untouched: ${errorText(error)}`,
              { cause: error },
            );
          }
        }
        problems.push(
          `${path} ${r.problem}: kept the ${r.records} valid records before it, cut off ${r.totalBytes - r.validBytes} bytes${keptNote}`,
        );
        // Cut the bad tail so that appends continue right after the valid prefix.
        const fd = openSync(path, 'r+');
        try {
          ftruncateSync(fd, r.validBytes);
        } finally {
          closeSync(fd);
        }
        break;
      }
    }
    appendTo ??= { path: join(this.dir, journalName(generation)), bytes: 0 };
    // Not 'a': on Linux a write at an explicit position to an O_APPEND descriptor goes to the end regardless, and
    // the journal's writes name their position (writeFully). Created when missing (a new generation's journal).
    this.fd = openSync(appendTo.path, fsConstants.O_WRONLY | fsConstants.O_CREAT);
    this.journalPath = appendTo.path;
    this.generation = generation;
    this.journalBytes = appendTo.bytes;
    let documents = 0;
    for (const db of account.databases._data.values()) {
      documents += 1;
      for (const coll of db.collections?._data.values() ?? [])
        documents += 1 + (coll.documents?._data.size ?? 0);
    }
    this.recovery = {
      documents,
      records,
      // A cut with no whole record before it (records 0) was counted as a clean stop, and the counters were not
      // recounted.
      unclean: records > 0 || problems.length > 0,
      ms: Date.now() - started,
      ...(problems.length ? { truncated: problems.join('; ') } : {}),
      ...(damaged ? { damaged } : {}),
    };
  }
}

/** Answers a request whose changes could not be written: a 503 (nothing acknowledged), or a reset connection. */
function refuse(res: ServerResponse, end: (...args: unknown[]) => ServerResponse, error: unknown): ServerResponse {
  if (res.headersSent) {
    // The status is gone already; a reset connection is a failure the client cannot take for an acknowledgement.
    res.destroy();
    return res;
  }
  res.statusCode = 503;
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  res.setHeader('content-type', 'application/json');
  return end(
    JSON.stringify({
      code: 'ServiceUnavailable',
      message: `the embedded Cosmos server could not write its journal (${errorText(error)}): the change is not acknowledged; retry`,
    }),
  );
}

function snapshotHeader(path: string): { generation: number; bytes: number } | undefined {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(128);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const m = /^# nimbus-embedded-cosmos generation (\d+)\n/.exec(buf.subarray(0, n).toString('latin1'));
    return m ? { generation: Number(m[1]), bytes: Buffer.byteLength(m[0], 'latin1') } : undefined;
  } finally {
    closeSync(fd);
  }
}
