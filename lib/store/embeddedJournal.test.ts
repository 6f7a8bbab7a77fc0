// The embedded Cosmos server's durability (embeddedJournal.ts), through the real @azure/cosmos client: every kind
// of acknowledged write comes back after a clean stop and after a kill -9, byte for byte (same _etag and _ts, so
// a client's If-Match still holds); a torn or corrupt journal tail is cut off with a message and the valid prefix
// kept; compaction keeps the data. A full disk never acknowledges a write that is not on disk and never leaves a
// partial record or a short snapshot (a write seam plays the disk: a test cannot mount a small file system); a
// folder that cannot be restored, or a damaged snapshot, rejects the start with a readable error.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BulkOperationType, type Container, type CosmosClient } from '@azure/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { writeFully, type JournalWrite } from './embeddedJournal.ts';
import { cosmosConnectionSchema, createCosmosClient } from '@nimbus/sdk/cosmos';

const dirs: string[] = [];
const running: EmbeddedCosmos[] = [];
const clients: CosmosClient[] = [];
after(async () => {
  for (const c of clients) c.dispose();
  for (const r of running) await r.close().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'nimbus-journal-'));
  dirs.push(d);
  return d;
}

async function start(dir: string, compactAfterBytes?: number, journalWrite?: JournalWrite): Promise<EmbeddedCosmos> {
  const c = await startEmbeddedCosmos({
    port: 0,
    dataDir: dir,
    ...(compactAfterBytes ? { compactAfterBytes } : {}),
    ...(journalWrite ? { journalWrite } : {}),
  });
  running.push(c);
  return c;
}

async function container(endpoint: string, key: string, id = 'rows'): Promise<Container> {
  const client = createCosmosClient(
    cosmosConnectionSchema.parse({ endpoint, key, database: 'journal', throttleRetries: 0 }),
  );
  clients.push(client);
  const { database } = await client.databases.createIfNotExists({ id: 'journal' });
  return (await database.containers.createIfNotExists({ id, partitionKey: { paths: ['/pk'], version: 2 } }))
    .container;
}

type Row = { id: string; pk: string; n: number; _etag?: string; _ts?: number; _rid?: string };

async function all(c: Container): Promise<Row[]> {
  const { resources } = await c.items.query<Row>('SELECT * FROM c').fetchAll();
  return resources.sort((a, b) => (a.pk + a.id).localeCompare(b.pk + b.id));
}

/** Every kind of write the store uses: create, upsert, replace (If-Match), patch, delete, transactional batch. */
async function writeEverything(c: Container): Promise<void> {
  for (let i = 0; i < 20; i++) await c.items.create({ id: `d${i}`, pk: `p${i % 3}`, n: i });
  await c.items.upsert({ id: 'd1', pk: 'p1', n: 100 });
  await c.items.upsert({ id: 'new', pk: 'p0', n: 7 });
  const { resource } = await c.item('d2', 'p2').read<Row>();
  await c
    .item('d2', 'p2')
    .replace({ ...resource!, n: 200 }, { accessCondition: { type: 'IfMatch', condition: resource!._etag! } });
  await c.item('d3', 'p0').patch([{ op: 'incr', path: '/n', value: 5 }]);
  await c.item('d4', 'p1').delete();
  await c.items.batch(
    [
      { operationType: BulkOperationType.Create, resourceBody: { id: 'b1', pk: 'p0', n: 1 } },
      { operationType: BulkOperationType.Create, resourceBody: { id: 'b3', pk: 'p0', n: 3 } },
      { operationType: BulkOperationType.Create, resourceBody: { id: 'b2', pk: 'p0', n: 2 } },
    ],
    'p0',
  );
}

