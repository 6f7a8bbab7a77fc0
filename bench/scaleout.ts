// Benchmark: does the Resolver scale out? Messages per second with one Resolver instance and with two, each limited
// to 4 sessions at a time, against a store with a realistic round trip: the embedded Cosmos server (its own child
// process, `npm run cosmos`) behind the fault proxy, which holds every request 20 ms (Azure Cosmos DB in-region
// answers a point write in roughly 5-20 ms; the embedded server in well under one). So one instance is bound by
// store latency x sessions in flight, not by this machine's two cores, and a second instance should nearly double
// the rate. Also CPU per message of each process (Resolvers + proxy here; the Cosmos server; the emulator), so a
// reader can tell which resource bounds each figure. Goals: two instances >= 1.7 x one; one instance >= 150 msg/s.
//   npm run bench scaleout
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { ServiceBusClient } from '@azure/service-bus';
import { pino } from 'pino';
import { eventBody, encodeBody, MessageType, Prop, SELF, Topic } from '@nimbus/sdk/contract';
import { createServiceBusClients, type ServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, type MessageStore } from '../lib/store/index.ts';
import { startFaultProxy } from '../lib/store/testing/faultProxy.ts';
import { startResolver } from '../resolver-worker/index.ts';
import { processCpuMs, startEmulatorProcess } from './processes.ts';
import { provisionShopToCrm } from './resolver.ts';
import type { BenchResult } from './report.ts';

// BENCH_SCALEOUT_LATENCY_MS changes it, to see what bounds the figures without the round trip.
const LATENCY_MS = Number(process.env.BENCH_SCALEOUT_LATENCY_MS ?? 20);
const SESSIONS_PER_INSTANCE = 4;

export interface ScaleOutOptions {
  /** Events per phase; each gives the Resolver two messages (request copy and response). Default 600. */
  events?: number;
  /** Sessions the events are spread over. Default 64. */
  sessions?: number;
}

interface Phase {
  perSec: number;
  messages: number;
  seconds: number;
  /** CPU ms per message: this process (Resolvers + proxy), the Cosmos server's process, the emulator's. */
  cpu: { resolvers: number; cosmos: number | undefined; emulator: number | undefined };
  /** Cores the three processes kept busy on average (CPU time / wall time): near 2 here means CPU-bound. */
  cores: number;
  /** The machine's 1-minute load average at the end of the phase: other work competing for the two cores. */
  load: number;
  /** Settlements that failed (a session lost on a starved machine): the copies came back and were absorbed. */
  lost: number;
  /** Cosmos requests per message (counted at the proxy): each one is a 20 ms round trip. */
  requests: number;
}

