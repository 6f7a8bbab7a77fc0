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
import { MessageType, Topic } from '../lib/contract/index.ts';
import { HandlerRegistry } from '../lib/sdk/handlers.ts';
import { Harness } from '../lib/sdk/e2e/harness.ts';
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

const deadlineMs = () => envInt('BENCH_PIPELINE_DEADLINE_MS', 180_000);

/**
 * Drains a session subscription with `workers` concurrent acceptNextSession loops, calling `onMessage` for each
 * message (in session order) after completing it, until `done()` says so. Returns nothing; errors other than
 * "no session free right now" are collected and thrown at the end.
 */
async function drainSessions(
  client: ServiceBusClient,
  topic: string,
  subscription: string,
  workers: number,
  done: () => boolean,
  onMessage: (body: unknown, props: Record<string, unknown>) => void,
): Promise<void> {
  const errors: string[] = [];
  const deadline = Date.now() + deadlineMs();
  const loop = async () => {
    while (!done() && Date.now() < deadline && errors.length < 10) {
      let receiver;
      try {
        receiver = await client.acceptNextSession(topic, subscription, { maxAutoLockRenewalDurationInMs: 0 });
      } catch (err) {
        if (isServiceBusError(err) && (err.code === 'ServiceTimeout' || err.code === 'SessionCannotBeLocked'))
          continue;
        errors.push(String(err));
        continue;
      }
      try {
        for (;;) {
          const batch = await receiver.receiveMessages(50, { maxWaitTimeInMs: 200 });
          if (batch.length === 0) break;
          for (const m of batch) {
            await receiver.completeMessage(m);
            onMessage(m.body, m.applicationProperties ?? {});
          }
        }
      } catch (err) {
        // A lost session lock gives the session back; what was not completed comes again.
        if (!(isServiceBusError(err) && err.code === 'SessionLockLost')) errors.push(String(err));
      } finally {
        await receiver.close().catch(() => undefined);
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
  if (errors.length) throw new Error(`receive errors: ${errors.slice(0, 3).join('; ')}`);
  if (!done()) throw new Error('the drain did not finish before BENCH_PIPELINE_DEADLINE_MS');
}

/** Baseline: the emulator alone, receive + complete of the same number of messages over the same sessions. */
async function rawReceiveComplete(h: Harness, s: Settings): Promise<number> {
  const topic = 'bench-raw';
  await h.clients.admin.createTopic(topic);
  await h.clients.admin.createSubscription(topic, 'raw', { requiresSession: true, lockDuration: 'PT60S' });
  const sender = h.client.createSender(topic);
  const all: ServiceBusMessage[] = [];
  for (let i = 0; i < s.perSession; i++)
    for (let k = 0; k < s.sessions; k++)
      all.push({ sessionId: `raw-${k}`, messageId: `raw-${k}-${i}`, body: { customerId: `raw-${k}`, n: i } });
  for (let i = 0; i < all.length; i += s.batchSize) await sender.sendMessages(all.slice(i, i + s.batchSize));
  await sender.close();
  let received = 0;
  const start = performance.now();
  await drainSessions(
    h.client,
    topic,
    'raw',
    s.workers,
    () => received >= all.length,
    () => void received++,
  );
  const seconds = (performance.now() - start) / 1000;
  await h.clients.admin.deleteTopic(topic);
  return all.length / seconds;
}

/**
 * The SDK: publish through the Publisher (shop), handle in a SubscriberHost (crm, `workers` sessions at a time),
 * and count the ResolutionResponses read from the Resolver topic. The clock runs from the first publish to the
 * last response read.
 */
async function pipeline(h: Harness, s: Settings): Promise<{ rate: number; handled: number; events: number }> {
  const events = s.sessions * s.perSession;
  let handled = 0;
  h.host({
    endpointId: 'crm',
    maxConcurrentSessions: s.workers,
    maxMessagesPerReceive: 50,
    sessionIdleTimeoutMs: 200,
    handlers: new HandlerRegistry().on('CustomerUpdated', () => void handled++),
  });
  const publisher = h.publisher('shop');
  let responses = 0;
  const start = performance.now();
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
  })();
  const reading = drainSessions(
    h.client,
    Topic.Resolver,
    Topic.Resolver,
    s.workers,
    () => responses >= events,
    (_body, props) => {
      if (props.MessageType === MessageType.ResolutionResponse) responses++;
    },
  );
  await Promise.all([publishing, reading]);
  const seconds = (performance.now() - start) / 1000;
  return { rate: events / seconds, handled, events };
}

export async function runPipelineBench(): Promise<BenchResult> {
  const s = settings();
  const h = await Harness.start();
  try {
    const raw = await rawReceiveComplete(h, s);
    const sdk = await pipeline(h, s);
    if (sdk.handled !== sdk.events)
      throw new Error(`the handler ran ${sdk.handled} times for ${sdk.events} events`);
    return {
      title:
        'SDK pipeline (publish -> forwarder -> SubscriberHost handler -> ResolutionResponse read from Resolver)',
      rows: [
        {
          figure: 'baseline: emulator raw receive+complete over the same sessions',
          value: raw,
          unit: 'msg/s',
          baseline: raw,
          better: 'higher',
        },
        {
          figure: 'events published -> response on the Resolver topic',
          value: sdk.rate,
          unit: 'events/s',
          baseline: raw,
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
      },
    };
  } finally {
    await h.close();
  }
}

// Run alone: `node --import tsx bench/pipeline.ts`.
if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(toMarkdown(await runPipelineBench()));
}
