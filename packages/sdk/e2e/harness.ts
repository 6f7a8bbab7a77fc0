// End-to-end harness: the embedded emulator, the topology provisioned from a small catalog through the real admin
// client, SDK hosts on the real @azure/service-bus client, and readers for what reaches the Resolver topic.
import { after } from 'node:test';
import type { ServiceBusReceivedMessage, ServiceBusSender } from '@azure/service-bus';
import { startEmulator } from '../../../emulator/index.ts';
import type { RunningEmulator, StartEmulatorOptions } from '../../../emulator/index.ts';
import { parseCatalog } from '@nimbus/sdk/catalog';
import type { Catalog, SessionState } from '@nimbus/sdk/contract';
import {
  decodeBody,
  decodeSessionState,
  encodeBody,
  eventBody,
  HEARTBEAT_EVENT_TYPE_ID,
  MessageType,
  Prop,
  Topic,
} from '@nimbus/sdk/contract';
import type { MessageContent } from '@nimbus/sdk/contract';
import { boundedClose, createServiceBusClients } from '@nimbus/sdk/servicebus';
import type { ServiceBusClients } from '@nimbus/sdk/servicebus';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { DeferredProcessor } from '@nimbus/sdk';
import type { DeferredProcessorOptions } from '@nimbus/sdk';
import type { LifecycleObserver } from '@nimbus/sdk';
import { Publisher, sessionKeysFromCatalog } from '@nimbus/sdk';
import { SubscriberHost } from '@nimbus/sdk';
import type { SubscriberHostOptions } from '@nimbus/sdk';

export const demoCatalog = parseCatalog({
  endpoints: [
    { id: 'shop', produces: ['OrderPlaced', 'CustomerUpdated'] },
    // billing consumes OrderPlaced and also produces it (a re-publish to crm): its responses about OrderPlaced must
    // not leak through its own OrderPlaced forwarder.
    { id: 'billing', produces: ['InvoiceIssued', 'OrderPlaced'], consumes: ['OrderPlaced'] },
    // crm alone consumes CustomerUpdated: the single-consumer flows use it, so one Resolver session holds one story.
    { id: 'crm', consumes: ['OrderPlaced', 'InvoiceIssued', 'CustomerUpdated'] },
  ],
  eventTypes: [
    { id: 'OrderPlaced', sessionKey: 'orderId' },
    { id: 'InvoiceIssued', sessionKey: 'orderId' },
    { id: 'CustomerUpdated', sessionKey: 'customerId' },
  ],
});

export interface ResolverRecord {
  type: string;
  props: Record<string, unknown>;
  content: MessageContent;
  messageId: string;
  correlationId?: string;
  sessionId?: string;
  enqueuedTime?: Date;
}

export class Harness {
  private readonly hosts: Array<{ stop(): Promise<void> }> = [];
  private readonly senders = new Map<string, ServiceBusSender>();

  private constructor(
    readonly emulator: RunningEmulator,
    readonly clients: ServiceBusClients,
    readonly catalog: Catalog,
  ) {}

  /** `emulatorOptions`: test-only emulator options (a test that makes the broker leave settlements unanswered). */
  static async start(
    catalog: Catalog = demoCatalog,
    emulatorOptions: Pick<StartEmulatorOptions, 'testDispositionHold'> = {},
  ): Promise<Harness> {
    const emulator = await startEmulator({ ...emulatorOptions, port: 0 });
    // A short operation timeout: an acceptNextSession still waiting on the broker when a host stops cannot be
    // aborted by the client and keeps the process alive until this timeout (60 s by default).
    const clients = createServiceBusClients(emulator.connectionString, {
      client: { retryOptions: { timeoutInMs: 4000 } },
    });
    const h = new Harness(emulator, clients, catalog);
    try {
      await provisionTopology(clients.admin, deriveTopology(catalog), {
        subscriptionDefaults: { lockDuration: 'PT5S', maxDeliveryCount: 10 },
      });
    } catch (error) {
      await h.close();
      throw error;
    }
    return h;
  }

  get client() {
    return this.clients.client;
  }

  publisher(endpointId: string): Publisher {
    const p = new Publisher({
      client: this.client,
      endpointId,
      sessionKeys: sessionKeysFromCatalog(this.catalog),
    });
    this.hosts.push({ stop: () => p.close() });
    return p;
  }

  private readonly starts = new Map<SubscriberHost, Promise<void>>();

  /** Resolves when the host's start() has (checked its subscriptions and) started its workers. */
  async started(host: SubscriberHost): Promise<void> {
    await this.starts.get(host);
  }

