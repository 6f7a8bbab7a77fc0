// Loads a data directory into a fresh broker (snapshot, then the journal written after it), then starts a
// new snapshot generation and attaches the journal so every later change is recorded.

import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type {
  BrokerOptions,
  EntityTimes,
  RuleDescription,
  SubscriptionDescription,
  TopicDescription,
} from './api.ts';
import type { ServiceBusBroker } from './broker.ts';
import type { Log } from './core.ts';
import { keepDamagedJournal } from './damaged-journal.ts';
import { lockDataDir } from './data-dir-lock.ts';
import { FileJournal, journalFile, SNAPSHOT_FILE } from './journal.ts';
import type { JournalOptions } from './journal.ts';
import type { JournalRecord } from './journal-records.ts';
import { parseRecord } from './journal-records.ts';
import type { QueueKind } from './model.ts';
import { decodeMessage } from './wire.ts';

type PutRecord = Extract<JournalRecord, { k: 'put' }>;
type SchRecord = Extract<JournalRecord, { k: 'sch' }>;

interface SubImage {
  d: SubscriptionDescription & EntityTimes;
  seq: number;
  rules: Map<string, { d: RuleDescription; c: number }>;
  messages: Map<string, PutRecord>;
  locked: Set<string>;
  states: Map<string, string>;
}

interface TopicImage {
  d: TopicDescription & EntityTimes;
  queue: boolean;
  scheduleSeq: number;
  scheduled: Map<number, SchRecord>;
  subs: Map<string, SubImage>;
  /** Duplicate detection history: MessageId -> when it was accepted and its sequence number. */
  duplicates: Map<string, { id: string; at: number; seq: number }>;
}

const silent: Log = { info() {}, warn() {}, error() {}, debug() {} };

export async function openPersistence(
  broker: ServiceBusBroker,
  dataDir: string,
  log: BrokerOptions['log'],
  options: JournalOptions = {},
): Promise<void> {
  const logger = log ?? silent;
  mkdirSync(dataDir, { recursive: true });
  // Before anything is read: a start beside a running emulator used to compact its state and delete its
  // journal even when that start then failed (its port in use), and the running one's later sends were lost.
  const lock = lockDataDir(dataDir);
  try {
    await load(broker, dataDir, logger, { ...options, lock });
  } catch (err) {
    lock.release();
    throw err;
  }
}

async function load(
  broker: ServiceBusBroker,
  dataDir: string,
  logger: Log,
  options: JournalOptions,
): Promise<void> {
  const { gen, records, damage } = readState(dataDir, logger);
  if (damage) {
    // Replay stops at the damage (an operation applied without the one before it could build a state that
    // never existed), and the compaction below deletes this journal: keep it aside first, so the acknowledged
    // operations after the damage are still on disk for an operator. If it cannot be kept, start-up fails
    // here rather than delete the only copy.
    let kept: string;
    try {
      kept = keepDamagedJournal(dataDir, gen);
    } catch (err) {
      // Say what was found, not only the file system's code (EACCES, ENOSPC): the operator must know the journal is
      // damaged and that it is still there, not compacted away.
      throw new Error(
        `${join(dataDir, journalFile(gen))} is damaged at line ${damage.line} (${damage.dropped} lines not replayable) and keeping a copy before compaction failed, so start-up stops with the journal untouched: ${(err as Error).message}`,
        { cause: err },
      );
    }
    logger.error(
      { file: join(dataDir, journalFile(gen)), line: damage.line, dropped: damage.dropped, kept },
      'journal is corrupt in the middle; this and every later operation are not replayed',
    );
  }
  const image = buildImage(records);
  restore(broker, image, logger);
  // Start a clean generation at once: the restored state (with lost locks counted) becomes the snapshot.
  const journal = new FileJournal(dataDir, gen, logger, options);
  journal.compact(broker.snapshotRecords());
  for (const name of readdirSync(dataDir)) {
    if (/^journal-\d+\.jsonl$/.test(name) && name !== journalFile(gen + 1))
      rmSync(join(dataDir, name), { force: true });
  }
  broker.setJournal(journal);
  logger.info({ dataDir, generation: gen + 1, records: records.length }, 'broker state loaded');
}

