// The largest message the console sends on an agent's or an operator's behalf (a handoff settlement's command, a
// resubmit's, an agent's publish), checked before anything is claimed or sent. Service Bus refuses a larger one
// (MessageSizeExceeded), and answered 503 "try again" after that refusal, an agent's client retried it for ever -
// each settlement attempt writing a claim, its undo and a CommandNotSent entry into the event's history. Too large is
// answered 413 instead, which no client retries.
//
// The limit is the broker's per-message size less 16 KB of headroom for what the message carries beside its body
// (AMQP header and properties, the application properties the contract sets). The broker's size is read from the
// Manager topic's maxMessageSizeInKilobytes (BrokerMessageSize), first when the console opens its connections: a
// Premium namespace reports what it was given (1 MB to 100 MB). A size read is read again every 10 minutes (an
// operator may raise or lower it), the last one read standing meanwhile. Until it is read - no Manage right, a broker
// that does not report it, a failed read (read again after a back-off) - it is Service Bus's Standard tier's 256 KB (the
// embedded emulator's default), and a broker that refuses a smaller message for its size is answered 413 too
// (isSizeRefusal). A Manager command is forwarded from the Manager topic to its endpoint's topic, which may take less:
// a command is held to the smaller of the two topics' sizes (CommandMessageSize). An agent's publish is sent to its
// endpoint's topic directly: it is held to that topic's size (CommandMessageSize.topicBytes). A re-send of a claim
// (accepted once) is held to the sizes read only: with none read it is sent, the broker deciding (resendBytes).
import { isServiceBusError, type ServiceBusAdministrationClient } from '@azure/service-bus';
import { z } from 'zod';
import { HttpError } from './http.ts';

/** Service Bus's message size limit on the Standard tier, and the emulator's default. */
export const BROKER_MESSAGE_BYTES = 256 * 1024;
/** Room left for what a message carries beside its body. */
const HEADROOM_BYTES = 16 * 1024;
/** The largest body the console sends for a broker that takes messages of `brokerBytes`. */
export const sendableBodyBytes = (brokerBytes: number): number => brokerBytes - HEADROOM_BYTES;
/** The largest body the console sends on the Standard tier: BROKER_MESSAGE_BYTES less room for headers and properties. */
export const MAX_SENT_BODY_BYTES = sendableBodyBytes(BROKER_MESSAGE_BYTES);

/** What a 413 tells the caller to do, unless the caller says otherwise. */
const SEND_SMALLER = 'send a smaller one, e.g. a reference to where the data is';

/**
 * 413 for a body of `bytes` over the limit (`what`: the settlement's result, the event's payload); `advice`: what to do
 * instead (a claim already made cannot be cured by a smaller send alone).
 */
export function tooLarge(what: string, bytes: number, brokerBytes = BROKER_MESSAGE_BYTES, advice = SEND_SMALLER): HttpError {
  return new HttpError(
    413,
    'too large',
    `${what} is ${bytes} bytes as sent; at most ${sendableBodyBytes(brokerBytes)} bytes are (Service Bus's ${brokerBytes / 1024} KB message limit, less 16 KB for the message's headers and properties); nothing was sent - ${advice}`,
  );
}

/** Throws tooLarge when `bytes` is over the limit of a broker taking `brokerBytes` (default: the Standard tier's). */
export function requireSendableSize(what: string, bytes: number, brokerBytes = BROKER_MESSAGE_BYTES, advice = SEND_SMALLER): void {
  if (bytes > sendableBodyBytes(brokerBytes)) throw tooLarge(what, bytes, brokerBytes, advice);
}

/** A topic's size limit as Service Bus allows it: 256 KB (Standard) up to 100 MB (Premium). */
const topicLimit = z.object({ maxMessageSizeInKilobytes: z.number().int().min(256).max(100 * 1024) });

