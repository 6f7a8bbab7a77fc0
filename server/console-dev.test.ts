// `npm run dev`: the embedded platform with the console under Next's development server, without a build. Run as
// the user runs it (`node --import tsx scripts/start.ts --dev` in a child process, ports 0, a temporary data
// folder, no demo): it must serve the API and a page, stop on Ctrl-C with exit code 0, and leave the tracked
// next-env.d.ts as it found it (the development server points it at `.next/dev/types`). A child process, not
// startConsole in this process: Next's development server leaves file watchers open after it is closed.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONSOLE_DIR } from './console.ts';

/** The development server compiles each route on its first request: slow on a loaded two-core machine. */
const COMPILE_MS = 180_000;

const nextEnvBefore = readFileSync(join(CONSOLE_DIR, 'next-env.d.ts'), 'utf8');
const dataDir = mkdtempSync(join(tmpdir(), 'nimbus-dev-'));
let child: ChildProcess | undefined;
let output = '';

after(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

function waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const m = output.match(pattern);
      if (m) done(() => resolve(m));
      else if (child?.exitCode !== null)
        done(() => reject(new Error(`npm run dev exited:\n${output.slice(-3000)}`)));
    }, 200);
    const deadline = setTimeout(
      () => done(() => reject(new Error(`no ${pattern}:\n${output.slice(-3000)}`))),
      timeoutMs,
    );
    const done = (f: () => void) => {
      clearInterval(timer);
      clearTimeout(deadline);
      f();
    };
  });
}

test(
  'npm run dev serves the console from the development server and stops on Ctrl-C',
  { timeout: COMPILE_MS * 3 },
  async () => {
    child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts', '--dev'], {
      cwd: CONSOLE_DIR,
      env: {
        ...process.env,
        PORT: '0',
        NIMBUS_EMULATOR_PORT: '0',
        NIMBUS_COSMOS_PORT: '0',
        NIMBUS_DATA_DIR: dataDir,
        NIMBUS_DEMO: '0',
        NO_COLOR: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (b: Buffer) => (output += b.toString('utf8')));
    child.stderr!.on('data', (b: Buffer) => (output += b.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));

    const [, url] = (await waitFor(/console ready: open (http:\/\/\S+)/, COMPILE_MS)) as unknown as [
      string,
      string,
    ];
    // No `next build` ran: the development server compiles on demand.
    assert.doesNotMatch(output, /running `next build`/);
    const api = await fetch(`${url}/api/endpoints`, { signal: AbortSignal.timeout(COMPILE_MS) });
    assert.equal(api.status, 200);
    const body = (await api.json()) as { endpoints: Array<{ endpointId: string }> };
    assert.ok(body.endpoints.some((e) => e.endpointId === 'billingendpoint'));
    const page = await fetch(`${url}/monitor`, { signal: AbortSignal.timeout(COMPILE_MS) });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);

    child.kill('SIGINT');
    assert.equal(await exited, 0, output.slice(-3000));
    assert.equal(readFileSync(join(CONSOLE_DIR, 'next-env.d.ts'), 'utf8'), nextEnvBefore);
  },
);
