// The image layout's copy of a checkout path (scripts/testing/buildContext.ts) with a `!` line in .dockerignore:
// a temporary checkout whose .dockerignore leaves out test folders and brings one file back. Docker (BuildKit's
// context walk, tonistiigi/fsutil walker.go) goes into a folder left out only to look for what a `!` line brings
// back, and sends the folder only on the way to such a path: a folder left out that holds none is not in the
// context, so the layout must not hold it either (an empty `testing/` would read as a test folder in the image).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseDockerIgnore } from './testing/dockerignore.ts';
import { copyFromBuildContext } from './testing/buildContext.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nimbus-build-context-'));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A checkout: its .dockerignore and files (their paths relative to it), every file holding its own path. */
async function checkout(dockerignore: string, files: string[]): Promise<string> {
  const root = await mkdtemp(join(dir, 'checkout-'));
  await writeFile(join(root, '.dockerignore'), dockerignore);
  for (const file of files) {
    await mkdir(dirname(join(root, file)), { recursive: true });
    await writeFile(join(root, file), file);
  }
  return root;
}

/** Every file and folder below `root`, relative to it, sorted. */
async function tree(root: string): Promise<string[]> {
  return (await readdir(root, { recursive: true })).map((p) => p.split('\\').join('/')).sort();
}

test('a folder left out holds no folder in the layout unless a `!` line brings back something in it', async () => {
  const root = await checkout('**/testing\n**/*.test.ts\n!lib/kept/testing/notes.md\n', [
    'lib/index.ts',
    'lib/index.test.ts',
    'lib/store/testing/fixtures.ts',
    'lib/store/testing/deep/more.ts',
    'lib/kept/testing/notes.md',
    'lib/kept/testing/fixtures.ts',
  ]);
  const ignore = parseDockerIgnore(await readFile(join(root, '.dockerignore'), 'utf8'));
  assert.equal(ignore.hasExceptions, true);
  const layout = join(dir, 'layout');
  await copyFromBuildContext(root, ignore, 'lib', layout);
  assert.deepEqual(await tree(layout), ['index.ts', 'kept', 'kept/testing', 'kept/testing/notes.md', 'store']);
});
