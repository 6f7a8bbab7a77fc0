// Benchmark: what the stored time series (issue 16) costs the Resolver. The same Resolver runs over the same
// traffic with its series on (the default: outcomes buffered in memory, one incr patch per bucket every flush)
// and off (`history: false`), in alternating order within one run (on, off, off, on, …) so the machine's drift
// falls on both alike. Each phase is timed until every message is settled AND the Resolver has stopped, because
// stopping writes the last buffered flush: a phase shorter than the flush interval would otherwise not pay for
// its writes at all. The budget: the Resolver's benchmark ratio (against raw upserts, bench/resolver.ts)
// may drop by at most 10%, i.e. on/off >= 0.9. Raw upserts are measured before and after as in bench/resolver.ts
// so both benchmark ratios can be printed.
//   npx tsx bench/series.ts            (or `npm run bench series` for the table)
import { pathToFileURL } from 'node:url';
import type { ServiceBusClient } from '@azure/service-bus';
import { CosmosClient } from '@azure/cosmos';
import { pino } from 'pino';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, startEmbeddedCosmos, TimeSeriesStore, type MessageStore } from '../lib/store/index.ts';
import { startResolver } from '../resolver-worker/index.ts';
import { startEmulatorProcess } from './processes.ts';
import { envInt, type BenchResult } from './report.ts';
import { provisionShopToCrm, sendTraffic } from './resolver.ts';

export interface SeriesBenchOptions {
  /** Events per phase (two Resolver messages each). Default 1000: a phase then spans a periodic flush. */
  events?: number;
  sessions?: number;
  concurrency?: number;
  /** Measured phases of each kind. Default 5. */
  rounds?: number;
}

interface Phase {
  perSec: number;
  cpuMsPerMessage: number;
  /** Handled outcomes the phase added to the stored series: every event's when on, none when off. */
  seriesCounted: number;
  /** Deliveries after the first (lock lost under load): the same in both kinds of phase, or the run is noisy. */
  redelivered: number;
}

export interface SeriesBenchResult {
  messagesPerPhase: number;
  rounds: number;
  rawUpsertsPerSec: number;
  withSeries: Phase[];
  withoutSeries: Phase[];
  /**
   * Messages/s with the series on divided by off, per round (the two phases of a round run back to back), and the
   * median over the rounds: one phase hit by a neighbour's burst on a shared machine moves one round, not the figure.
   */
  roundRatios: number[];
  ratio: number;
  /** The same for CPU ms per message (this process, embedded Cosmos included): off / on, so higher is better too. */
  cpuRatio: number;
  /**
   * The series' own work per message, measured alone in CPU time (so a loaded machine does not blur it): add() for
   * every outcome and one flush per phase's worth of messages (the Resolver flushes every 2 s, about that many
   * messages at its rate), the embedded Cosmos server's handling of the patch included.
   */
  seriesCpuMsPerMessage: number;
  /** Mean CPU ms per message of the Resolver with the series off. */
  resolverCpuMsPerMessage: number;
  /** 1 − series work / the Resolver's work: the throughput ratio the series' CPU cost allows on a CPU-bound Resolver. */
  cpuBoundRatio: number;
  target: number;
}

async function rawUpsertsPerSec(endpoint: string, key: string, count: number, concurrency: number): Promise<number> {
  const client = new CosmosClient({ endpoint, key, connectionPolicy: { enableEndpointDiscovery: false } });
  try {
    const { database } = await client.databases.createIfNotExists({ id: 'bench-series-raw' });
    const { container } = await database.containers.createIfNotExists({ id: `raw-${Date.now()}`, partitionKey: { paths: ['/pk'] } });
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          const i = next++;
          await container.items.upsert({ id: `d${i}`, pk: `p${i % 50}`, status: 'Pending', messageType: 'EventRequest', n: i, text: 'x'.repeat(300) });
        }
      }),
    );
    return count / ((performance.now() - started) / 1000);
  } finally {
    client.dispose();
  }
}

/** Handled outcomes stored in the series so far (0 before the metrics container exists). */
async function storedHandled(store: MessageStore): Promise<number> {
  const { resources } = await store.database
    .container('metrics')
    .items.query<{ n?: number }>("SELECT c.c.handled AS n FROM c WHERE c.kind = 'o'")
    .fetchAll()
    .catch(() => ({ resources: [] as Array<{ n?: number }> }));
  return resources.reduce((a, r) => a + (r.n ?? 0), 0);
}

