// The order scripts/run-tests.mjs hands test files to Node's runner: longest first, by the times recorded in
// scripts/testing/test-times.json (NIMBUS_TEST_TIMES_RECORD=1 refreshes them). The runner starts files in the
// order given, two at a time; in name order a long file (the chaos test, ~3 min) could start late and run on alone
// while the other slot sat idle. A file with no recorded time goes first: it may be a long one, and a short one
// costs nothing there. Ties keep name order, so the order is the same on every machine. The file is committed empty
// until a whole run on the CI machine records it (a run on a loaded machine would record the load, not the files).
import { existsSync, readFileSync } from 'node:fs';

export const TIMES_FILE = 'scripts/testing/test-times.json';

/** Recorded seconds per file (paths relative to the project's root); empty when the file is missing or unreadable. */
export function readTestTimes(path = TIMES_FILE) {
  if (!existsSync(path)) return {};
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** `files` (relative paths) longest recorded time first; those with no time before all others. */
export function longestFirst(files, times) {
  const secondsOf = (f) => (typeof times[f] === 'number' && Number.isFinite(times[f]) ? times[f] : Infinity);
  return [...files].sort((a, b) => secondsOf(b) - secondsOf(a) || (a < b ? -1 : a > b ? 1 : 0));
}
