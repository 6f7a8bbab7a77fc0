// Test harness for the Resolver: the embedded Service Bus emulator with the topology provisioned through the
// real admin client, the embedded Cosmos server with a fresh store, a Resolver with test-friendly timings, and
// a sender that puts messages on the Resolver topic exactly as the forwarding rules deliver them.
import { randomUUID } from 'node:crypto';
import type { ServiceBusClient, ServiceBusReceivedMessage, ServiceBusSender } from '@azure/service-bus';
import { createNoopMeter, type Attributes, type Meter } from '@opentelemetry/api';
import { pino } from 'pino';
import { startEmulator, type RunningEmulator, type StartEmulatorOptions } from '../emulator/index.ts';
import { parseCatalog } from '@nimbus/sdk/catalog';
import { encodeBody, eventBody, Prop, SELF, Topic, type Catalog, type MessageType } from '@nimbus/sdk/contract';
import { boundedClose, createServiceBusClients, type ServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { startFaultProxy, type FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { closeSteps, type CloseStep } from '../lib/concurrency/closeSteps.ts';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { startResolver, type ResolverHandle, type ResolverOptions, type SettledEvent } from './index.ts';

export const testCatalog: Catalog = parseCatalog({
  endpoints: [
    { id: 'shop', produces: ['OrderPlaced'] },
    { id: 'crm', consumes: ['OrderPlaced'] },
  ],
  eventTypes: [{ id: 'OrderPlaced', sessionKey: 'orderId' }],
});

/**
 * An embedded Cosmos store with a Resolver on it (test timings, silent), for a test that brings its own broker and
 * hosts (the SDK's e2e harness): what reaches the Resolver topic on `client` is recorded in `store`. close() runs
 * every step (the Resolver's stop, the store, Cosmos) bounded and named, as ResolverHarness.close does (closeSteps):
 * a step that threw or hung (the Resolver's stop closes Service Bus links, whose close can hang when the broker
 * drops the connection) used to leave Cosmos listening and the file's process alive.
 */
export async function startStoreAndResolver(
  client: ServiceBusClient,
  database: string,
): Promise<{ store: MessageStore; cosmosEndpoint: string; close(stepBoundMs?: number): Promise<void> }> {
  const cosmos = await startEmbeddedCosmos({ port: 0 });
  const store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database });
  const resolver = startResolver({
    client,
    store,
    concurrency: 4,
    sessionIdleTimeoutMs: 300,
    budget: { baseDelayMs: 20, maxDelayMs: 200 },
    log: pino({ level: 'silent' }),
  });
  return {
    store,
    cosmosEndpoint: cosmos.endpoint,
    close: (stepBoundMs = CLOSE_STEP_BOUND_MS) =>
      closeSteps(
        [
          { name: 'Resolver stop', run: () => resolver.stop() },
          { name: 'store close', run: () => store.close() },
          { name: 'Cosmos close', run: () => cosmos.close() },
        ],
        stepBoundMs,
      ),
  };
}

/** A Meter that records counter adds, so tests can assert the instruments (no SDK is installed). */
export function recordingMeter(): { meter: Meter; counts: (name: string, match?: Attributes) => number } {
  const adds: Array<{ name: string; value: number; attrs: Attributes }> = [];
  const base = createNoopMeter();
  const meter: Meter = Object.assign(Object.create(base) as Meter, {
    createCounter: (name: string) => ({ add: (value: number, attrs: Attributes = {}) => adds.push({ name, value, attrs }) }),
  });
  return {
    meter,
    counts: (name, match = {}) =>
      adds
        .filter((a) => a.name === name && Object.entries(match).every(([k, v]) => a.attrs[k] === v))
        .reduce((n, a) => n + a.value, 0),
  };
}

export interface Sent {
  messageId: string;
  sessionId: string;
}

