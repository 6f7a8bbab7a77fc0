// The adapter's catalog (catalog.json at the project's root), found from this file whether it runs from src/
// or compiled into dist/.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function readCatalog(): unknown {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'catalog.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('catalog.json not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
  return JSON.parse(readFileSync(join(dir, 'catalog.json'), 'utf8'));
}
