// The publisher: sends events to the endpoint's own topic as raw publishes (To = the event type, no From), where the
// forwarder subscriptions copy them to every consuming endpoint. Session id from the event type's declared session
// key, correlation id per publish (shared by a batch), message id deterministic from the payload unless given.
import { createHash, randomUUID } from 'node:crypto';
import type {
  ServiceBusClient,
  ServiceBusMessage,
  ServiceBusMessageBatch,
  ServiceBusSender,
} from '@azure/service-bus';
import type { ZodType } from 'zod';
import {
  describeIssues,
  eventBody,
  MessageType,
  nameProblem,
  Prop,
  SELF,
  toWireProperties,
} from './contract/index.ts';
import type { Catalog } from './contract/index.ts';
import { compilePayloadSchema } from './contract/payloadSchema.ts';
import { toServiceBusMessage } from './transport.ts';
import { withSendSpan } from './tracing.ts';
import { boundedClose, type CloseLogger } from './servicebus/boundedClose.ts';
import { defaultSdkLogger } from './logger.ts';

export interface PublishOptions {
  sessionId?: string;
  correlationId?: string;
  messageId?: string;
}

export interface PublishedEvent {
  messageId: string;
  sessionId: string;
  correlationId: string;
}

export interface PublisherOptions {
  client: ServiceBusClient;
  /** The publishing endpoint: its topic receives the publish, and OriginatingFrom names it. */
  endpointId: string;
  /** Session keys per event type (a top-level payload property), usually from the catalog. */
  sessionKeys?: Readonly<Record<string, string>>;
  /** Optional payload schemas: a publish that fails its schema throws before anything is sent. */
  schemas?: Readonly<Record<string, ZodType>>;
  /**
   * The catalog: a publish of an event type this endpoint does not produce, a payload that fails the event type's
   * JSON schema, or one without a value for its session key is refused before anything is sent. Session keys come
   * from it when `sessionKeys` is not given.
   */
  catalog?: Catalog;
  /**
   * The longest close() waits for the sender's link to close; default 30 s. A close the broker had not answered when
   * the connection dropped never ends by itself (servicebus/boundedClose.ts); past this it is abandoned, with a warning.
   */
  closeTimeoutMs?: number;
  /** Where that warning goes; default the SDK's logger (NIMBUS_LOG_LEVEL). */
  logger?: CloseLogger;
}

export class PublishValidationError extends Error {
  override readonly name = 'PublishValidationError';
}

/** Session keys of every event type in a catalog that declares one. */
export function sessionKeysFromCatalog(catalog: Catalog): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of catalog.eventTypes) if (t.sessionKey) out[t.id] = t.sessionKey;
  return out;
}

/** `{EventTypeId}-{16 hex}`: the same payload always gets the same id, so identical publishes can be deduplicated. */
export function deterministicMessageId(eventTypeId: string, payloadJson: string): string {
  return `${eventTypeId}-${createHash('sha256').update(payloadJson).digest('hex').slice(0, 16)}`;
}

/** The sequence number of a scheduled message (a Long, as the client returns it). */
export type ScheduledSequence = Awaited<ReturnType<ServiceBusSender['scheduleMessages']>>[number];

export interface PreparedEvent {
  message: ServiceBusMessage;
  published: PublishedEvent;
}

export class Publisher {
  private readonly sender: ServiceBusSender;
  private readonly sessionKeys: Readonly<Record<string, string>>;
  /** The catalog's JSON schemas as zod schemas, compiled on first use per event type. */
  private readonly catalogSchemas = new Map<string, ZodType | Error>();

  private readonly options: PublisherOptions;

  constructor(options: PublisherOptions) {
    this.options = options;
    const problem = nameProblem(options.endpointId);
    if (problem) throw new PublishValidationError(`endpoint id '${options.endpointId}' ${problem}`);
    const { catalog } = options;
    if (catalog && !catalog.endpoints.some((e) => e.id === options.endpointId))
      throw new PublishValidationError(
        `endpoint '${options.endpointId}' is not in the catalog (endpoints: ${catalog.endpoints.map((e) => e.id).join(', ')}): ` +
          'add it to the catalog and run `npm run provision`, or fix the endpoint id',
      );
    this.sessionKeys = options.sessionKeys ?? (catalog ? sessionKeysFromCatalog(catalog) : {});
    this.sender = options.client.createSender(options.endpointId);
  }

