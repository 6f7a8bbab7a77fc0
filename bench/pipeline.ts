// SDK pipeline benchmark: events per second from publish to the handler's response on the Resolver topic, across
// many sessions, with the emulator's raw receive+complete rate over the same number of sessions measured in the
// same run (same emulator, same process, same worker count) as the baseline. The ratio is what the SDK's
// handling costs on top of the broker round trips every delivery needs anyway: reading the session state, the
// forwarded copy to the Resolver, the response send, the completion.
//
// Sizes come from environment variables (BENCH_PIPELINE_*); the defaults keep the run near half a minute on a
// 2-core machine. Run alone with `node --import tsx bench/pipeline.ts`, or through `npm run bench -- pipeline`.
import { performance } from 'node:perf_hooks';
import { isServiceBusError } from '@azure/service-bus';
import type { ServiceBusClient, ServiceBusMessage } from '@azure/service-bus';
import { startEmulator } from '../emulator/index.ts';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import type { ServiceBusClients } from '@nimbus/sdk/servicebus';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { HandlerRegistry } from '@nimbus/sdk';
import { Publisher, sessionKeysFromCatalog } from '@nimbus/sdk';
import { SubscriberHost } from '@nimbus/sdk';
import { demoCatalog } from '../packages/sdk/e2e/harness.ts';
import { type BenchResult, envInt, toMarkdown } from './report.ts';

interface Settings {
  sessions: number;
  perSession: number;
  workers: number;
  batchSize: number;
}

function settings(): Settings {
  return {
    sessions: envInt('BENCH_PIPELINE_SESSIONS', 50),
    perSession: envInt('BENCH_PIPELINE_PER_SESSION', 20),
    workers: envInt('BENCH_PIPELINE_WORKERS', 16),
    batchSize: envInt('BENCH_PIPELINE_BATCH', 50),
  };
}

/** Names the cause: an AggregateError prints as its bare name otherwise. */
function describeError(err: unknown): string {
  const e = err as { name?: string; message?: string; code?: string; errors?: unknown[] };
  const inner = Array.isArray(e.errors) ? ` [${e.errors.map(describeError).join(', ')}]` : '';
  return `${e.name ?? 'Error'}${e.code ? ` (${e.code})` : ''}: ${e.message ?? String(err)}${inner}`;
}

const deadlineMs = () => envInt('BENCH_PIPELINE_DEADLINE_MS', 180_000);

/**
 * Drains a session subscription with `workers` concurrent acceptNextSession loops, calling `onMessage` once per
 * message id (in session order) after completing it, until `done()` says so. On a loaded machine a settlement can
 * time out and the message come again: that session is given back and the copy is not counted twice. Returns when
 * `done()` first held (loops still waiting in acceptNextSession end later and must not count) and how many session
 * loops ended in an error (reported, not fatal); fails only when the deadline passes.
 */