/** How long a read may take before the current value (at first the Standard limit) is used: a request waits no longer. */
export const LIMIT_READ_TIMEOUT_MS = 5_000;
/** How long after a failed read the next use reads again (a failure is provisional: a blip, a 429/503, a cold token). */
export const LIMIT_REREAD_AFTER_MS = 60_000;
/**
 * How long after a size was read the next use reads it again: an operator may change a topic's size (a Premium
 * namespace's raised to 100 MB, or one lowered), which was seen only at the console's next start before. One
 * management call per topic per interval; longer than the failure back-off, as a size rarely changes.
 */
export const LIMIT_REFRESH_AFTER_MS = 10 * 60_000;

type Logger = { info(o: object, m: string): void; warn(o: object, m: string): void };
/** One read's outcome: a size; an answer that settles it for the process (no Manage right, no usable size); or a failure to retry. */
type ReadOutcome = { kind: 'read'; kilobytes: number } | { kind: 'final'; why: Record<string, unknown> } | { kind: 'retry'; why: Record<string, unknown> };

/**
 * One request for the topic's maxMessageSizeInKilobytes, however long the client takes to settle it - which may be
 * never: the abort signal alone was not enough, a getTopic that drops it (a credential's token request, any layer
 * that ignores it) never settled. Never rejects; what a read waits for it is bounded by `withinBound`.
 */
async function requestTopicLimit(admin: Pick<ServiceBusAdministrationClient, 'getTopic'>, topic: string, timeoutMs: number): Promise<ReadOutcome> {
  try {
    const parsed = topicLimit.safeParse(await admin.getTopic(topic, { abortSignal: AbortSignal.timeout(timeoutMs) }));
    return parsed.success ? { kind: 'read', kilobytes: parsed.data.maxMessageSizeInKilobytes } : { kind: 'final', why: { reason: 'the topic reports no usable maxMessageSizeInKilobytes' } };
  } catch (err) {
    // The error's name, code and status only: its text may carry the namespace's address.
    const e = err as { name?: unknown; code?: unknown; statusCode?: unknown };
    const error = { errName: String(e?.name ?? 'Error'), code: e?.code, statusCode: e?.statusCode };
    if (e?.statusCode === 401 || e?.statusCode === 403) return { kind: 'final', why: { reason: 'the topic could not be read: no Manage right on it (401/403)', ...error } };
    return { kind: 'retry', why: { reason: 'the topic could not be read', ...error } };
  }
}

/**
 * A request's outcome, or a failure to retry when it has not settled within `timeoutMs`: every command and agent
 * publish awaiting the size waits no longer than that. Never rejects.
 */