/** The embedded Cosmos server as its own process (`scripts/cosmos.ts`), so its CPU is apart from the Resolvers'. */
async function startCosmosProcess(): Promise<{ endpoint: string; key: string; pid: number | undefined; child: ChildProcess }> {
  const cli = fileURLToPath(new URL('../scripts/cosmos.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', cli, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('the Cosmos child did not start')), 60_000);
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const endpoint = /NIMBUS_COSMOS_ENDPOINT=(\S+)/.exec(out)?.[1];
      const key = /NIMBUS_COSMOS_KEY=(\S+)/.exec(out)?.[1];
      if (endpoint && key && /cosmos ready/.test(out)) {
        clearTimeout(timer);
        resolve({ endpoint, key, pid: child.pid, child });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the Cosmos child exited with ${code}`));
    });
  });
}

/** `events` request copies and their responses on the Resolver topic over `sessions` sessions (ids prefixed). */
async function sendTraffic(client: ServiceBusClient, events: number, sessions: number, pass: string): Promise<void> {
  const sender = client.createSender(Topic.Resolver);
  let batch = await sender.createMessageBatch();
  const add = async (m: Parameters<typeof batch.tryAddMessage>[0]) => {
    if (batch.tryAddMessage(m)) return;
    await sender.sendMessages(batch);
    batch = await sender.createMessageBatch();
    batch.tryAddMessage(m);
  };
  for (let i = 0; i < events; i++) {
    const sessionId = `${pass}-s${i % sessions}`;
    const requestId = randomUUID();
    const common = { [Prop.EventId]: `${pass}-e${i}`, [Prop.EventTypeId]: 'OrderPlaced' };
    await add({
      messageId: requestId,
      sessionId,
      body: Buffer.from(eventBody('OrderPlaced', { orderId: sessionId, n: i })),
      applicationProperties: { ...common, [Prop.MessageType]: MessageType.EventRequest, [Prop.To]: 'crm', [Prop.From]: 'shop', [Prop.ParentMessageId]: SELF },
    });
    await add({
      messageId: randomUUID(),
      sessionId,
      body: Buffer.from(encodeBody({})),
      applicationProperties: { ...common, [Prop.MessageType]: MessageType.ResolutionResponse, [Prop.To]: 'Resolver', [Prop.From]: 'crm', [Prop.ParentMessageId]: requestId },
    });
  }
  if (batch.count > 0) await sender.sendMessages(batch);
  await sender.close();
}

/** Runs `instances` Resolvers (own Service Bus connection and store client each) until every message is settled. */
async function phase(
  instances: Array<{ sb: ServiceBusClients; store: MessageStore }>,
  messages: number,
  pids: { cosmos: number | undefined; emulator: number | undefined },
  proxy: { readonly received: number },
): Promise<Phase> {
  // A phase ends when every message has a completion that landed. A completion that fails (the client drops a
  // session whose drain the starved emulator did not answer in time, docs/resolver.md) brings the message back,
  // and its copy is completed then: counted apart, not as a failure of the run.
  const completed = new Set<string>();
  let lost = 0;
  let bad = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const cpuBefore = process.cpuUsage();
  const cosmosBefore = processCpuMs(pids.cosmos);
  const emulatorBefore = processCpuMs(pids.emulator);
  const requestsBefore = proxy.received;
  const started = performance.now();
  const resolvers = instances.map(({ sb, store }) =>
    startResolver({
      client: sb.client,
      store,
      concurrency: SESSIONS_PER_INSTANCE,
      log: pino({ level: 'silent' }),
      onSettled: (e) => {
        if (!e.ok) lost++;
        else if (e.settlement.kind !== 'complete') bad++;
        else completed.add(e.messageId);
        if (completed.size === messages) done();
      },
    }),
  );
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the phase did not finish within 10 minutes (${completed.size} of ${messages} completed)`)), 600_000);
  });
  await Promise.race([finished, timedOut]).finally(() => clearTimeout(timer));
  const seconds = (performance.now() - started) / 1000;
  const requests = (proxy.received - requestsBefore) / messages;
  const cpu = process.cpuUsage(cpuBefore);
  const cosmosAfter = processCpuMs(pids.cosmos);
  const emulatorAfter = processCpuMs(pids.emulator);
  await Promise.all(resolvers.map((r) => r.stop()));
  if (bad > 0) throw new Error(`${bad} messages were not completed as recorded`);
  const per = (ms: number | undefined) => (ms === undefined ? undefined : ms / messages);
  const cpuMs = (cpu.user + cpu.system) / 1000 + (cosmosAfter ?? 0) - (cosmosBefore ?? 0) + (emulatorAfter ?? 0) - (emulatorBefore ?? 0);
  return {
    perSec: messages / seconds,
    messages,
    seconds,
    cores: cpuMs / (seconds * 1000),
    load: loadavg()[0]!,
    lost,
    requests,
    cpu: {
      resolvers: (cpu.user + cpu.system) / 1000 / messages,
      cosmos: cosmosBefore !== undefined && cosmosAfter !== undefined ? per(cosmosAfter - cosmosBefore) : undefined,
      emulator: emulatorBefore !== undefined && emulatorAfter !== undefined ? per(emulatorAfter - emulatorBefore) : undefined,
    },
  };
}

