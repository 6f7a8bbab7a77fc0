// Loading a data directory: the snapshot is read in chunks (it can be larger than the longest string V8
// makes), and a damaged snapshot stops start-up with the file, the line and the way out.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServiceBusBroker } from './index.ts';
import { forEachLine } from './persistence.ts';
import { inTempDir, msg } from './test-helpers.ts';

describe('loading', () => {
  test('a file is read line by line in chunks: lines across chunk boundaries, multi-byte characters split by one', async () => {
    await inTempDir('nimbus-load-', async (dir) => {
      const path = join(dir, 'lines.jsonl');
      const lines = ['a', 'bb'.repeat(7), 'ééé€€', '', 'x'.repeat(40), '𝄞z', 'last-without-newline'];
      writeFileSync(path, lines.join('\n'));
      for (const chunk of [1, 2, 3, 5, 7, 64]) {
        const seen: Array<[string, number]> = [];
        forEachLine(path, (line, n) => seen.push([line, n]), chunk);
        assert.deepEqual(
          seen,
          lines.filter((l) => l.length > 0).map((l, i) => [l, i + 1]),
          `chunks of ${chunk} bytes`,
        );
      }
    });
  });

  test('a damaged snapshot line stops start-up with the file, the line and the way out', async () => {
    await inTempDir('nimbus-load-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createQueue({ name: 'q' });
      for (let i = 0; i < 5; i++) b1.send('q', [msg({ message_id: `m${i}`, body: 'secret-body' })]);
      await b1.close();
      const path = join(dir, 'snapshot.jsonl');
      const lines = readFileSync(path, 'utf8').split('\n');
      lines[4] = lines[4]!.slice(0, 40);
      writeFileSync(path, lines.join('\n'));
      const files = readdirSync(dir).sort();
      await assert.rejects(createServiceBusBroker({ dataDir: dir }), (err: Error) => {
        // Before: "Unterminated string in JSON at position 40", with no file, line or way out.
        assert.match(
          err.message,
          new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is damaged at line 5`),
        );
        assert.match(err.message, /--reset/);
        assert.match(err.message, /move .* aside/);
        assert.doesNotMatch(err.message, /secret-body|position/);
        return true;
      });
      assert.deepEqual(readdirSync(dir).sort(), files, 'nothing in the data directory was changed');
    });
  });
});
