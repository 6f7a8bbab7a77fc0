// The standalone server (`output: 'standalone'`, what the Docker image runs as the console role) started as its own
// process - `node .next/standalone/server.js` with PORT and HOSTNAME - against the embedded emulator and Cosmos:
// it serves /api/health and the client bundles copied in by the build, and its instrumentation hook starts the
// heartbeat scheduler (the Resolver liveness probe's claim document appears in the store) with no launcher. On
// SIGTERM (what a container platform sends) it stops those duties before it exits: their leases are released, so
// another replica takes them at once (server/shutdown.ts). An agent's receive long-poll in flight answers 204 at once
// rather than holding Next's close (which waits for every request) past the grace.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ensureConsoleBuilt, standaloneDir } from './build.ts';
import { CONSOLE_DIR } from './console.ts';
import { PlatformDocs } from './heartbeat/platformDocs.ts';
import { METRICS_LEASE } from './history/background.ts';
import { ALERTS_LEASE } from './alerts/evaluator.ts';
import { LeaseStore } from '../lib/store/index.ts';
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

/** The grace the SIGTERM test gives the server (NIMBUS_STOP_GRACE_MS): a stop that overruns it exits with 1. */
const STOP_GRACE_MS = 15_000;

/**
 * The standalone server, started once for this file's tests (each may run alone): its base URL once it listens.
 * One server at a time, since two on one database would share the duties' leases between them.
 */
let started: Promise<string> | undefined;
function standaloneServer(): Promise<string> {
  return (started ??= (async () => {
    const dir = standaloneDir(CONSOLE_DIR);
    assert.ok(existsSync(join(dir, 'server.js')), 'the build made a standalone server');
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NIMBUS_') && k !== 'PORT' && k !== 'HOSTNAME') env[k] = v;
    child = spawn(process.execPath, [join(dir, 'server.js')], {
      cwd: dir,
      env: {
        ...env,
        ...stack.env,
        NIMBUS_CATALOG: join(CONSOLE_DIR, 'catalog/demo.json'),
        NIMBUS_STOP_GRACE_MS: String(STOP_GRACE_MS),
        // Its log is silent under the test runner otherwise (server/log.ts): the stop's lines explain a failure.
        NIMBUS_LOG_LEVEL: 'info',
        PORT: String(port),
        HOSTNAME: '127.0.0.1',
        NEXT_TELEMETRY_DISABLED: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
    return `http://127.0.0.1:${port}`;
  })());
}

test('node .next/standalone/server.js serves /api/health and the static bundles, and runs the heartbeat scheduler', { timeout: 240_000 }, async () => {
  const dir = standaloneDir(CONSOLE_DIR);
  const base = await standaloneServer();

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

/**
 * GET `url`: `sent` once the whole request is written (the server has it), `answered` with the status and when it came.
 */
function getInFlight(url: string): { sent: Promise<void>; answered: Promise<{ status: number; at: number }> } {
  let sent!: () => void;
  const sentP = new Promise<void>((r) => (sent = r));
  const answered = new Promise<{ status: number; at: number }>((resolve) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, at: Date.now() }));
    });
    // Status 0: no answer (the connection closed with the process).
    req.once('error', () => resolve({ status: 0, at: Date.now() }));
    req.once('finish', sent);
    req.end();
  });
  return { sent: sentP, answered };
}

test('SIGTERM stops the standalone server gracefully: a receive long-poll answers 204 at once, the duties release their leases, then it exits 0', { timeout: 240_000 }, async () => {
  const base = await standaloneServer();
  await until('/api/health', async () => ((await fetch(`${base}/api/health`)).status === 200 ? true : undefined));
  // The backlog collector and the alert evaluator take their leases when they start: the replica holds two leases
  // that, left to run out, would keep every other replica from those duties for up to three ticks (minutes).
  const leases = new LeaseStore(stack.store.database);
  const held = await until('the duties\' leases held by the standalone server', async () => {
    const metrics = await leases.holder(METRICS_LEASE);
    const alerts = await leases.holder(ALERTS_LEASE);
    return metrics && alerts ? { metrics, alerts } : undefined;
  });
  assert.ok(held.metrics.expiresAt > Date.now() + 5_000, 'the lease would outlive the process by more than a few seconds');

  // An agent waiting for a handoff (none will come): its receive waits 30 s, twice the grace, unless the stop ends it.
  // A first receive that answers at once makes sure the route is ready (compiled, its store connected).
  const query = '/api/agent/receive?endpointId=crmendpoint&waitSeconds=';
  assert.equal((await fetch(`${base}${query}0`)).status, 204, output.slice(-2000));
  const poll = getInFlight(`${base}${query}30`);
  await poll.sent;
  // Written is not yet received: a connection the server had not accepted and read by the signal would be closed as
  // idle (status 0), or its request would come after the stop began (204 at once, nothing in flight tested). The
  // server accepts connections in the order they came, so an answer on a later one says the poll's is in its hands.
  assert.equal((await fetch(`${base}/api/health`)).status, 200);

  const proc = child!;
  let exitedAt = 0;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => {
      exitedAt = Date.now();
      resolve({ code, signal });
    }),
  );
  const signalledAt = Date.now();
  proc.kill('SIGTERM');
  // Bounded by the grace given (the deadline exits on its own) and a margin for a loaded machine.
  const end = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), STOP_GRACE_MS + 30_000).unref())]);
  assert.ok(end, `the server did not exit after SIGTERM; output:\n${output.slice(-3000)}`);

  // Released, not left to lapse: another replica takes both duties at once.
  assert.equal(await leases.holder(METRICS_LEASE), undefined, `the backlog collector's lease is still held; output:\n${output.slice(-3000)}`);
  assert.equal(await leases.holder(ALERTS_LEASE), undefined, "the alert evaluator's lease is still held");
  assert.ok(await leases.acquire(METRICS_LEASE, 'another-replica', 10_000), 'another replica takes the lease at once');
  // Exit 0: the stop finished within the grace (past it, the deadline exits with 1: a long-poll left to wait out its
  // 30 s held Next's close that long).
  assert.deepEqual(end, { code: 0, signal: null }, output.slice(-3000));
  assert.match(output, /stopped gracefully/);
  // The long-poll answered "nothing pending" before the process exited - within the grace, not at the end of its wait.
  const answer = await poll.answered;
  assert.equal(answer.status, 204);
  assert.ok(answer.at <= exitedAt, 'the receive answered before the process exited');
  console.log(`SIGTERM to the receive's 204: ${answer.at - signalledAt} ms; to the exit: ${exitedAt - signalledAt} ms`);
});
