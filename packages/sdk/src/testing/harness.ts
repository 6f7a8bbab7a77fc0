// The adapter author's test harness: a Service Bus (the embedded emulator, or any namespace by connection string),
// the catalog's topology provisioned, the author's hosts running on it, and the outcome of each event as the
// Resolver would record it. Everything goes through the real @azure/service-bus client: what passes here passes
// against Azure Service Bus, apart from timing.
import { randomUUID } from 'node:crypto';
import type {
  ServiceBusClient,
  ServiceBusMessage,
  ServiceBusMessageBatch,
  ServiceBusSender,
} from '@azure/service-bus';
import { parseCatalog } from '../contract/catalog.ts';
import type { Catalog } from '../contract/catalogSchema.ts';
import { Topic } from '../contract/properties.ts';
import { ResolutionStatus } from '../contract/statuses.ts';
import type { HandlerRegistry } from '../handlers.ts';
import { HandoffClient } from '../handoffClient.ts';
import { Publisher, sessionKeysFromCatalog, type PublishedEvent, type PublishOptions } from '../publisher.ts';
import { createServiceBusClients, type ServiceBusClients } from '../servicebus/index.ts';
import { boundedClose } from '../servicebus/boundedClose.ts';
import { SubscriberHost, type SubscriberHostOptions } from '../subscriberHost.ts';
import { deriveTopology } from '../topology/derive.ts';
import { provisionTopology } from '../topology/provision.ts';
import { ensureObserverSubscription, OutcomeReader, type OutcomeWait } from './outcomeReader.ts';
import type { EventOutcome } from './outcomes.ts';

/**
 * How long close() waits for the close of one of the harness's own senders and outcome receivers. A close met by a
 * dropped connection never ends by itself (servicebus/boundedClose.ts); unbounded, it held the test's ending (and
 * with it the test file) for ever. The publishers, hosts, handoff client and clients bound their own closes.
 */
const HARNESS_CLOSE_TIMEOUT_MS = 10_000;

/** What the harness needs of an embedded emulator (the NimBus repository's `emulator/`). */
export interface EmbeddedServiceBus {
  connectionString: string;
  close(): Promise<void>;
}

export interface TestHarnessOptions {
  /** The catalog (parsed, or as read from JSON): its topology is provisioned and its session keys used. */
  catalog: Catalog | unknown;
  /**
   * The namespace to use. Default: NIMBUS_SERVICEBUS_CONNECTION_STRING when set, else an embedded emulator
   * started for the harness (`emulator`, or the NimBus repository's own when the harness runs inside it).
   */
  connectionString?: string;
  /**
   * Starts an embedded Service Bus for the harness (closed with it), used only when there is no connection string
   * (neither `connectionString` nor NIMBUS_SERVICEBUS_CONNECTION_STRING).
   */
  emulator?: () => Promise<EmbeddedServiceBus>;
  /** Provision the catalog's topology first (idempotent). Default true. */
  provision?: boolean;
  /** Client operation timeout, ms. Default 4 s, so a stopping host never waits long on the broker. */
  operationTimeoutMs?: number;
}

export type HarnessHostOptions = Partial<Omit<SubscriberHostOptions, 'client' | 'endpointId' | 'handlers'>> & {
  /** Also run the endpoint's deferred processor (replays parked events when a session unblocks). Default true. */
  deferredProcessor?: boolean;
};

/** Where an outcome is and what to wait for; `endpointId` is needed when several endpoints consume the type. */
export type OutcomeQuery = OutcomeWait;

interface ScheduledRecord {
  topic: string;
  sequenceNumbers: Awaited<ReturnType<ServiceBusSender['scheduleMessages']>>;
  messages: ServiceBusMessage[];
  at: Date;
  advanced: boolean;
}

// Resolved by the NimBus repository's tsconfig (and absent from an adapter's install): a computed specifier keeps
// the package's own compilation from looking for it.
const REPOSITORY_EMULATOR = '@nimbus/emulator';

async function repositoryEmulator(): Promise<EmbeddedServiceBus> {
  let mod: { startEmulator?: (o: { port: number }) => Promise<EmbeddedServiceBus> };
  try {
    mod = (await import(REPOSITORY_EMULATOR)) as typeof mod;
  } catch {
    throw new Error(
      'createTestHarness needs a Service Bus: pass { connectionString }, set NIMBUS_SERVICEBUS_CONNECTION_STRING ' +
        '(e.g. to what `npm run emulator` prints in the NimBus repository), or pass { emulator }',
    );
  }
  if (typeof mod.startEmulator !== 'function') throw new Error(`${REPOSITORY_EMULATOR} has no startEmulator()`);
  return mod.startEmulator({ port: 0 });
}

