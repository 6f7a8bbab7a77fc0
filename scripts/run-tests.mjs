// Runs every *.test.ts under the project with Node's own test runner (TypeScript through tsx).
// Node 20's --test takes no globs, so the files are listed here. Pass paths or substrings to narrow the run:
//   node scripts/run-tests.mjs emulator/sql
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { longestFirst, readTestTimes } from './testing/testTimes.mjs';

const root = process.cwd();
// examples/ are projects of their own, tested from their own folder (e2e/adapter-example.test.ts installs and runs them).
const skipDirs = new Set(['node_modules', '.next', '.nimbus', '.git', 'coverage', '.tmp', 'dist', 'examples']);

function collect(dir, out) {
  for (const name of readdirSync(dir)) {
    if (skipDirs.has(name) || name.startsWith('.next-')) continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) collect(full, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, full));
  }
  return out;
}

const filters = process.argv.slice(2);
const files = longestFirst(
  collect(root, []).filter((f) => filters.length === 0 || filters.some((x) => f.includes(x))),
  readTestTimes(),
);
if (files.length === 0) {
  console.error('run-tests: no test files matched');
  process.exit(1);
}
// Three files at a time on the 2-core CI machine: most files spend their time waiting (leases, broker and store
// round trips, time budgets), not computing. Measured in two whole runs on one loaded machine: the tests took
// 3,550 s two at a time and 2,747 s three at a time, all passing both times. NIMBUS_TEST_CONCURRENCY overrides it.
const concurrency = process.env.NIMBUS_TEST_CONCURRENCY ?? '3';
// A guard, so that one stuck file fails the run instead of holding it until CI cuts it off with no report:
// --test-timeout bounds a test that never settles (a test may set a shorter timeout of its own); in Node 20 it
// applies to a whole file's process too. Not --test-force-exit: it can end a file's process before the last results
// reach the parent, which then counts fewer tests at exit 0 (nodejs/node#64833; seen here, the tail of
// emulator/sql/filter.test.ts missing from one CI run). A file whose library leaves a handle open after its
// tests ends itself (endProcessAfterResults() in packages/sdk/e2e/harness.ts: replayDrop, sessionDrop).
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-timeout=1200000',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    // NIMBUS_TEST_TIMES_RECORD=1: also record each file's time for the next run's order (scripts/testing/testTimes.mjs).
    ...(process.env.NIMBUS_TEST_TIMES_RECORD === '1'
      ? ['--test-reporter=./scripts/testing/fileTimesReporter.mjs', '--test-reporter-destination=stdout']
      : []),
    ...files,
  ],
  { stdio: 'inherit', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } },
);
process.exit(result.status ?? 1);
