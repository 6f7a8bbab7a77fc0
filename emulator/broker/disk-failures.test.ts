// A disk that refuses the journal (full, failing) through the journal's file system seam: a test cannot fill
// a real disk without a mount. What is checked is what the sender was told against what a restart finds.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { fdatasyncSync, openSync, writeSync } from 'node:fs';
import { BrokerError } from './api.ts';
import type { BrokerOptions } from './api.ts';
import type { ServiceBusBroker } from './broker.ts';
import { createServiceBusBroker } from './index.ts';
import type { JournalIo, JournalOptions } from './journal.ts';
import { inTempDir, msg } from './test-helpers.ts';

const q = { topic: 'q', subscription: '$queue' };

function errno(code: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: simulated, write`) as NodeJS.ErrnoException;
  err.code = code;
  return err;
}

/** A disk that can be made to refuse: `full` makes a write put part of its bytes and then fail, as ENOSPC does. */
function failingDisk() {
  const disk = {
    full: false,
    syncFails: false,
    /** Opens of files whose name matches fail while set. */
    openFails: undefined as RegExp | undefined,
    io: {
      openSync: ((path: Parameters<typeof openSync>[0], flags: Parameters<typeof openSync>[1]) => {
        if (disk.openFails?.test(String(path))) throw errno('ENOSPC');
        return openSync(path, flags);
      }) as typeof openSync,
      writeSync: (
        fd: number,
        buffer: Buffer,
        offset: number,
        length: number,
        position: number | null,
      ): number => {
        if (!disk.full) return writeSync(fd, buffer, offset, length, position);
        // The bytes that still fit are written; the rest of the call fails.
        if (length > 8) writeSync(fd, buffer, offset, Math.floor(length / 2), position);
        throw errno('ENOSPC');
      },
      fdatasyncSync: (fd: number): void => {
        if (disk.syncFails) throw errno('EIO');
        fdatasyncSync(fd);
      },
    } satisfies JournalIo,
  };
  return disk;
}

function ids(b: ServiceBusBroker): unknown[] {
  return b.peek(q, { maxCount: 50 }).map((m) => m.message.message_id);
}

async function open(
  dir: string,
  journal: JournalOptions = {},
  options: BrokerOptions = {},
): Promise<ServiceBusBroker> {
  return createServiceBusBroker({ dataDir: dir, ...options }, journal);
}

describe('journal on a failing disk', () => {
  test('a write the disk refused part-way leaves no bytes behind: the acknowledged sends after it survive a crash', async () => {
    await inTempDir('nimbus-disk-', async (dir) => {
      const disk = failingDisk();
      const b1 = await open(dir, { io: disk.io });
      b1.createQueue({ name: 'q' });
      b1.send('q', [msg({ message_id: 'before' })]);
      disk.full = true;
      assert.throws(() => b1.send('q', [msg({ message_id: 'refused' })]));
      disk.full = false; // space comes back
      b1.send('q', [msg({ message_id: 'after-1' })]);
      b1.send('q', [msg({ message_id: 'after-2' })]);
      // A crash: no close(). Before, the half line was followed by the next one, and the start took it for
      // damage in the middle (or, with one send after it, for a torn last line), dropping the sends after it.
      const b2 = await open(dir);
      assert.deepEqual(
        ids(b2).filter((id) => id !== 'refused'),
        ['before', 'after-1', 'after-2'],
      );
      assert.deepEqual(
        readdirSync(dir).filter((f) => f.includes('damaged')),
        [],
        'nothing was taken for damage',
      );
      await b2.close();
    });
  });

  test('a send the disk refused is an internal error (retried) and is taken back whole: not delivered, its MessageId not remembered', async () => {
    await inTempDir('nimbus-disk-', async (dir) => {
      const disk = failingDisk();
      const b1 = await open(dir, { io: disk.io });
      b1.createQueue({ name: 'q', requiresDuplicateDetection: true });
      b1.send('q', [msg({ message_id: 'before' })]);
      disk.full = true;
      let refusal: unknown;
      try {
        b1.send('q', [msg({ message_id: 'refused' })]);
      } catch (err) {
        refusal = err;
      }
      // Before, the message stayed in memory and was delivered although its sender was told it failed.
      assert.deepEqual(ids(b1), ['before'], 'the refused message is not in memory');
      disk.full = false;
      // The retry is not dropped as a duplicate of the refused send.
      b1.send('q', [msg({ message_id: 'refused' })]);
      assert.deepEqual(ids(b1), ['before', 'refused']);
      assert.ok(refusal instanceof BrokerError && refusal.code === 'InternalError', String(refusal));
      await b1.close();
    });
  });

  test('an operation that cannot be taken back and failed to write is caught up from memory before the next one returns', async () => {
    await inTempDir('nimbus-disk-', async (dir) => {
      const disk = failingDisk();
      const b1 = await open(dir, { io: disk.io });
      disk.full = true;
      // A topology change stays in memory when its write fails; a later send into it must not be lost.
      assert.throws(() => b1.createQueue({ name: 'q' }), BrokerError);
      disk.full = false;
      b1.send('q', [msg({ message_id: 'into-q' })]);
      const b2 = await open(dir); // a crash
      assert.deepEqual(ids(b2), ['into-q']);
      await b2.close();
    });
  });

  test('a failed fdatasync of the group-commit timer is logged, not thrown: the process lives and the next operation rewrites the state', async () => {
    await inTempDir('nimbus-disk-', async (dir) => {
      const disk = failingDisk();
      let logged!: () => void;
      const syncFailureLogged = new Promise<void>((resolve) => (logged = resolve));
      const log: NonNullable<BrokerOptions['log']> = {
        info() {},
        debug() {},
        warn() {},
        error(_o, message) {
          if (message?.startsWith('journal sync failed')) logged();
        },
      };
      const b1 = await open(dir, { io: disk.io }, { log });
      b1.createQueue({ name: 'q' });
      b1.send('q', [msg({ message_id: 'a' }), msg({ message_id: 'b' })]);
      const r = await b1.openReceiver({ source: q, mode: 'receiveAndDelete' });
      disk.syncFails = true;
      assert.equal(r.take(1).length, 1, 'a non-durable operation: written now, synced by the timer');
      // Before, the timer threw EIO out of a setTimeout callback: an uncaught exception that ended the process.
      // The journal's timer is unref'd: hold the event loop open until it has run.
      const keepAlive = setInterval(() => {}, 1_000);
      await syncFailureLogged.finally(() => clearInterval(keepAlive));
      disk.syncFails = false;
      const before = readdirSync(dir).find((f) => /^journal-\d+\.jsonl$/.test(f));
      b1.send('q', [msg({ message_id: 'c' })]);
      const after = readdirSync(dir).find((f) => /^journal-\d+\.jsonl$/.test(f));
      assert.notEqual(after, before, 'the untrusted journal was replaced by a snapshot from memory');
      const b2 = await open(dir); // a crash
      assert.deepEqual(ids(b2), ['b', 'c']);
      await b2.close();
    });
  });

  test('a durable send whose fdatasync fails is refused and taken back', async () => {
    await inTempDir('nimbus-disk-', async (dir) => {
      const disk = failingDisk();
      const b1 = await open(dir, { io: disk.io });
      b1.createQueue({ name: 'q' });
      disk.syncFails = true;
      assert.throws(
        () => b1.send('q', [msg({ message_id: 'unsynced' })]),
        (err: unknown) => err instanceof BrokerError && err.code === 'InternalError',
      );
      assert.deepEqual(ids(b1), []);
      disk.syncFails = false;
      b1.send('q', [msg({ message_id: 'synced' })]);
      await b1.close();
      const b2 = await open(dir);
      assert.deepEqual(ids(b2), ['synced']);
      await b2.close();
    });
  });

  test('a compaction that cannot open the next journal keeps the current snapshot and journal in use', async () => {
    await inTempDir('nimbus-disk-', async (dir) => {
      const disk = failingDisk();
      // Every operation passes the compaction threshold.
      const b1 = await open(dir, { io: disk.io, compactBytes: 1 });
      b1.createQueue({ name: 'q' });
      const errors: unknown[] = [];
      const send = (id: string): void => {
        try {
          b1.send('q', [msg({ message_id: id })]);
        } catch (err) {
          errors.push(err);
        }
      };
      disk.openFails = /journal-\d+\.jsonl$/;
      send('m1');
      // The disk then refuses the next snapshot too. Before, snapshot N+1 was renamed into place before the
      // open failed, the broker went on appending m2 to journal N, and the next start deleted it as stale.
      disk.openFails = /journal-\d+\.jsonl$|snapshot\.jsonl\.tmp$/;
      send('m2');
      disk.openFails = undefined;
      const b2 = await open(dir); // a crash
      assert.deepEqual(ids(b2), ['m1', 'm2']);
      await b2.close();
      // Both sends were written to the journal: a failed compaction is not the sender's failure.
      assert.deepEqual(errors, []);
    });
  });
});
