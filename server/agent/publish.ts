// Publishing through the Agent API: as one of the agent's endpoints, an event type that endpoint produces in the
// catalog, with a payload checked against the catalog's JSON schema for the type (400 with the schema's complaint
// otherwise), sent by the console's own Service Bus connection - the agent holds no bus credentials. The message is
// built by the SDK's Publisher, so it is the same wire message an endpoint's own publisher sends (session key from
// the catalog, a message id derived from the payload). Nothing deduplicates a publish sent twice: the topics have no
// duplicate detection, so an agent's retry after a lost answer (or a 5xx) is delivered twice, under the same message
// id, and subscribers drop the second copy with their inbox (docs/agents.md). A payload too large for the broker is refused with 413
// before anything is sent, and a broker's size refusal answered 413 too (server/messageSize.ts): answered 503 "try
// again", an agent's client retried it for ever.
import { describePayloadIssues, payloadIssues, type Catalog } from '@nimbus/sdk/contract';
import { createPublisher, PublishValidationError, sessionKeysFromCatalog, type Publisher } from '@nimbus/sdk';
import type { ConsoleContext } from '../context.ts';
import { HttpError, badRequest } from '../http.ts';
import { schemaFor } from '../payloadSchemaCheck.ts';
import { log } from '../log.ts';
import { isSizeRefusal, requireSendableSize } from '../messageSize.ts';

export interface Published {
  endpointId: string;
  eventTypeId: string;
  messageId: string;
  sessionId: string;
  correlationId: string;
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
  sessionId?: string,
): Promise<Published> {
  checkPublish(ctx.catalog, endpointId, eventTypeId, payload);
  requireSendableSize("the event's payload", Buffer.byteLength(JSON.stringify(payload), 'utf8'));
  try {
    const r = await publisherFor(ctx, endpointId).publish(eventTypeId, payload, sessionId ? { sessionId } : {});
    return { endpointId, eventTypeId, ...r };
  } catch (err) {
    if (err instanceof PublishValidationError) throw badRequest(err.message);
    if (isSizeRefusal(err)) throw new HttpError(413, 'too large', 'the event is larger than Service Bus accepts; nothing was sent - send a smaller one');
    log.warn({ endpointId, eventTypeId, err: err instanceof Error ? err.message : String(err) }, 'agent publish not sent');
    throw new HttpError(503, 'unavailable', 'the event could not be sent to the bus; try again');
  }
}

/** Closes the publishers (the console's shutdown). */
export async function closeAgentPublishers(): Promise<void> {
  const all = [...slot.publishers.values()];
  slot.publishers.clear();
  slot.ctx = undefined;
  await Promise.allSettled(all.map((p) => p.close()));
}
