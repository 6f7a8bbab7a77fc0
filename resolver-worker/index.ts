// The Resolver as a library: startResolver() runs the session processor on Resolver/Resolver against a store,
// for the standalone process (main.ts), the embedded launcher (npm start), tests and the benchmark.
import { readFileSync } from 'node:fs';
import type { ServiceBusClient } from '@azure/service-bus';
import type { Meter } from '@opentelemetry/api';
import { pino, type Logger } from 'pino';
import { z } from 'zod';
import { TimeSeriesStore, type MessageStore, type TimeSeriesStoreOptions } from '../lib/store/index.ts';
import { createServiceBusClients, type ServiceBusConnection } from '@nimbus/sdk/servicebus';
import { DEFAULT_BUDGET, type BudgetOptions } from './budget.ts';
import { createResolverMetrics } from './metrics.ts';
import { createOutcomeRecorder } from './outcomeMetrics.ts';
import { ResolverProcessor, type ResolverState, type SettledEvent } from './processor.ts';
import { registerResolverState } from './state.ts';
import { DEFAULT_BROKER_STOP_MS, DEFAULT_SERIES_STOP_MS } from './config.ts';
import { STOPPED, untilStopped } from './untilStopped.ts';

export { DeadLetterReason, type Settlement } from './resolve.ts';
export { DEFAULT_BUDGET, type BudgetOptions } from './budget.ts';
export type { ResolverState, SettledEvent } from './processor.ts';

export interface ResolverOptions {
  /** Service Bus connection string; or pass `client` to share one. */
  serviceBusConnectionString?: string;
  /** A connection string or a namespace with Microsoft Entra identity (wins over serviceBusConnectionString). */
  serviceBusConnection?: ServiceBusConnection;
  client?: ServiceBusClient;
  store: MessageStore;
  /** Sessions resolved at the same time by this instance. Default 16. */
  concurrency?: number;
  /**
   * How long one receive waits. A receive that gets nothing releases the session; one that gets fewer messages
   * than `maxMessagesPerReceive` also takes this long (the client waits to fill the batch), and the session is
   * released once they are resolved (its backlog is done). Default 100 ms: sessions are many and brief, a released
   * session that gets a new message is simply accepted again, and a broker round trip is far shorter.
   */
  sessionIdleTimeoutMs?: number;
  /**
   * Messages fetched per receive within one session, resolved as one batch (their rows' store work side by side).
   * Default 50.
   */
  maxMessagesPerReceive?: number;
  /**
   * Session lock auto-renewal horizon. Default 5 min. A session is released a margin before it, or before its lock's
   * expiry (5 s, or a tenth of a shorter horizon or lock), and accepted again with a fresh lock; 0 turns renewal off
   * (the lock's own expiry bounds it).
   */
  maxAutoLockRenewalDurationInMs?: number;
  /** The throttle budget; tests shrink the delays. */
  budget?: Partial<BudgetOptions>;
  /** Longest single wait before a transient store failure is abandoned for redelivery. Default 30 s. */
  transientMaxDelayMs?: number;
  /** Longest single wait before a heartbeat write is retried in place. Default 30 s. */
  inPlaceMaxDelayMs?: number;
  /** While receiving is stopped because the store denies access (401/403), how often access is tried again. Default 30 s. */
  accessProbeMs?: number;
  /**
   * While the store is unavailable (a transient failure confirmed by a failing probe), how often it is probed; the
   * messages in hand are held meanwhile (up to the session lock-renewal horizon) and no new session is taken. Default 5 s.
   */
  outageProbeMs?: number;
  log?: Logger;
  /** Defaults to the global MeterProvider's `nimbus.resolver` meter (a no-op unless the host registers one). */
  meter?: Meter;
  /**
   * The stored time series (per endpoint and event type, docs/operations.md): on by default, written in batches
   * every `flushMs`; false turns them off (the benchmark's baseline).
   */
  history?: false | Pick<TimeSeriesStoreOptions, 'flushMs' | 'retention'>;
  /**
   * The deadline of the broker's part of stop(), from its start: the settlements in flight, the session receivers'
   * and the sender's close, and the client's close when startResolver opened it. What the broker has not answered
   * by then is given up and logged (the messages come back once their locks lapse). Default 5 s: without it an
   * unanswered settlement held a stop for the client's own 60 s and its retries.
   */
  brokerStopMs?: number;
  /**
   * How long stop() waits for the last flush of the stored time series (`history`), from its start. Default 3 s:
   * it is a store write with the client's 30 s request time-out (not retried after one), and a store that does not answer must not
   * hold back the counter flush that the caller's `store.close()` runs next. Given up, the last outcome-series points
   * (at most a flush interval's) are missing from the charts; the counters and the rows are not affected.
   */
  seriesStopMs?: number;
  /** Called after every message is settled (tests, the benchmark). */
  onSettled?: (event: SettledEvent) => void;
  now?: () => Date;
}

