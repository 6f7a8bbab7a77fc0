// `npm start` with the production build, as the user runs it (`node --import tsx scripts/start.ts` in a child
// process, ports 0, a temporary data folder, no demo): the console must come up and serve a page without Next
// warning that `next start` does not work with `output: 'standalone'` - the build is served with the settings it
// was built with, as the standalone server serves it (server/console.ts). A child process, as the user sees the
// output; the build is made (or found current) first, so the start itself runs no `next build`. Every line it
// prints carries a part's prefix, the console's own log included.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureConsoleBuilt } from './build.ts';
import { CONSOLE_DIR } from './console.ts';
import { startPlatformProcess, type StartedPlatform } from './testing/startedPlatform.ts';

/** A loaded two-core machine: starting the emulator, Cosmos and the console can take a while. */
const START_MS = 240_000;

let platform: StartedPlatform | undefined;

before(() => ensureConsoleBuilt(CONSOLE_DIR), { timeout: 15 * 60_000 });

after(() => platform?.cleanup());

test('npm start serves the production build without Next\'s warning about `next start` and standalone output', { timeout: START_MS * 2 }, async () => {
  platform = startPlatformProcess({ name: 'npm start', env: { HOSTNAME: '127.0.0.1', NIMBUS_LOG_LEVEL: 'info' } });
  const url = (await platform.waitFor(/console ready: open (http:\/\/\S+)/, START_MS))[1]!;
  assert.doesNotMatch(platform.output, /running `next build`/, 'the build was current');
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
  await platform.waitFor(/bulk operations runner started/, START_MS);
  assert.equal(await platform.interrupt(), 0, platform.output.slice(-3000));
  // Whatever Next's wording: no line about `next start` or the standalone output mode.
  assert.doesNotMatch(platform.output, /next start|output: ?["']?standalone/i, platform.output.slice(-3000));
  // Every line is a part's, the console's own log (server/log.ts) too: its background duties print under
  // [console], where they were bare pino JSON lines before.
  const { stdout } = platform;
  assert.match(stdout, /\[console\] bulk operations runner started/, stdout.slice(-3000));
  const bare = stdout.split('\n').filter((line) => line.trim() !== '' && !/^(\d\d:\d\d:\d\d )?\[[a-z]+\] /.test(line));
  assert.deepEqual(bare, [], 'lines without a part prefix');
});