async function drainSessions(
  client: ServiceBusClient,
  topic: string,
  subscription: string,
  workers: number,
  done: () => boolean,
  onMessage: (props: Record<string, unknown>) => void,
): Promise<{ finishedAt: number; errors: number; firstError?: string }> {
  const errors: string[] = [];
  const seen = new Set<string>();
  let finishedAt = 0;
  const deadline = Date.now() + deadlineMs();
  const loop = async () => {
    while (!done() && Date.now() < deadline) {
      let receiver;
      try {
        receiver = await client.acceptNextSession(topic, subscription, { maxAutoLockRenewalDurationInMs: 0 });
      } catch (err) {
        if (!(
          isServiceBusError(err) &&
          (err.code === 'ServiceTimeout' || err.code === 'SessionCannotBeLocked')
        ))
          errors.push(describeError(err));
        continue;
      }
      try {
        for (;;) {
          const batch = await receiver.receiveMessages(50, { maxWaitTimeInMs: 200 });
          if (batch.length === 0) break;
          for (const m of batch) {
            await receiver.completeMessage(m);
            const id = String(m.messageId);
            if (seen.has(id)) continue;
            seen.add(id);
            onMessage(m.applicationProperties ?? {});
            if (!finishedAt && done()) finishedAt = performance.now();
          }
        }
      } catch (err) {
        errors.push(describeError(err));
      } finally {
        await receiver.close().catch(() => undefined);
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
  if (!done())
    throw new Error(`the drain did not finish before the deadline; errors: ${errors.slice(0, 3).join('; ')}`);
  return { finishedAt, errors: errors.length, firstError: errors[0] };
}

/** Baseline: the emulator alone, receive + complete of the same number of messages over the same sessions. */
async function rawReceiveComplete(
  c: ServiceBusClients,
  s: Settings,
): Promise<{ rate: number; errors: number }> {
  const topic = 'bench-raw';
  await c.admin.createTopic(topic);
  await c.admin.createSubscription(topic, 'raw', { requiresSession: true, lockDuration: 'PT60S' });
  const sender = c.client.createSender(topic);
  const all: ServiceBusMessage[] = [];
  for (let i = 0; i < s.perSession; i++)
    for (let k = 0; k < s.sessions; k++)
      all.push({ sessionId: `raw-${k}`, messageId: `raw-${k}-${i}`, body: { customerId: `raw-${k}`, n: i } });
  for (let i = 0; i < all.length; i += s.batchSize) await sender.sendMessages(all.slice(i, i + s.batchSize));
  await sender.close();
  let received = 0;
  const start = performance.now();
  const { finishedAt, errors } = await drainSessions(
    c.client,
    topic,
    'raw',
    s.workers,
    () => received >= all.length,
    () => void received++,
  );
  const seconds = (finishedAt - start) / 1000;
  await c.admin.deleteTopic(topic);
  return { rate: all.length / seconds, errors };
}

/**
 * The SDK: publish through the Publisher (shop), handle in a SubscriberHost (crm, `workers` sessions at a time),
 * and count the ResolutionResponses read from the Resolver topic (once per event). The clock runs from the first
 * publish to the last response read.
 */
async function pipeline(
  c: ServiceBusClients,
  s: Settings,
): Promise<{ rate: number; handled: number; events: number; errors: number; firstError?: string }> {
  const events = s.sessions * s.perSession;
  let handled = 0;
  const host = new SubscriberHost({
    client: c.client,
    endpointId: 'crm',
    maxConcurrentSessions: s.workers,
    maxMessagesPerReceive: 50,
    sessionIdleTimeoutMs: 200,
    backoff: { initialMs: 50, maxMs: 500 },
    handlers: new HandlerRegistry().on('CustomerUpdated', () => void handled++),
  });
  const publisher = new Publisher({
    client: c.client,
    endpointId: 'shop',
    sessionKeys: sessionKeysFromCatalog(demoCatalog),
  });
  await host.start();
  const answered = new Set<string>();
  const start = performance.now();
  try {
    // A publish failure ends the drain at once and is what the run reports (not a "did not finish" at the deadline).
    let publishFailure: { error: unknown } | undefined;
    const publishing = (async () => {
      // Round-robin over sessions, paged like a producer that publishes as events happen.
      for (let i = 0; i < s.perSession; i++) {
        for (let k = 0; k < s.sessions; k += s.batchSize) {
          const page = [];
          for (let j = k; j < Math.min(s.sessions, k + s.batchSize); j++)
            page.push({ eventTypeId: 'CustomerUpdated', payload: { customerId: `bench-${j}`, n: i } });
          await publisher.publishMany(page);
        }
      }
    })().catch((error: unknown) => {
      publishFailure = { error };
    });
    const reading = drainSessions(
      c.client,
      Topic.Resolver,
      Topic.Resolver,
      s.workers,
      () => publishFailure !== undefined || answered.size >= events,
      (props) => {
        // By EventId: a redelivered event answered twice still counts as one event through the pipeline.
        if (props.MessageType === MessageType.ResolutionResponse) answered.add(String(props.EventId));
      },
    );
    const [, { finishedAt, errors, firstError }] = await Promise.all([publishing, reading]);
    if (publishFailure) throw publishFailure.error;
    const seconds = (finishedAt - start) / 1000;
    return { rate: events / seconds, handled, events, errors, firstError };
  } finally {
    await host.stop({ waitForPendingAccepts: true });
    await publisher.close();
  }
}

export async function runPipelineBench(): Promise<BenchResult> {
  const s = settings();
  const emulator = await startEmulator({ port: 0 });
  // 15 s operations: on a loaded machine the tests' 4 s fail settlements that do succeed, while the default 60 s
  // keeps idle acceptNextSession loops (and the host's stop) waiting long after the work is done.
  const c = createServiceBusClients(emulator.connectionString, {
    client: { retryOptions: { timeoutInMs: 15_000 } },
  });
  try {
    await provisionTopology(c.admin, deriveTopology(demoCatalog));
    const raw = await rawReceiveComplete(c, s);
    const sdk = await pipeline(c, s);
    return {
      title:
        'SDK pipeline (publish -> forwarder -> SubscriberHost handler -> ResolutionResponse read from Resolver)',
      rows: [
        {
          figure: 'baseline: emulator raw receive+complete over the same sessions',
          value: raw.rate,
          unit: 'msg/s',
          baseline: raw.rate,
          better: 'higher',
        },
        {
          figure: 'events published -> response on the Resolver topic',
          value: sdk.rate,
          unit: 'events/s',
          baseline: raw.rate,
          better: 'higher',
          note: 'each event is ~5 broker messages: publish, forwarded copy, Resolver audit copy, response, and reading it',
        },
      ],
      settings: {
        BENCH_PIPELINE_SESSIONS: s.sessions,
        BENCH_PIPELINE_PER_SESSION: s.perSession,
        BENCH_PIPELINE_WORKERS: s.workers,
        BENCH_PIPELINE_BATCH: s.batchSize,
        events: sdk.events,
        'handler runs': sdk.handled,
        'receive loop errors (baseline / pipeline reader)': `${raw.errors} / ${sdk.errors}`,
        ...(sdk.firstError ? { 'first reader error': sdk.firstError.slice(0, 200) } : {}),
      },
    };
  } finally {
    await c.close();
    await emulator.close();
  }
}

// Run alone: `node --import tsx bench/pipeline.ts`.
if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(toMarkdown(await runPipelineBench()));
}