export interface WireMessage {
  type: MessageType | string;
  eventId?: string;
  sessionId?: string;
  messageId?: string;
  correlationId?: string;
  to?: string;
  from?: string;
  parentMessageId?: string;
  eventTypeId?: string;
  body?: string | Buffer;
  props?: Record<string, string | number | boolean>;
}

export class ResolverHarness {
  readonly settled: SettledEvent[] = [];
  readonly resolvers: ResolverHandle[] = [];
  readonly metrics = recordingMeter();
  #sender: ServiceBusSender | undefined;
  #proxy: FaultProxy | undefined;

  private constructor(
    readonly emulator: RunningEmulator,
    readonly clients: ServiceBusClients,
    readonly cosmos: EmbeddedCosmos,
    readonly store: MessageStore,
    readonly cosmosEndpoint: string,
  ) {}

  /** `emulator`: options of the embedded broker besides its port (a test's fault hooks, such as testDispositionHold). */
  static async start(
    options: { cosmosEndpoint?: (cosmos: EmbeddedCosmos) => Promise<string>; emulator?: Omit<StartEmulatorOptions, 'port'> } = {},
  ): Promise<ResolverHarness> {
    const emulator = await startEmulator({ ...options.emulator, port: 0 });
    const clients = createServiceBusClients(emulator.connectionString);
    const cosmos = await startEmbeddedCosmos({ port: 0 });
    const endpoint = options.cosmosEndpoint ? await options.cosmosEndpoint(cosmos) : cosmos.endpoint;
    const store = await createStore({ endpoint, key: cosmos.key, database: `r-${randomUUID().slice(0, 8)}` });
    const h = new ResolverHarness(emulator, clients, cosmos, store, endpoint);
    await provisionTopology(clients.admin, deriveTopology(testCatalog), {
      // The production lock duration: nothing here waits for a lock to expire (redeliveries are explicit
      // abandons), and a short lock lapses on a loaded machine, turning tests into at-least-once puzzles.
      subscriptionDefaults: { lockDuration: 'PT30S', maxDeliveryCount: 10 },
    });
    return h;
  }

  /**
   * A harness whose store reaches the embedded Cosmos server through a fault proxy, for faults injected at the
   * wire and round trips counted there. close() closes the proxy too.
   */
  static async startBehindProxy(): Promise<{ harness: ResolverHarness; proxy: FaultProxy }> {
    let proxy: FaultProxy | undefined;
    const harness = await ResolverHarness.start({
      cosmosEndpoint: async (cosmos) => {
        proxy = await startFaultProxy(cosmos.endpoint);
        return proxy.endpoint;
      },
    });
    harness.#proxy = proxy;
    return { harness, proxy: proxy! };
  }

  /** Starts a Resolver instance (fast budget: 20 ms base, 200 ms cap) on this harness's store unless given another. */
  resolver(over: Partial<ResolverOptions> = {}): ResolverHandle {
    const r = startResolver({
      client: this.clients.client,
      store: this.store,
      concurrency: 4,
      sessionIdleTimeoutMs: 300,
      budget: { baseDelayMs: 20, maxDelayMs: 200 },
      transientMaxDelayMs: 100,
      inPlaceMaxDelayMs: 100,
      log: pino({ level: 'silent' }),
      meter: this.metrics.meter,
      onSettled: (e) => this.settled.push(e),
      ...over,
    });
    this.resolvers.push(r);
    return r;
  }