interface ReadState {
  gen: number;
  records: JournalRecord[];
  /** An unparsable line with good ones after it: its 1-based number, and how many lines were not replayed. */
  damage?: { line: number; dropped: number };
}

function readState(dir: string, log: Log): ReadState {
  const records: JournalRecord[] = [];
  let damage: ReadState['damage'];
  let gen = 0;
  const snapshotPath = join(dir, SNAPSHOT_FILE);
  if (existsSync(snapshotPath)) {
    let header = true;
    forEachLine(snapshotPath, (line, n) => {
      let record: JournalRecord;
      try {
        record = parseRecord(line);
      } catch (err) {
        if (!(err instanceof SyntaxError)) throw err;
        throw damagedSnapshot(dir, snapshotPath, n);
      }
      if (header) {
        if (record.k !== 'gen') throw new Error(`${snapshotPath} does not start with a generation record`);
        gen = record.g;
        header = false;
      } else {
        records.push(record);
      }
    });
    if (header) throw new Error(`${snapshotPath} does not start with a generation record`);
  }
  const journalPath = join(dir, journalFile(gen));
  if (existsSync(journalPath)) {
    // The first unparsable line, if any; the lines after it are only counted.
    let bad: number | undefined;
    let count = 0;
    forEachLine(journalPath, (line, n) => {
      count = n;
      if (bad !== undefined) return;
      let parsed: JournalRecord | JournalRecord[];
      try {
        // An operation's records are one line (an array); a journal of an older version has one per line.
        parsed = parseRecord(line);
      } catch (err) {
        if (!(err instanceof SyntaxError)) throw err;
        bad = n;
        return;
      }
      // Not `push(...parsed)`: one operation can hold more records than a call takes arguments (an expiry
      // sweep deleting every due message), and the RangeError used to be taken for a torn line.
      if (Array.isArray(parsed)) for (const r of parsed) records.push(r);
      else records.push(parsed);
    });
    if (bad === count) {
      // Only a torn last write can be unparsable; it was never acknowledged to anyone, and it is one whole
      // operation, so nothing of it is replayed.
      log.warn({ file: journalPath, line: bad }, 'journal ends with a partial record');
    } else if (bad !== undefined) {
      // A bad line followed by good ones is damage, not a torn tail: the caller keeps the file, says so.
      damage = { line: bad, dropped: count - bad + 1 };
    }
  }
  return damage ? { gen, records, damage } : { gen, records };
}

/**
 * A snapshot is written whole and fsynced before it is renamed into place, so a line that does not parse is
 * damage from outside (a bad sector, an editor, a sync tool). Loading around it would start with part of the
 * state and compact the rest away, so start-up stops, touching nothing, and says where the damage is and the
 * way out. The JSON parser's own message is left out: it can quote the line, and so a message's contents.
 */
function damagedSnapshot(dir: string, path: string, line: number): Error {
  return new Error(
    `${path} is damaged at line ${line} (not valid JSON), so the emulator's stored state cannot be loaded; ` +
      `start-up stops and has changed nothing in ${dir}, which keeps the damaged snapshot. ` +
      `To start again from an empty state, move ${dir} aside (it keeps the damaged copy for inspection) or, ` +
      `under npm start, run \`npm start -- --reset\`, which deletes it.`,
  );
}

const READ_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Calls `onLine` with each non-empty line of a file and its 1-based number (counting non-empty lines),
 * reading it in chunks. A snapshot can be larger than the longest string V8 makes (about 512 MiB): reading
 * it whole failed with "Cannot create a string longer than 0x1fffffe8 characters" and the emulator could
 * not start again with a full memory budget. Lines are cut on the byte 0x0A, which UTF-8 never uses inside a
 * character, so a character split by a chunk boundary is decoded whole.
 */
