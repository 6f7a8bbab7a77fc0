// The bus handoff client: settles an event parked by ctx.markPendingHandoff by sending straight to the Manager topic,
// addressed To = the endpoint; the Manager subscription stamps From = 'Manager' and forwards them to the endpoint,
// where they reach the failed event's session. Neither re-invokes the user handler.
//
// It needs Send on `Manager`, which is operator-level: whoever holds it can also skip or resubmit any endpoint's
// events, with no audit entry and no role check. Handoff agents use ConsoleHandoffClient (consoleHandoffClient.ts,
// the console's HTTP API with a service principal's token) instead; this client is for code that already runs with
// the console's identity, and for tests on the emulator.
import { createHash } from 'node:crypto';
import type { ServiceBusClient, ServiceBusSender } from '@azure/service-bus';
import { z } from 'zod';
import { describeIssues, encodeBody, MessageType, Prop, Topic, toWireProperties } from './contract/index.ts';
import { readHandoffToken } from './handoffToken.ts';
import type { HandoffToken } from './handoffToken.ts';
import { toServiceBusMessage } from './transport.ts';
import { withSendSpan } from './tracing.ts';
import { boundedClose, type CloseLogger } from './servicebus/boundedClose.ts';
import { defaultSdkLogger } from './logger.ts';

/** Where the pending event is: what the PendingHandoffResponse (and the console's event row) carries. */
export const handoffCoordinatesSchema = z.object({
  endpointId: z.string().min(1, 'endpointId is required'),
  eventId: z.string().min(1, 'eventId is required'),
  sessionId: z.string().min(1, 'sessionId is required'),
  /** MessageId of the delivery that parked the handoff. */
  messageId: z.string().min(1, 'messageId is required'),
  eventTypeId: z.string().min(1).optional(),
  correlationId: z.string().min(1).optional(),
  originatingMessageId: z.string().min(1).optional(),
  /**
   * The delivery that handed the event off, when `messageId` is another message (a console row's: its
   * PendingHandoffResponse's parent, as the Manager names it). Sent as HandedOffByMessageId; a token names its own.
   */
  handedOffByMessageId: z.string().min(1).optional(),
});
export type HandoffCoordinates = z.infer<typeof handoffCoordinatesSchema>;

export class HandoffClientError extends Error {
  override readonly name: string = 'HandoffClientError';
}

export interface HandoffClientOptions {
  /**
   * The longest close() waits for the sender's link to close; default 30 s. A close the broker had not answered when
   * the connection dropped never ends by itself (servicebus/boundedClose.ts); past this it is abandoned, with a warning.
   */
  closeTimeoutMs?: number;
  /** Where that warning goes; default the SDK's logger (NIMBUS_LOG_LEVEL). */
  logger?: CloseLogger;
}

/** Settles handoffs on the bus; needs the operator-level Send on `Manager` (agents: use ConsoleHandoffClient). */
export class HandoffClient {
  private readonly sender: ServiceBusSender;
  private readonly options: HandoffClientOptions;

  constructor(client: ServiceBusClient, options: HandoffClientOptions = {}) {
    this.sender = client.createSender(Topic.Manager);
    this.options = options;
  }

  /**
   * The external work succeeded: the session is released and the Resolver records Completed with `result` (any JSON
   * value; a string holding JSON is sent as that JSON, any other string as a JSON string), as ConsoleHandoffClient
   * and the console send it.
   */
  async complete(coordinates: HandoffCoordinates | HandoffToken, result?: unknown): Promise<string> {
    const c = parse(coordinates);
    const json = result === undefined ? undefined : resultJson(result);
    const body =
      json === undefined
        ? encodeBody({})
        : encodeBody({ EventContent: { EventTypeId: c.eventTypeId ?? null, EventJson: json } });
    return this.send(MessageType.HandoffCompletedRequest, c, body, handedOffBy(coordinates, c));
  }