async function withinBound(request: Promise<ReadOutcome>, timeoutMs: number): Promise<ReadOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<ReadOutcome>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'retry', why: { reason: `the topic did not answer within ${timeoutMs} ms` } }), timeoutMs);
    timer.unref(); // a read left hanging must not keep the process alive
  });
  try {
    return await Promise.race([request, bound]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The broker's per-message size for `topic`, in bytes, from its maxMessageSizeInKilobytes (needs the Manage right):
 * what the size pre-checks hold commands and publishes to. BROKER_MESSAGE_BYTES until it is read. Before any size is
 * read, a 401/403 (no Manage right) or a topic reporting no usable size settles it for the process; any other failure
 * (a network blip, 429/503, the topic not yet provisioned, no answer within the bound) is provisional - before, one
 * failed read at open held the console to 256 KB until it restarted. A size read is read again on the first use
 * after the refresh interval - before, it was kept until the console restarted, so an operator's change to the topic
 * went unseen; until that re-read answers, and when it fails in any way, the last size read stands (a failure never
 * lowers it to the Standard tier's), the next re-read after the back-off (a blip) or the refresh interval (a 401/403,
 * no usable size). The first size and each change are logged, and each failure (the error's name, code and status,
 * never its text).
 *
 * At most one getTopic per topic is out at any time: a request still unanswered at its read's bound is kept (the read
 * fails for its callers), and a later read waits on it, within its own bound, instead of sending another. Before, each
 * back-off sent a new request beside the hung ones - with an admin endpoint that stopped answering they piled up, one
 * a minute. A request that settles with no read waiting on it is dropped; the next read sends a new one. One that
 * never settles leaves the topic unread for the process (the size read before, or the fallback, standing), each
 * re-read's failure logged with how long the request has been out.
 */
export class BrokerMessageSize {
  readonly #admin: Pick<ServiceBusAdministrationClient, 'getTopic'>;
  readonly #topic: string;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  readonly #rereadAfterMs: number;
  readonly #refreshAfterMs: number;
  readonly #now: () => number;
  readonly #fallback: string;
  /** The size last read from the topic; undefined until a read succeeds. A failed read never changes it. */
  #bytes: number | undefined;
  /** No read again for the process: the first read found no Manage right or no usable size (none read before). */
  #settled = false;
  /** The read in flight (at most one), settled within #timeoutMs. */
  #reading: Promise<void> | undefined;
  /**
   * The getTopic request out, until it settles - which may be long after the read that sent it ended at its bound,
   * or never: no other is sent meanwhile (a read waits on this one).
   */
  #request: { outcome: Promise<ReadOutcome>; sentAt: number } | undefined;
  /** Whether a read has ended: until then a request waits for the first one (bounded), after it never waits. */
  #everRead = false;
  #nextReadAt = 0;

  constructor(
    admin: Pick<ServiceBusAdministrationClient, 'getTopic'>,
    topic: string,
    logger: Logger,
    options: { timeoutMs?: number; rereadAfterMs?: number; refreshAfterMs?: number; now?: () => number; fallback?: string } = {},
  ) {
    this.#admin = admin;
    this.#topic = topic;
    this.#logger = logger;
    this.#timeoutMs = options.timeoutMs ?? LIMIT_READ_TIMEOUT_MS;
    this.#rereadAfterMs = options.rereadAfterMs ?? LIMIT_REREAD_AFTER_MS;
    this.#refreshAfterMs = options.refreshAfterMs ?? LIMIT_REFRESH_AFTER_MS;
    this.#now = options.now ?? Date.now;
    this.#fallback = options.fallback ?? "using the Standard tier's (256 KB)";
  }

  /**
   * The size to check against now. Starts a read when none has settled it and the back-off or refresh interval has
   * passed; waits for the first read only (at most its bound) - while a later re-read runs, the current value is used.
   * Never rejects.
   */
  async bytes(): Promise<number> {
    return (await this.known()) ?? BROKER_MESSAGE_BYTES;
  }

  /**
   * As bytes(), but undefined while no read has succeeded: for a topic whose unknown size must not stand in for a
   * known one (CommandMessageSize). Never rejects.
   */
  async known(): Promise<number | undefined> {
    if (!this.#settled && !this.#reading && this.#now() >= this.#nextReadAt) this.#reading = this.#read();
    if (!this.#everRead && this.#reading) await this.#reading;
    return this.#bytes;
  }

  /** Resolves when no read is in flight (tests; requests never wait on a re-read). */
  async idle(): Promise<void> {
    await this.#reading;
  }

  /**
   * The request out, or a new one when none is: a request is forgotten when it settles, or when it has been out for a
   * refresh interval (10 min) - a connection that went silent for good would otherwise leave the topic unread until
   * the console restarts; a new request may take a fresh connection. So a silent admin endpoint holds at most one
   * request per topic per refresh interval, never one per back-off.
   */
  #requestOut(): { outcome: Promise<ReadOutcome>; sentAt: number } {
    if (this.#request && this.#now() - this.#request.sentAt < this.#refreshAfterMs) return this.#request;
    const request = {
      outcome: requestTopicLimit(this.#admin, this.#topic, this.#timeoutMs).finally(() => {
        if (this.#request === request) this.#request = undefined;
      }),
      sentAt: this.#now(),
    };
    this.#request = request;
    return request;
  }

  async #read(): Promise<void> {
    const earlier = this.#request !== undefined;
    const request = this.#requestOut();
    let outcome = await withinBound(request.outcome, this.#timeoutMs);
    // An earlier read's request, still out after this bound too: said, so a log shows why the topic is not asked again.
    if (earlier && outcome.kind === 'retry' && this.#request === request) {
      const why = { reason: `${String(outcome.why.reason)}; a request sent earlier is still unanswered, and no other is sent until it settles or has been out for ${this.#refreshAfterMs} ms` };
      outcome = { kind: 'retry', why: { ...why, requestOutstandingMs: this.#now() - request.sentAt } };
    }
    const topic = this.#topic;
    const previous = this.#bytes;
    if (outcome.kind === 'read') {
      this.#bytes = outcome.kilobytes * 1024;
      this.#nextReadAt = this.#now() + this.#refreshAfterMs;
      // The first size and each change; an unchanged refresh says nothing (one line per topic per interval otherwise).
      if (previous === undefined) this.#logger.info({ topic, maxMessageSizeInKilobytes: outcome.kilobytes }, 'broker message size limit read from the topic');
      else if (previous !== this.#bytes)
        this.#logger.info({ topic, maxMessageSizeInKilobytes: outcome.kilobytes, previousKilobytes: previous / 1024 }, 'broker message size limit changed on the topic');
    } else if (previous !== undefined) {
      // A re-read that failed: the size read before stands (it was the topic's a refresh interval ago; falling back
      // to the Standard tier's would refuse what the topic takes). A blip is retried after the back-off; a 401/403 or
      // an unusable answer (the Manage right taken away, a broker's glitch) after the refresh interval, not settled:
      // the right may come back.
      const after = outcome.kind === 'retry' ? this.#rereadAfterMs : this.#refreshAfterMs;
      this.#nextReadAt = this.#now() + after;
      this.#logger.warn({ topic, ...outcome.why, keptKilobytes: previous / 1024, readAgainAfterMs: after }, 'broker message size limit not re-read: the size read before is kept');
    } else {
      this.#settled = outcome.kind === 'final';
      this.#nextReadAt = this.#now() + this.#rereadAfterMs;
      const retry = outcome.kind === 'retry' ? { readAgainAfterMs: this.#rereadAfterMs } : { readAgain: 'not until the console restarts' };
      this.#logger.warn({ topic, ...outcome.why, ...retry }, `broker message size limit not read: ${this.#fallback}`);
    }
    this.#everRead = true;
    this.#reading = undefined;
  }
}

/**
 * The broker's per-message size for a Manager command to `endpointId`: the smaller of the Manager topic's and the
 * endpoint topic's; and for an agent's publish, sent straight to the endpoint topic, that topic's (topicBytes). The command is sent to the Manager topic and auto-forwarded from its subscription for the endpoint
 * to the topic named as the endpoint (packages/sdk/src/topology/derive.ts, `forwardTo: endpoint.id`). Before, only the
 * Manager topic's size was checked: a command between the two sizes was sent, answered sent and its receipt written,
 * and the endpoint topic refused its forward - the row stayed Pending with nothing on its way.
 *
 * Each endpoint topic is read as the Manager topic is (BrokerMessageSize: bounded, cached, a failed read retried after
 * the back-off, a size read again after the refresh interval), on the first command or publish for that endpoint. Until an endpoint topic's size is read - no read yet
 * succeeded, no Manage right, a topic reporting none - the Manager topic's size stands for it, as it did before: the
 * provisioner sets no per-topic size, so topics share the namespace's. A read that fails never lowers a size read
 * before, and an endpoint topic not read never lowers the Manager topic's to the Standard tier's 256 KB.
 */
export class CommandMessageSize {
  readonly #admin: Pick<ServiceBusAdministrationClient, 'getTopic'>;
  readonly #manager: BrokerMessageSize;
  readonly #logger: Logger;
  readonly #options: { timeoutMs?: number; rereadAfterMs?: number; refreshAfterMs?: number; now?: () => number };
  /** Per endpoint topic, created on the first command for it (endpoints with rows to act on: the catalog's). */
  readonly #endpoints = new Map<string, BrokerMessageSize>();
  /**
   * Topics every message sent to an endpoint topic is forwarded to as well: the Resolver topic (the endpoint topic's
   * Resolver subscription forwards a copy of every request). A message that fits the endpoint topic but not the
   * Resolver topic is enqueued, and its copy refused on the forward: the Resolver never records it, and the row reads
   * "sent" to Reconcile. Each holds a message to the smaller size once read; not read, it holds nothing.
   */
  readonly #through: readonly BrokerMessageSize[];

  constructor(
    admin: Pick<ServiceBusAdministrationClient, 'getTopic'>,
    manager: BrokerMessageSize,
    logger: Logger,
    options: { timeoutMs?: number; rereadAfterMs?: number; refreshAfterMs?: number; now?: () => number } = {},
    through: readonly BrokerMessageSize[] = [],
  ) {
    this.#admin = admin;
    this.#manager = manager;
    this.#logger = logger;
    this.#options = options;
    this.#through = through;
  }

  /** The size a command to `endpointId` is checked against now (waits at most the first reads' bound). Never rejects. */
  async bytes(endpointId: string): Promise<number> {
    const [manager, own, through] = await Promise.all([this.#manager.bytes(), this.#endpoint(endpointId).known(), this.#throughBytes()]);
    return Math.min(manager, own ?? manager, through);
  }

  /**
   * The size a message sent straight to `endpointId`'s topic (an agent's publish) is checked against now: that topic's
   * alone - the message never passes the Manager topic - and, until it is read, the Manager topic's standing for it as
   * for a command. Before, a publish was checked against the Manager topic's size only: an event between the two sizes
   * was claimed and sent to a topic that takes less. `forwardedTo`: the topics its forwarder subscriptions pass it on
   * to (the event type's consumers), each holding it to its size once read - a forward a consumer's topic refuses
   * leaves that consumer without the event and the Resolver without its record. Never rejects.
   */
  async topicBytes(endpointId: string, forwardedTo: readonly string[] = []): Promise<number> {
    const [manager, own, through, ...onward] = await Promise.all([
      this.#manager.bytes(),
      this.#endpoint(endpointId).known(),
      this.#throughBytes(),
      ...forwardedTo.map((topic) => this.#endpoint(topic).known()),
    ]);
    return Math.min(own ?? manager, through, ...onward.filter((n): n is number => n !== undefined));
  }

  /**
   * The size a re-send of a command accepted once (an abandoned claim's: the Manager's repeat, Reconcile's re-send) is
   * checked against now: the smallest size read of the topics it passes (the Manager topic, the endpoint's, the
   * Resolver's), undefined when none is read - then it is sent and the broker decides (its refusal is answered 413,
   * isSizeRefusal). The claim was checked when it was made, against a limit known then, maybe by another replica:
   * the Standard tier's 256 KB standing in for an unread size is a guess, and before, a replica whose reads had failed
   * refused such a re-send with 413 for up to the back-off, though the broker (a Premium namespace) would take it.
   * A fresh command keeps the guess (bytes). Waits at most the first reads' bound. Never rejects.
   */
  async resendBytes(endpointId: string): Promise<number | undefined> {
    const [manager, own, through] = await Promise.all([this.#manager.known(), this.#endpoint(endpointId).known(), this.#throughBytes()]);
    const least = Math.min(manager ?? Infinity, own ?? Infinity, through);
    return least === Infinity ? undefined : least;
  }

  /** The smallest size read of the topics every message is forwarded to (Infinity when none is read). */
  async #throughBytes(): Promise<number> {
    const sizes = await Promise.all(this.#through.map((t) => t.known()));
    return Math.min(Infinity, ...sizes.filter((n): n is number => n !== undefined));
  }

  #endpoint(endpointId: string): BrokerMessageSize {
    let endpoint = this.#endpoints.get(endpointId);
    if (!endpoint) {
      endpoint = new BrokerMessageSize(this.#admin, endpointId, this.#logger, { ...this.#options, fallback: "the Manager topic's stands for it" });
      this.#endpoints.set(endpointId, endpoint);
    }
    return endpoint;
  }

  /** Resolves when no read is in flight (tests). */
  async idle(): Promise<void> {
    await Promise.all([this.#manager.idle(), ...[...this.#endpoints.values(), ...this.#through].map((e) => e.idle())]);
  }
}

/** The broker refused a message for its size (nothing was enqueued). */
export const isSizeRefusal = (err: unknown): boolean => isServiceBusError(err) && err.code === 'MessageSizeExceeded';
