// Scale-out proof (issue "Production: deploy to Azure as separate parts"): every part as its own process, the way
// a deployment runs them - one Service Bus emulator (`npm run emulator`), one embedded Cosmos server
// (`npm run cosmos`), the topology (`npm run provision`), two consoles (`npm run console` on two ports), two
// Resolvers (`npm run resolver`) and the demo (`npm run demo`, which writes every event the broker accepted to a
// JSON-lines file). Under demo traffic one Resolver and one console are killed with SIGKILL (their whole process
// group: npm, tsx and node). Afterwards, read directly from the store:
//   - every event the demo published has a row at each of its consumers, and every row is final and true to its
//     history (or waits on something live), e2e/chaosInvariants.ts;
//   - the stored counters equal a recount of the rows;
//   - the heartbeat went out once per interval throughout: never two sends within one interval (two consoles
//     race for each), and no interval missed beyond one scheduler tick (the killed console's share taken over);
//   - the surviving console answers every page route with 200.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CosmosClient } from '@azure/cosmos';
import { loadCatalog } from '@nimbus/sdk/catalog';
import {
  CONTAINERS,
  createStore,
  historyEntrySchema,
  statusRowSchema,
  type HistoryEntry,
  type MessageStore,
  type StatusRowSummary,
} from '../lib/store/index.ts';
import { ensureConsoleBuilt } from '../server/build.ts';
import { TICK_MS } from '../server/heartbeat/scheduler.ts';
import { checkChaosInvariants, formatViolations, type ChaosEvidence, type PublishedEvent } from './chaosInvariants.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DATABASE = 'scaleout';
const INTERVAL_S = 30;
const PLAN = {
  /** Storefront events per second, and how many in all (the demo stops its traffic after them). */
  rate: 5,
  events: 150,
  /** Traffic before the kills: enough that both Resolvers hold sessions and buffered deltas. */
  beforeKillMs: 10_000,
  /** Settling: counters and history unchanged for this many polls, at most maxMs. */
  settle: { pollMs: 2000, stablePolls: 3, maxMs: 150_000 },
};
// A fixed emulator key for this run, so every part can be given the same connection string (NIMBUS_EMULATOR_KEY).
const EMULATOR_KEY = 'c2NhbGVvdXQtdGVzdC1rZXktbm90LWEtc2VjcmV0';

const work = mkdtempSync(join(tmpdir(), 'nimbus-scaleout-'));
const publishedLog = join(work, 'published.jsonl');

interface Part {
  name: string;
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** SIGKILL to the whole process group (npm, tsx, node): a crash, nothing gets to clean up. */
  kill9(): Promise<void>;
  /** SIGTERM to the group, then SIGKILL after 15 s. */
  stop(): Promise<void>;
}
const parts: Part[] = [];

function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if ((!k.startsWith('NIMBUS_') || k === 'NIMBUS_NEXT_DIST_DIR') && k !== 'PORT' && k !== 'HOSTNAME') env[k] = v;
  return { ...env, NO_COLOR: '1', NEXT_TELEMETRY_DISABLED: '1' };
}

