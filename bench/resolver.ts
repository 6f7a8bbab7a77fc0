// Benchmark: messages per second the Resolver records (history + guarded status write per message, received
// from the embedded Service Bus emulator and settled there), against raw upserts to the same embedded Cosmos
// server measured in the same run as the baseline (before and after, averaged, since shared machines drift).
// Target ratio >= 0.5. Also measured apart, to show where the time goes: the store's work alone and the Service
// Bus path alone (the Resolver with a store that does no I/O). docs/resolver.md has the figures.
//   npx tsx bench/resolver.ts            (or runResolverBench() from bench/index.ts)
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { ServiceBusAdministrationClient, ServiceBusClient } from '@azure/service-bus';
import { pino } from 'pino';
import { startEmulator } from '../emulator/index.ts';
import { parseCatalog } from '@nimbus/sdk/catalog';
import { eventBody, MessageType, Prop, SELF, Topic, encodeBody, resultingStatus } from '@nimbus/sdk/contract';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import {
  createStore,
  startEmbeddedCosmos,
  type HistoryWrite,
  type MessageStore,
  type StatusRow,
  type StatusWrite,
  type StatusWriteResult,
} from '../lib/store/index.ts';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { startResolver } from '../resolver-worker/index.ts';
import { markPhase, processCpuMs, startEmulatorProcess } from './processes.ts';

export interface ResolverBenchOptions {
  /** Events; each produces two Resolver messages (the request copy and the response). Default 300. */
  events?: number;
  /** Distinct sessions the events are spread over. Default 64. */
  sessions?: number;
  /** Resolver sessions in flight, and concurrent raw upserts (the same, for a fair baseline). Default 32. */
  concurrency?: number;
  /** Run the emulator in this process instead of a child process. Default false. */
  inProcessEmulator?: boolean;
  /** Keep the embedded Cosmos server's data in this folder (journal + snapshot) instead of memory only. */
  cosmosDataDir?: string;
}

export interface ResolverBenchResult {
  name: 'resolver';
  messages: number;
  resolverMessagesPerSec: number;
  /** The same writes through store.recordOutcomes with no Service Bus: where the Resolver's cost goes. */
  storeOnlyMessagesPerSec: number;
  /**
   * The Resolver with a store that does no I/O: receiving, parsing, projecting and settling alone. The Resolver
   * does both this work and the store's on one event loop, so it cannot be faster than either figure.
   */
  serviceBusOnlyMessagesPerSec: number;
  /** The rate the two parts give back to back, 1 / (1/store + 1/Service Bus): what the Resolver should reach. */
  fromPartsMessagesPerSec: number;
  rawUpsertsPerSec: number;
  ratio: number;
  target: number;
  /**
   * CPU milliseconds this process spent per message (per upsert for the baseline), all threads: the machine is
   * shared, so wall-clock rates drift with everyone else's load while these stay comparable between runs. The
   * embedded Cosmos server runs in this process, so its cost is in every figure.
   */
  cpuMsPerMessage: { resolver: number; storeOnly: number; serviceBusOnly: number; rawUpsert: number };
  /** CPU ms per message of the emulator's process during the Resolver phase (undefined when in-process). */
  emulatorCpuMsPerMessage: number | undefined;
}

/** Runs `work` and returns its result with the CPU milliseconds this process spent meanwhile (all threads). */
async function withCpu<T>(work: () => Promise<T>): Promise<{ value: T; cpuMs: number }> {
  const before = process.cpuUsage();
  const value = await work();
  const used = process.cpuUsage(before);
  return { value, cpuMs: (used.user + used.system) / 1000 };
}

