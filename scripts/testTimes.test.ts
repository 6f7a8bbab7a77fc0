// The test run's order (scripts/testing/testTimes.mjs) and the reporter that records it
// (scripts/testing/fileTimesReporter.mjs): longest recorded file first, unknown files before all, and a recording
// run that merges each file's time into the times file without losing the others'.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs module of the test runner's, without type declarations
import { longestFirst, readTestTimes } from './testing/testTimes.mjs';
import { runToExit } from './testing/runToExit.ts';

const REPORTER = fileURLToPath(new URL('./testing/fileTimesReporter.mjs', import.meta.url));

test('files go longest recorded time first, files with no time before them, ties in name order', () => {
  const times = { 'a.test.ts': 5, 'b.test.ts': 120, 'c.test.ts': 5, 'd.test.ts': 30 };
  assert.deepEqual(longestFirst(['a.test.ts', 'b.test.ts', 'c.test.ts', 'd.test.ts', 'new2.test.ts', 'new1.test.ts'], times), [
    'new1.test.ts',
    'new2.test.ts',
    'b.test.ts',
    'd.test.ts',
    'a.test.ts',
    'c.test.ts',
  ]);
});

test('a missing or unreadable times file orders by name alone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nimbus-times-'));
  try {
    assert.deepEqual(readTestTimes(join(dir, 'none.json')), {});
    writeFileSync(join(dir, 'bad.json'), '{ not json');
    assert.deepEqual(readTestTimes(join(dir, 'bad.json')), {});
    writeFileSync(join(dir, 'list.json'), '[1, 2]');
    assert.deepEqual(readTestTimes(join(dir, 'list.json')), {});
    assert.deepEqual(longestFirst(['b.test.ts', 'a.test.ts'], {}), ['a.test.ts', 'b.test.ts']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a recording run writes each file it ran, keeps the times of files it did not, and drops files that are gone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nimbus-times-'));
  try {
    mkdirSync(join(dir, 'scripts', 'testing'), { recursive: true });
    writeFileSync(join(dir, 'slow.test.mjs'), "import { test } from 'node:test';\ntest('slow', () => new Promise((r) => setTimeout(r, 700)));\n");
    writeFileSync(join(dir, 'quick.test.mjs'), "import { test } from 'node:test';\ntest('quick', () => {});\n");
    writeFileSync(join(dir, 'kept.test.mjs'), "import { test } from 'node:test';\ntest('kept', () => {});\n");
    writeFileSync(join(dir, 'scripts', 'testing', 'test-times.json'), JSON.stringify({ 'kept.test.mjs': 42, 'gone.test.mjs': 7, 'quick.test.mjs': 99 }));
    const run = await runToExit(
      process.execPath,
      ['--test', '--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${REPORTER}`, '--test-reporter-destination=stdout', 'slow.test.mjs', 'quick.test.mjs'],
      { cwd: dir, env: { PATH: process.env.PATH ?? '' }, timeout: 60_000 },
    );
    assert.equal(run.code, 0, run.out + run.err);
    assert.match(run.out, /test times: 2 file\(s\) recorded in scripts\/testing\/test-times\.json/);
    const times = JSON.parse(readFileSync(join(dir, 'scripts', 'testing', 'test-times.json'), 'utf8')) as Record<string, number>;
    assert.deepEqual(Object.keys(times), ['kept.test.mjs', 'quick.test.mjs', 'slow.test.mjs']);
    assert.equal(times['kept.test.mjs'], 42);
    assert.notEqual(times['quick.test.mjs'], 99, 'the file it ran is re-recorded');
    assert.ok(times['slow.test.mjs']! >= 0.7, `slow ran at least its 700 ms wait: ${times['slow.test.mjs']}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
