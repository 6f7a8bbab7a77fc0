// A send that the emulator's disk refuses, seen by the real @azure/service-bus client: a retryable error
// (amqp:internal-error), nothing delivered, and with retries on, exactly one copy once the disk is back. The
// disk is the journal's file system seam (StartEmulatorOptions.testJournalIo): a test cannot fill a real one.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceBusClient, isServiceBusError } from '@azure/service-bus';
import { startEmulator } from '../index.ts';

const q = { topic: 'q', subscription: '$queue' };

describe('a send the disk refuses', () => {
  test('is answered with a retryable error, is not delivered, and a retry delivers one copy', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nimbus-amqp-disk-'));
    let failures = 0;
    const emulator = await startEmulator({
      port: 0,
      dataDir: dir,
      testJournalIo: {
        writeSync: (fd, buffer, offset, length, position) => {
          if (failures > 0) {
            failures--;
            const err = new Error('ENOSPC: no space left on device, write') as NodeJS.ErrnoException;
            err.code = 'ENOSPC';
            throw err;
          }
          return writeSync(fd, buffer, offset, length, position);
        },
      },
    });
    const once = new ServiceBusClient(emulator.connectionString, { retryOptions: { maxRetries: 0 } });
    const retrying = new ServiceBusClient(emulator.connectionString, {
      retryOptions: { maxRetries: 3, retryDelayInMs: 10 },
    });
    try {
      emulator.broker.createQueue({ name: 'q' });
      failures = Infinity;
      const refused = await once
        .createSender('q')
        .sendMessages({ body: 'x', messageId: 'refused' })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      failures = 0;
      // Before: amqp:decode-error, which the client never retries, and the message was delivered anyway.
      assert.deepEqual(
        emulator.broker.peek(q, { maxCount: 10 }).map((m) => m.message.message_id),
        [],
        'the refused message is not delivered',
      );
      assert.ok(isServiceBusError(refused), String(refused));
      assert.equal(refused.retryable, true, `${refused.code}: ${refused.message}`);

      failures = 1; // the disk refuses one write, then has room again
      await retrying.createSender('q').sendMessages({ body: 'y', messageId: 'retried' });
      assert.deepEqual(
        emulator.broker.peek(q, { maxCount: 10 }).map((m) => m.message.message_id),
        ['retried'],
        'one copy: the refused attempt left none',
      );
    } finally {
      await once.close();
      await retrying.close();
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
