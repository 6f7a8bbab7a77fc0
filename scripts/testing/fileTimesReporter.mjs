// A test reporter for scripts/run-tests.mjs: records how long each test file's process ran (from the runner taking
// it off its queue to its last result) into scripts/testing/test-times.json, merged with what that file already
// holds, so that the next run can start the longest files first. Used when NIMBUS_TEST_TIMES_RECORD=1; its only
// output is one line at the end saying how many files it recorded (the spec reporter beside it reports the tests).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { TIMES_FILE } from './testTimes.mjs';

export default async function* fileTimesReporter(source) {
  const started = new Map();
  const seconds = {};
  for await (const event of source) {
    const d = event.data;
    // A file's own events carry its path as their name; its tests' events carry the test's name.
    if (!d || !d.file || d.name !== d.file) continue;
    if (event.type === 'test:dequeue') started.set(d.file, Date.now());
    else if (event.type === 'test:complete' && started.has(d.file))
      seconds[relative(process.cwd(), d.file)] = Math.round((Date.now() - started.get(d.file)) / 100) / 10;
  }
  const known = existsSync(TIMES_FILE) ? JSON.parse(readFileSync(TIMES_FILE, 'utf8')) : {};
  const merged = { ...known, ...seconds };
  const kept = Object.fromEntries(Object.keys(merged).filter((f) => existsSync(f)).sort().map((f) => [f, merged[f]]));
  writeFileSync(TIMES_FILE, JSON.stringify(kept, null, 1) + '\n');
  yield `test times: ${Object.keys(seconds).length} file(s) recorded in ${TIMES_FILE}\n`;
}