test('every kind of write survives a clean stop, with the same _etag and _ts', async () => {
  const dir = dataDir();
  const first = await start(dir);
  const c1 = await container(first.endpoint, first.key);
  await writeEverything(c1);
  await container(first.endpoint, first.key, 'second');
  const before = await all(c1);
  assert.equal(before.length, 20 + 1 + 3 - 1);
  await first.close();

  const again = await start(dir);
  assert.equal(again.recovery?.truncated, undefined);
  const c2 = await container(again.endpoint, again.key);
  assert.deepEqual(await all(c2), before);
  // A client that read d5 before the restart still writes with its etag.
  const d5 = before.find((r) => r.id === 'd5')!;
  await c2
    .item('d5', 'p2')
    .replace({ id: 'd5', pk: 'p2', n: 55 }, { accessCondition: { type: 'IfMatch', condition: d5._etag! } });
  // New documents get fresh _rids, not ones the restored documents hold.
  await c2.items.create({ id: 'after', pk: 'p1', n: 1 });
  const rids = (await all(c2)).map((r) => r._rid);
  assert.equal(new Set(rids).size, rids.length);
  // The other container is there too.
  const { resources } = await (
    await container(again.endpoint, again.key, 'second')
  ).items
    .query('SELECT * FROM c')
    .fetchAll();
  assert.deepEqual(resources, []);
});

