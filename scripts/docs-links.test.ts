// The README and docs/ are what a person who has only this repository reads first: every file they point to and
// every npm script they tell you to run must exist. A doc that names a moved file or a renamed script fails here,
// not in front of a reader.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function docFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(ROOT, 'docs', f));
  return [join(ROOT, 'README.md'), ...docs];
}

/** Markdown links `[text](target)` that are neither absolute URLs nor in-page anchors. */
export function relativeLinks(markdown: string): string[] {
  const out: string[] = [];
  for (const m of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
    out.push(target.split('#')[0]!);
  }
  return out;
}

/**
 * Repository paths written as code (`docs/running.md`, `server/build.ts`, `lib/sdk/`): a backticked word with a
 * slash, no spaces, no placeholders (`{E}`, `*`, `…`, `<x>`, `$VAR`), starting with a top-level folder of the
 * repository. Route paths (`/api/…`), packages (`@azure/…`) and other words with slashes are not files, and
 * outputs (a `dist` folder such as `packages/sdk/dist`, and `test-artifacts/`) exist only after a build or a test
 * run, so they are not checked.
 */
export function codePaths(markdown: string, topLevel: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const m of markdown.matchAll(/`([^`\s]+)`/g)) {
    const word = m[1]!.replace(/[.,:;]+$/, '');
    if (!word.includes('/') || /[{}*…<>$|?=]/.test(word)) continue;
    const first = word.split('/')[0]!;
    if (!topLevel.has(first)) continue;
    if (first === 'test-artifacts' || word.split('/').includes('dist')) continue;
    out.push(word.split('#')[0]!);
  }
  return out;
}

/** Scripts named as `npm run NAME`, plus `npm start` / `npm test`. */
export function npmScripts(markdown: string): string[] {
  const out: string[] = [];
  for (const m of markdown.matchAll(/\bnpm run ([a-z][\w:-]*)/g)) out.push(m[1]!);
  for (const m of markdown.matchAll(/\bnpm (start|test)\b/g)) out.push(m[1]!);
  return out;
}

test('every relative link and repository path in the README and docs/ exists', () => {
  const topLevel = new Set(readdirSync(ROOT).filter((f) => !f.startsWith('.') && f !== 'node_modules'));
  const missing: string[] = [];
  for (const file of docFiles()) {
    const text = readFileSync(file, 'utf8');
    const where = relative(ROOT, file);
    for (const link of relativeLinks(text))
      if (!existsSync(join(dirname(file), link))) missing.push(`${where}: link ${link}`);
    for (const path of codePaths(text, topLevel))
      if (!existsSync(join(ROOT, path))) missing.push(`${where}: path ${path}`);
  }
  assert.deepEqual(missing, []);
});

test('every npm script the README and docs/ name exists in package.json (or an example project)', () => {
  // The example adapter's own scripts (npm run subscriber, …) are named where docs/sdk.md walks through it.
  const manifests = [join(ROOT, 'package.json'), join(ROOT, 'examples/adapter/package.json')];
  const scripts = manifests.flatMap((m) =>
    Object.keys((JSON.parse(readFileSync(m, 'utf8')) as { scripts: object }).scripts),
  );
  const missing: string[] = [];
  for (const file of docFiles())
    for (const name of npmScripts(readFileSync(file, 'utf8')))
      if (!scripts.includes(name)) missing.push(`${relative(ROOT, file)}: npm run ${name}`);
  assert.deepEqual([...new Set(missing)], []);
});

test('the extractors find what a doc names and ignore what is not a file or script', () => {
  const top = new Set(['docs', 'server']);
  assert.deepEqual(relativeLinks('[a](auth.md) [b](https://x.test/y) [c](#top) [d](security.md#threats)'), [
    'auth.md',
    'security.md',
  ]);
  assert.deepEqual(
    codePaths(
      '`docs/running.md`, `server/build.ts`. `/api/ready` `@azure/cosmos` `server/{E}.ts` `other/x.ts`',
      top,
    ),
    ['docs/running.md', 'server/build.ts'],
  );
  assert.deepEqual(
    npmScripts('run `npm run bench console` or `npm start`; npm test; npm run test:unit -- x'),
    ['bench', 'test:unit', 'start', 'test'],
  );
});
