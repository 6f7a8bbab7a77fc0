// `npm run pack:sdk`: builds @nimbus/sdk and writes its tarball to dist/ at the repository root. The tarball's
// path is the last line printed, so scripts can take it with `tail -n 1`.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const build = spawnSync(process.execPath, [join(root, 'scripts/build-sdk.mjs')], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const out = join(root, 'dist');
mkdirSync(out, { recursive: true });
const npm = process.env.npm_execpath;
const [cmd, args] = npm ? [process.execPath, [npm]] : ['npm', []];
const pack = spawnSync(cmd, [...args, 'pack', '--json', '--pack-destination', out], {
  cwd: join(root, 'packages/sdk'),
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});
if (pack.status !== 0) process.exit(pack.status ?? 1);
const [info] = JSON.parse(pack.stdout);
console.log(`${info.name}@${info.version}: ${info.entryCount} files, ${info.size} bytes packed`);
console.log(join(out, info.filename));