/** A durable server in a child process, so that a test can kill it (-9) with no chance to flush or compact. */
async function startChild(dir: string): Promise<{ endpoint: string; kill(): Promise<void> }> {
  const script = fileURLToPath(new URL('./testing/embeddedCosmosChild.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script, dir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const endpoint = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`child exited ${code}`)));
  });
  return {
    endpoint,
    kill: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

test('acknowledged writes survive a kill -9 of the server process', async () => {
  const dir = dataDir();
  const { endpoint, kill } = await startChild(dir);
  const c1 = await container(endpoint, 'a2V5');
  const acknowledged: Row[] = [];
  for (let i = 0; i < 200; i++) {
    const { resource } = await c1.items.upsert<Row>({ id: `k${i % 50}`, pk: `p${i % 5}`, n: i });
    acknowledged[i % 50] = resource!;
  }
  await kill();

  const again = await start(dir);
  const rows = await all(await container(again.endpoint, again.key));
  assert.equal(rows.length, 50);
  for (const ack of acknowledged) {
    const row = rows.find((r) => r.id === ack.id)!;
    assert.equal(row.n, ack.n, `${ack.id} has its last acknowledged value`);
    assert.equal(row._etag, ack._etag);
  }
});

test('a torn journal tail is cut off with a message; the valid prefix stays and later writes survive', async () => {
  const dir = dataDir();
  const first = await startChild(dir);
  const c1 = await container(first.endpoint, 'a2V5');
  for (let i = 0; i < 10; i++) await c1.items.create({ id: `t${i}`, pk: 'p', n: i });
  // A crash: no clean close, no compaction; the journal holds everything.
  await first.kill();
  const journal = readdirSync(dir).find((f) => f.startsWith('journal-'))!;
  const path = join(dir, journal);
  const size = statSync(path).size;
  // A crash in the middle of the last record: its second half never reached the disk.
  truncateSync(path, size - 20);
  const again = await start(dir);
  assert.match(
    again.recovery?.truncated ?? '',
    /journal-\d+\.ndjson record \d+: .*kept the \d+ valid records before it/,
  );
  // A torn last write was never acknowledged: no copy is kept of it.
  assert.equal(again.recovery?.damaged, undefined);
  assert.deepEqual(readdirSync(dir).filter((f) => f.includes('.damaged-')), []);
  const c2 = await container(again.endpoint, again.key);
  const rows = await all(c2);
  assert.deepEqual(
    rows.map((r) => r.id),
    ['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7', 't8'],
    'the last create was torn; everything before it is kept',
  );
  await c2.items.create({ id: 'later', pk: 'p', n: 1 });
  await again.close();
  const third = await start(dir);
  assert.equal(third.recovery?.truncated, undefined);
  assert.equal((await all(await container(third.endpoint, third.key))).length, 10);
});

test('a corrupt record (bad checksum) stops the replay there and says so', async () => {
  const dir = dataDir();
  const first = await startChild(dir);
  const c1 = await container(first.endpoint, 'a2V5');
  await c1.items.create({ id: 'ok', pk: 'p', n: 1 });
  await first.kill();
  const journal = readdirSync(dir).find((f) => f.startsWith('journal-'))!;
  appendFileSync(join(dir, journal), '00000000\t2\t[]\n');
  const again = await start(dir);
  assert.match(again.recovery?.truncated ?? '', /checksum mismatch/);
  assert.deepEqual(
    (await all(await container(again.endpoint, again.key))).map((r) => r.id),
    ['ok'],
  );
});

test('a journal damaged in the middle is copied aside, byte for byte, before the start cuts it, and the start says so', async () => {
  // Before, the start cut the journal at the damaged record and the acknowledged records after it were gone, with
  // no copy anywhere; only a torn last write may be cut without one.
  const dir = dataDir();
  const first = await startChild(dir);
  const c1 = await container(first.endpoint, 'a2V5');
  for (let i = 0; i < 8; i++) await c1.items.create({ id: `m${i}`, pk: 'p', n: i });
  await first.kill();
  const name = readdirSync(dir).find((f) => f.startsWith('journal-'))!;
  const path = join(dir, name);
  const original = readFileSync(path);
  // One flipped bit in the record that created m3: the records of m4..m7 after it are whole and valid.
  const lines = original.toString('latin1').split('\n');
  const index = lines.findIndex((l) => l.includes('"id":"m3"'));
  assert.ok(index > 0 && index < lines.length - 2, 'the damaged record has good ones after it');
  const offset = lines.slice(0, index).join('\n').length + 1;
  const damaged = Buffer.from(original);
  const at = offset + lines[index]!.length - 5;
  damaged[at] = damaged[at]! ^ 0x01;
  writeFileSync(path, damaged);

  const again = await start(dir);
  const report = again.recovery?.damaged;
  assert.ok(report, `the start reports damage in the middle: ${again.recovery?.truncated}`);
  assert.equal(report.file, path);
  assert.equal(report.line, index + 1);
  assert.equal(report.offset, offset);
  assert.equal(report.recordsAfter, lines.length - 2 - index, 'every record after the damaged one (the file ends with a newline)');
  assert.match(report.kept, /journal-\d+\.damaged-\d{4}-\d\d-\d\dT[\d-]+Z\.ndjson$/);
  assert.deepEqual(readFileSync(report.kept), damaged, 'the copy holds the journal as it was, every record after the damage included');
  assert.ok(again.recovery?.truncated?.includes(`copied to ${report.kept}`), again.recovery?.truncated);
  assert.ok(!again.recovery?.truncated?.includes('"id"'), 'no document contents in the report');
  assert.equal(statSync(path).size, offset, 'the journal itself is cut at the damaged record');
  assert.deepEqual(
    (await all(await container(again.endpoint, again.key))).map((r) => r.id),
    ['m0', 'm1', 'm2'],
  );
  // The copy is never replayed nor removed: a clean stop and another start leave it, and report nothing.
  await again.close();
  const third = await start(dir);
  assert.equal(third.recovery?.damaged, undefined);
  assert.deepEqual(readFileSync(report.kept), damaged);
});

test('compaction into snapshots while writing keeps every document', async () => {
  const dir = dataDir();
  // A tiny threshold: many compactions during the writes.
  const first = await start(dir, 4096);
  const c1 = await container(first.endpoint, first.key);
  for (let i = 0; i < 300; i++) await c1.items.upsert({ id: `c${i % 40}`, pk: `p${i % 4}`, n: i });
  for (let i = 0; i < 10; i++) await c1.item(`c${i}`, `p${i % 4}`).delete();
  const before = await all(c1);
  const files = readdirSync(dir);
  assert.ok(files.includes('snapshot.ndjson'), 'a snapshot was written');
  assert.equal(files.filter((f) => f.startsWith('journal-')).length, 1, 'older journals are removed');
  // Another server on a copy of the folder, as after a crash: the snapshot plus the current journal hold everything.
  const copy = dataDir();
  cpSync(dir, copy, { recursive: true });
  const again = await start(copy);
  assert.deepEqual(await all(await container(again.endpoint, again.key)), before);
  assert.equal(before.length, 30);
});

/**
 * A disk with `room` bytes left, as the journal's write seam: a write that does not fit writes what fits and returns
 * that count, as Linux does on a nearly full disk; with no room left, ENOSPC.
 */
function smallDisk(): { room: number; write: JournalWrite } {
  const disk = {
    room: Number.POSITIVE_INFINITY,
    write: (fd: number, buffer: Buffer, offset: number, length: number, position: number): number => {
      if (disk.room <= 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      const n = writeSync(fd, buffer, offset, Math.min(length, disk.room), position);
      disk.room -= n;
      return n;
    },
  };
  return disk;
}

/**
 * The full-disk round of the two cut-back tests, on a server writing through `disk` to `journal` in `dir`: a write
 * of which only part fits is refused (503) and its partial record cut back; with space back, two later writes are
 * acknowledged; a server on a copy of the folder (as after a crash) cuts nothing off at its start and holds `ids`.
 */
async function fullDiskRefusesThenLaterWritesSurvive(
  dir: string,
  disk: ReturnType<typeof smallDisk>,
  c: Container,
  journal: string,
  ids: string[],
): Promise<void> {
  const size = statSync(journal).size;
  // Part of the next record fits, then the disk is full (a short write, then ENOSPC).
  disk.room = 30;
  await assert.rejects(c.items.upsert({ id: 'full', pk: 'p', n: 1, pad: 'y'.repeat(2000) }), (e: { code?: unknown }) => {
    assert.equal(e.code, 503, 'not acknowledged');
    return true;
  });
  assert.equal(statSync(journal).size, size, 'the partial record is cut back');
  // Space comes back: later writes are acknowledged, and the refused change, kept pending (it is in memory), is
  // written with them.
  disk.room = Number.POSITIVE_INFINITY;
  await c.items.upsert({ id: 'after-1', pk: 'p', n: 2 });
  await c.items.upsert({ id: 'after-2', pk: 'p', n: 3 });
  // As after a crash: a server on a copy of the folder.
  const copy = dataDir();
  cpSync(dir, copy, { recursive: true });
  const again = await start(copy);
  assert.equal(again.recovery?.truncated, undefined, 'nothing cut off at the start: no partial record in the journal');
  assert.deepEqual((await all(await container(again.endpoint, again.key))).map((r) => r.id), ids);
}

/** A start expected to fail; should it start after all, the server is closed at the end, not left running. */
function startNoLeak(dir: string): Promise<EmbeddedCosmos> {
  return startEmbeddedCosmos({ port: 0, dataDir: dir }).then((c) => {
    running.push(c);
    return c;
  });
}

function files(dir: string): Record<string, number> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, statSync(join(dir, f)).size]));
}

