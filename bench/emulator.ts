// Emulator benchmark. In one run it measures the ceiling of this stack (raw rhea sender -> pass-through
// -> receiver over loopback, no broker logic) and the emulator through the unmodified @azure/service-bus
// client: batch send to a topic with three subscriptions, receive + complete across many sessions with
// concurrent acceptNextSession loops, and send -> receive latency. Every figure is reported with its ratio
// to the baseline measured in the same run, since absolute numbers drift on a shared machine.
//
// Sizes come from environment variables (see `settings()`); the defaults keep the whole run well under two
// minutes on a 2-core machine. Run alone with `npx tsx bench/emulator.ts` or with every benchmark through
// `npm run bench`.

import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import rhea from 'rhea';
import type { EventContext, Message, Sender } from 'rhea';
import { isServiceBusError } from '@azure/service-bus';
import type { ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage } from '@azure/service-bus';
import { startEmulator } from '../emulator/index.ts';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { markPhase, startEmulatorProcess } from './processes.ts';
import { type BenchResult, envInt, percentile, toMarkdown } from './report.ts';

interface Settings {
  baselineMessages: number;
  sendMessages: number;
  batchSize: number;
  sessions: number;
  perSession: number;
  sessionWorkers: number;
  latencySamples: number;
  bodyBytes: number;
}

