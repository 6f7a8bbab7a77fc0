// `npm run bench durability` (or `npx tsx bench/durability.ts`): what durability of the embedded Cosmos server
// (lib/store/embeddedJournal.ts) costs.
//
// 1. The Resolver benchmark (bench/resolver.ts) twice in one run, memory only and with a data folder: its ratio to
//    raw upserts (each measured against the same server, so the journal's cost is on both sides of the baseline)
//    and the Resolver's throughput itself. Issue target: the ratio drops by at most 15 %.
// 2. A start on a store of BENCH_DURABILITY_EVENTS events (default 100,000; the console benchmark's seed: about
//    199,000 history entries beside them), from a snapshot (after a clean stop) and from the journal alone (after
//    a kill: no compaction), measured from `startEmbeddedCosmos` to the first answered query. Target: < 20 s.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createStore, startEmbeddedCosmos } from '../lib/store/index.ts';
import { seedConsoleBench } from './console-seed.ts';
import { runResolverBench } from './resolver.ts';
import { envInt, type BenchResult } from './report.ts';

const ENDPOINTS = ['storefrontendpoint', 'billingendpoint', 'crmendpoint', 'erpendpoint', 'shippingendpoint'];

/** Seconds from starting the server on `dir` to the first answered query (the data is back before that). */
async function timedStart(dir: string): Promise<{ seconds: number; documents: number }> {
  const started = performance.now();
  const cosmos = await startEmbeddedCosmos({ port: 0, dataDir: dir });
  const store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'bench-durable' });
  try {
    await store.getAllCounts();
    return { seconds: (performance.now() - started) / 1000, documents: cosmos.recovery?.documents ?? 0 };
  } finally {
    await store.close();
    await cosmos.close();
  }
}

export async function runDurabilityBench(): Promise<BenchResult> {
  const events = envInt('BENCH_DURABILITY_EVENTS', 100_000);
  const work = mkdtempSync(join(tmpdir(), 'nimbus-bench-durability-'));
  try {
    // Durable first: the second run in a process is the warmer one (measured up to 20 % faster), so this order
    // can only make durability look worse than it is.
    const durable = await runResolverBench({ cosmosDataDir: join(work, 'resolver') });
    const memory = await runResolverBench();

    // A store of `events` events, written through the journal (a kill now would leave the journal only).
    const seededDir = join(work, 'seeded');
    const cosmos = await startEmbeddedCosmos({ port: 0, dataDir: seededDir });
    const store = await createStore({
      endpoint: cosmos.endpoint,
      key: cosmos.key,
      database: 'bench-durable',
    });
    const seeded = await seedConsoleBench(store, {
      events,
      endpoints: ENDPOINTS,
      sessionsPerEndpoint: 2000,
      spanMinutes: 7 * 24 * 60,
    });
    await store.close();
    // The journal as a crash would leave it: copied before the clean stop compacts it.
    const journalOnly = join(work, 'journal-only');
    cpSync(seededDir, journalOnly, { recursive: true });
    const stopStarted = performance.now();
    await cosmos.close();
    const stopSeconds = (performance.now() - stopStarted) / 1000;
    const fromSnapshot = await timedStart(seededDir);
    const fromJournal = await timedStart(journalOnly);

    return {
      title: 'Durable embedded Cosmos server (journal + snapshot)',
      rows: [
        {
          figure: 'baseline: Resolver ratio to raw upserts, memory only',
          value: memory.ratio,
          unit: 'ratio',
          baseline: memory.ratio,
          better: 'higher',
        },
        {
          figure: 'Resolver ratio to raw upserts, durable',
          value: durable.ratio,
          unit: 'ratio',
          baseline: memory.ratio,
          better: 'higher',
          target: 0.85 * memory.ratio,
          note: 'target: at most 15 % below memory only',
        },
        {
          figure: 'Resolver messages recorded, durable (memory only as baseline)',
          value: durable.resolverMessagesPerSec,
          unit: 'msg/s',
          baseline: memory.resolverMessagesPerSec,
          better: 'higher',
        },
        {
          figure: 'raw upserts, durable (memory only as baseline)',
          value: durable.rawUpsertsPerSec,
          unit: 'msg/s',
          baseline: memory.rawUpsertsPerSec,
          better: 'higher',
        },
        {
          figure: `start from the snapshot, ${seeded.events} events (${fromSnapshot.documents} documents)`,
          value: fromSnapshot.seconds,
          unit: 's',
          better: 'lower',
          target: 20,
        },
        {
          figure: `start from the journal alone (after a kill), ${seeded.events} events`,
          value: fromJournal.seconds,
          unit: 's',
          better: 'lower',
          target: 20,
        },
        { figure: 'clean stop (writes the snapshot)', value: stopSeconds, unit: 's', better: 'lower' },
        { figure: 'seeding through the journal (bulk)', value: seeded.seconds, unit: 's', better: 'lower' },
      ],
      settings: {
        events: seeded.events,
        historyEntries: seeded.historyEntries,
        resolverMessages: memory.messages,
      },
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { toMarkdown } = await import('./report.ts');
  console.log(toMarkdown(await runDurabilityBench()));
}