export interface ResolverHandle {
  /**
   * Nothing new starts; messages whose store writes have ended are settled, one whose write is still running is
   * left to come back (stop never waits for the store's writes or probes, docs/resolver.md "Stopping"); then closes
   * what startResolver opened. The broker's part waits at most `brokerStopMs` in all, the stored time-series flush
   * at most `seriesStopMs` after it.
   */
  stop(): Promise<void>;
  /** Receiving, halted because the store denies access (with the reason), or holding while the store is down. */
  state(): ResolverState;
}

const optionsSchema = z
  .object({
    serviceBusConnectionString: z.string().min(1).optional(),
    concurrency: z.number().int().min(1).max(256).default(16),
    sessionIdleTimeoutMs: z.number().int().min(10).max(600_000).default(100),
    maxMessagesPerReceive: z.number().int().min(1).max(100).default(50),
    maxAutoLockRenewalDurationInMs: z.number().int().min(0).default(300_000),
    budget: z
      .object({
        maxAttempts: z.number().int().min(1).max(100),
        baseDelayMs: z.number().int().min(1),
        maxDelayMs: z.number().int().min(1),
      })
      .partial()
      .default({}),
    transientMaxDelayMs: z.number().int().min(0).default(30_000),
    inPlaceMaxDelayMs: z.number().int().min(0).default(30_000),
    accessProbeMs: z.number().int().min(10).default(30_000),
    outageProbeMs: z.number().int().min(10).default(5_000),
    brokerStopMs: z.number().int().min(0).max(600_000).default(DEFAULT_BROKER_STOP_MS),
    seriesStopMs: z.number().int().min(0).max(600_000).default(DEFAULT_SERIES_STOP_MS),
  })
  .loose();

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version.split('+')[0]! : 'unknown';
  } catch {
    return 'unknown';
  }
}

export const RESOLVER_VERSION = packageVersion();

export function startResolver(options: ResolverOptions): ResolverHandle {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    // Paths and messages only: the connection string must never reach an error text.
    throw new Error(`invalid Resolver options: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const o = parsed.data;
  const connection = options.serviceBusConnection ?? o.serviceBusConnectionString;
  if (!options.client && !connection) throw new Error('invalid Resolver options: serviceBusConnectionString, serviceBusConnection or client is required');
  const owned = options.client ? undefined : createServiceBusClients(connection!);
  const client = options.client ?? owned!.client;
  const budget: BudgetOptions = { ...DEFAULT_BUDGET, ...o.budget };
  const log = options.log ?? pino({ name: 'resolver', level: 'info' });
  const now = options.now ?? (() => new Date());
  // A stand-in store without a database (the benchmark's no-I/O store) records no series.
  const series =
    options.history === false || !options.store.database ? undefined : new TimeSeriesStore(options.store.database, options.history ?? {});
  const processor = new ResolverProcessor({
    client,
    concurrency: o.concurrency,
    sessionIdleTimeoutMs: o.sessionIdleTimeoutMs,
    maxMessagesPerReceive: o.maxMessagesPerReceive,
    maxAutoLockRenewalDurationInMs: o.maxAutoLockRenewalDurationInMs,
    onSettled: options.onSettled,
    accessProbeMs: o.accessProbeMs,
    outageProbeMs: o.outageProbeMs,
    context: {
      store: options.store,
      log,
      metrics: createResolverMetrics(options.meter),
      budget,
      transientMaxDelayMs: o.transientMaxDelayMs,
      inPlaceMaxDelayMs: o.inPlaceMaxDelayMs,
      version: RESOLVER_VERSION,
      now,
      ...(series ? { outcomes: createOutcomeRecorder(series, now) } : {}),
    },
  });
  processor.start();
  const unregister = registerResolverState(() => processor.state());
  return {
    state: () => processor.state(),
    stop: async () => {
      unregister();
      // One deadline for every broker wait of the stop, so an unanswered broker cannot hold back the store's close
      // (its counter flush) that the caller runs next.
      const deadline = AbortSignal.timeout(o.brokerStopMs);
      await processor.stop(deadline);
      // Before the caller's store.close(), not after it: the series writes through the store's own Cosmos client,
      // which that close disposes. Bounded, so the counter flush behind it starts at most seriesStopMs later.
      if (series && (await untilStopped(series.close(), AbortSignal.timeout(o.seriesStopMs))) === STOPPED)
        log.warn(
          { seriesStopMs: o.seriesStopMs },
          'Resolver: the stored time-series flush did not end within its stop bound; given up (the last outcome-series points are missing from the charts; counters and rows are not affected)',
        );
      if (owned && (await untilStopped(owned.close().catch(() => undefined), deadline)) === STOPPED)
        log.warn({}, 'Resolver: closing the Service Bus client did not end within the stop deadline; given up (it ends with the process)');
    },
  };
}
