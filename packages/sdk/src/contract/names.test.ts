import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as contract from './index.ts';
import * as names from './names.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** Every module names.ts reaches through static imports and re-exports, with the specifiers each one imports. */
function importGraph(entry: string): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const text = readFileSync(file, 'utf8');
    // Static imports and re-exports (`from '…'`), bare imports (`import '…'`) and dynamic ones (`import('…')`), in
    // either quote: every way a module can bring another into a bundle.
    const quoted = `(?:'([^']+)'|"([^"]+)")`;
    const forms = [
      new RegExp(`^\\s*(?:import|export)\\b[^;]*?\\bfrom\\s*${quoted}`, 'gms'),
      new RegExp(`^\\s*import\\s*${quoted}`, 'gm'),
      new RegExp(`\\bimport\\s*\\(\\s*${quoted}`, 'g'),
    ];
    const specifiers = forms.flatMap((re) => [...text.matchAll(re)].map((m) => (m[1] ?? m[2])!));
    seen.set(file, specifiers);
    for (const s of specifiers) if (s.startsWith('.')) visit(join(dirname(file), s));
  };
  visit(join(here, entry));
  return seen;
}

test('@nimbus/sdk/contract/names imports no package: a browser bundle that uses it carries no zod', () => {
  const graph = importGraph('names.ts');
  assert.ok(graph.size >= 5, `the walk found the modules names.ts re-exports (${[...graph.keys()].join(', ')})`);
  const outside = [...graph].flatMap(([file, specs]) => specs.filter((s) => !s.startsWith('.')).map((s) => `${file}: ${s}`));
  assert.deepEqual(outside, [], 'a module reachable from names.ts imports a package');
});

test('the names are the contract’s own: the same values under both entry points', () => {
  const keys = Object.keys(names);
  assert.ok(keys.includes('ResolutionStatus') && keys.includes('WireText') && keys.includes('parseBlockedByReason'));
  for (const key of keys) assert.equal((contract as Record<string, unknown>)[key], (names as Record<string, unknown>)[key], key);
});
