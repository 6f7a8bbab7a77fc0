// A fake Service Bus client for the subscriber host's unit tests (subscriberHost.test.ts, stopWalk.test.ts): one
// session receiver and a sender whose calls a test answers or leaves hanging, and a host over it with the real
// dispatcher and session port and a logger whose lines the test reads. One fake instead of a copy per test file.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { ServiceBusClient, ServiceBusMessage } from '@azure/service-bus';
import { eventBody } from '../contract/index.ts';
import type { CircuitBreaker } from '../circuitBreaker.ts';
import { HandlerRegistry, type EventHandler } from '../handlers.ts';
import { SubscriberHost } from '../subscriberHost.ts';
import type { RetryPolicies } from '../retryPolicies.ts';
import type { DeliveryResult } from '../dispatcher.ts';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A logger whose lines the test reads. */
export function capturedLogger(onLine?: (line: LogLine) => void) {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) {
        const line = JSON.parse(text) as LogLine;
        lines.push(line);
        onLine?.(line);
      }
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, stream) };
}

/** Never answers; rejects when the caller gives the call up through its signal, as the client does. */
export function hangUntilAborted(signal?: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

export interface FakeBrokerOptions {
  deliveryCount: number;
  /** Which send (0-based) never answers; the others succeed. */
  hangingSend?: number;
  completionHangs?: boolean;
  /** The RetryRequest's schedule never answers. */
  scheduleHangs?: boolean;
  /** Called as the first receive returns its message. */
  onFirstReceive?: () => void;
  /** A batch of several messages in the session (their wire delivery counts), m-1/e-1 onwards; default one. */
  batch?: number[];
  /** Called after a message's completion landed (its MessageId). */
  afterComplete?: (messageId: string) => void;
  /** The batch's messages (by index) that are replayed copies: they carry ReplaySequence = their index. */
  replayed?: number[];
}

/** One session with one message (or `batch`); later accepts wait until the host stops. */
export function fakeBroker(options: FakeBrokerOptions) {
  const sent: Array<Record<string, unknown>> = [];
  const deadLettered: Array<{ deadLetterReason?: string; deadLetterErrorDescription?: string; messageId?: string }> = [];
  const completed: string[] = [];
  let accepts = 0;
  let secondAccept!: () => void;
  const acceptedAgain = new Promise<void>((resolve) => (secondAccept = resolve));
  let closed = false;
  let closedNow!: () => void;
  /** The session was released: its receiver closed (the host's release, after the batch). */
  const released = new Promise<void>((resolve) => (closedNow = resolve));
  let received = false;
  const messages = (options.batch ?? [options.deliveryCount]).map((deliveryCount, i) => ({
    messageId: `m-${i + 1}`,
    sessionId: 'R-1',
    deliveryCount,
    body: eventBody('OrderPlaced', { n: i + 1 }),
    applicationProperties: {
      To: 'billing',
      From: 'shop',
      MessageType: 'EventRequest',
      EventId: `e-${i + 1}`,
      EventTypeId: 'OrderPlaced',
      ...(options.replayed?.includes(i) ? { ReplaySequence: i, DeferralSequence: i } : {}),
    },
  }));
  const receiver = {
    sessionId: 'R-1',
    get isClosed() {
      return closed;
    },
    sessionLockedUntilUtc: new Date(Date.now() + 60_000),
    receiveMessages: async (_n: number, o?: { abortSignal?: AbortSignal }) => {
      if (!received) {
        received = true;
        options.onFirstReceive?.();
        return messages;
      }
      return hangUntilAborted(o?.abortSignal).catch(() => []);
    },
    getSessionState: async () => undefined,
    setSessionState: async () => undefined,
    completeMessage: async (m: { messageId: string }) => {
      if (options.completionHangs) return new Promise<never>(() => undefined);
      completed.push(m.messageId);
      options.afterComplete?.(m.messageId);
    },
    deadLetterMessage: async (m: { messageId: string }, o: { deadLetterReason?: string }) => {
      // The broker refuses a settlement once it took the session lock back, as the real client reports it.
      if (closed || receiver.sessionLockedUntilUtc.getTime() <= Date.now())
        throw Object.assign(new Error('The session lock has expired.'), { code: 'SessionLockLost' });
      deadLettered.push({ ...o, messageId: m.messageId });
    },
    close: async () => {
      closed = true;
      closedNow();
    },
    /** The broker took the session lock back (a lock expiry's detach): the receiver reads as closed. */
    detach: () => void (closed = true),
  };
  const sender = {
    entityPath: 'billing',
    sendMessages: (m: ServiceBusMessage, o?: { abortSignal?: AbortSignal }) => {
      const index = sent.length;
      sent.push(m.applicationProperties ?? {});
      return index === options.hangingSend ? hangUntilAborted(o?.abortSignal) : Promise.resolve();
    },
    scheduleMessages: (_m: ServiceBusMessage, _at: Date, o?: { abortSignal?: AbortSignal }) =>
      options.scheduleHangs ? hangUntilAborted(o?.abortSignal) : Promise.resolve([]),
    close: async () => undefined,
  };
  const client = {
    acceptNextSession: (_t: string, _s: string, o?: { abortSignal?: AbortSignal }) => {
      accepts++;
      if (accepts === 1) return Promise.resolve(receiver);
      secondAccept();
      return hangUntilAborted(o?.abortSignal);
    },
    createSender: () => sender,
    close: async () => undefined,
  } as unknown as ServiceBusClient;
  return { client, sent, deadLettered, completed, acceptedAgain, released, receiver };
}

export function host(
  client: ServiceBusClient,
  extra: {
    breaker?: CircuitBreaker;
    failed?: unknown[];
    backoffMs?: number;
    onDeliveryThrows?: boolean;
    handler?: EventHandler;
    retryPolicies?: RetryPolicies;
    /** Every delivery's result, in order. */
    results?: DeliveryResult[];
  } = {},
) {
  const { lines, logger } = capturedLogger();
  let delivered!: (r: DeliveryResult) => void;
  const delivery = new Promise<DeliveryResult>((resolve) => (delivered = resolve));
  const h = new SubscriberHost({
    client,
    endpointId: 'billing',
    handlers: new HandlerRegistry().on('OrderPlaced', extra.handler ?? (() => undefined)),
    sessionConnection: 'shared',
    checkEntities: false,
    deferredProcessor: false,
    maxConcurrentSessions: 1,
    operationTimeoutMs: 50,
    backoff: { initialMs: extra.backoffMs ?? 20 },
    transientHold: { initialMs: 20 },
    logger,
    ...(extra.breaker ? { circuitBreaker: extra.breaker } : {}),
    ...(extra.retryPolicies ? { retryPolicies: extra.retryPolicies } : {}),
    observers: [{ onMessageFailed: (_m, e) => void extra.failed?.push(e) }],
    onDelivery: (r) => {
      delivered(r);
      extra.results?.push(r);
      if (extra.onDeliveryThrows) throw new Error('onDelivery failed');
    },
  });
  return { h, lines, delivery };
}