export function forEachLine(
  path: string,
  onLine: (line: string, n: number) => void,
  chunkBytes = READ_CHUNK_BYTES,
): void {
  const fd = openSync(path, 'r');
  try {
    const chunk = Buffer.allocUnsafe(chunkBytes);
    let carry: Buffer[] = [];
    let n = 0;
    const emit = (parts: Buffer[]): void => {
      const line = parts.length === 1 ? parts[0]!.toString('utf8') : Buffer.concat(parts).toString('utf8');
      if (line.length > 0) onLine(line, ++n);
    };
    for (;;) {
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      const buf = chunk.subarray(0, read);
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(10, start);
        if (nl < 0) break;
        carry.push(buf.subarray(start, nl));
        emit(carry);
        carry = [];
        start = nl + 1;
      }
      // Copied: `chunk` is reused by the next read.
      if (start < buf.length) carry.push(Buffer.from(buf.subarray(start)));
    }
    if (carry.length > 0) emit(carry);
  } finally {
    closeSync(fd);
  }
}

function buildImage(records: JournalRecord[]): Map<string, TopicImage> {
  const topics = new Map<string, TopicImage>();
  const sub = (t: string, s: string): SubImage | undefined => topics.get(t)?.subs.get(s);
  for (const r of records) {
    switch (r.k) {
      case 'gen':
        break;
      case 'topic': {
        const existing = topics.get(r.d.name);
        if (existing) existing.d = r.d;
        else
          topics.set(r.d.name, {
            d: r.d,
            queue: r.queue === true,
            scheduleSeq: 0,
            scheduled: new Map(),
            subs: new Map(),
            duplicates: new Map(),
          });
        break;
      }
      case 'deltopic':
        topics.delete(r.t);
        break;
      case 'sub': {
        const topic = topics.get(r.d.topicName);
        if (!topic) break;
        const existing = topic.subs.get(r.d.subscriptionName);
        if (existing) existing.d = r.d;
        else {
          topic.subs.set(r.d.subscriptionName, {
            d: r.d,
            seq: 0,
            rules: new Map(),
            messages: new Map(),
            locked: new Set(),
            states: new Map(),
          });
        }
        break;
      }
      case 'delsub':
        topics.get(r.t)?.subs.delete(r.s);
        break;
      case 'rule':
        sub(r.t, r.s)?.rules.set(r.d.name, { d: r.d, c: r.c });
        break;
      case 'delrule':
        sub(r.t, r.s)?.rules.delete(r.r);
        break;
      case 'put': {
        const s = sub(r.t, r.s);
        if (!s) break;
        const key = `${r.q}:${r.seq}`;
        s.messages.set(key, r);
        s.locked.delete(key);
        s.seq = Math.max(s.seq, r.seq);
        break;
      }
      case 'del': {
        const s = sub(r.t, r.s);
        s?.messages.delete(`${r.q}:${r.seq}`);
        s?.locked.delete(`${r.q}:${r.seq}`);
        break;
      }
      case 'dc': {
        const s = sub(r.t, r.s);
        const key = `${r.q}:${r.seq}`;
        const m = s?.messages.get(key);
        if (s && m) {
          m.dc = r.dc;
          s.locked.delete(key);
        }
        break;
      }
      case 'lk': {
        const s = sub(r.t, r.s);
        if (!s) break;
        for (const seq of r.seqs) if (s.messages.has(`${r.q}:${seq}`)) s.locked.add(`${r.q}:${seq}`);
        break;
      }
      case 'ctr': {
        const topic = topics.get(r.t);
        if (!topic) break;
        if (r.s === undefined) topic.scheduleSeq = Math.max(topic.scheduleSeq, r.v);
        else {
          const s = topic.subs.get(r.s);
          if (s) s.seq = Math.max(s.seq, r.v);
        }
        break;
      }
      case 'sch': {
        const topic = topics.get(r.t);
        if (!topic) break;
        topic.scheduled.set(r.seq, r);
        topic.scheduleSeq = Math.max(topic.scheduleSeq, r.seq);
        break;
      }
      case 'unsch':
        topics.get(r.t)?.scheduled.delete(r.seq);
        break;
      case 'ss': {
        const s = sub(r.t, r.s);
        if (!s) break;
        if (r.v === null) s.states.delete(r.id);
        else s.states.set(r.id, r.v);
        break;
      }
      case 'dd': {
        const topic = topics.get(r.t);
        if (!topic) break;
        topic.duplicates.delete(r.id); // keep the Map in the order the ids were accepted
        topic.duplicates.set(r.id, { id: r.id, at: r.at, seq: r.seq });
        topic.scheduleSeq = Math.max(topic.scheduleSeq, r.seq);
        break;
      }
    }
  }
  return topics;
}