export class TestHarness implements AsyncDisposable {
  readonly catalog: Catalog;
  readonly clients: ServiceBusClients;
  readonly connectionString: string;
  /** The Resolver outcomes seen so far (every row, for assertions over a whole run). */
  readonly outcomes: OutcomeReader;
  private readonly stops: Array<() => Promise<void>> = [];
  private readonly scheduled: ScheduledRecord[] = [];
  private readonly senders = new Map<string, ServiceBusSender>();
  private readonly publishers = new Map<string, Publisher>();
  private readonly observer: string;
  private readonly embedded: EmbeddedServiceBus | undefined;
  private handoff: HandoffClient | undefined;
  private closed = false;

  /** Use createTestHarness. */
  constructor(catalog: Catalog, connectionString: string, embedded: EmbeddedServiceBus | undefined, operationTimeoutMs: number) {
    this.catalog = catalog;
    this.connectionString = connectionString;
    this.embedded = embedded;
    this.clients = createServiceBusClients(connectionString, { client: { retryOptions: { timeoutInMs: operationTimeoutMs } } });
    this.observer = `harness-${randomUUID().slice(0, 8)}`;
    this.outcomes = new OutcomeReader({ client: this.clients.client, subscription: this.observer, closeTimeoutMs: HARNESS_CLOSE_TIMEOUT_MS });
  }

  /** @internal */
  async open(provision: boolean, testTimings: boolean): Promise<void> {
    if (provision) {
      await provisionTopology(
        this.clients.admin,
        deriveTopology(this.catalog),
        testTimings ? { subscriptionDefaults: { lockDuration: 'PT5S', maxDeliveryCount: 10 } } : {},
      );
    }
    await ensureObserverSubscription(this.clients.admin, this.observer, testTimings ? { lockDuration: 'PT5S' } : {});
    this.outcomes.start();
  }

  get client(): ServiceBusClient {
    return this.clients.client;
  }

  /**
   * Runs a subscriber host for `endpointId` with `handlers` (and its deferred processor), with test-friendly
   * timings; resolves once it has checked its subscriptions and started. Stopped when the harness closes.
   */
  async host(endpointId: string, handlers: HandlerRegistry, options: HarnessHostOptions = {}): Promise<SubscriberHost> {
    const { deferredProcessor = true, ...hostOptions } = options;
    const host = new SubscriberHost({
      maxConcurrentSessions: 4,
      sessionIdleTimeoutMs: 500,
      backoff: { initialMs: 50, maxMs: 500 },
      ...hostOptions,
      deferredProcessor: deferredProcessor
        ? { drainWaitMs: 300, triggerWaitMs: 1000, backoff: { initialMs: 50, maxMs: 500 } }
        : false,
      endpointId,
      handlers,
      client: this.recordingClient(),
    });
    this.stops.push(() => host.stop());
    await host.start();
    return host;
  }

  /** A publisher for `endpointId` with the catalog's session keys; closed with the harness. */
  publisher(endpointId: string): Publisher {
    const p = new Publisher({ client: this.client, endpointId, sessionKeys: sessionKeysFromCatalog(this.catalog) });
    this.stops.push(() => p.close());
    return p;
  }

  /** Publishes one event as `endpointId`. Its outcome: `outcome(published.messageId, { endpointId: consumer })`. */
  async publish(endpointId: string, eventTypeId: string, payload: unknown, options: PublishOptions = {}): Promise<PublishedEvent> {
    let p = this.publishers.get(endpointId);
    if (!p) {
      p = this.publisher(endpointId);
      this.publishers.set(endpointId, p);
    }
    return p.publish(eventTypeId, payload, options);
  }

  /**
   * The event's row as the Resolver would record it, once it has an outcome (by default anything but plain
   * Pending; `status` to wait for one). `ref` is the event id, or the message id of the publish.
   */
  outcome(ref: string | PublishedEvent, query: OutcomeQuery = {}): Promise<EventOutcome> {
    return this.outcomes.outcome(typeof ref === 'string' ? ref : ref.messageId, query);
  }

