// The rebuild decision of `npm start` and the browser tests: by the sources' contents, not their times.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consoleBuildIsStale, consoleSourceHash, recordConsoleBuild } from './build.ts';

function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'nimbus-build-'));
  mkdirSync(join(dir, 'app'), { recursive: true });
  mkdirSync(join(dir, 'server', 'testing'), { recursive: true });
  writeFileSync(join(dir, 'app', 'page.tsx'), 'export default function Page() { return null; }\n');
  writeFileSync(join(dir, 'server', 'x.ts'), 'export const x = 1;\n');
  writeFileSync(join(dir, 'proxy.ts'), 'export const proxy = 1;\n');
  return dir;
}

function fakeBuild(dir: string): void {
  mkdirSync(join(dir, '.next'), { recursive: true });
  writeFileSync(join(dir, '.next', 'BUILD_ID'), 'test\n');
  recordConsoleBuild(dir, consoleSourceHash(dir));
}

test('a build is reused while the sources are the same, whatever their modification times', (t) => {
  const dir = project();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.equal(consoleBuildIsStale(dir), true, 'no build yet');
  fakeBuild(dir);
  assert.equal(consoleBuildIsStale(dir), false);
  // A checkout or a touch: newer times, same bytes.
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(dir, 'app', 'page.tsx'), later, later);
  utimesSync(join(dir, 'proxy.ts'), later, later);
  assert.equal(consoleBuildIsStale(dir), false);
});

test('an edit makes the build stale even when the edited file gets an older time', (t) => {
  const dir = project();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  fakeBuild(dir);
  writeFileSync(join(dir, 'server', 'x.ts'), 'export const x = 2;\n');
  const earlier = new Date(Date.now() - 86_400_000);
  utimesSync(join(dir, 'server', 'x.ts'), earlier, earlier);
  assert.equal(consoleBuildIsStale(dir), true);
});

test('proxy.ts and a new file count; tests and test fixtures do not', (t) => {
  const dir = project();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  fakeBuild(dir);
  writeFileSync(join(dir, 'server', 'x.test.ts'), 'test\n');
  writeFileSync(join(dir, 'server', 'testing', 'fixture.ts'), 'fixture\n');
  assert.equal(consoleBuildIsStale(dir), false);
  writeFileSync(join(dir, 'proxy.ts'), 'export const proxy = 2;\n');
  assert.equal(consoleBuildIsStale(dir), true);
  fakeBuild(dir);
  writeFileSync(join(dir, 'app', 'new.tsx'), 'export {};\n');
  assert.equal(consoleBuildIsStale(dir), true);
});

test('a build made by `next build` directly (no recorded hash) is rebuilt once', (t) => {
  const dir = project();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, '.next'));
  writeFileSync(join(dir, '.next', 'BUILD_ID'), 'test\n');
  assert.equal(consoleBuildIsStale(dir), true);
});