test('writeFully continues short writes at the given position and fails a write that makes no progress', () => {
  const path = join(dataDir(), 'f');
  const fd = openSync(path, 'w');
  try {
    let calls = 0;
    const threeAtATime: JournalWrite = (f, b, o, l, p) => {
      calls += 1;
      return writeSync(f, b, o, Math.min(l, 3), p);
    };
    writeFully(threeAtATime, fd, Buffer.from('0123456789'), 0, 'f');
    assert.equal(calls, 4);
    assert.equal(readFileSync(path, 'utf8'), '0123456789');
    // At the position named, not the descriptor's (which is at 10 now).
    writeFully(threeAtATime, fd, Buffer.from('ab'), 2, 'f');
    assert.equal(readFileSync(path, 'utf8'), '01ab456789');
    assert.throws(() => writeFully(() => 0, fd, Buffer.from('x'), 0, 'f'), /no progress after 0 of 1 bytes/);
  } finally {
    closeSync(fd);
  }
});

test('a write the disk cannot take whole is a 503, cut back from the journal; later acknowledged writes survive', async () => {
  const dir = dataDir();
  const disk = smallDisk();
  const first = await start(dir, undefined, disk.write);
  const c1 = await container(first.endpoint, first.key);
  await c1.items.create({ id: 'before', pk: 'p', n: 0 });
  const journal = join(dir, readdirSync(dir).find((f) => f.startsWith('journal-'))!);
  await fullDiskRefusesThenLaterWritesSurvive(dir, disk, c1, journal, ['after-1', 'after-2', 'before', 'full']);
});

test('after a compaction, a write the disk cannot take whole is cut back and later acknowledged writes survive', async () => {
  // The compaction's new journal was opened with 'w' (recovery opens with 'a'): the cut-back (ftruncate) did not
  // move that descriptor's position, so the next write landed past the end, after a run of zero bytes, and the
  // next start cut off everything from there ("malformed header"): after-1 and after-2, acknowledged, were lost.
  const dir = dataDir();
  const disk = smallDisk();
  const first = await start(dir, 5000, disk.write);
  const c1 = await container(first.endpoint, first.key);
  await c1.items.create({ id: 'big', pk: 'p', n: 0, pad: 'x'.repeat(20_000) });
  // The compaction at the size threshold runs after the response (setImmediate): its sign is the snapshot, then
  // the new generation's journal alone.
  while (!readdirSync(dir).includes('snapshot.ndjson') || readdirSync(dir).includes('journal-00000000.ndjson'))
    await new Promise((resolve) => setImmediate(resolve));
  const journal = join(dir, readdirSync(dir).find((f) => f.startsWith('journal-'))!);
  assert.notEqual(journal, join(dir, 'journal-00000000.ndjson'), 'appends go to the new generation');
  await fullDiskRefusesThenLaterWritesSurvive(dir, disk, c1, journal, ['after-1', 'after-2', 'big', 'full']);
  assert.equal(readFileSync(journal).indexOf(0), -1, 'no zero bytes in the journal');
});

