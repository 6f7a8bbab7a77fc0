// Publishing through the Agent API: as one of the agent's endpoints, an event type that endpoint produces in the
// catalog, with a payload checked against the catalog's JSON schema for the type (400 with the schema's complaint
// otherwise), sent by the console's own Service Bus connection - the agent holds no bus credentials. The message is
// built by the SDK's Publisher, so it is the same wire message an endpoint's own publisher sends (session key from
// the catalog, a message id derived from the payload). The topics have no duplicate detection, so the console keeps
// a record per endpoint and message id (publishRecords.ts): an agent's retry after a lost answer (or a 5xx) is
// answered the first outcome with `replayed: true` and not sent again; a retry while the first attempt is still
// being sent gets 409 with Retry-After (code PUBLISH_IN_FLIGHT_CODE). A send that failed with its outcome unknown
// (a timeout, a lost connection: the broker may have taken it) keeps its record `sending` too, so its retries get
// that 409 rather than a second copy (sendRefusal.ts). A payload too large for the broker is refused with 413
// before anything is sent, and a broker's size refusal answered 413 too (server/messageSize.ts): answered 503 "try
// again", an agent's client retried it for ever.
import { describePayloadIssues, payloadIssues, type Catalog } from '@nimbus/sdk/contract';
import { createPublisher, PUBLISH_IN_FLIGHT_CODE, PublishValidationError, sessionKeysFromCatalog, type Publisher } from '@nimbus/sdk';
import type { ConsoleContext } from '../context.ts';
import { HttpError, badRequest, conflict } from '../http.ts';
import { schemaFor } from '../payloadSchemaCheck.ts';
import { log } from '../log.ts';
import { isSizeRefusal, requireSendableSize } from '../messageSize.ts';
import { publishRecordsOf, PUBLISH_IN_FLIGHT_MS, PUBLISH_RECORD_TTL_MS, type PublishRecordEntry } from './publishRecords.ts';
import { refusedBeforeSending } from './sendRefusal.ts';

/**
 * The `code` of the 409 to a publish whose first attempt (same endpoint and message id) is still being sent: retry
 * after Retry-After to get its outcome. The SDK's AgentClient retries it like a 503; one constant for both sides.
 */
export { PUBLISH_IN_FLIGHT_CODE };

export interface Published {
  endpointId: string;
  eventTypeId: string;
  messageId: string;
  sessionId: string;
  correlationId: string;
  /** Present (true) on the answer to a retry: the first attempt's answer, replayed - nothing was sent this time. */
  replayed?: true;
}

type Slot = { ctx?: ConsoleContext; publishers: Map<string, Publisher> };
const slot = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.agentPublish')] ??= { publishers: new Map() }) as Slot;

function publisherFor(ctx: ConsoleContext, endpointId: string): Publisher {
  // A new context (tests, a reopened connection) gets new senders.
  if (slot.ctx !== ctx) {
    for (const p of slot.publishers.values()) void p.close().catch(() => undefined);
    slot.publishers.clear();
    slot.ctx = ctx;
  }
  let p = slot.publishers.get(endpointId);
  if (!p) {
    p = createPublisher({ client: ctx.serviceBus.client, endpointId, sessionKeys: sessionKeysFromCatalog(ctx.catalog) });
    slot.publishers.set(endpointId, p);
  }
  return p;
}

/** Checks what can be checked before anything is sent: the endpoint produces the type, the payload fits its schema. */
export function checkPublish(catalog: Catalog, endpointId: string, eventTypeId: string, payload: unknown): void {
  const endpoint = catalog.endpoints.find((e) => e.id === endpointId);
  if (!endpoint) throw new HttpError(404, 'not found', `endpoint ${endpointId} is not in the catalog`);
  if (!endpoint.produces.includes(eventTypeId))
    throw badRequest(`endpoint ${endpointId} does not produce ${eventTypeId} in the catalog (it produces: ${endpoint.produces.join(', ') || 'nothing'})`);
  // The same compiled schema and issue wording as the console's resubmit check (server/payloadSchemaCheck.ts).
  const check = schemaFor(catalog, eventTypeId);
  if (check instanceof Error) throw new HttpError(503, 'not configured', `the catalog's JSON schema of ${eventTypeId} cannot be checked: ${check.message}`);
  if (check) {
    const issues = payloadIssues(check, payload);
    if (issues.length > 0) throw badRequest(`the payload does not match the ${eventTypeId} schema: ${describePayloadIssues(issues.slice(0, 10))}`);
  } else if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw badRequest(`a ${eventTypeId} payload is a JSON object`);
  }
}