  /**
   * Brings every retry the hosts scheduled (a retry policy's RetryRequest) forward to now: each is cancelled and
   * sent again at once, so a test need not wait out a policy's delays. Returns how many were advanced.
   *
   * A host reports a failure to the Resolver and schedules its retry as two steps, so a test that has just seen
   * the Failed outcome may be a moment ahead of the schedule: `expect` waits (up to `timeoutMs`, default 10 s) until
   * at least that many retries are scheduled and not yet advanced.
   */
  async advanceRetries(options: { expect?: number; timeoutMs?: number } = {}): Promise<number> {
    const due = () => this.scheduled.filter((r) => !r.advanced && r.at.getTime() > Date.now());
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    while (due().reduce((n, r) => n + r.messages.length, 0) < (options.expect ?? 0)) {
      if (Date.now() > deadline)
        throw new Error(`advanceRetries: expected ${options.expect} scheduled retries, found ${due().length}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    let n = 0;
    for (const r of this.scheduled) {
      if (r.advanced) continue;
      r.advanced = true;
      if (r.at.getTime() <= Date.now()) continue; // due already: the broker has enqueued it
      const sender = this.sender(r.topic);
      await sender.cancelScheduledMessages(r.sequenceNumbers);
      await sender.sendMessages(r.messages.map((m) => ({ ...m, scheduledEnqueueTimeUtc: undefined })));
      n += r.messages.length;
    }
    return n;
  }

  /**
   * Completes the pending handoff of `ref` (as an agent would, through the Manager); the session moves on. The
   * command names the delivery that handed the event off (HandedOffByMessageId), as the Manager names it from the
   * row, so it settles that handoff only: not a later one of the same event, nor one whose block is over.
   */
  async completeHandoff(ref: string | PublishedEvent, options: { endpointId?: string; result?: unknown } = {}): Promise<void> {
    const row = await this.pendingHandoff(ref, options.endpointId);
    await this.handoffClient().complete(this.coordinates(row), options.result);
  }

  /** Fails the pending handoff of `ref` with `errorText` (and `errorType`), naming it as completeHandoff does. */
  async failHandoff(ref: string | PublishedEvent, errorText: string, options: { endpointId?: string; errorType?: string } = {}): Promise<void> {
    const row = await this.pendingHandoff(ref, options.endpointId);
    await this.handoffClient().fail(this.coordinates(row), errorText, options.errorType);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stop of this.stops.reverse()) await stop().catch(() => undefined);
    await this.outcomes.stop();
    await this.handoff?.close().catch(() => undefined);
    for (const s of this.senders.values())
      await boundedClose('closing a test harness sender', () => s.close(), { timeoutMs: HARNESS_CLOSE_TIMEOUT_MS }).catch(() => undefined);
    await this.clients.admin.deleteSubscription(Topic.Resolver, this.observer).catch(() => undefined);
    await this.clients.close().catch(() => undefined);
    await this.embedded?.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async pendingHandoff(ref: string | PublishedEvent, endpointId: string | undefined): Promise<EventOutcome> {
    return this.outcome(ref, { status: ResolutionStatus.Pending, ...(endpointId !== undefined ? { endpointId } : {}) });
  }

  private coordinates(row: EventOutcome) {
    return {
      endpointId: row.endpointId,
      eventId: row.eventId,
      sessionId: row.sessionId,
      messageId: row.messageId,
      ...(row.eventTypeId !== undefined ? { eventTypeId: row.eventTypeId } : {}),
      ...(row.handoff?.handedOffByMessageId !== undefined ? { handedOffByMessageId: row.handoff.handedOffByMessageId } : {}),
    };
  }

  private handoffClient(): HandoffClient {
    this.handoff ??= new HandoffClient(this.client);
    return this.handoff;
  }

  private sender(topic: string): ServiceBusSender {
    let s = this.senders.get(topic);
    if (!s) {
      s = this.client.createSender(topic);
      this.senders.set(topic, s);
    }
    return s;
  }

  /**
   * The client the harness's hosts use: the real one, whose senders also note what they schedule, so that
   * advanceRetries can bring it forward.
   */
  private recordingClient(): ServiceBusClient {
    const scheduled = this.scheduled;
    const real = this.client;
    return new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'createSender') return Reflect.get(target, prop, receiver) as unknown;
        return (topic: string, ...rest: unknown[]) => {
          const sender = (target.createSender as (t: string, ...r: unknown[]) => ServiceBusSender).call(target, topic, ...rest);
          return new Proxy(sender, {
            get(s, p, r) {
              if (p !== 'scheduleMessages') return Reflect.get(s, p, r) as unknown;
              return async (messages: ServiceBusMessage | ServiceBusMessage[] | ServiceBusMessageBatch, at: Date, ...more: unknown[]) => {
                const seqs = await (s.scheduleMessages as (...a: unknown[]) => ReturnType<ServiceBusSender['scheduleMessages']>).call(s, messages, at, ...more);
                if (Array.isArray(messages) || !('count' in messages)) {
                  scheduled.push({ topic, sequenceNumbers: seqs, messages: Array.isArray(messages) ? messages : [messages as ServiceBusMessage], at, advanced: false });
                }
                return seqs;
              };
            },
          });
        };
      },
    });
  }
}

/**
 * Starts a harness: a Service Bus, the catalog provisioned, and a reader of Resolver outcomes. Close it (or use
 * `await using`) when the test ends.
 */
export async function createTestHarness(options: TestHarnessOptions): Promise<TestHarness> {
  const catalog = parseCatalog(options.catalog);
  let embedded: EmbeddedServiceBus | undefined;
  // connectionString, else the environment, else an emulator (`emulator`, or the repository's): a namespace named
  // explicitly or in the environment wins over an emulator factory, as documented.
  let connectionString = options.connectionString ?? process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
  if (!connectionString) {
    embedded = await (options.emulator ?? repositoryEmulator)();
    connectionString = embedded.connectionString;
  }
  const harness = new TestHarness(catalog, connectionString, embedded, options.operationTimeoutMs ?? 4_000);
  try {
    await harness.open(options.provision ?? true, embedded !== undefined);
  } catch (err) {
    await harness.close();
    throw err;
  }
  return harness;
}