  /** Sends one message to the Resolver topic as the forwarding rules would deliver it. */
  async send(m: WireMessage): Promise<Sent> {
    this.#sender ??= this.clients.client.createSender(Topic.Resolver);
    const messageId = m.messageId ?? randomUUID();
    const sessionId = m.sessionId ?? 's-1';
    const props: Record<string, string | number | boolean> = { [Prop.MessageType]: m.type, ...m.props };
    if (m.eventId !== undefined) props[Prop.EventId] = m.eventId;
    if (m.to !== undefined) props[Prop.To] = m.to;
    if (m.from !== undefined) props[Prop.From] = m.from;
    props[Prop.ParentMessageId] = m.parentMessageId ?? SELF;
    props[Prop.EventTypeId] = m.eventTypeId ?? 'OrderPlaced';
    const body = m.body ?? encodeBody({});
    await this.#sender.sendMessages({
      body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
      messageId,
      sessionId,
      correlationId: m.correlationId,
      applicationProperties: props,
    });
    return { messageId, sessionId };
  }

  /** Waits until `count` settlements of this message id were recorded; returns them. */
  async settledOf(messageId: string, count = 1, timeoutMs = 15_000): Promise<SettledEvent[]> {
    return eventually(() => {
      const got = this.settled.filter((s) => s.messageId === messageId);
      return got.length >= count ? got : undefined;
    }, `${count} settlement(s) of ${messageId}`, timeoutMs);
  }

  /** Waits until this message id has a settlement that landed (a failed one means the broker delivers it again). */
  async settledOk(messageId: string, timeoutMs = 30_000): Promise<SettledEvent> {
    return eventually(() => this.settled.find((s) => s.messageId === messageId && s.ok), `a settlement of ${messageId} that landed`, timeoutMs);
  }

  async deadLetters(max = 20, waitMs = 1000): Promise<ServiceBusReceivedMessage[]> {
    const receiver = this.clients.client.createReceiver(Topic.Resolver, Topic.Resolver, { subQueueType: 'deadLetter' });
    try {
      const out: ServiceBusReceivedMessage[] = [];
      for (;;) {
        const batch = await receiver.receiveMessages(max, { maxWaitTimeInMs: waitMs });
        if (batch.length === 0) return out;
        for (const m of batch) {
          out.push(m);
          await receiver.completeMessage(m);
        }
      }
    } finally {
      // Bounded: a close met by a dropped connection never ends by itself (boundedClose), and the test with it.
      await boundedClose('closing the harness dead-letter receiver', () => receiver.close(), { timeoutMs: 10_000 });
    }
  }

  /**
   * Closes every part, each step bounded by `stepBoundMs` and run even when an earlier one threw or hung, then
   * throws naming the steps that did (closeSteps): a step that hung used to hold the servers after it open, and
   * the test file then never ended.
   */
  async close(stepBoundMs = CLOSE_STEP_BOUND_MS): Promise<void> {
    const steps: CloseStep[] = this.resolvers.reverse().map((r, i) => ({ name: `resolver ${i} stop`, run: () => r.stop() }));
    await closeSteps(
      [
        ...steps,
        { name: 'sender close', run: () => this.#sender?.close() },
        // The emulator first: a receiver attach still pending in acceptNextSession holds a 60 s timer in rhea-promise
        // that a clean client close does not clear, but a dropped connection does.
        { name: 'emulator close', run: () => this.emulator.close() },
        { name: 'Service Bus clients close', run: () => this.clients.close() },
        { name: 'store close', run: () => this.store.close() },
        { name: 'fault proxy close', run: () => this.#proxy?.close() },
        { name: 'Cosmos close', run: () => this.cosmos.close() },
      ],
      stepBoundMs,
    );
  }
}

/**
 * How long one step of a harness's close may take before it is named and given up. Far above what each needs (a
 * Resolver's stop is bounded at 5 s + 3 s, the store's close at a few 5 s budgets), far below the runner's 20-minute
 * file time-out.
 */
export const CLOSE_STEP_BOUND_MS = 60_000;

export const orderBody = (payload: Record<string, unknown>): string => eventBody('OrderPlaced', payload);
export const errorBody = (text: string, type = 'Error'): string =>
  encodeBody({ EventContent: null, ErrorContent: { ErrorText: text, ErrorType: type } });

export async function withHarness(
  body: (h: ResolverHarness) => Promise<void>,
  options?: Parameters<typeof ResolverHarness.start>[0],
): Promise<void> {
  const h = await ResolverHarness.start(options);
  try {
    await body(h);
  } finally {
    await h.close();
  }
}

export async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