  /** What the catalog says against this publish; undefined when it has nothing against it (or there is none). */
  private catalogProblem(eventTypeId: string, payload: unknown, options: PublishOptions): string | undefined {
    const { catalog, endpointId } = this.options;
    if (!catalog) return undefined;
    const endpoint = catalog.endpoints.find((e) => e.id === endpointId)!;
    if (!endpoint.produces.includes(eventTypeId))
      return (
        `endpoint '${endpointId}' does not produce '${eventTypeId}' (it produces: ${endpoint.produces.join(', ') || 'nothing'}): ` +
        `add '${eventTypeId}' to its produces in the catalog and run \`npm run provision\`, or publish from the endpoint that produces it`
      );
    const type = catalog.eventTypes.find((t) => t.id === eventTypeId);
    if (type?.schema) {
      const schema = this.catalogSchema(eventTypeId, type.schema);
      if (schema instanceof Error)
        return `the catalog's JSON schema of '${eventTypeId}' cannot be used: ${schema.message}`;
      const parsed = schema.safeParse(payload);
      if (!parsed.success)
        return `${eventTypeId} payload does not match the catalog's JSON schema: ${describeIssues(parsed.error)}`;
    }
    if (
      type?.sessionKey &&
      options.sessionId === undefined &&
      this.sessionIdFor(eventTypeId, payload) === undefined
    )
      return (
        `${eventTypeId} payload has no value for its session key '${type.sessionKey}': set payload.${type.sessionKey} ` +
        '(events of one entity are ordered by it), or pass options.sessionId'
      );
    return undefined;
  }

  private catalogSchema(eventTypeId: string, jsonSchema: Record<string, unknown>): ZodType | Error {
    let compiled = this.catalogSchemas.get(eventTypeId);
    if (compiled === undefined) {
      compiled = compilePayloadSchema(jsonSchema);
      this.catalogSchemas.set(eventTypeId, compiled);
    }
    return compiled;
  }

  /** Builds the message for one event (validation included) without sending it. */
  prepare(
    eventTypeId: string,
    payload: unknown,
    options: PublishOptions = {},
    sharedCorrelationId?: string,
  ): PreparedEvent {
    const problem = nameProblem(eventTypeId);
    if (problem) throw new PublishValidationError(`event type id '${eventTypeId}' ${problem}`);
    if (payload === undefined || payload === null)
      throw new PublishValidationError(`a ${eventTypeId} payload is required`);
    const refused = this.catalogProblem(eventTypeId, payload, options);
    if (refused) throw new PublishValidationError(refused);
    const schema = this.options.schemas?.[eventTypeId];
    if (schema) {
      const parsed = schema.safeParse(payload);
      if (!parsed.success)
        throw new PublishValidationError(
          `${eventTypeId} payload is invalid: ${describeIssues(parsed.error)}`,
        );
    }
    let payloadJson: string;
    try {
      payloadJson = JSON.stringify(payload);
    } catch (error) {
      throw new PublishValidationError(
        `${eventTypeId} payload cannot be serialized: ${(error as Error).message}`,
      );
    }
    const sessionId = options.sessionId ?? this.sessionIdFor(eventTypeId, payload) ?? randomUUID();
    const correlationId = options.correlationId ?? sharedCorrelationId ?? randomUUID();
    const messageId = options.messageId ?? deterministicMessageId(eventTypeId, payloadJson);
    const message = toServiceBusMessage({
      messageId,
      sessionId,
      correlationId,
      body: eventBody(eventTypeId, payload),
      applicationProperties: toWireProperties({
        [Prop.To]: eventTypeId,
        [Prop.MessageType]: MessageType.EventRequest,
        [Prop.EventTypeId]: eventTypeId,
        [Prop.OriginatingMessageId]: SELF,
        [Prop.ParentMessageId]: SELF,
        [Prop.OriginatingFrom]: this.options.endpointId,
        [Prop.RetryCount]: 0,
      }),
    });
    return { message, published: { messageId, sessionId, correlationId } };
  }