async function rawUpserts(
  endpoint: string,
  key: string,
  count: number,
  concurrency: number,
): Promise<number> {
  const { CosmosClient } = await import('@azure/cosmos');
  const client = new CosmosClient({ endpoint, key, connectionPolicy: { enableEndpointDiscovery: false } });
  try {
    const { database } = await client.databases.createIfNotExists({ id: 'bench-raw' });
    const { container } = await database.containers.createIfNotExists({
      id: `raw-${randomUUID().slice(0, 6)}`,
      partitionKey: { paths: ['/pk'] },
    });
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          const i = next++;
          // A document of about the size of a status row without payload.
          await container.items.upsert({
            id: `d${i}`,
            pk: `p${i % 50}`,
            status: 'Pending',
            messageType: 'EventRequest',
            n: i,
            text: 'x'.repeat(300),
          });
        }
      }),
    );
    return count / ((performance.now() - started) / 1000);
  } finally {
    client.dispose();
  }
}

/**
 * The Resolver's store work alone for this traffic: each event's request copy and response recorded together
 * (recordOutcomes: one history batch and one guarded row write), as the Resolver records them when both arrive in
 * one receive.
 */
async function storeOnly(endpoint: string, key: string, events: number, concurrency: number): Promise<number> {
  const store = await createStore({ endpoint, key, database: `bench-store-${randomUUID().slice(0, 6)}`, counterFlushMs: 250 });
  try {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < events) {
          const i = next++;
          const requestId = randomUUID();
          const base = { endpointId: 'crm', eventId: `e${i}`, sessionId: `s${i}`, eventTypeId: 'OrderPlaced', enqueuedAt: new Date().toISOString() };
          const request = { ...base, messageId: requestId, messageType: MessageType.EventRequest, parentMessageId: SELF, from: 'shop', to: 'crm', payload: { orderId: `s${i}`, n: i } };
          const response = { ...base, messageId: randomUUID(), messageType: MessageType.ResolutionResponse, parentMessageId: requestId, from: 'crm', to: 'Resolver' };
          await store.recordOutcomes([
            { history: request, status: request },
            { history: response, status: response },
          ]);
        }
      }),
    );
    return (events * 2) / ((performance.now() - started) / 1000);
  } finally {
    await store.close();
  }
}

/**
 * Puts `events` request copies and their responses on the Resolver topic, spread over `sessions` sessions; ids
 * are prefixed with `pass`, so every pass records new rows. With `timings`, responses carry the subscriber's
 * QueueTimeMs and ProcessingTimeMs as the SDK sends them (the Resolver then adds a latency sample to its series).
 */
/** The two-endpoint topology the Resolver benches use: shop publishes OrderPlaced, crm consumes it. */
export async function provisionShopToCrm(admin: ServiceBusAdministrationClient): Promise<void> {
  await provisionTopology(
    admin,
    deriveTopology(
      parseCatalog({
        endpoints: [
          { id: 'shop', produces: ['OrderPlaced'] },
          { id: 'crm', consumes: ['OrderPlaced'] },
        ],
        eventTypes: [{ id: 'OrderPlaced' }],
      }),
    ),
  );
}

export async function sendTraffic(client: ServiceBusClient, events: number, sessions: number, pass: string, timings = false): Promise<void> {
  const sender = client.createSender(Topic.Resolver);
  let batch = await sender.createMessageBatch();
  const flush = async () => {
    if (batch.count > 0) await sender.sendMessages(batch);
    batch = await sender.createMessageBatch();
  };
  const add = async (m: Parameters<typeof batch.tryAddMessage>[0]) => {
    if (!batch.tryAddMessage(m)) {
      await flush();
      batch.tryAddMessage(m);
    }
  };
  for (let i = 0; i < events; i++) {
    const sessionId = `${pass}-s${i % sessions}`;
    const requestId = randomUUID();
    const common = { [Prop.EventId]: `${pass}-e${i}`, [Prop.EventTypeId]: 'OrderPlaced' };
    await add({
      messageId: requestId,
      sessionId,
      body: Buffer.from(eventBody('OrderPlaced', { orderId: sessionId, n: i })),
      applicationProperties: {
        ...common,
        [Prop.MessageType]: MessageType.EventRequest,
        [Prop.To]: 'crm',
        [Prop.From]: 'shop',
        [Prop.ParentMessageId]: SELF,
      },
    });
    await add({
      messageId: randomUUID(),
      sessionId,
      body: Buffer.from(encodeBody({})),
      applicationProperties: {
        ...common,
        [Prop.MessageType]: MessageType.ResolutionResponse,
        [Prop.To]: 'Resolver',
        [Prop.From]: 'crm',
        [Prop.ParentMessageId]: requestId,
        ...(timings ? { [Prop.QueueTimeMs]: 5 + (i % 40), [Prop.ProcessingTimeMs]: 20 + (i % 200) } : {}),
      },
    });
  }
  await flush();
  await sender.close();
}

