// Builds the @nimbus/sdk workspace package: ES modules and .d.ts files from packages/sdk/src into
// packages/sdk/dist, with the repository's TypeScript. `npm run pack:sdk` runs it before packing.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = join(root, 'packages/sdk');
rmSync(join(pkg, 'dist'), { recursive: true, force: true });
const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', join(pkg, 'tsconfig.build.json')], { stdio: 'inherit' });
if (r.status !== 0) {
  console.error('build-sdk: the compiler reported errors (above)');
  process.exit(r.status ?? 1);
}