  /** Starts a subscriber host with test-friendly timings. */
  host(options: Omit<SubscriberHostOptions, 'client'>): SubscriberHost {
    const host = new SubscriberHost({
      maxConcurrentSessions: 2,
      sessionIdleTimeoutMs: 400,
      backoff: { initialMs: 50, maxMs: 500 },
      // The tests run their processors through deferredProcessor() (their timings, their onPass).
      deferredProcessor: false,
      ...options,
      client: this.client,
    });
    // Started in the background (the subscription check takes a peek); a failed start fails the next stop, so the
    // test that made the host sees it.
    const started = host.start();
    started.catch(() => undefined);
    this.starts.set(host, started);
    this.hosts.push({
      stop: async () => {
        await host.stop({ waitForPendingAccepts: true });
        await started;
      },
    });
    return host;
  }

  deferredProcessor(endpointId: string, options: Partial<DeferredProcessorOptions> = {}): DeferredProcessor {
    const p = new DeferredProcessor({
      drainWaitMs: 300,
      triggerWaitMs: 1000,
      backoff: { initialMs: 50, maxMs: 500 },
      ...options,
      client: this.client,
      endpointId,
    });
    p.start();
    this.hosts.push(p);
    return p;
  }

  async send(
    topic: string,
    message: {
      body?: string;
      sessionId?: string;
      messageId?: string;
      correlationId?: string;
      props: Record<string, string | number>;
      /** The message's content type; none when absent. */
      contentType?: string;
      /** Enqueued by the broker at this time instead of now. */
      scheduledEnqueueTimeUtc?: Date;
    },
  ): Promise<void> {
    let sender = this.senders.get(topic);
    if (!sender) {
      sender = this.client.createSender(topic);
      this.senders.set(topic, sender);
    }
    await sender.sendMessages({
      body: Buffer.from(message.body ?? encodeBody({}), 'utf8'),
      sessionId: message.sessionId,
      messageId: message.messageId ?? crypto.randomUUID(),
      correlationId: message.correlationId,
      applicationProperties: message.props,
      ...(message.contentType !== undefined ? { contentType: message.contentType } : {}),
      ...(message.scheduledEnqueueTimeUtc
        ? { scheduledEnqueueTimeUtc: message.scheduledEnqueueTimeUtc }
        : {}),
    });
  }