/**
 * A store that records nothing and answers every outcome as written: with it the Resolver does everything but
 * the Cosmos requests (receive, parse, project, settle), which is the cost the store-alone figure leaves out.
 * Only what the benchmark's traffic reaches is implemented; anything else throws, and the Resolver would
 * dead-letter the message as a ResolverFailure, so the phase would never count it as settled.
 */
function noIoStore(): MessageStore {
  const written = (status: StatusWrite): StatusWriteResult => ({
    outcome: 'written',
    created: status.messageType === MessageType.EventRequest,
    previousStatus: null,
    previousMessageId: null,
    previousMessageIds: [],
    previousConditional: undefined,
    row: { status: resultingStatus(status.messageType, undefined).status } as StatusRow,
    counters: 'queued',
  });
  const store = {
    recordOutcome: async (args: { history: HistoryWrite; status: StatusWrite }) => ({
      history: { recorded: true, entry: args.history },
      status: written(args.status),
    }),
  };
  // A structural stand-in for the class (its private fields make the type nominal); bench instrument only.
  return store as unknown as MessageStore;
}

interface PhaseResult {
  perSec: number;
  cpuMs: number;
  emulatorCpuMs: number | undefined;
  /** Messages the Resolver settled other than by completing them as recorded (should be 0). */
  otherSettlements: number;
}

/** Runs a Resolver over what is on the topic and measures until every message is settled. */
async function resolverPhase(
  client: ServiceBusClient,
  store: MessageStore,
  messages: number,
  concurrency: number,
  emulatorPid: number | undefined,
  phase: string,
): Promise<PhaseResult> {
  let settled = 0;
  let otherSettlements = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  markPhase(`${phase}-start`);
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const emulatorCpuBefore = processCpuMs(emulatorPid);
  const resolver = startResolver({
    client,
    store,
    concurrency,
    log: pino({ level: 'silent' }),
    onSettled: (e) => {
      if (!e.ok || e.settlement.kind !== 'complete' || e.settlement.result !== 'written') otherSettlements++;
      if (++settled === messages) done();
    },
  });
  await finished;
  const perSec = messages / ((performance.now() - started) / 1000);
  const cpu = process.cpuUsage(cpuBefore);
  const emulatorCpuAfter = processCpuMs(emulatorPid);
  markPhase(`${phase}-end`);
  await resolver.stop();
  return {
    perSec,
    cpuMs: (cpu.user + cpu.system) / 1000,
    emulatorCpuMs:
      emulatorCpuBefore !== undefined && emulatorCpuAfter !== undefined ? emulatorCpuAfter - emulatorCpuBefore : undefined,
    otherSettlements,
  };
}