function settings(): Settings {
  return {
    baselineMessages: envInt('BENCH_BASELINE_MESSAGES', 30_000),
    sendMessages: envInt('BENCH_SEND_MESSAGES', 10_000),
    batchSize: envInt('BENCH_BATCH_SIZE', 100),
    sessions: envInt('BENCH_SESSIONS', 50),
    perSession: envInt('BENCH_PER_SESSION', 100),
    sessionWorkers: envInt('BENCH_SESSION_WORKERS', 16),
    latencySamples: envInt('BENCH_LATENCY_SAMPLES', 400),
    bodyBytes: envInt('BENCH_BODY_BYTES', 200),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Baseline: a rhea container that passes messages from a sender link to a receiver link, nothing else.
// ---------------------------------------------------------------------------------------------------------

interface Baseline {
  throughput: number;
  latencies: number[];
}

async function runBaseline(s: Settings): Promise<Baseline> {
  const broker = rhea.create_container({ id: 'bench-passthrough' });
  let outgoing: Sender | undefined;
  const backlog: Message[] = [];
  const flush = () => {
    while (outgoing && backlog.length > 0 && outgoing.sendable()) outgoing.send(backlog.shift()!);
  };
  broker.on('sender_open', (ctx: EventContext) => {
    outgoing = ctx.sender;
  });
  broker.on('sendable', flush);
  broker.on('message', (ctx: EventContext) => {
    if (ctx.message) backlog.push(ctx.message);
    flush();
  });
  const server = broker.listen({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as AddressInfo).port;

  const clients = rhea.create_container({ id: 'bench-clients' });
  const sendConn = clients.connect({ host: '127.0.0.1', port, reconnect: false });
  const recvConn = clients.connect({ host: '127.0.0.1', port, reconnect: false });
  const receiver = recvConn.open_receiver({ source: 'q', autoaccept: true, credit_window: 500 });
  const sender = sendConn.open_sender({ target: 'q' });
  const body = 'x'.repeat(s.bodyBytes);

  let onMessage: () => void = () => undefined;
  receiver.on('message', () => onMessage());
  await new Promise<void>((resolve) =>
    sender.sendable() ? resolve() : sender.once('sendable', () => resolve()),
  );
  await new Promise<void>((resolve) =>
    receiver.is_open() ? resolve() : receiver.once('receiver_open', () => resolve()),
  );

  // Throughput: stream as fast as credit allows; time from first send to last receipt.
  let sent = 0;
  let received = 0;
  const throughput = await new Promise<number>((resolve) => {
    const start = performance.now();
    onMessage = () => {
      received++;
      if (received === s.baselineMessages) resolve(s.baselineMessages / ((performance.now() - start) / 1000));
    };
    const pump = () => {
      while (sent < s.baselineMessages && sender.sendable()) {
        sender.send({ body, message_id: sent });
        sent++;
      }
    };
    sender.on('sendable', pump);
    pump();
  });

  // Latency: one message in flight at a time.
  const latencies: number[] = [];
  for (let i = 0; i < s.latencySamples + 20; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      onMessage = resolve;
      sender.send({ body, message_id: `lat-${i}` });
    });
    if (i >= 20) latencies.push(performance.now() - t0);
  }

  sendConn.close();
  recvConn.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return { throughput, latencies };
}

// ---------------------------------------------------------------------------------------------------------
// The emulator through the real client.
// ---------------------------------------------------------------------------------------------------------

function bodyOf(size: number, i: number): ServiceBusMessage['body'] {
  return { i, pad: 'x'.repeat(Math.max(0, size - 20)) };
}

async function benchBatchSend(
  client: ServiceBusClient,
  admin: ReturnType<typeof createServiceBusClients>['admin'],
  s: Settings,
  on: 'topic' | 'queue' = 'topic',
) {
  // On a queue each message is stored once; on the topic three times (one copy per subscription).
  const topic = on === 'queue' ? 'bench-send-queue' : 'bench-fanout';
  if (on === 'queue') await admin.createQueue(topic);
  else {
    await admin.createTopic(topic);
    for (const sub of ['a', 'b', 'c']) await admin.createSubscription(topic, sub);
  }
  const sender = client.createSender(topic);
  const batchOf = (from: number): ServiceBusMessage[] =>
    Array.from({ length: s.batchSize }, (_, k) => ({
      body: bodyOf(s.bodyBytes, from + k),
      messageId: `f-${from + k}`,
    }));
  await sender.sendMessages(batchOf(-s.batchSize)); // warm-up: links attached, code paths hot
  const start = performance.now();
  for (let i = 0; i < s.sendMessages; i += s.batchSize) await sender.sendMessages(batchOf(i));
  const rate = s.sendMessages / ((performance.now() - start) / 1000);
  await sender.close();
  // Free the copies before the next figure.
  if (on === 'queue') await admin.deleteQueue(topic);
  else await admin.deleteTopic(topic);
  return rate;
}

async function benchSessions(
  emulator: OpenedEmulator,
  client: ServiceBusClient,
  admin: ReturnType<typeof createServiceBusClients>['admin'],
  s: Settings,
  on: 'topic' | 'queue' = 'topic',
) {
  // The same figure on a session-enabled queue (the subscriptions' machinery behind one name).
  const topic = on === 'queue' ? 'bench-session-queue' : 'bench-sessions';
  if (on === 'queue') {
    await admin.createQueue(topic, { requiresSession: true, lockDuration: 'PT60S' });
  } else {
    await admin.createTopic(topic);
    await admin.createSubscription(topic, 'sub', { requiresSession: true, lockDuration: 'PT60S' });
  }
  const sender = client.createSender(topic);
  const all: ServiceBusMessage[] = [];
  for (let i = 0; i < s.perSession; i++) {
    for (let k = 0; k < s.sessions; k++)
      all.push({ sessionId: `s${k}`, messageId: `s${k}-${i}`, body: bodyOf(s.bodyBytes, i) });
  }
  for (let i = 0; i < all.length; i += s.batchSize) await sender.sendMessages(all.slice(i, i + s.batchSize));
  await sender.close();

  // Two connections, as a multi-session host with several receivers would use; short accept timeout so the
  // loops notice quickly that every session is drained.
  const receivingClients = [0, 1].map(
    () =>
      createServiceBusClients(emulator.connectionString, {
        client: { retryOptions: { timeoutInMs: 1_000, maxRetries: 0 } },
      }).client,
  );
  const total = all.length;
  let done = 0;
  let finishedAt = 0;
  const errors: string[] = [];
  const start = performance.now();
  const clientCpu0 = process.cpuUsage();
  const emulatorCpu0 = emulator.cpuMs();
  markPhase('sessions receive+complete start');
  // A session receiver whose link the client closed (it does so when a credit drain is not answered within
  // 200 ms) fails with SessionLockLost; like the SDK's host, give the session back and carry on, and count it.
  let sessionsLost = 0;
  const deadline = Date.now() + envInt('BENCH_SESSION_DEADLINE_MS', 90_000);
  // Where the loops spend their time (summed over loops): it shows which client call bounds the figure.
  const spent = { accept: 0, receive: 0, complete: 0, close: 0, completes: 0, receives: 0, accepts: 0 };
  const timed = async <T>(
    key: 'accept' | 'receive' | 'complete' | 'close',
    call: () => Promise<T>,
  ): Promise<T> => {
    const t0 = performance.now();
    try {
      return await call();
    } finally {
      spent[key] += performance.now() - t0;
    }
  };
  const worker = async (w: number) => {
    const c = receivingClients[w % receivingClients.length]!;
    while (done < total && Date.now() < deadline) {
      let receiver;
      try {
        spent.accepts++;
        receiver = await timed('accept', () =>
          on === 'queue'
            ? c.acceptNextSession(topic, { maxAutoLockRenewalDurationInMs: 0 })
            : c.acceptNextSession(topic, 'sub', { maxAutoLockRenewalDurationInMs: 0 }),
        );
      } catch (err) {
        if (isServiceBusError(err) && err.code === 'ServiceTimeout') continue;
        errors.push(String(err));
        if (errors.length > 20) return;
        continue;
      }
      try {
        for (;;) {
          spent.receives++;
          const batch: ServiceBusReceivedMessage[] = await timed('receive', () =>
            receiver.receiveMessages(50, { maxWaitTimeInMs: 200 }),
          );
          if (batch.length === 0) break;
          // In order within the session, as the SDK's session processor settles them.
          for (const m of batch) {
            await timed('complete', () => receiver.completeMessage(m));
            spent.completes++;
            done++;
            if (done === total) finishedAt = performance.now();
          }
        }
      } catch (err) {
        if (isServiceBusError(err) && err.code === 'SessionLockLost') sessionsLost++;
        else errors.push(String(err));
      } finally {
        await timed('close', () => receiver.close().catch(() => undefined));
      }
    }
  };
  await Promise.all(Array.from({ length: s.sessionWorkers }, (_, w) => worker(w)));
  markPhase('sessions receive+complete end');
  const wallMs = (finishedAt || performance.now()) - start;
  const clientCpu = process.cpuUsage(clientCpu0);
  const clientCpuMs = (clientCpu.user + clientCpu.system) / 1000;
  const emulatorCpu1 = emulator.cpuMs();
  const emulatorCpuMs =
    emulatorCpu0 !== undefined && emulatorCpu1 !== undefined ? emulatorCpu1 - emulatorCpu0 : undefined;
  await Promise.all(receivingClients.map((c) => c.close()));
  if (on === 'queue') await admin.deleteQueue(topic);
  else await admin.deleteTopic(topic);
  if (errors.length) throw new Error(`session receive errors: ${errors.slice(0, 3).join('; ')}`);
  const loopMs = spent.accept + spent.receive + spent.complete + spent.close;
  const share = (ms: number): string => `${Math.round((ms / loopMs) * 100)}%`;
  const perCall = (ms: number, n: number): string => `${n ? (ms / n).toFixed(1) : '-'} ms`;
  const breakdown =
    `loop time: accept ${share(spent.accept)} (${spent.accepts}x, ${perCall(spent.accept, spent.accepts)}), ` +
    `receiveMessages ${share(spent.receive)} (${spent.receives}x, ${perCall(spent.receive, spent.receives)}), ` +
    `completeMessage ${share(spent.complete)} (${perCall(spent.complete, spent.completes)} each), ` +
    `close ${share(spent.close)}; CPU per message: ` +
    (emulatorCpuMs === undefined
      ? `${(clientCpuMs / done).toFixed(3)} ms (client and emulator in one process)`
      : `client ${(clientCpuMs / done).toFixed(3)} ms, emulator ${(emulatorCpuMs / done).toFixed(3)} ms`) +
    ` over ${Math.round(wallMs)} ms`;
  return {
    rate: done / (wallMs / 1000),
    sessionsLost,
    done,
    total,
    breakdown,
  };
}

async function benchLatency(
  client: ServiceBusClient,
  admin: ReturnType<typeof createServiceBusClients>['admin'],
  s: Settings,
) {
  const topic = 'bench-latency';
  await admin.createTopic(topic);
  await admin.createSubscription(topic, 'sub');
  const sender = client.createSender(topic);
  const receiver = client.createReceiver(topic, 'sub');
  let arrived: () => void = () => undefined;
  const subscription = receiver.subscribe(
    {
      processMessage: async () => arrived(),
      processError: async (args) => {
        throw args.error;
      },
    },
    { autoCompleteMessages: true, maxConcurrentCalls: 1 },
  );
  const latencies: number[] = [];
  for (let i = 0; i < s.latencySamples + 20; i++) {
    const t0 = performance.now();
    const got = new Promise<void>((resolve) => (arrived = resolve));
    await sender.sendMessages({ body: bodyOf(s.bodyBytes, i), messageId: `l-${i}` });
    await got;
    if (i >= 20) latencies.push(performance.now() - t0);
  }
  await subscription.close();
  await receiver.close();
  await sender.close();
  await admin.deleteTopic(topic);
  return latencies;
}

/**
 * The emulator under test: in this process by default (like the baseline, whose broker shares the process
 * with its clients), or with BENCH_EMULATOR_PROCESS=child in its own process, which puts client and broker on
 * separate cores and lets `--cpu-prof` on this process show the client library's own cost.
 */
interface OpenedEmulator {
  connectionString: string;
  mode: string;
  /** CPU time (user + system, ms) the emulator process used so far; undefined in the same process. */
  cpuMs(): number | undefined;
  close(): Promise<void>;
}

async function openEmulator(): Promise<OpenedEmulator> {
  if (process.env.BENCH_EMULATOR_PROCESS !== 'child') {
    const e = await startEmulator({ port: 0 });
    return {
      connectionString: e.connectionString,
      mode: 'same process',
      cpuMs: () => undefined,
      close: () => e.close(),
    };
  }
  // e.g. BENCH_EMULATOR_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the emulator's side.
  const child = await startEmulatorProcess({
    nodeArgs: (process.env.BENCH_EMULATOR_NODE_ARGS ?? '').split(' ').filter(Boolean),
  });
  return { ...child, mode: 'child process' };
}

export async function runEmulatorBench(): Promise<BenchResult> {
  const s = settings();
  const baseline = await runBaseline(s);
  const baseLat = [...baseline.latencies].sort((a, b) => a - b);

  const emulator = await openEmulator();
  const { client, admin, close } = createServiceBusClients(emulator.connectionString);
  try {
    // BENCH_FIGURES=send,queue-send,sessions,queue-sessions,latency narrows the run (e.g. to profile one figure
    // with --cpu-prof).
    const only = (process.env.BENCH_FIGURES ?? 'send,queue-send,sessions,queue-sessions,latency').split(',');
    const sendRate = only.includes('send') ? await benchBatchSend(client, admin, s) : Number.NaN;
    const queueSendRate = only.includes('queue-send')
      ? await benchBatchSend(client, admin, s, 'queue')
      : Number.NaN;
    const sessions = only.includes('sessions')
      ? await benchSessions(emulator, client, admin, s)
      : { rate: Number.NaN, sessionsLost: 0, done: 0, total: 0, breakdown: '' };
    const queueSessions = only.includes('queue-sessions')
      ? await benchSessions(emulator, client, admin, s, 'queue')
      : { rate: Number.NaN, sessionsLost: 0, done: 0, total: 0, breakdown: '' };
    const lat = only.includes('latency') ? (await benchLatency(client, admin, s)).sort((a, b) => a - b) : [];
    return {
      title: `Service Bus emulator (unmodified @azure/service-bus client, emulator in the ${emulator.mode})`,
      rows: [
        {
          figure: 'baseline: raw rhea sender -> pass-through -> receiver',
          value: baseline.throughput,
          unit: 'msg/s',
          baseline: baseline.throughput,
          better: 'higher',
        },
        {
          figure: `batch send to a topic with 3 subscriptions (batches of ${s.batchSize})`,
          value: sendRate,
          unit: 'msg/s',
          baseline: baseline.throughput,
          better: 'higher',
          note: `each message is stored three times (${Math.round(sendRate * 3).toLocaleString('en-US')} copies/s); one AMQP transfer carries ${s.batchSize} messages, so this can exceed the one-message-per-transfer baseline`,
        },
        {
          figure: `batch send to a queue (batches of ${s.batchSize})`,
          value: queueSendRate,
          unit: 'msg/s',
          baseline: baseline.throughput,
          better: 'higher',
          note: 'each message is stored once',
        },
        {
          figure: `receive + complete across ${s.sessions} sessions (${s.sessionWorkers} acceptNextSession loops)`,
          value: sessions.rate,
          unit: 'msg/s',
          baseline: baseline.throughput,
          better: 'higher',
          target: 2_000,
          note: [
            sessions.breakdown,
            sessions.sessionsLost > 0 || sessions.done < sessions.total
              ? `${sessions.sessionsLost} session receiver(s) lost mid-session (client closed the link after an unanswered credit drain); ${sessions.done} of ${sessions.total} messages completed`
              : '',
          ]
            .filter(Boolean)
            .join('; '),
        },
        {
          figure: `receive + complete across ${s.sessions} sessions of a queue (${s.sessionWorkers} acceptNextSession loops)`,
          value: queueSessions.rate,
          unit: 'msg/s',
          baseline: baseline.throughput,
          better: 'higher',
          target: 2_000,
          note: queueSessions.breakdown,
        },
        {
          figure: 'send -> receive latency p50',
          value: percentile(lat, 50),
          unit: 'ms',
          baseline: percentile(baseLat, 50),
          better: 'lower',
        },
        {
          figure: 'send -> receive latency p99',
          value: percentile(lat, 99),
          unit: 'ms',
          baseline: percentile(baseLat, 99),
          better: 'lower',
        },
      ],
      settings: {
        BENCH_BASELINE_MESSAGES: s.baselineMessages,
        BENCH_SEND_MESSAGES: s.sendMessages,
        BENCH_BATCH_SIZE: s.batchSize,
        BENCH_SESSIONS: s.sessions,
        BENCH_PER_SESSION: s.perSession,
        BENCH_SESSION_WORKERS: s.sessionWorkers,
        BENCH_LATENCY_SAMPLES: s.latencySamples,
        BENCH_BODY_BYTES: s.bodyBytes,
        BENCH_EMULATOR_PROCESS: emulator.mode === 'child process' ? 'child' : 'same',
      },
    };
  } finally {
    await close();
    await emulator.close();
  }
}

// Run alone: `npx tsx bench/emulator.ts`.
if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runEmulatorBench();
  console.log(toMarkdown(result));
}
