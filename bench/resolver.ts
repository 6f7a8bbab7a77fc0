// Benchmark: messages per second the Resolver records (history + guarded status write per message, received
// from the embedded Service Bus emulator and settled there), against raw upserts to the same embedded Cosmos
// server measured in the same run as the baseline (before and after, averaged, since shared machines drift).
// Target ratio >= 0.5: a message costs a history write and a guarded status write, plus its receive/complete.
//   npx tsx bench/resolver.ts            (or runResolverBench() from bench/index.ts)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { startEmulator } from '../emulator/index.ts';
import { parseCatalog } from '../lib/contract/catalog.ts';
import { eventBody, MessageType, Prop, SELF, Topic, encodeBody } from '../lib/contract/index.ts';
import { createServiceBusClients } from '../lib/servicebus/index.ts';
import { createStore, startEmbeddedCosmos } from '../lib/store/index.ts';
import { deriveTopology, provisionTopology } from '../lib/topology/index.ts';
import { startResolver } from '../resolver-worker/index.ts';

export interface ResolverBenchOptions {
  /** Events; each produces two Resolver messages (the request copy and the response). Default 300. */
  events?: number;
  /** Distinct sessions the events are spread over. Default 64. */
  sessions?: number;
  /** Resolver sessions in flight, and concurrent raw upserts (the same, for a fair baseline). Default 32. */
  concurrency?: number;
  /** Run the emulator in this process instead of a child process. Default false. */
  inProcessEmulator?: boolean;
}

export interface ResolverBenchResult {
  name: 'resolver';
  messages: number;
  resolverMessagesPerSec: number;
  /** The same writes through store.recordOutcome with no Service Bus: where the Resolver's cost goes. */
  storeOnlyMessagesPerSec: number;
  rawUpsertsPerSec: number;
  ratio: number;
  target: number;
  /**
   * CPU milliseconds this process spent per message (per upsert for the baseline), all threads: the machine is
   * shared, so wall-clock rates drift with everyone else's load while these stay comparable between runs. The
   * embedded Cosmos server runs in this process, so its cost is in every figure.
   */
  cpuMsPerMessage: { resolver: number; storeOnly: number; rawUpsert: number };
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

/** CPU ms a child process has used so far (Linux /proc; undefined elsewhere). */
function childCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * The emulator in its own process (`emulator/cli.ts`): in-process it would share this event loop with the
 * embedded Cosmos server and the Resolver, a cost the raw-upsert baseline does not pay.
 */
async function startEmulatorProcess(): Promise<{ connectionString: string; pid: number | undefined; close(): Promise<void> }> {
  const cli = fileURLToPath(new URL('../emulator/cli.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', cli, '--port', '0', '--log-level', 'silent'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const connectionString = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the emulator exited (${code}) before it was ready`)));
    lines.once('line', (line) => resolve(line.trim()));
  });
  return {
    connectionString,
    pid: child.pid,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
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

/** The Resolver's store work alone: history + guarded status per message, request then response per event. */
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
          await store.recordOutcome({ history: request, status: request });
          const response = { ...base, messageId: randomUUID(), messageType: MessageType.ResolutionResponse, parentMessageId: requestId, from: 'crm', to: 'Resolver' };
          await store.recordOutcome({ history: response, status: response });
        }
      }),
    );
    return (events * 2) / ((performance.now() - started) / 1000);
  } finally {
    await store.close();
  }
}

export async function runResolverBench(options: ResolverBenchOptions = {}): Promise<ResolverBenchResult> {
  const events = options.events ?? 300;
  const sessions = options.sessions ?? 64;
  const concurrency = options.concurrency ?? 32;
  const messages = events * 2;
  const emulator: { connectionString: string; pid?: number | undefined; close(): Promise<void> } = options.inProcessEmulator
    ? await startEmulator({ port: 0 })
    : await startEmulatorProcess();
  const cosmos = await startEmbeddedCosmos({ port: 0 });
  const sb = createServiceBusClients(emulator.connectionString);
  const store = await createStore({
    endpoint: cosmos.endpoint,
    key: cosmos.key,
    database: 'bench',
    counterFlushMs: 250,
  });
  try {
    await provisionTopology(
      sb.admin,
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
    const rawBefore = await withCpu(() => rawUpserts(cosmos.endpoint, cosmos.key, messages, concurrency));

    // Everything is on the topic before the Resolver starts, so the figure is recording, not sending.
    const sender = sb.client.createSender(Topic.Resolver);
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
      const sessionId = `s${i % sessions}`;
      const requestId = randomUUID();
      const common = { [Prop.EventId]: `e${i}`, [Prop.EventTypeId]: 'OrderPlaced' };
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
        },
      });
    }
    await flush();
    await sender.close();

    let settled = 0;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const emulatorCpuBefore = childCpuMs(emulator.pid);
    const resolver = startResolver({
      client: sb.client,
      store,
      concurrency,
      log: pino({ level: 'silent' }),
      onSettled: () => {
        if (++settled === messages) done();
      },
    });
    await finished;
    const resolverPerSec = messages / ((performance.now() - started) / 1000);
    const resolverCpu = process.cpuUsage(cpuBefore);
    const emulatorCpuAfter = childCpuMs(emulator.pid);
    await resolver.stop();

    const storeOnlyRun = await withCpu(() => storeOnly(cosmos.endpoint, cosmos.key, events, concurrency));
    const rawAfter = await withCpu(() => rawUpserts(cosmos.endpoint, cosmos.key, messages, concurrency));
    const raw = (rawBefore.value + rawAfter.value) / 2;
    return {
      name: 'resolver',
      messages,
      resolverMessagesPerSec: resolverPerSec,
      storeOnlyMessagesPerSec: storeOnlyRun.value,
      rawUpsertsPerSec: raw,
      ratio: resolverPerSec / raw,
      target: 0.5,
      cpuMsPerMessage: {
        resolver: (resolverCpu.user + resolverCpu.system) / 1000 / messages,
        storeOnly: storeOnlyRun.cpuMs / messages,
        // The second run only: the first also pays the JIT warming up the client and server.
        rawUpsert: rawAfter.cpuMs / messages,
      },
      emulatorCpuMsPerMessage:
        emulatorCpuBefore !== undefined && emulatorCpuAfter !== undefined ? (emulatorCpuAfter - emulatorCpuBefore) / messages : undefined,
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
  console.log(
    `resolver: ${r.messages} messages, ${r.resolverMessagesPerSec.toFixed(0)} msg/s recorded (store alone ${r.storeOnlyMessagesPerSec.toFixed(0)}/s); raw upserts ${r.rawUpsertsPerSec.toFixed(0)}/s; ratio ${r.ratio.toFixed(2)} (target >= ${r.target})`,
  );
  const c = r.cpuMsPerMessage;
  console.log(
    `cpu ms per message in this process: resolver ${c.resolver.toFixed(2)}, store alone ${c.storeOnly.toFixed(2)}, raw upsert ${c.rawUpsert.toFixed(2)}; emulator process ${r.emulatorCpuMsPerMessage?.toFixed(2) ?? 'n/a'}`,
  );
}
