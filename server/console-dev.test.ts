// `npm run dev`: the embedded platform with the console under Next's development server, without a build. Run as
// the user runs it (`node --import tsx scripts/start.ts --dev` in a child process, ports 0, a temporary data
// folder, no demo): it must serve the API and a page, stop on Ctrl-C with exit code 0, and leave the tracked
// next-env.d.ts as it found it (the development server points it at `.next/dev/types`). A child process, not
// startConsole in this process: Next's development server leaves file watchers open after it is closed.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONSOLE_DIR } from './console.ts';
import { startPlatformProcess, type StartedPlatform } from './testing/startedPlatform.ts';

/** The development server compiles each route on its first request: slow on a loaded two-core machine. */
const COMPILE_MS = 180_000;

const nextEnvBefore = readFileSync(join(CONSOLE_DIR, 'next-env.d.ts'), 'utf8');
let platform: StartedPlatform | undefined;

after(() => platform?.cleanup());

test(
  'npm run dev serves the console from the development server and stops on Ctrl-C',
  { timeout: COMPILE_MS * 3 },
  async () => {
    platform = startPlatformProcess({ name: 'npm run dev', args: ['--dev'] });
    const url = (await platform.waitFor(/console ready: open (http:\/\/\S+)/, COMPILE_MS))[1]!;
    // No `next build` ran: the development server compiles on demand.
    assert.doesNotMatch(platform.output, /running `next build`/);
    const api = await fetch(`${url}/api/endpoints`, { signal: AbortSignal.timeout(COMPILE_MS) });
    assert.equal(api.status, 200);
    const body = (await api.json()) as { endpoints: Array<{ endpointId: string }> };
    assert.ok(body.endpoints.some((e) => e.endpointId === 'billingendpoint'));
    const page = await fetch(`${url}/monitor`, { signal: AbortSignal.timeout(COMPILE_MS) });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);

    assert.equal(await platform.interrupt(), 0, platform.output.slice(-3000));
    assert.equal(readFileSync(join(CONSOLE_DIR, 'next-env.d.ts'), 'utf8'), nextEnvBefore);
  },
);