  /**
   * What else reaches a Resolver session from the given endpoints, proven by a positive signal instead of a quiet
   * window: a heartbeat is sent into each endpoint's session behind everything already there, and the Resolver
   * session is read until every heartbeat is answered. An endpoint handles a session in order and settles each
   * delivery in full before the next, so by then everything earlier in those sessions has been handled and answered.
   * With `scheduledWithinMs` a second round of heartbeats follows, scheduled that far ahead once the first round is
   * answered: a message the endpoint scheduled (a RetryRequest) with a delay up to that long is enqueued before it,
   * so it too would have arrived. Returns what arrived besides the markers (the hosts must be running).
   */
  async resolverRestAfterMarker(
    sessionId: string,
    endpoints: readonly string[],
    options: { scheduledWithinMs?: number; timeoutMs?: number } = {},
  ): Promise<ResolverRecord[]> {
    const markers = new Set<string>();
    const rest: ResolverRecord[] = [];
    const round = async (at?: Date) => {
      const ids = endpoints.map((endpoint) => ({ endpoint, eventId: `marker-${crypto.randomUUID()}` }));
      for (const { endpoint, eventId } of ids) {
        markers.add(eventId);
        await this.send(endpoint, {
          sessionId,
          body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: new Date().toISOString() }),
          props: {
            [Prop.To]: endpoint,
            [Prop.From]: 'Manager',
            [Prop.MessageType]: MessageType.EventRequest,
            [Prop.EventId]: eventId,
            [Prop.EventTypeId]: HEARTBEAT_EVENT_TYPE_ID,
            [Prop.OriginatingFrom]: 'Manager',
          },
          ...(at ? { scheduledEnqueueTimeUtc: at } : {}),
        });
      }
      const waiting = new Set(ids.map((i) => i.eventId));
      const deadline = Date.now() + (options.timeoutMs ?? 20_000) + (at ? at.getTime() - Date.now() : 0);
      while (waiting.size > 0) {
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(`Resolver session ${sessionId}: the marker heartbeats were not answered`);
        for (const r of await this.resolver(sessionId, 1, left)) {
          const eventId = String(r.props[Prop.EventId]);
          if (!markers.has(eventId)) rest.push(r);
          else if (r.type === MessageType.ResolutionResponse) waiting.delete(eventId);
        }
      }
    };
    await round();
    if (options.scheduledWithinMs !== undefined)
      await round(new Date(Date.now() + options.scheduledWithinMs));
    return rest;
  }

  /** A Manager command as the console sends it: to the Manager topic, To = endpoint; the broker stamps From. */
  async managerCommand(
    endpointId: string,
    type: string,
    /** `messageId`: the command's own (a copy of an earlier command keeps it); a fresh one by default. */
    target: {
      eventId: string;
      sessionId: string;
      eventTypeId?: string;
      parentMessageId?: string;
      messageId?: string;
    },
    body?: string,
  ): Promise<void> {
    await this.send(Topic.Manager, {
      sessionId: target.sessionId,
      body,
      ...(target.messageId !== undefined ? { messageId: target.messageId } : {}),
      props: {
        [Prop.To]: endpointId,
        [Prop.MessageType]: type,
        [Prop.EventId]: target.eventId,
        ...(target.eventTypeId ? { [Prop.EventTypeId]: target.eventTypeId } : {}),
        [Prop.ParentMessageId]: target.parentMessageId ?? 'self',
        [Prop.RetryCount]: 0,
      },
    });
  }

  /**
   * Reads `count` messages of one Resolver session, in order, completing them. Fails naming what arrived when
   * fewer come within the timeout.
   */
  async resolver(sessionId: string, count: number, timeoutMs = 15_000): Promise<ResolverRecord[]> {
    const out: ResolverRecord[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < count && Date.now() < deadline) {
      let receiver;
      try {
        receiver = await this.client.acceptSession(Topic.Resolver, Topic.Resolver, sessionId);
      } catch {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      try {
        while (out.length < count && Date.now() < deadline) {
          const batch = await receiver.receiveMessages(count - out.length, {
            maxWaitTimeInMs: Math.min(1000, Math.max(50, deadline - Date.now())),
          });
          for (const m of batch) {
            out.push(toRecord(m));
            await receiver.completeMessage(m);
          }
        }
      } finally {
        await closeBounded('a harness receiver', receiver);
      }
    }
    if (out.length < count)
      throw new Error(
        `Resolver session ${sessionId}: expected ${count} messages, got ${out.length}: ${out.map((r) => r.type).join(', ')}`,
      );
    return out;
  }

  /** Whatever else is in a Resolver session right now (briefly waits), to assert nothing more arrived. */
  async resolverRest(sessionId: string, waitMs = 700): Promise<ResolverRecord[]> {
    const out: ResolverRecord[] = [];
    let receiver;
    try {
      receiver = await this.client.acceptSession(Topic.Resolver, Topic.Resolver, sessionId);
    } catch {
      return out;
    }
    try {
      for (;;) {
        const batch = await receiver.receiveMessages(10, { maxWaitTimeInMs: waitMs });
        if (batch.length === 0) break;
        for (const m of batch) {
          out.push(toRecord(m));
          await receiver.completeMessage(m);
        }
      }
    } finally {
      await closeBounded('a harness receiver', receiver);
    }
    return out;
  }

  /** The session state of {E}/{E} (the host must not hold the session: stop it first, or let it go idle). */
  async sessionState(endpointId: string, sessionId: string): Promise<SessionState> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const receiver = await this.client.acceptSession(endpointId, endpointId, sessionId);
        try {
          return decodeSessionState(await receiver.getSessionState());
        } finally {
          await closeBounded('a harness receiver', receiver);
        }
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async deadLetters(
    topic: string,
    subscription: string,
    max = 10,
    waitMs = 1000,
  ): Promise<ServiceBusReceivedMessage[]> {
    const receiver = this.client.createReceiver(topic, subscription, { subQueueType: 'deadLetter' });
    try {
      const out = await receiver.receiveMessages(max, { maxWaitTimeInMs: waitMs });
      for (const m of out) await receiver.completeMessage(m);
      return out;
    } finally {
      await closeBounded('a harness receiver', receiver);
    }
  }

  /** Waits until the dead-letter queue of `topic/subscription` has something, and takes (completes) what it has. */
  awaitDeadLetters(topic: string, subscription: string): Promise<ServiceBusReceivedMessage[]> {
    return eventually(async () => {
      const d = await this.deadLetters(topic, subscription, 10, 300);
      return d.length > 0 ? d : undefined;
    }, 'the dead letter');
  }

  async close(): Promise<void> {
    for (const h of this.hosts.reverse()) await h.stop().catch(() => undefined);
    for (const s of this.senders.values()) await closeBounded('a harness sender', s).catch(() => undefined);
    await this.clients.close().catch(() => undefined);
    await this.emulator.close();
  }
}

/**
 * How long the harness waits for the close of a receiver or sender of its own. A close met by a dropped connection
 * never ends by itself (rhea-promise 3.0.3, @nimbus/sdk/servicebus boundedClose): unbounded, it stalled the whole test
 * file until the runner's 20 min file timeout. Well above a healthy close on a loaded machine.
 */
