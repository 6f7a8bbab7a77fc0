// Page-reads benchmark (`npm run bench page-reads`): what the Endpoint and Event pages' server reads cost while the
// platform is busy, as `npm start` runs it: the emulator, the embedded Cosmos server, the Resolver, the demo
// endpoints with their traffic and the heartbeat probes in this one process, with BENCH_PAGE_READS_EVENTS (default
// 50,000) events seeded besides (bench/console-seed.ts). Before/after in the same run: the pages read the whole
// endpoints overview for one endpoint's counts (every endpoint's heartbeat records, its oldest-failure scan when
// the failed count moved, and its last-answer scan while its probe is overdue); they now read `endpointSummary`
// (a point read of the counters). The event list (with its parked counts, as the route answers it) and details, read
// beside it by the same pages, are timed too.
// Requests are sequential, one at a time, alternating before and after so both see the same load.
//   npx tsx bench/pageReads.ts          (or `npm run bench page-reads`)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { loadCatalog } from '@nimbus/sdk/catalog';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, startEmbeddedCosmos } from '../lib/store/index.ts';
import { parseStartConfig } from '../scripts/start-config.ts';
import { startStack } from '../scripts/start-stack.ts';
import { PlatformDocs } from '../server/heartbeat/platformDocs.ts';
import { readEndpointHealth, startHeartbeatScheduler } from '../server/heartbeat/scheduler.ts';
import { endpointEventsPage } from '../server/heldBack.ts';
import { endpointSummary, endpointsOverview, eventDetails, eventListQuerySchema } from '../server/queries.ts';
import { seedConsoleBench } from './console-seed.ts';
import { type BenchResult, envInt, latencyRows, percentiles } from './report.ts';

async function timed(samples: number[], f: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  await f();
  samples.push(performance.now() - started);
}

export async function runPageReadsBench(): Promise<BenchResult> {
  const events = envInt('BENCH_PAGE_READS_EVENTS', 50_000);
  const rounds = envInt('BENCH_PAGE_READS_ROUNDS', 20);
  const rate = envInt('BENCH_PAGE_READS_DEMO_RATE', 20);
  // Never the default .nimbus: a directory of its own, removed at the end.
  const dataDir = mkdtempSync(join(tmpdir(), 'nimbus-page-reads-'));
  try {
    const parsed = parseStartConfig({
      NIMBUS_DATA_DIR: dataDir,
      NIMBUS_EMULATOR_PORT: '0',
      NIMBUS_COSMOS_PORT: '0',
      NIMBUS_CONSOLE: '0',
      NIMBUS_DEMO_RATE: String(rate),
      PORT: '3999',
    });
    if (!parsed.ok) throw new Error(parsed.message);
    // Seeded first, into the data directory the stack then starts from: bulk writes beside the demo traffic time out.
    const catalog = await loadCatalog(parsed.config.catalogPath);
    const endpoints = catalog.endpoints.map((e) => e.id);
    const seedServer = await startEmbeddedCosmos({ port: 0, dataDir: join(dataDir, 'cosmos') });
    const seedStore = await createStore({ endpoint: seedServer.endpoint, key: seedServer.key, database: parsed.config.database });
    const seeded = await seedConsoleBench(seedStore, { events, endpoints, sessionsPerEndpoint: 2000, spanMinutes: 7 * 24 * 60, failedShare: 0.1 }).finally(async () => {
      await seedStore.close();
      await seedServer.close();
    });
    const silent = pino({ level: 'silent' });
    const stack = await startStack({ config: parsed.config, logger: () => silent, console: false });
    const { store } = stack;
    const clients = createServiceBusClients(stack.serviceBusConnectionString);
    const docs = new PlatformDocs({ ...stack.cosmos, database: parsed.config.database });
    // The probes the console's background duties send under `npm start` (every 30 s, the demo's schedule).
    const heartbeats = startHeartbeatScheduler({ store, client: clients.client, catalog, docs, log: silent });
    const loopDelay = monitorEventLoopDelay({ resolution: 20 });
    try {
      // The second probe round (30 s) out, behind the backlog the traffic built by then, and its timeout (10 s) passed:
      // an endpoint whose probe waits behind its backlog reads as busy, as under `npm start` after a while.
      await new Promise((r) => setTimeout(r, 45_000));
      const settings = (await store.getHeartbeatSettings()).settings;
      const busy = (
        await Promise.all(
          endpoints.map((id) => readEndpointHealth(store, id, true, { nowMs: Date.now(), timeoutSeconds: settings.timeoutSeconds, backlog: async () => 0, warn: () => undefined })),
        )
      ).filter((h) => h.health.busy).length;

      const before: number[] = [];
      const after: number[] = [];
      const list: number[] = [];
      const details: number[] = [];
      loopDelay.enable();
      for (let i = 0; i < rounds; i++) {
        const endpointId = endpoints[i % endpoints.length]!;
        const sample = seeded.samples.filter((s) => s.endpointId === endpointId)[i % 7]!;
        await timed(before, () => endpointsOverview(store, catalog));
        await timed(after, () => endpointSummary(store, catalog, endpointId));
        // What the page reads: the list with its rows' "holds back N" (the route's endpointEventsPage), not the list alone.
        await timed(list, () => endpointEventsPage(store, endpointId, eventListQuerySchema.parse({ status: 'Failed' })));
        await timed(details, () => eventDetails(store, endpointId, sample.eventId));
      }
      loopDelay.disable();
      const b = percentiles(before);
      const a = percentiles(after);
      const l = percentiles(list);
      const d = percentiles(details);
      return {
        title: `Endpoint and Event pages' reads under demo load (${events.toLocaleString('en-US')} events seeded, demo traffic at ${rate}/s, probes on)`,
        rows: [
          ...latencyRows('before: the endpoints overview (what the pages read)', b, b),
          ...latencyRows('after: one endpoint’s summary (point read)', a, b),
          ...latencyRows('beside it: event list page (Failed, with holds-back counts)', l, b),
          ...latencyRows('beside it: event details', d, b),
          { figure: 'event-loop delay of the process during the reads, p50', value: loopDelay.percentile(50) / 1e6, unit: 'ms', better: 'lower' },
        ],
        settings: {
          events,
          'demo rate (events/s)': rate,
          'rounds (each: overview, summary, list, details)': rounds,
          'endpoints busy (probe overdue) before the reads': busy,
        },
      };
    } finally {
      loopDelay.disable();
      await heartbeats.stop();
      docs.close();
      await clients.close().catch(() => undefined);
      await stack.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { toMarkdown } = await import('./report.ts');
  console.log(toMarkdown(await runPageReadsBench()));
  process.exit(0);
}