  async publish(
    eventTypeId: string,
    payload: unknown,
    options: PublishOptions = {},
  ): Promise<PublishedEvent> {
    const prepared = this.prepare(eventTypeId, payload, options);
    await withSendSpan(this.options.endpointId, prepared.message, () => this.sender.sendMessages(prepared.message));
    return prepared.published;
  }

  /**
   * Publishes many events sharing one correlation id, paged into as few batches as the broker's size limit
   * allows. Everything is validated before the first send, the size of each message included: a
   * PublishValidationError means nothing was sent. An empty list sends nothing.
   */
  async publishMany(
    events: ReadonlyArray<{ eventTypeId: string; payload: unknown; options?: PublishOptions }>,
    correlationId: string = randomUUID(),
  ): Promise<PublishedEvent[]> {
    const prepared = events.map((e) => this.prepare(e.eventTypeId, e.payload, e.options, correlationId));
    // One send span for the whole call: every message carries its context (tracing.ts), so the batches are built
    // inside it, with the messages as they will be sent.
    await withSendSpan(this.options.endpointId, prepared.map((p) => p.message), async () => {
      const batches = await this.pageIntoBatches(prepared);
      for (const batch of batches) await this.sender.sendMessages(batch);
    });
    return prepared.map((p) => p.published);
  }

  /**
   * Every batch of the call, built before anything is sent: a message that does not fit even an empty batch is
   * refused here, not after the batches before it went out.
   */
  private async pageIntoBatches(prepared: readonly PreparedEvent[]): Promise<ServiceBusMessageBatch[]> {
    const batches: ServiceBusMessageBatch[] = [];
    let batch = await this.sender.createMessageBatch();
    for (const [i, p] of prepared.entries()) {
      if (batch.tryAddMessage(p.message)) continue;
      if (batch.count > 0) {
        batches.push(batch);
        batch = await this.sender.createMessageBatch();
        if (batch.tryAddMessage(p.message)) continue;
      }
      throw new PublishValidationError(
        `message ${p.published.messageId} (event ${i + 1} of ${prepared.length}) is larger than the broker accepts ` +
          `(${batch.maxSizeInBytes} bytes); nothing was sent`,
      );
    }
    if (batch.count > 0) batches.push(batch);
    return batches;
  }

  /** Schedules a publish; returns the broker's sequence number, which cancels it. */
  async schedule(
    eventTypeId: string,
    payload: unknown,
    at: Date,
    options: PublishOptions = {},
  ): Promise<ScheduledSequence> {
    const prepared = this.prepare(eventTypeId, payload, options);
    const [sequence] = await withSendSpan(this.options.endpointId, prepared.message, () => this.sender.scheduleMessages(prepared.message, at));
    if (sequence === undefined)
      throw new Error('the broker returned no sequence number for the scheduled message');
    return sequence;
  }

  async cancelScheduled(sequenceNumber: ScheduledSequence): Promise<void> {
    await this.sender.cancelScheduledMessages(sequenceNumber);
  }

  /** Closes the sender, waiting at most `closeTimeoutMs` (then abandoned with a warning; see PublisherOptions). */
  async close(): Promise<void> {
    await boundedClose('closing the publisher', () => this.sender.close(), {
      timeoutMs: this.options.closeTimeoutMs,
      logger: this.options.logger ?? defaultSdkLogger(),
      details: { endpointId: this.options.endpointId },
    });
  }

  private sessionIdFor(eventTypeId: string, payload: unknown): string | undefined {
    const key = this.sessionKeys[eventTypeId];
    if (!key || typeof payload !== 'object' || payload === null) return undefined;
    const value = (payload as Record<string, unknown>)[key];
    if (value === undefined || value === null || value === '') return undefined;
    return String(value);
  }
}

export function createPublisher(options: PublisherOptions): Publisher {
  return new Publisher(options);
}