function spawnPart(name: string, args: string[], env: NodeJS.ProcessEnv): Part {
  // Detached: its own process group, so a kill reaches npm's children too.
  const child = spawn('npm', ['run', '--silent', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  const part: Part = {
    name,
    child,
    output: () => output,
    waitFor: (pattern, timeoutMs = 120_000) =>
      new Promise((resolve, reject) => {
        const deadline = Date.now() + timeoutMs;
        const timer = setInterval(() => {
          const m = pattern.exec(output);
          if (m) {
            clearInterval(timer);
            resolve(m);
          } else if (child.exitCode !== null || Date.now() > deadline) {
            clearInterval(timer);
            reject(new Error(`${name} did not print ${pattern} (exit ${child.exitCode}):\n${output.slice(-3000)}`));
          }
        }, 100);
      }),
    kill9: async () => {
      signalGroup('SIGKILL');
      await exited;
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      // Whatever npm left behind in the group.
      signalGroup('SIGKILL');
    },
  };
  parts.push(part);
  return part;
}

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const phase = (what: string) => process.stdout.write(`# scale-out ${new Date().toISOString().slice(11, 19)} ${what}\n`);

async function readAll<T>(client: CosmosClient, container: string, schema: { parse(v: unknown): T }): Promise<T[]> {
  const out: T[] = [];
  const it = client.database(DATABASE).container(container).items.query('SELECT * FROM c', { maxItemCount: 1000 });
  while (it.hasMoreResults()) for (const doc of (await it.fetchNext()).resources ?? []) out.push(schema.parse(doc));
  return out;
}

let store: MessageStore | undefined;
let cosmosClient: CosmosClient | undefined;

before(async () => {
  // A stale or missing build is made once here, outside the timed scenario.
  await ensureConsoleBuilt(ROOT);
});
after(async () => {
  await store?.close().catch(() => undefined);
  cosmosClient?.dispose();
  await Promise.all(parts.map((p) => p.stop().catch(() => undefined)));
  rmSync(work, { recursive: true, force: true });
});

test('two consoles, two Resolvers and the demo as separate processes survive losing one console and one Resolver', { timeout: 8 * 60_000 }, async (t) => {
  const started = Date.now();
  const env = baseEnv();

  // --- the shared services
  const [busPort, cosmosPort, consolePort1, consolePort2] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const emulator = spawnPart('emulator', ['emulator', '--', '--port', String(busPort), '--key', EMULATOR_KEY], env);
  const cosmos = spawnPart('cosmos', ['cosmos', '--', '--port', String(cosmosPort), '--data-dir', join(work, 'cosmos')], env);
  const connectionString = (await emulator.waitFor(/^(Endpoint=\S+)$/m))[1]!;
  await emulator.waitFor(/emulator ready/);
  const cosmosEndpoint = (await cosmos.waitFor(/^NIMBUS_COSMOS_ENDPOINT=(\S+)$/m))[1]!;
  const cosmosKey = (await cosmos.waitFor(/^NIMBUS_COSMOS_KEY=(\S+)$/m))[1]!;
  await cosmos.waitFor(/cosmos ready/);
  const shared: NodeJS.ProcessEnv = {
    ...env,
    NIMBUS_SERVICEBUS_CONNECTION_STRING: connectionString,
    NIMBUS_COSMOS_ENDPOINT: cosmosEndpoint,
    NIMBUS_COSMOS_KEY: cosmosKey,
    NIMBUS_COSMOS_DATABASE: DATABASE,
    NIMBUS_CATALOG: join(ROOT, 'catalog/demo.json'),
    NIMBUS_AUTH: 'off',
    NIMBUS_LOG_LEVEL: 'warn',
  };
  const provision = spawnPart('provision', ['provision'], shared);
  await new Promise<void>((resolve) => provision.child.once('exit', () => resolve()));
  assert.equal(provision.child.exitCode, 0, `provisioning failed:\n${provision.output().slice(-2000)}`);
  phase('emulator, cosmos and topology ready');

  // The heartbeat on, at its shortest interval, before any console starts.
  store = await createStore({ endpoint: cosmosEndpoint, key: cosmosKey, database: DATABASE });
  await store.saveHeartbeatSettings({ enabled: true, intervalSeconds: INTERVAL_S, timeoutSeconds: 10 });
  cosmosClient = new CosmosClient({ endpoint: cosmosEndpoint, key: cosmosKey, connectionPolicy: { enableEndpointDiscovery: false } });

  // --- the replicas
  const console1 = spawnPart('console-1', ['console'], { ...shared, PORT: String(consolePort1), HOSTNAME: '127.0.0.1' });
  const console2 = spawnPart('console-2', ['console'], { ...shared, PORT: String(consolePort2), HOSTNAME: '127.0.0.1' });
  const resolver1 = spawnPart('resolver-1', ['resolver'], { ...shared, NIMBUS_LOG_LEVEL: 'info' });
  const resolver2 = spawnPart('resolver-2', ['resolver'], { ...shared, NIMBUS_LOG_LEVEL: 'info' });
  await Promise.all([
    console1.waitFor(/console ready on/, 180_000),
    console2.waitFor(/console ready on/, 180_000),
    resolver1.waitFor(/Resolver: started/),
    resolver2.waitFor(/Resolver: started/),
  ]);
  const heartbeatFrom = Date.now();
  phase('two consoles and two Resolvers ready');
  const demo = spawnPart('demo', ['demo'], {
    ...shared,
    NIMBUS_DEMO_RATE: String(PLAN.rate),
    NIMBUS_DEMO_EVENTS: String(PLAN.events),
    NIMBUS_DEMO_SLOW_HANDOFF_SECONDS: '15',
    NIMBUS_DEMO_PUBLISHED_LOG: publishedLog,
  });
  await demo.waitFor(/demo ready/);
  phase('demo traffic running');

  // --- the crash: one Resolver and one console, mid-traffic
  await sleep(PLAN.beforeKillMs);
  await Promise.all([resolver1.kill9(), console1.kill9()]);
  phase('resolver-1 and console-1 killed (SIGKILL)');

  // --- the rest of the traffic, then settling (a positive signal: nothing changes for several polls)
  const publishedNow = () => (existsSync(publishedLog) ? readFileSync(publishedLog, 'utf8').split('\n').filter(Boolean).length : 0);
  const trafficDeadline = Date.now() + 4 * 60_000;
  while (publishedNow() < PLAN.events && Date.now() < trafficDeadline) await sleep(1000);
  phase(`traffic finished: ${publishedNow()} events published`);
  // A positive signal that the killed Resolver's unflushed counter deltas were applied (within its lease's TTL).
  await resolver2.waitFor(/counter deltas it had not flushed/, 120_000);
  phase('the surviving Resolver applied the killed one\'s unflushed counter deltas');
  const snapshot = async () => {
    const counts = await store!.getAllCounts();
    const history = await cosmosClient!.database(DATABASE).container(CONTAINERS.history).items.query<number>('SELECT VALUE COUNT(1) FROM c').fetchAll();
    return JSON.stringify([counts.endpoints.map((e) => e.buckets), history.resources[0]]);
  };
  const settleStart = Date.now();
  let last = '';
  let same = 0;
  while (Date.now() - settleStart < PLAN.settle.maxMs) {
    await sleep(PLAN.settle.pollMs);
    const now = await snapshot();
    same = now === last ? same + 1 : 0;
    last = now;
    if (same >= PLAN.settle.stablePolls - 1) break;
  }
  phase(`${same >= PLAN.settle.stablePolls - 1 ? 'settled' : 'NOT settled'} after ${((Date.now() - settleStart) / 1000).toFixed(0)} s`);

  // --- the evidence, read directly from the store
  const catalog = await loadCatalog(join(ROOT, 'catalog/demo.json'));
  const published: PublishedEvent[] = readFileSync(publishedLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as PublishedEvent);
  const rows: StatusRowSummary[] = await readAll(cosmosClient, CONTAINERS.events, statusRowSchema);
  const historyEntries: HistoryEntry[] = await readAll(cosmosClient, CONTAINERS.history, historyEntrySchema);
  const history = new Map<string, HistoryEntry[]>();
  for (const h of historyEntries) history.set(h.eventId, [...(history.get(h.eventId) ?? []), h]);
  const counters = new Map(
    (await store.getAllCounts()).endpoints.map((c) => [c.endpointId, Object.fromEntries(Object.entries(c.buckets).filter(([, n]) => n !== 0))]),
  );
  const consumers = new Map<string, string[]>();
  for (const e of catalog.endpoints) for (const type of e.consumes) consumers.set(type, [...(consumers.get(type) ?? []), e.id]);
  const evidence: ChaosEvidence = {
    now: new Date(),
    rows,
    history,
    counters,
    published,
    consumersOf: (type) => consumers.get(type) ?? [],
    deadLetters: [],
  };
  for (const part of parts)
    for (const line of part.output().split('\n'))
      if (/counter deltas it had not flushed/.test(line)) t.diagnostic(`${part.name}: ${line.slice(0, 200)}`);
  const byStatus = new Map<string, number>();
  for (const r of rows) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
  t.diagnostic(`published ${published.length}; rows ${rows.length} (${[...byStatus].map(([k, n]) => `${k} ${n}`).join(', ')}); history ${historyEntries.length}`);
  assert.ok(published.length >= PLAN.events * 0.9, `the demo published ${published.length} of ${PLAN.events} events`);
  // Judged at the end, so that the heartbeat and page checks below run (and report) whatever this finds.
  const violations = checkChaosInvariants(evidence);

  // --- the heartbeat: once per interval across both consoles, throughout
  const heartbeatTo = Date.now();
  for (const endpoint of catalog.endpoints) {
    const sends = (await store.listHeartbeats(endpoint.id, 100))
      .map((h) => (h.sentAt ? Date.parse(h.sentAt) : NaN))
      .filter((at) => !Number.isNaN(at))
      .sort((x, y) => x - y);
    const gaps = sends.slice(1).map((at, i) => at - sends[i]!);
    t.diagnostic(`${endpoint.id}: ${sends.length} heartbeats, gaps ${gaps.map((g) => (g / 1000).toFixed(1)).join(' ')} s`);
    // Two sends within one interval would mean two consoles both sent for it.
    for (const g of gaps) assert.ok(g >= INTERVAL_S * 1000 - 1000, `${endpoint.id}: two heartbeats ${g} ms apart (interval ${INTERVAL_S} s)`);
    // None missed: a due send waits at most one scheduler tick (plus a tick's own time on a loaded machine).
    for (const g of gaps) assert.ok(g <= INTERVAL_S * 1000 + TICK_MS + 15_000, `${endpoint.id}: no heartbeat for ${g} ms`);
    const expected = Math.floor((heartbeatTo - heartbeatFrom) / ((INTERVAL_S * 1000 + TICK_MS + 15_000)));
    assert.ok(sends.length >= expected, `${endpoint.id}: ${sends.length} heartbeats in ${((heartbeatTo - heartbeatFrom) / 1000).toFixed(0)} s`);
    assert.ok(sends.length >= 2, `${endpoint.id}: the scheduler kept sending after a console died`);
  }

  // --- the surviving console serves every page
  const base = `http://127.0.0.1:${consolePort2}`;
  const someRow = rows.find((r) => r.endpointId === catalog.endpoints[0]!.id) ?? rows[0]!;
  const pages = [
    '/',
    '/flow',
    '/admin',
    '/admin/access',
    '/admin/health',
    '/audit',
    '/search',
    '/topology',
    '/topology/subscriptions',
    `/topology/subscriptions/${encodeURIComponent(catalog.endpoints[0]!.id)}/${encodeURIComponent(catalog.endpoints[0]!.id)}`,
    '/monitor',
    '/operations',
    '/operations/reconcile',
    `/endpoints/${encodeURIComponent(someRow.endpointId)}`,
    `/endpoints/${encodeURIComponent(someRow.endpointId)}/events/${encodeURIComponent(someRow.eventId)}`,
  ];
  for (const page of pages) {
    const r = await fetch(`${base}${page}`);
    await r.arrayBuffer();
    assert.equal(r.status, 200, `${page} answered ${r.status} on the surviving console`);
  }
  t.diagnostic(`heartbeat once per interval and every page served; scenario took ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (violations.length > 0) assert.fail(`after losing a Resolver and a console:\n${formatViolations(violations, evidence)}`);
});