export async function runResolverBench(options: ResolverBenchOptions = {}): Promise<ResolverBenchResult> {
  const events = options.events ?? 300;
  const sessions = options.sessions ?? 64;
  const concurrency = options.concurrency ?? 32;
  const messages = events * 2;
  const emulator: { connectionString: string; pid?: number | undefined; close(): Promise<void> } = options.inProcessEmulator
    ? await startEmulator({ port: 0 })
    : await startEmulatorProcess({ logLevel: 'silent' });
  const cosmos = await startEmbeddedCosmos({
    port: 0,
    ...(options.cosmosDataDir !== undefined ? { dataDir: options.cosmosDataDir } : {}),
  });
  const sb = createServiceBusClients(emulator.connectionString);
  const store = await createStore({
    endpoint: cosmos.endpoint,
    key: cosmos.key,
    database: 'bench',
    counterFlushMs: 250,
  });
  try {
    await provisionShopToCrm(sb.admin);
    // A warm-up pass of every phase first, not counted: the Resolver is a long-running process, and the first
    // pass through each code path pays for the JIT (measured: up to half again the CPU per message).
    await rawUpserts(cosmos.endpoint, cosmos.key, messages, concurrency);
    await sendTraffic(sb.client, events, sessions, 'warm-sb');
    await resolverPhase(sb.client, noIoStore(), messages, concurrency, emulator.pid, 'warm-servicebus');
    await sendTraffic(sb.client, events, sessions, 'warm');
    await resolverPhase(sb.client, store, messages, concurrency, emulator.pid, 'warm-resolver');
    await storeOnly(cosmos.endpoint, cosmos.key, events, concurrency);

    const rawBefore = await withCpu(() => rawUpserts(cosmos.endpoint, cosmos.key, messages, concurrency));
    // Everything is on the topic before a phase starts, so the figures are recording, not sending.
    await sendTraffic(sb.client, events, sessions, 'sb');
    const sbOnly = await resolverPhase(sb.client, noIoStore(), messages, concurrency, emulator.pid, 'servicebus');
    await sendTraffic(sb.client, events, sessions, 'run');
    const resolver = await resolverPhase(sb.client, store, messages, concurrency, emulator.pid, 'resolver');
    if (resolver.otherSettlements > 0 || sbOnly.otherSettlements > 0)
      throw new Error(
        `messages not recorded as written: ${resolver.otherSettlements} in the Resolver phase, ${sbOnly.otherSettlements} in the Service Bus phase`,
      );

    markPhase('store-start');
    const storeOnlyRun = await withCpu(() => storeOnly(cosmos.endpoint, cosmos.key, events, concurrency));
    markPhase('store-end');
    const rawAfter = await withCpu(() => rawUpserts(cosmos.endpoint, cosmos.key, messages, concurrency));
    const raw = (rawBefore.value + rawAfter.value) / 2;
    return {
      name: 'resolver',
      messages,
      resolverMessagesPerSec: resolver.perSec,
      storeOnlyMessagesPerSec: storeOnlyRun.value,
      serviceBusOnlyMessagesPerSec: sbOnly.perSec,
      fromPartsMessagesPerSec: 1 / (1 / storeOnlyRun.value + 1 / sbOnly.perSec),
      rawUpsertsPerSec: raw,
      ratio: resolver.perSec / raw,
      target: 0.5,
      cpuMsPerMessage: {
        resolver: resolver.cpuMs / messages,
        storeOnly: storeOnlyRun.cpuMs / messages,
        serviceBusOnly: sbOnly.cpuMs / messages,
        rawUpsert: (rawBefore.cpuMs + rawAfter.cpuMs) / 2 / messages,
      },
      emulatorCpuMsPerMessage: resolver.emulatorCpuMs !== undefined ? resolver.emulatorCpuMs / messages : undefined,
    };
  } finally {
    await emulator.close();
    await sb.close().catch(() => undefined);
    await store.close();
    await cosmos.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await runResolverBench();
  const of = (v: number) => `${v.toFixed(0)}/s (${(v / r.rawUpsertsPerSec).toFixed(2)})`;
  console.log(
    `resolver: ${r.messages} messages; raw upserts ${r.rawUpsertsPerSec.toFixed(0)}/s; Resolver ${of(r.resolverMessagesPerSec)}, target ratio >= ${r.target}`,
  );
  console.log(
    `parts: store alone ${of(r.storeOnlyMessagesPerSec)}, Service Bus path alone ${of(r.serviceBusOnlyMessagesPerSec)}, both back to back ${of(r.fromPartsMessagesPerSec)}`,
  );
  const c = r.cpuMsPerMessage;
  console.log(
    `cpu ms per message in this process: resolver ${c.resolver.toFixed(2)}, store alone ${c.storeOnly.toFixed(2)}, Service Bus path alone ${c.serviceBusOnly.toFixed(2)}, raw upsert ${c.rawUpsert.toFixed(2)}; emulator process ${r.emulatorCpuMsPerMessage?.toFixed(2) ?? 'n/a'}`,
  );
}