export async function publishAsAgent(
  ctx: ConsoleContext,
  endpointId: string,
  eventTypeId: string,
  payload: unknown,
  sessionId: string | undefined,
  principalId: string,
): Promise<Published> {
  checkPublish(ctx.catalog, endpointId, eventTypeId, payload);
  const publisher = publisherFor(ctx, endpointId);
  let message;
  let prepared;
  try {
    // Built (and checked) first for its message id, the record's key; the send below builds the same message
    // with the session and correlation ids chosen here, so the answer kept is the one of the message sent.
    ({ message, published: prepared } = publisher.prepare(eventTypeId, payload, sessionId !== undefined ? { sessionId } : {}));
  } catch (err) {
    if (err instanceof PublishValidationError) throw badRequest(err.message);
    throw err;
  }
  // The body as sent, before the record is claimed: the payload travels as EventJson, a JSON string inside the
  // envelope's JSON (its quotes and backslashes escaped again), up to twice its own JSON. Measured as its JSON, a
  // quote-dense payload passed and was refused by the broker after a publish-record claim (tooLarge.test.ts).
  // Held to the topic it is sent to, the endpoint's own (until that topic's size is read, the Manager topic's stands
  // for it). Before, only the Manager topic's size was checked: an event between the two was claimed and sent to a
  // topic given less (publishTopicSize.test.ts). A broker refusing it all the same is answered 413 (isSizeRefusal).
  // And to its consumers' topics, which the endpoint topic's forwarder subscriptions pass it on to (and the Resolver
  // topic's, which every copy reaches): a forward refused there is lost to that consumer (publishForwardSize.test.ts).
  const consumers = ctx.catalog.endpoints.filter((e) => e.consumes.some((t) => t.toLowerCase() === eventTypeId.toLowerCase())).map((e) => e.id);
  requireSendableSize("the event's message", (message.body as Buffer).length, await ctx.commandMessageSize.topicBytes(endpointId, consumers));
  const records = publishRecordsOf(ctx.store.database);
  const claim = await records.begin({ endpointId, messageId: prepared.messageId, principalId, requestedSessionId: sessionId ?? null });
  switch (claim.kind) {
    case 'replay':
      return { ...claim.answer, replayed: true };
    case 'inFlight':
      throw new HttpError(
        409,
        'conflict',
        `the same event (message ${prepared.messageId}) is being published by an earlier attempt started at ${claim.startedAt}; ` +
          `nothing was sent - retry in ${claim.retryAfterSeconds} s for its outcome`,
        { 'retry-after': String(claim.retryAfterSeconds) },
        PUBLISH_IN_FLIGHT_CODE,
      );
    case 'anotherPrincipal':
      // Not its answer to read: the other principal's correlation and session ids stay its own.
      throw conflict(
        `the same event (message ${prepared.messageId}) was published as ${endpointId} by another principal at ${claim.at}; ` +
          `nothing was sent - subscribers would drop a second copy as a duplicate within ${PUBLISH_RECORD_TTL_MS / 3_600_000} h`,
      );
    case 'anotherSession':
      throw conflict(
        `the same event (message ${prepared.messageId}) was published into session ${JSON.stringify(claim.sessionId)} at ${claim.at}; ` +
          'nothing was sent - the same payload into another session carries the same message id, which subscribers drop as a duplicate',
      );
    case 'send':
      return sendClaimed(publisher, records, claim.entry, endpointId, eventTypeId, payload, prepared);
  }
}

async function sendClaimed(
  publisher: Publisher,
  records: ReturnType<typeof publishRecordsOf>,
  entry: PublishRecordEntry,
  endpointId: string,
  eventTypeId: string,
  payload: unknown,
  prepared: { sessionId: string; correlationId: string },
): Promise<Published> {
  let answer: Published;
  try {
    const r = await publisher.publish(eventTypeId, payload, { sessionId: prepared.sessionId, correlationId: prepared.correlationId });
    answer = { endpointId, eventTypeId, ...r };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    if (!refusedBeforeSending(err)) {
      // Outcome unknown (a timeout, a lost connection): the broker may have taken it, so the record stays `sending`.
      // Removed, the agent's retry sent a second copy; kept, retries get 409 until PUBLISH_IN_FLIGHT_MS, then send.
      log.warn({ endpointId, eventTypeId, err: reason }, 'agent publish outcome unknown; its record stays sending');
      throw new HttpError(
        503,
        'unavailable',
        `the bus did not confirm the event, which may have been sent; try again - until ${PUBLISH_IN_FLIGHT_MS / 60_000} minutes after this attempt ` +
          'a retry is answered 409 publish-in-flight, then it is sent',
      );
    }
    // Refused, nothing went out: the claim goes, so a retry sends. (A failure to remove it leaves it `sending`:
    // retries get 409 until PUBLISH_IN_FLIGHT_MS, then send.)
    await records.release(entry).catch((e: unknown) => log.warn({ endpointId, err: e instanceof Error ? e.message : String(e) }, 'agent publish record not released'));
    if (err instanceof PublishValidationError) throw badRequest(err.message);
    if (isSizeRefusal(err)) throw new HttpError(413, 'too large', 'the event is larger than Service Bus accepts; nothing was sent - send a smaller one');
    log.warn({ endpointId, eventTypeId, err: reason }, 'agent publish refused by the bus');
    throw new HttpError(503, 'unavailable', 'the bus refused the event; nothing was sent - try again');
  }
  // Sent: the answer stands whatever happens to the record. The write is tried a few times (records.sent); not
  // recorded even so (the store failing for seconds, or the claim taken over), a retry finds `sending` and gets 409
  // until PUBLISH_IN_FLIGHT_MS, then sends again - a duplicate window docs/agents.md lists.
  const kept = await records.sent(entry, answer).catch((e: unknown) => {
    log.warn({ endpointId, err: e instanceof Error ? e.message : String(e) }, 'agent publish sent, its record not written after retries (a retry past the in-flight bound sends it again)');
    return true;
  });
  if (!kept) log.warn({ endpointId, eventTypeId }, 'agent publish sent after its record was taken over (a retry may have sent it again)');
  return answer;
}

/** Closes the publishers (the console's shutdown). */
export async function closeAgentPublishers(): Promise<void> {
  const all = [...slot.publishers.values()];
  slot.publishers.clear();
  slot.ctx = undefined;
  await Promise.allSettled(all.map((p) => p.close()));
}