function restore(broker: ServiceBusBroker, image: Map<string, TopicImage>, log: Log): void {
  broker.beginRestore();
  try {
    // Entities first, so that a message dead-lettered while loading can be forwarded to any entity.
    const subs: Array<[ReturnType<ServiceBusBroker['restoreSubscription']>, SubImage]> = [];
    const topics: Array<[ReturnType<ServiceBusBroker['restoreTopic']>, TopicImage]> = [];
    for (const t of image.values()) {
      let seq = t.scheduleSeq;
      for (const s of t.subs.values()) seq = Math.max(seq, s.seq);
      const topic = broker.restoreTopic(t.d, seq, t.queue);
      topics.push([topic, t]);
      if (t.duplicates.size > 0) broker.restoreDuplicates(topic, [...t.duplicates.values()]);
      for (const s of t.subs.values()) {
        subs.push([broker.restoreSubscription(topic, s.d, [...s.rules.values()]), s]);
      }
    }
    for (const [sub, s] of subs) {
      const ordered = [...s.messages.entries()].sort((a, b) => a[1].seq - b[1].seq);
      for (const [key, rec] of ordered) {
        let message: ReturnType<typeof decodeMessage>;
        try {
          message = decodeMessage(rec.m);
        } catch (err) {
          // Not delivered, but not erased either: the next snapshot carries the record unchanged.
          log.error(
            { path: sub.path, seq: rec.seq, err: String(err) },
            'persisted message could not be decoded; kept as stored, not delivered',
          );
          broker.keepUndecodable(sub, rec);
          continue;
        }
        try {
          broker.restoreMessage(sub, rec.q as QueueKind, rec, message, s.locked.has(key));
        } catch (err) {
          log.error(
            { path: sub.path, seq: rec.seq, err: String(err) },
            'persisted message could not be restored',
          );
        }
      }
      for (const [id, v] of s.states) broker.restoreSessionState(sub, id, Buffer.from(v, 'base64'));
    }
    for (const [topic, t] of topics) {
      for (const r of [...t.scheduled.values()].sort((a, b) => a.seq - b.seq)) {
        let message: ReturnType<typeof decodeMessage>;
        try {
          message = decodeMessage(r.m);
        } catch (err) {
          // As for a stored message above: one bad record must not keep the broker from starting, and
          // erasing it would lose a message a newer decoder might read. It is never enqueued.
          log.error(
            { entity: topic.desc.name, seq: r.seq, err: String(err) },
            'persisted scheduled message could not be decoded; kept as stored, not enqueued',
          );
          broker.keepUndecodableScheduled(topic, r);
          continue;
        }
        broker.restoreScheduled(topic, { seq: r.seq, message, size: r.sz, at: r.at, encoded: r.m });
      }
    }
  } finally {
    broker.endRestore();
  }
}
