// `npm start` with the production build, as the user runs it (`node --import tsx scripts/start.ts` in a child
// process, ports 0, a temporary data folder, no demo): the console must come up and serve a page without Next
// warning that `next start` does not work with `output: 'standalone'` - the build is served with the settings it
// was built with, as the standalone server serves it (server/console.ts). A child process, as the user sees the
// output; the build is made (or found current) first, so the start itself runs no `next build`. Every line it
// prints carries a part's prefix, the console's own log included.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureConsoleBuilt } from './build.ts';
import { CONSOLE_DIR } from './console.ts';

/** A loaded two-core machine: starting the emulator, Cosmos and the console can take a while. */
const START_MS = 240_000;

const dataDir = mkdtempSync(join(tmpdir(), 'nimbus-start-'));
let child: ChildProcess | undefined;
let output = '';
let stdout = '';

before(() => ensureConsoleBuilt(CONSOLE_DIR), { timeout: 15 * 60_000 });

after(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

function waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const m = output.match(pattern);
      if (m) done(() => resolve(m));
      else if (child?.exitCode !== null) done(() => reject(new Error(`npm start exited:\n${output.slice(-3000)}`)));
    }, 200);
    const deadline = setTimeout(() => done(() => reject(new Error(`no ${pattern}:\n${output.slice(-3000)}`))), timeoutMs);
    const done = (f: () => void) => {
      clearInterval(timer);
      clearTimeout(deadline);
      f();
    };
  });
}

test('npm start serves the production build without Next\'s warning about `next start` and standalone output', { timeout: START_MS * 2 }, async () => {
  child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: CONSOLE_DIR,
    env: {
      ...process.env,
      PORT: '0',
      HOSTNAME: '127.0.0.1',
      NIMBUS_EMULATOR_PORT: '0',
      NIMBUS_COSMOS_PORT: '0',
      NIMBUS_DATA_DIR: dataDir,
      NIMBUS_DEMO: '0',
      NIMBUS_LOG_LEVEL: 'info',
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (b: Buffer) => {
    output += b.toString('utf8');
    stdout += b.toString('utf8');
  });
  child.stderr!.on('data', (b: Buffer) => (output += b.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));

  const [, url] = (await waitFor(/console ready: open (http:\/\/\S+)/, START_MS)) as unknown as [string, string];
  assert.doesNotMatch(output, /running `next build`/, 'the build was current');
  // A page and the build's own settings: the security headers and the favicon rewrite of next.config.ts.
  const page = await fetch(`${url}/monitor`, { signal: AbortSignal.timeout(START_MS) });
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('x-frame-options'), 'DENY');
  assert.match(await page.text(), /<html/i);
  const icon = await fetch(`${url}/favicon.ico`, { signal: AbortSignal.timeout(START_MS) });
  assert.equal(icon.status, 200);
  await icon.arrayBuffer();

  // The console's instrumentation hook starts its background duties once the server runs; each logs when it has
  // started. Wait for the bulk runner's line, then check them all.
  await waitFor(/bulk operations runner started/, START_MS);
  child.kill('SIGINT');
  assert.equal(await exited, 0, output.slice(-3000));
  // Whatever Next's wording: no line about `next start` or the standalone output mode.
  assert.doesNotMatch(output, /next start|output: ?["']?standalone/i, output.slice(-3000));
  // Every line is a part's, the console's own log (server/log.ts) too: its background duties print under
  // [console], where they were bare pino JSON lines before.
  assert.match(stdout, /\[console\] bulk operations runner started/, stdout.slice(-3000));
  const bare = stdout.split('\n').filter((line) => line.trim() !== '' && !/^(\d\d:\d\d:\d\d )?\[[a-z]+\] /.test(line));
  assert.deepEqual(bare, [], 'lines without a part prefix');
});