/** The series' work alone for `messages` outcomes, `rounds` times: add() each, then one flush. CPU ms per message. */
async function seriesWorkAlone(store: MessageStore, messages: number, rounds: number): Promise<number> {
  const series = new TimeSeriesStore(store.database, { flushMs: 3_600_000 });
  try {
    let cpuMs = 0;
    for (let r = 0; r < rounds + 1; r++) {
      const before = process.cpuUsage();
      const at = new Date();
      for (let i = 0; i < messages; i++)
        series.add({ endpointId: 'crm', eventTypeId: 'OrderPlaced', at, count: 'handled', latencyMs: 25 + (i % 240) });
      await series.flush();
      const used = process.cpuUsage(before);
      if (r > 0) cpuMs += (used.user + used.system) / 1000; // the first round warms up (and creates the bucket)
    }
    return cpuMs / (rounds * messages);
  } finally {
    await series.close();
  }
}

async function phase(client: ServiceBusClient, store: MessageStore, messages: number, concurrency: number, series: boolean): Promise<Phase> {
  const handledBefore = await storedHandled(store);
  // A message counts once it is settled for good (completed or dead-lettered); a failed settlement (lock lost on
  // a loaded machine) brings the message back, and its redelivered copy is absorbed by the guard ("ignored").
  const done = new Set<string>();
  let redelivered = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const resolver = startResolver({
    client,
    store,
    concurrency,
    log: pino({ level: process.env.BENCH_LOG ?? 'silent' }, pino.destination(2)),
    history: series ? {} : false,
    onSettled: (e) => {
      if (!e.ok) return;
      if (e.deliveryCount > 0) redelivered++;
      done.add(e.messageId);
      if (done.size === messages) finish();
    },
  });
  // A phase that stops making progress is reported, not waited for forever (a shared machine can starve a client).
  let lastSize = -1;
  const watchdog = setInterval(() => {
    if (done.size === lastSize) {
      clearInterval(watchdog);
      finish();
    }
    lastSize = done.size;
  }, 60_000);
  await finished;
  clearInterval(watchdog);
  if (done.size < messages) {
    await resolver.stop().catch(() => undefined);
    throw new Error(`phase stalled: ${done.size} of ${messages} settled, ${redelivered} redelivered, state ${JSON.stringify(resolver.state())}`);
  }
  await resolver.stop(); // writes the series' last buffered flush
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { perSec: messages / seconds, cpuMsPerMessage: (cpu.user + cpu.system) / 1000 / messages, seriesCounted: (await storedHandled(store)) - handledBefore, redelivered };
}

export async function runSeriesBench(options: SeriesBenchOptions = {}): Promise<SeriesBenchResult> {
  const events = options.events ?? envInt('BENCH_SERIES_EVENTS', 1000);
  const sessions = options.sessions ?? 64;
  const concurrency = options.concurrency ?? 32;
  const rounds = options.rounds ?? envInt('BENCH_SERIES_ROUNDS', 5);
  const messages = events * 2;
  const emulator = await startEmulatorProcess({ logLevel: 'silent' });
  const cosmos = await startEmbeddedCosmos({ port: 0 });
  const sb = createServiceBusClients(emulator.connectionString);
  const store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'bench-series', counterFlushMs: 250 });
  try {
    await provisionShopToCrm(sb.admin);
    let pass = 0;
    const run = async (series: boolean) => {
      // Everything is on the topic before a phase starts, so the figures are recording, not sending.
      await sendTraffic(sb.client, events, sessions, `p${pass++}`, true);
      return phase(sb.client, store, messages, concurrency, series);
    };
    // Warm-up, not counted (the JIT; see bench/resolver.ts).
    await rawUpsertsPerSec(cosmos.endpoint, cosmos.key, messages, concurrency);
    await run(true);
    await run(false);
    const rawBefore = await rawUpsertsPerSec(cosmos.endpoint, cosmos.key, messages, concurrency);
    const withSeries: Phase[] = [];
    const withoutSeries: Phase[] = [];
    for (let r = 0; r < rounds; r++) {
      // on, off, off, on, …: neither kind always goes first.
      const order = r % 2 === 0 ? [true, false] : [false, true];
      for (const series of order) (series ? withSeries : withoutSeries).push(await run(series));
    }
    const rawAfter = await rawUpsertsPerSec(cosmos.endpoint, cosmos.key, messages, concurrency);
    const seriesCpuMsPerMessage = await seriesWorkAlone(store, messages, 10);
    // The series on must have counted every event (the last flush is part of the phase); off, nothing.
    if (!withSeries.every((p) => p.seriesCounted === events)) throw new Error(`series on: counted ${withSeries.map((p) => p.seriesCounted).join(', ')} of ${events} per phase`);
    if (withoutSeries.some((p) => p.seriesCounted !== 0)) throw new Error('a phase with the series off counted outcomes');
    const median = (xs: number[]) => {
      const o = [...xs].sort((a, b) => a - b);
      return o.length % 2 ? o[(o.length - 1) / 2]! : (o[o.length / 2 - 1]! + o[o.length / 2]!) / 2;
    };
    const roundRatios = withSeries.map((p, i) => p.perSec / withoutSeries[i]!.perSec);
    return {
      messagesPerPhase: messages,
      rounds,
      rawUpsertsPerSec: (rawBefore + rawAfter) / 2,
      withSeries,
      withoutSeries,
      roundRatios,
      ratio: median(roundRatios),
      seriesCpuMsPerMessage,
      resolverCpuMsPerMessage: withoutSeries.reduce((a, p) => a + p.cpuMsPerMessage, 0) / withoutSeries.length,
      cpuBoundRatio: 1 - seriesCpuMsPerMessage / (withoutSeries.reduce((a, p) => a + p.cpuMsPerMessage, 0) / withoutSeries.length),
      cpuRatio: median(withSeries.map((p, i) => withoutSeries[i]!.cpuMsPerMessage / p.cpuMsPerMessage)),
      target: 0.9,
    };
  } finally {
    await emulator.close();
    await sb.close().catch(() => undefined);
    await store.close();
    await cosmos.close();
  }
}