  /** The external work failed: the Resolver records Failed with `errorText` verbatim; the session stays blocked. */
  async fail(
    coordinates: HandoffCoordinates | HandoffToken,
    errorText: string,
    errorType?: string,
  ): Promise<string> {
    const c = parse(coordinates);
    return this.send(
      MessageType.HandoffFailedRequest,
      c,
      encodeBody({ ErrorContent: { ErrorText: errorText, ErrorType: errorType ?? null } }),
      handedOffBy(coordinates, c),
    );
  }

  /** Closes the sender, waiting at most `closeTimeoutMs` (then abandoned with a warning; see HandoffClientOptions). */
  async close(): Promise<void> {
    await boundedClose('closing the handoff client', () => this.sender.close(), {
      timeoutMs: this.options.closeTimeoutMs,
      logger: this.options.logger ?? defaultSdkLogger(),
    });
  }

  private async send(
    type: MessageType,
    c: HandoffCoordinates,
    body: string,
    handedOffByMessageId: string | undefined,
  ): Promise<string> {
    // Derived, not random: a caller that retries a send whose outcome it did not learn (a broker outage mid-send)
    // sends the same message again, which the endpoint's inbox and the Resolver's history recognise as one.
    const messageId = settlementMessageId(type, c);
    const out = toServiceBusMessage({
      messageId,
      sessionId: c.sessionId,
      correlationId: c.correlationId ?? c.messageId,
      body,
      applicationProperties: toWireProperties({
        [Prop.To]: c.endpointId,
        [Prop.MessageType]: type,
        [Prop.EventId]: c.eventId,
        [Prop.EventTypeId]: c.eventTypeId,
        [Prop.ParentMessageId]: c.messageId,
        [Prop.HandedOffByMessageId]: handedOffByMessageId,
        [Prop.OriginatingMessageId]: c.originatingMessageId ?? c.messageId,
        [Prop.RetryCount]: 0,
      }),
    });
    await withSendSpan(Topic.Manager, out, () => this.sender.sendMessages(out));
    return messageId;
  }
}

/** The settlement's MessageId: one per (command type, endpoint, event, session, handoff message). */
export function settlementMessageId(type: MessageType, c: HandoffCoordinates): string {
  const h = createHash('sha256')
    .update(JSON.stringify([type, c.endpointId, c.eventId, c.sessionId, c.messageId]))
    .digest('hex');
  return `handoff-${h.slice(0, 40)}`;
}

/**
 * The EventJson of a completion, as the console builds it from what ConsoleHandoffClient sends: a string that is
 * valid JSON is that JSON; any other string is a JSON string (sent raw, `done` was no JSON at all).
 */
function resultJson(result: unknown): string {
  if (typeof result !== 'string') return JSON.stringify(result);
  try {
    return JSON.stringify(JSON.parse(result) as unknown);
  } catch {
    return JSON.stringify(result);
  }
}

/**
 * The delivery that handed the event off, named on the command so the subscriber can tell this handoff from a later
 * one of the same event (Prop.HandedOffByMessageId): from a token, whose messageId is that delivery's by
 * construction (ctx.markPendingHandoff), or from coordinates that name it (`handedOffByMessageId`). Other coordinates
 * written by hand may hold the PendingHandoffResponse's id as `messageId` (the console row's message id, which the
 * console also accepts); those are matched by EventId, as before.
 */
function handedOffBy(given: HandoffCoordinates | HandoffToken, c: HandoffCoordinates): string | undefined {
  return typeof given === 'string' ? (c.handedOffByMessageId ?? c.messageId) : c.handedOffByMessageId;
}

function parse(c: HandoffCoordinates | HandoffToken): HandoffCoordinates {
  if (typeof c === 'string') return readHandoffToken(c);
  const parsed = handoffCoordinatesSchema.safeParse(c);
  if (!parsed.success)
    throw new HandoffClientError(`invalid handoff coordinates: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

export function createHandoffClient(client: ServiceBusClient, options?: HandoffClientOptions): HandoffClient {
  return new HandoffClient(client, options);
}
