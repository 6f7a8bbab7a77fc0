// The standalone server (`output: 'standalone'`, what the Docker image runs as the console role) started as its own
// process - `node .next/standalone/server.js` with PORT and HOSTNAME - against the embedded emulator and Cosmos:
// it serves /api/health and the client bundles copied in by the build, and its instrumentation hook starts the
// heartbeat scheduler (the Resolver liveness probe's claim document appears in the store) with no launcher.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ensureConsoleBuilt, standaloneDir } from './build.ts';
import { CONSOLE_DIR } from './console.ts';
import { PlatformDocs } from './heartbeat/platformDocs.ts';
import { startConsoleTestStack, type ConsoleTestStack } from './testing/stack.ts';

let stack: ConsoleTestStack;
let child: ChildProcess | undefined;
let output = '';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; server output:\n${output.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

before(async () => {
  await ensureConsoleBuilt(CONSOLE_DIR);
  stack = await startConsoleTestStack('standalone');
});
after(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await stack?.close();
});

test('node .next/standalone/server.js serves /api/health and the static bundles, and runs the heartbeat scheduler', { timeout: 240_000 }, async () => {
  const dir = standaloneDir(CONSOLE_DIR);
  assert.ok(existsSync(join(dir, 'server.js')), 'the build made a standalone server');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NIMBUS_') && k !== 'PORT' && k !== 'HOSTNAME') env[k] = v;
  child = spawn(process.execPath, [join(dir, 'server.js')], {
    cwd: dir,
    env: { ...env, ...stack.env, NIMBUS_CATALOG: join(CONSOLE_DIR, 'catalog/demo.json'), PORT: String(port), HOSTNAME: '127.0.0.1', NEXT_TELEMETRY_DISABLED: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
  const base = `http://127.0.0.1:${port}`;

  const health = await until('/api/health', async () => {
    const r = await fetch(`${base}/api/health`);
    return r.status === 200 ? ((await r.json()) as { status: string }) : undefined;
  });
  assert.deepEqual(health, { status: 'ok' });

  // The client bundles were copied next to the server: a page's scripts load.
  const chunks = readdirSync(join(dir, '.next', 'static', 'chunks')).filter((f) => f.endsWith('.js'));
  assert.ok(chunks.length > 0, 'static chunks copied into the standalone folder');
  const chunk = await fetch(`${base}/_next/static/chunks/${chunks[0]}`);
  assert.equal(chunk.status, 200);

  // A page renders from the store (the catalog is found and the connections work).
  const page = await fetch(`${base}/`);
  assert.equal(page.status, 200, output.slice(-2000));

  // instrumentation.ts started the heartbeat scheduler: its first tick claims the Resolver probe.
  const docs = new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: 'standalone' });
  try {
    const claim = await until('the heartbeat claim written by the standalone server', async () => (await docs.read<{ lastSentAt: string }>('heartbeat_resolver_claim')) ?? undefined);
    assert.ok(Date.parse(claim.value.lastSentAt) > Date.now() - 120_000);
  } finally {
    docs.close();
  }
});