export async function runScaleOutBench(options: ScaleOutOptions = {}): Promise<BenchResult> {
  const events = options.events ?? 600;
  const sessions = options.sessions ?? 64;
  const messages = events * 2;
  const emulator = await startEmulatorProcess({ logLevel: 'silent' });
  const cosmos = await startCosmosProcess();
  const proxy = await startFaultProxy(cosmos.endpoint, { latencyMs: LATENCY_MS, record: false });
  const opened: Array<{ sb: ServiceBusClients; store: MessageStore }> = [];
  const instance = async () => {
    const sb = createServiceBusClients(emulator.connectionString);
    // The Resolver's production settings (resolver-worker/main.ts): counter deltas buffered off the hot path.
    const store = await createStore({ endpoint: proxy.endpoint, key: cosmos.key, database: 'scaleout', counterFlushMs: 250 });
    const i = { sb, store };
    opened.push(i);
    return i;
  };
  try {
    const admin = createServiceBusClients(emulator.connectionString);
    await provisionShopToCrm(admin.admin);
    const [a, b] = [await instance(), await instance()];
    const pids = { cosmos: cosmos.pid, emulator: emulator.pid };
    // Warm-up (JIT, connections, containers), not counted.
    await sendTraffic(admin.client, Math.min(100, events), sessions, 'warm');
    await phase([a, b], Math.min(100, events) * 2, pids, proxy);
    // Everything is on the topic before a phase starts, so the figures are recording, not sending.
    await sendTraffic(admin.client, events, sessions, 'one');
    const one = await phase([a], messages, pids, proxy);
    await sendTraffic(admin.client, events, sessions, 'two');
    const two = await phase([a, b], messages, pids, proxy);
    await admin.close();
    const cpuRow = (label: string, p: Phase) => [
      { figure: `${label}: Cosmos requests per message (each +${LATENCY_MS} ms)`, value: p.requests, unit: '', better: 'lower' as const },
      { figure: `${label}: CPU ms per message, Resolvers + proxy (this process)`, value: p.cpu.resolvers, unit: 'ms', better: 'lower' as const },
      ...(p.cpu.cosmos !== undefined ? [{ figure: `${label}: CPU ms per message, embedded Cosmos process`, value: p.cpu.cosmos, unit: 'ms', better: 'lower' as const }] : []),
      ...(p.cpu.emulator !== undefined ? [{ figure: `${label}: CPU ms per message, emulator process`, value: p.cpu.emulator, unit: 'ms', better: 'lower' as const }] : []),
      { figure: `${label}: cores kept busy by the three processes (of 2)`, value: p.cores, unit: 'cores', better: 'lower' as const },
      { figure: `${label}: machine load average (1 min) at the end`, value: p.load, unit: '', better: 'lower' as const },
      { figure: `${label}: completions lost (session dropped on a starved machine) and redelivered`, value: p.lost, unit: '', better: 'lower' as const },
    ];
    return {
      title: `Resolver scale-out (store round trip +${LATENCY_MS} ms through the fault proxy, ${SESSIONS_PER_INSTANCE} sessions per instance)`,
      rows: [
        { figure: 'one instance', value: one.perSec, unit: 'msg/s', better: 'higher', target: 150 },
        { figure: 'two instances', value: two.perSec, unit: 'msg/s', baseline: one.perSec, better: 'higher', target: 1.7 * one.perSec },
        ...cpuRow('one instance', one),
        ...cpuRow('two instances', two),
      ],
      settings: { messages, sessions, 'latency ms': LATENCY_MS, 'sessions per instance': SESSIONS_PER_INSTANCE },
    };
  } finally {
    for (const i of opened) {
      await i.store.close().catch(() => undefined);
      await i.sb.close().catch(() => undefined);
    }
    await proxy.close();
    cosmos.child.kill('SIGTERM');
    await emulator.close();
  }
}