export const HARNESS_CLOSE_TIMEOUT_MS = 10_000;

/**
 * Closes `part`, waiting at most HARNESS_CLOSE_TIMEOUT_MS; a close that fails in time still throws, one given up is
 * said on stderr (a test that then fails shows why its ending took the bound).
 */
export async function closeBounded(what: string, part: { close(): Promise<void> }): Promise<void> {
  await boundedClose(`closing ${what}`, () => part.close(), {
    timeoutMs: HARNESS_CLOSE_TIMEOUT_MS,
    logger: { warn: (_details, message) => void process.stderr.write(`harness: ${message}\n`) },
  });
}

function toRecord(m: ServiceBusReceivedMessage): ResolverRecord {
  const props = { ...(m.applicationProperties ?? {}) } as Record<string, unknown>;
  return {
    type: String(props[Prop.MessageType]),
    props,
    content: decodeBody(m.body).content,
    messageId: String(m.messageId),
    correlationId: m.correlationId === undefined ? undefined : String(m.correlationId),
    sessionId: m.sessionId,
    enqueuedTime: m.enqueuedTimeUtc,
  };
}

export const customerBody = (payload: Record<string, unknown>) => eventBody('CustomerUpdated', payload);

/** Runs a test body with a fresh harness, always closing it. */
export async function withHarness(
  body: (h: Harness) => Promise<void>,
  catalog?: Catalog,
  emulatorOptions?: Pick<StartEmulatorOptions, 'testDispositionHold'>,
): Promise<void> {
  const h = await Harness.start(catalog, emulatorOptions);
  try {
    await body(h);
  } finally {
    await h.close();
  }
}

/** Waits until `probe` returns a value (not undefined), or fails after the timeout. */
export async function eventually<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * For a file that cuts broker connections: ends its process once its results are out. @azure/service-bus keeps an
 * interrupted call's 60 s timer and its retries alive after the receiver and the client are closed, so the process
 * would stay up for minutes after its tests; the 5 s timer is unref'd, so a process with nothing left open exits
 * sooner by itself. Such a process can instead spin at 100% CPU for ever in Node 20's exit-time handle cleanup (gdb:
 * uv_run under Environment::CleanupHandles, from FreeEnvironment): a socket request that a reset connection left
 * pending never completes. Exiting from the 'exit' event, once every result is written, skips that cleanup
 * (process.exit there goes straight to the real exit). Call it at the top of the file.
 */
export function endProcessAfterResults(): void {
  after(() => {
    setTimeout(() => process.exit(), 5_000).unref();
  });
  process.on('exit', (code) => process.exit(code));
}

/** 'stopped' when `stop` resolves within `ms`, else 'hung' (without waiting for it any longer). */
export async function stopsWithin(stop: () => Promise<void>, ms: number): Promise<'stopped' | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      stop().then(() => 'stopped' as const),
      new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A lifecycle observer that logs `hook:MessageType[:detail]` per call, in order. */
export function recorder(): { events: string[]; observer: LifecycleObserver } {
  const events: string[] = [];
  return {
    events,
    observer: {
      onMessageReceived: (m) => void events.push(`received:${m.messageType}`),
      onMessageCompleted: (m) => void events.push(`completed:${m.messageType}`),
      onMessageFailed: (m, e) => void events.push(`failed:${m.messageType}:${(e as Error)?.name}`),
      onMessageDeadLettered: (m, reason) => void events.push(`deadLettered:${m.messageType}:${reason}`),
    },
  };
}

/** `Type:label` per record, the label found by EventId from the payload field `n` of the event's first copy. */
export function story(records: ResolverRecord[]): string[] {
  const labels = new Map<unknown, string>();
  for (const r of records) {
    const json = r.content.EventContent?.EventJson;
    if (!json || labels.has(r.props.EventId)) continue;
    try {
      const n = (JSON.parse(json) as { n?: unknown }).n;
      if (n !== undefined) labels.set(r.props.EventId, `E${String(n)}`);
    } catch {
      // not a labelled payload
    }
  }
  return records.map((r) => `${r.type}:${labels.get(r.props.EventId) ?? '?'}`);
}

/**
 * The Resolver session split into requests (audit copies, in arrival order) and responses (in the order the
 * endpoint produced them). Across the two the interleaving depends on timing, within each it does not.
 */
export function storyOf(records: ResolverRecord[]): { requests: string[]; responses: string[] } {
  const s = story(records);
  return {
    requests: s.filter((x) => !x.includes('Response:')),
    responses: s.filter((x) => x.includes('Response:')),
  };
}