test('a clean stop on a nearly full disk rejects, keeps the journal, and writes no short snapshot', async () => {
  const dir = dataDir();
  const disk = smallDisk();
  const first = await start(dir, undefined, disk.write);
  const c1 = await container(first.endpoint, first.key);
  for (let i = 0; i < 40; i++) await c1.items.upsert({ id: `d${i}`, pk: 'p', n: i, pad: 'x'.repeat(1000) });
  const before = files(dir);
  // Room for about half of the snapshot: its write is short.
  disk.room = 20_000;
  await assert.rejects(
    first.close(),
    /did not stop cleanly: could not write a snapshot of .*: the previous snapshot and the journal .*journal-\d+\.ndjson are kept/,
  );
  assert.deepEqual(files(dir), before, 'no snapshot renamed into place, no temporary file left, the journal kept whole');
  const again = await start(dir);
  assert.equal(again.recovery?.unclean, true, 'the journal was replayed');
  assert.equal((await all(await container(again.endpoint, again.key))).length, 40);
});

test('a data folder that cannot be read rejects the start with its name; the process lives on', async () => {
  const dir = dataDir();
  // A folder where the journal should be: reading it fails (EISDIR), as a read-only or failing disk would.
  mkdirSync(join(dir, 'journal-00000000.ndjson'));
  await assert.rejects(startNoLeak(dir), (e: Error) => {
    assert.ok(e.message.includes(`could not restore its data folder ${dir}`), e.message);
    assert.match(e.message, /EISDIR/);
    return true;
  });
});

test('a damaged snapshot stops the start, naming the file, record and line, and keeps it; deleting the line is the way out', async () => {
  const dir = dataDir();
  const first = await start(dir);
  const c1 = await container(first.endpoint, first.key);
  for (let i = 0; i < 10; i++) await c1.items.create({ id: `d${i}`, pk: 'p', n: i });
  await first.close();
  const path = join(dir, 'snapshot.ndjson');
  // Line 1 the header, 2 the database, 3 the container, 4.. the documents in order: line 6 holds d2.
  const lines = readFileSync(path, 'utf8').split('\n');
  const at = lines.slice(0, 5).join('\n').length + 1 + Math.floor(lines[5]!.length / 2);
  const damaged = readFileSync(path);
  damaged[at] = damaged[at]! ^ 0x01; // one flipped bit
  writeFileSync(path, damaged);
  await assert.rejects(startNoLeak(dir), (e: Error) => {
    assert.ok(e.message.includes(`${path} is damaged at record 5: checksum mismatch (line 6)`), e.message);
    assert.ok(e.message.includes(`sed -i '6d' ${path}`), e.message);
    return true;
  });
  assert.deepEqual(readFileSync(path), damaged, 'the snapshot is kept as it was');
  // The way out the message names: without that line, the start loses that one document only.
  writeFileSync(path, lines.filter((_, i) => i !== 5).join('\n'));
  const again = await start(dir);
  assert.equal(again.recovery?.truncated, undefined);
  assert.deepEqual(
    (await all(await container(again.endpoint, again.key))).map((r) => r.id),
    ['d0', 'd1', 'd3', 'd4', 'd5', 'd6', 'd7', 'd8', 'd9'],
  );
});

test('a journal cut at its first record names the file and counts as an unclean stop', async () => {
  const dir = dataDir();
  const journal = join(dir, 'journal-00000000.ndjson');
  writeFileSync(journal, '00000000\t2\t[]\n');
  const again = await start(dir);
  assert.equal(again.recovery?.records, 0);
  assert.ok(again.recovery?.truncated?.startsWith(`${journal} record 1: checksum mismatch`), again.recovery?.truncated);
  assert.equal(again.recovery?.unclean, true, 'the counters are recounted after such a start');
});