/** The common table form for `npm run bench series`. */
export async function seriesAsTable(): Promise<BenchResult> {
  const r = await runSeriesBench();
  const mean = (xs: Phase[]) => xs.reduce((a, p) => a + p.perSec, 0) / xs.length;
  const on = mean(r.withSeries);
  const off = mean(r.withoutSeries);
  // The ratio row: the median of the rounds' on/off, shown against 1.0 (the series free).
  return {
    title: 'Resolver with and without the stored time series (issue 16: the benchmark ratio may drop by at most 10%)',
    rows: [
      { figure: 'Resolver, series off (history: false)', value: off, unit: 'msg/s', baseline: r.rawUpsertsPerSec, better: 'higher', note: 'baseline: raw upserts' },
      { figure: 'Resolver, series on (default)', value: on, unit: 'msg/s', baseline: r.rawUpsertsPerSec, better: 'higher', note: 'baseline: raw upserts' },
      { figure: 'series on / off, median over rounds', value: r.ratio, unit: '×', baseline: 1, better: 'higher', target: r.target },
      { figure: 'CPU per message off / on, median over rounds', value: r.cpuRatio, unit: '×', baseline: 1, better: 'higher' },
      { figure: "the series' own CPU per message (add + flush, measured alone)", value: r.seriesCpuMsPerMessage, unit: 'ms', baseline: r.resolverCpuMsPerMessage, better: 'lower', note: "baseline: the Resolver's CPU per message, series off" },
      { figure: '1 − series CPU / Resolver CPU (the ratio its cost allows)', value: r.cpuBoundRatio, unit: '×', baseline: 1, better: 'higher', target: r.target },
    ],
    settings: { 'messages per phase': r.messagesPerPhase, 'phases of each kind': r.rounds, 'on / off per round': r.roundRatios.map((x) => x.toFixed(2)).join(' ') },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Say what a stray background rejection was (a client's timer on an overloaded machine) instead of dying on it.
  process.on('unhandledRejection', (reason) => {
    const e = reason as { name?: string; code?: string; message?: string; constructor?: { name?: string } };
    console.error(`unhandled rejection: ${e?.constructor?.name} ${e?.name} ${e?.code} ${e?.message}`);
  });
  const r = await runSeriesBench();
  const f = (p: Phase) => `${p.perSec.toFixed(0)}/s (${(p.perSec / r.rawUpsertsPerSec).toFixed(2)}, ${p.cpuMsPerMessage.toFixed(2)} cpu ms/msg, ${p.redelivered} redelivered)`;
  console.log(`series: ${r.messagesPerPhase} messages per phase; raw upserts ${r.rawUpsertsPerSec.toFixed(0)}/s`);
  console.log(`on:  ${r.withSeries.map(f).join(', ')}`);
  console.log(`off: ${r.withoutSeries.map(f).join(', ')}`);
  console.log(`on/off per round: ${r.roundRatios.map((x) => x.toFixed(3)).join(', ')}`);
  console.log(`median on/off: throughput ${r.ratio.toFixed(3)} (target >= ${r.target}); cpu per message off/on ${r.cpuRatio.toFixed(3)}`);
  console.log(
    `series work alone: ${(r.seriesCpuMsPerMessage * 1000).toFixed(2)} µs cpu per message against the Resolver's ${r.resolverCpuMsPerMessage.toFixed(3)} ms (series off): 1 − ratio = ${r.cpuBoundRatio.toFixed(4)}`,
  );
}
