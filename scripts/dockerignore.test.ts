// The .dockerignore reader of the image layout test (scripts/testing/dockerignore.ts) against Docker's documented
// rules, so that the layout it builds leaves out what `docker build` leaves out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDockerIgnore } from './testing/dockerignore.ts';

test('a pattern is anchored at the root; `*` stays within a folder, `**` spans any number of them', () => {
  const ignore = parseDockerIgnore('# a comment\n\nnode_modules\n/.next\n*.log\n**/*.test.ts\n**/testing\n');
  assert.equal(ignore.excludes('node_modules/tsx/package.json'), true, 'a folder: everything in it');
  assert.equal(ignore.excludes('packages/sdk/node_modules'), false, 'only at the root');
  assert.equal(ignore.excludes('.next/standalone/server.js'), true, 'a leading / changes nothing');
  assert.equal(ignore.excludes('build.log'), true);
  assert.equal(ignore.excludes('scripts/build.log'), false, '`*` does not cross a folder');
  assert.equal(ignore.excludes('recount.test.ts'), true, '`**/` matches no folder too');
  assert.equal(ignore.excludes('scripts/recount.test.ts'), true);
  assert.equal(ignore.excludes('lib/store/errors.test.ts'), true);
  assert.equal(ignore.excludes('scripts/recount.ts'), false);
  assert.equal(ignore.excludes('lib/store/testing/fixtures.ts'), true, 'a folder anywhere, and what it holds');
  assert.equal(ignore.excludes('lib/store/testingNotes.ts'), false);
  assert.equal(ignore.excludes('# a comment'), false);
});

test('`?` is one character of a name; `!` brings a path back; the last matching line decides', () => {
  const ignore = parseDockerIgnore('docs\n!docs/deploy.md\nlog?.txt\nkeep\n!keep\nkeep\n');
  assert.equal(ignore.excludes('docs/store.md'), true);
  assert.equal(ignore.excludes('docs/deploy.md'), false);
  assert.equal(ignore.hasExceptions, true);
  assert.equal(ignore.excludes('log1.txt'), true);
  assert.equal(ignore.excludes('log12.txt'), false);
  assert.equal(ignore.excludes('log/.txt'), false);
  assert.equal(ignore.excludes('keep/a'), true);
  assert.equal(parseDockerIgnore('a\n').hasExceptions, false);
});

test('what this reader does not read is refused, not misread', () => {
  assert.throws(() => parseDockerIgnore('[ab].ts\n'), /character classes and escapes/);
  assert.throws(() => parseDockerIgnore('a\\*b\n'), /character classes and escapes/);
  // Docker reads `**.log` as "any path ending in .log"; refused rather than read as `.log` at any depth.
  assert.throws(() => parseDockerIgnore('**.log\n'), /inside a name/);
  assert.throws(() => parseDockerIgnore('src/**x/y\n'), /inside a name/);
});

test('a comment is a line starting with `#`; an indented `#` is a pattern, as Docker reads it', () => {
  const ignore = parseDockerIgnore('# a comment\n  #notes\n');
  assert.equal(ignore.excludes('#notes'), true);
  assert.equal(ignore.excludes('# a comment'), false);
});
