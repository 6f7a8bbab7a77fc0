// One emulator per data directory: a second start on a directory in use fails before it reads, compacts or
// deletes anything in it (emulator/broker/data-dir-lock.ts). The second emulator is another process, as it
// is when someone runs `npm start` twice.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServiceBusBroker } from './broker/index.ts';
import { processStartTime } from './broker/data-dir-lock.ts';
import { startEmulator } from './index.ts';

const INDEX = fileURLToPath(new URL('./index.ts', import.meta.url));
const q = { topic: 'q', subscription: '$queue' };

/** Starts an emulator in another process; answers what it printed: 'started' or the start's error. */
function startElsewhere(dataDir: string, port: number): Promise<string> {
  const script = `
    import { startEmulator } from ${JSON.stringify(INDEX)};
    try {
      const e = await startEmulator({ port: ${port}, dataDir: ${JSON.stringify(dataDir)} });
      console.log('started');
      await e.close();
    } catch (err) {
      console.log(err.message);
    }`;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { timeout: 60_000 },
      (err, stdout) => (err ? reject(err) : resolve(stdout.trim())),
    );
  });
}

/** The pid of a process that has ended. */
function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, ['-e', ''], (err) => (err ? reject(err) : resolve(child.pid!)));
  });
}

describe('data directory lock', () => {
  test('a second start on a data directory in use fails, naming the owner, and leaves the running journal alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nimbus-lock-'));
    const a = await startEmulator({ port: 0, dataDir: dir });
    try {
      a.broker.createQueue({ name: 'q' });
      a.broker.send('q', [{ message_id: 'm1', body: 'x' }]);
      const files = readdirSync(dir).sort();
      // Same port, as a second `npm start` would use: before, it failed on the port only after its broker had
      // compacted the directory and deleted A's journal, so A's later sends were on no disk.
      const b = await startElsewhere(dir, a.port);
      const filesAfterB = readdirSync(dir).sort();
      a.broker.send('q', [{ message_id: 'm2', body: 'x' }]);
      // A crash of A: the directory opened again without close() (same process, so the lock is taken over).
      const after = await createServiceBusBroker({ dataDir: dir });
      assert.deepEqual(
        after.peek(q, { maxCount: 10 }).map((m) => m.message.message_id),
        ['m1', 'm2'],
      );
      await after.close();
      assert.deepEqual(filesAfterB, files, 'the second start changed nothing in the directory');
      assert.match(b, new RegExp(`data directory .* is in use by process ${process.pid}`));
    } finally {
      await a.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a lock left by a process that is gone is taken over; close() releases the lock', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nimbus-lock-'));
    try {
      writeFileSync(join(dir, '.lock'), JSON.stringify({ pid: await deadPid(), token: 'left-by-a-crash' }));
      const a = await startEmulator({ port: 0, dataDir: dir });
      await a.close();
      assert.equal(existsSync(join(dir, '.lock')), false, 'released at close');
      assert.equal(await startElsewhere(dir, 0), 'started');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(
    "a lock whose pid runs with another start time is stale and taken over; with the owner's start time it holds",
    // The start time is read from /proc (Linux); elsewhere the pid alone decides.
    { skip: !existsSync('/proc/self/stat') && 'no /proc' },
    async () => {
      // Before, the pid alone decided: a lock whose pid now belongs to another process (after a reboot or a
      // container restart) held the directory for good. The parent process runs and is not this one (a lock with
      // this process's own pid is always taken over, see data-dir-lock.ts); its start time is what /proc says.
      const dir = mkdtempSync(join(tmpdir(), 'nimbus-lock-'));
      try {
        const start = processStartTime(process.ppid);
        assert.match(start ?? '', /^\d+$/);
        const lock = { pid: process.ppid, token: 'reused-pid', dir: realpathSync(dir) };
        writeFileSync(join(dir, '.lock'), JSON.stringify({ ...lock, start: String(BigInt(start!) + 1n) }));
        const taken = await createServiceBusBroker({ dataDir: dir });
        // Taken over: the lock is now this process's, with its own start time.
        const mine = JSON.parse(readFileSync(join(dir, '.lock'), 'utf8')) as { pid: number; start?: string };
        assert.equal(mine.pid, process.pid);
        assert.equal(mine.start, processStartTime(process.pid));
        await taken.close();
        writeFileSync(join(dir, '.lock'), JSON.stringify({ ...lock, start }));
        await assert.rejects(createServiceBusBroker({ dataDir: dir }), new RegExp(`in use by process ${process.ppid}`));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test('a lock copied with its directory does not hold the copy; one naming this directory does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nimbus-lock-'));
    try {
      // The parent process is alive and is not this one: its lock counts only for the directory it names.
      const live = { pid: process.ppid, token: 'copied' };
      writeFileSync(join(dir, '.lock'), JSON.stringify({ ...live, dir: join(tmpdir(), 'the-original') }));
      await (await createServiceBusBroker({ dataDir: dir })).close();
      writeFileSync(join(dir, '.lock'), JSON.stringify({ ...live, dir: realpathSync(dir) }));
      await assert.rejects(
        createServiceBusBroker({ dataDir: dir }),
        new RegExp(`in use by process ${process.ppid}`),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
