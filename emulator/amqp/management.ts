// The `$management` node of an entity: the request/response operations the client sends as AMQP messages
// (schedule, cancel, peek, deferred receive, lock renewal, session state, settlement without a link). Each
// request is validated, handed to the broker, and answered with statusCode/statusDescription; failures carry
// the AMQP condition in `errorCondition` so the client raises the same error code as against Azure.

import rhea from 'rhea';
import type { Message } from 'rhea';
import { z } from 'zod';
import type {
  Broker,
  Delivered,
  Disposition,
  ReceiveMode,
  ReceiveSource,
  SessionCaller,
} from '../broker/api.ts';
import { BrokerError } from '../broker/api.ts';
import type { ParsedEntity } from './codec.ts';
import {
  brokerLockTokenToManagement,
  decodeMessage,
  describeSource,
  encodeMessage,
  longToNumber,
  managementLockTokenToBroker,
  queueSource,
  toOutgoingMessage,
} from './codec.ts';
import { badRequest, managementStatusFor } from './errors.ts';
import { encodeRule, parseAddRule, parseEnumerateRules, parseRemoveRule } from './rules-codec.ts';

export interface ManagementReply {
  statusCode: number;
  statusDescription: string;
  errorCondition?: string;
  body?: unknown;
}

const long = z.unknown().transform((v, ctx) => {
  try {
    return longToNumber(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'expected a long' });
    return z.NEVER;
  }
});
const longs = z.array(long);
const binary = z.custom<Buffer>((v) => Buffer.isBuffer(v), 'expected binary');
/** rhea leaves the elements of an AMQP array typed (uAMQP sends lock tokens as an array of uuid). */
const untyped = (v: unknown): unknown =>
  v !== null && typeof v === 'object' && !Buffer.isBuffer(v) && 'value' in v
    ? (v as { value: unknown }).value
    : v;
const uuid = z.preprocess(
  untyped,
  z.custom<Buffer | string>((v) => Buffer.isBuffer(v) || typeof v === 'string', 'expected a uuid'),
);
const optionalString = z.string().nullish();
const propertiesMap = z.record(z.string(), z.unknown()).nullish();

const scheduleBody = z.object({
  messages: z.array(z.object({ message: binary }).passthrough()).min(1),
});
const sequenceNumbersBody = z.object({ 'sequence-numbers': longs });
/**
 * The most messages one peek answers. Azure answers a peek with what it can and the clients accept a short page
 * (they ask again from the last sequence number), so a larger message-count is cut to this rather than refused:
 * 10,000 is the largest count the emulator answered before, which keeps one reply's size where it was.
 */
export const PEEK_PAGE_MAX = 10_000;
const peekBody = z.object({
  'from-sequence-number': long.optional(),
  'message-count': z.preprocess(
    untyped,
    z
      .number()
      .int()
      .positive()
      .transform((n) => Math.min(n, PEEK_PAGE_MAX)),
  ),
  'session-id': optionalString,
});
const receiveBySequenceBody = z.object({
  'sequence-numbers': longs,
  'receiver-settle-mode': z.number().int().min(0).max(1).optional(),
  'session-id': optionalString,
});
const lockTokensBody = z.object({ 'lock-tokens': z.array(uuid).min(1) });
const sessionBody = z.object({ 'session-id': z.string() });
const setSessionStateBody = z.object({ 'session-id': z.string(), 'session-state': binary.nullish() });
const updateDispositionBody = z.object({
  'lock-tokens': z.array(uuid).min(1),
  'disposition-status': z.enum(['completed', 'abandoned', 'suspended', 'defered', 'deferred']),
  'deadletter-reason': optionalString,
  'deadletter-description': optionalString,
  'properties-to-modify': propertiesMap,
  'session-id': optionalString,
});
const listSessionsBody = z.object({
  'last-updated-time': z.date().nullish(),
  skip: z.number().int().min(0).optional(),
  top: z.number().int().min(0).optional(),
});

const batchDeleteBody = z.object({
  'message-count': z.preprocess(untyped, z.number().int().min(1).max(4000)),
  'enqueued-time-utc': z
    .preprocess(untyped, z.union([z.date(), z.number().transform((n) => new Date(n))]))
    .nullish(),
  'session-id': z.string().nullish(),
});

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    throw badRequest(
      `Invalid $management request body: ${issue ? `${issue.path.join('.')} ${issue.message}` : 'malformed'}`,
    );
  }
  return result.data;
}

const ok = (body?: unknown): ManagementReply => ({ statusCode: 200, statusDescription: 'OK', body });

function requireSubscription(entity: ParsedEntity, _operation: string): ReceiveSource {
  // A bare name's receive operations are a queue's (the broker answers not-found for a topic).
  if (entity.kind === 'topic') return queueSource(entity.topic);
  return entity.source;
}

function requireTopic(entity: ParsedEntity, operation: string): string {
  if (entity.kind !== 'topic') throw badRequest(`'${operation}' needs a topic entity`);
  return entity.topic;
}

function encodeForReply(d: Delivered, withLock: boolean): Buffer {
  const m = toOutgoingMessage(d, withLock);
  if (withLock && d.lockToken) {
    // A message handed out by $management has no delivery tag: Service Bus puts its lock token in the
    // delivery annotations, where uAMQP-based clients read it (the JS client reads the reply's lock-token).
    m.delivery_annotations = {
      ...(m.delivery_annotations ?? {}),
      'x-opt-lock-token': rhea.types.wrap_uuid(brokerLockTokenToManagement(d.lockToken)),
    } as Message['delivery_annotations'];
  }
  return encodeMessage(m);
}

/**
 * Upper bounds of what a peek reply's body adds around its encoded messages: the amqp-value descriptor, the
 * body map's header, its 'messages' key and the list's header (3 + 9 + 10 + 9); and per message, its map's
 * header, the 'message' key and the binary's header (9 + 9 + 5).
 */
const PEEK_BODY_OVERHEAD = 32;
const PEEK_ENTRY_OVERHEAD = 24;

/**
 * The leading messages of `found` whose reply body fits in `maxBodyBytes` (all of them without a limit): a
 * reply larger than the link's max-message-size could not be delivered, so the page is cut where Azure cuts
 * a peek, at what fits; the clients accept a short page and ask again from its last sequence number. A first
 * message that does not fit alone answers MessageSizeExceeded rather than an undeliverable reply.
 */
function peekPage(found: Delivered[], maxBodyBytes: number | undefined): Array<{ message: Buffer }> {
  const page: Array<{ message: Buffer }> = [];
  let used = PEEK_BODY_OVERHEAD;
  for (const d of found) {
    const message = encodeForReply(d, false);
    used += message.length + PEEK_ENTRY_OVERHEAD;
    if (maxBodyBytes !== undefined && used > maxBodyBytes) {
      if (page.length > 0) break;
      throw new BrokerError(
        'MessageSizeExceeded',
        `The message with sequence number ${d.sequenceNumber} (${message.length} bytes) does not fit in a reply on this link (max-message-size: the body may take ${maxBodyBytes} bytes).`,
      );
    }
    page.push({ message });
  }
  return page;
}

function dispositionFor(body: z.infer<typeof updateDispositionBody>): Disposition {
  const props = body['properties-to-modify'] ?? undefined;
  switch (body['disposition-status']) {
    case 'completed':
      return { kind: 'complete' };
    case 'abandoned':
      return { kind: 'abandon', propertiesToModify: props };
    case 'defered':
    case 'deferred':
      return { kind: 'defer', propertiesToModify: props };
    case 'suspended':
      return {
        kind: 'deadLetter',
        reason: body['deadletter-reason'] ?? undefined,
        description: body['deadletter-description'] ?? undefined,
        propertiesToModify: props,
      };
  }
}

/**
 * The receivers a request speaks for, given its `associated-link-name` (the client's receiver link, which
 * @azure/service-bus, the .NET and the Python clients send with a receiver's requests), or undefined when the
 * request names none. The plane answers it from the request's connection.
 */
export type CallerResolver = (associatedLinkName: string | undefined) => SessionCaller;

/** A text application property: rhea gives a string, uAMQP-based clients may send binary. */
function textProperty(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

export interface ManagementOptions {
  /**
   * The most bytes the reply's body may take: the reply link's max-message-size less the rest of the reply
   * (the plane works it out). Undefined: no limit.
   */
  maxBodyBytes?: number;
}

/** Handle one request. Never throws: every failure becomes an error reply. */
export function handleManagementRequest(
  broker: Broker,
  entity: ParsedEntity,
  request: Message,
  resolveCaller: CallerResolver,
  options: ManagementOptions = {},
): ManagementReply {
  const operation = String(request.application_properties?.operation ?? '');
  const entityName = entity.kind === 'topic' ? entity.topic : describeSource(entity.source);
  // Resolved only when a session operation asks: most requests have no use for it.
  const caller: SessionCaller = (holder) =>
    resolveCaller(textProperty(request.application_properties?.['associated-link-name']))(holder);
  try {
    return dispatch(broker, entity, operation, request.body, caller, options);
  } catch (err) {
    const status = managementStatusFor(err, entityName);
    return {
      statusCode: status.status,
      statusDescription: status.description ?? status.condition,
      errorCondition: status.condition,
    };
  }
}

function dispatch(
  broker: Broker,
  entity: ParsedEntity,
  operation: string,
  body: unknown,
  caller: SessionCaller,
  options: ManagementOptions,
): ManagementReply {
  switch (operation) {
    case 'com.microsoft:schedule-message': {
      const topic = requireTopic(entity, operation);
      const parsed = parse(scheduleBody, body);
      const messages: Message[] = [];
      const times: number[] = [];
      for (const entry of parsed.messages) {
        let msg: Message;
        try {
          msg = decodeMessage(entry.message);
        } catch {
          throw badRequest('A scheduled message could not be decoded');
        }
        const when = msg.message_annotations?.['x-opt-scheduled-enqueue-time'];
        const at = when instanceof Date ? when.getTime() : typeof when === 'number' ? when : NaN;
        if (!Number.isFinite(at)) throw badRequest('A scheduled message has no x-opt-scheduled-enqueue-time');
        if (msg.message_id === undefined && typeof entry['message-id'] === 'string') {
          msg.message_id = entry['message-id'];
        }
        messages.push(msg);
        times.push(at);
      }
      const seqs = broker.schedule(topic, messages, times);
      return ok({ 'sequence-numbers': rhea.types.wrap_array(seqs, 0x81, undefined) });
    }
    case 'com.microsoft:cancel-scheduled-message': {
      const topic = requireTopic(entity, operation);
      broker.cancelScheduled(topic, parse(sequenceNumbersBody, body)['sequence-numbers']);
      return ok({});
    }
    case 'com.microsoft:peek-message': {
      const source = requireSubscription(entity, operation);
      const parsed = parse(peekBody, body);
      const found = broker.peek(source, {
        fromSequenceNumber: parsed['from-sequence-number'],
        maxCount: parsed['message-count'],
        sessionId: parsed['session-id'] ?? undefined,
      });
      if (found.length === 0) return { statusCode: 204, statusDescription: 'No messages' };
      return ok({ messages: peekPage(found, options.maxBodyBytes) });
    }
    case 'com.microsoft:receive-by-sequence-number': {
      const source = requireSubscription(entity, operation);
      const parsed = parse(receiveBySequenceBody, body);
      const mode: ReceiveMode = parsed['receiver-settle-mode'] === 0 ? 'receiveAndDelete' : 'peekLock';
      const found = broker.receiveDeferred(
        source,
        parsed['sequence-numbers'],
        mode,
        parsed['session-id'] ?? undefined,
        caller,
      );
      return ok({
        messages: found.map((d) => {
          const entry: Record<string, unknown> = { message: encodeForReply(d, mode === 'peekLock') };
          if (d.lockToken)
            entry['lock-token'] = rhea.types.wrap_uuid(brokerLockTokenToManagement(d.lockToken));
          return entry;
        }),
      });
    }
    case 'com.microsoft:renew-lock': {
      const source = requireSubscription(entity, operation);
      const tokens = parse(lockTokensBody, body)['lock-tokens'].map(managementLockTokenToBroker);
      const expirations = tokens.map((t) => new Date(broker.renewLock(source, t)));
      return ok({ expirations });
    }
    case 'com.microsoft:update-disposition': {
      const source = requireSubscription(entity, operation);
      const parsed = parse(updateDispositionBody, body);
      const disposition = dispositionFor(parsed);
      for (const token of parsed['lock-tokens']) {
        broker.settle(
          source,
          managementLockTokenToBroker(token),
          disposition,
          parsed['session-id'] ?? undefined,
          caller,
        );
      }
      return ok({});
    }
    case 'com.microsoft:renew-session-lock': {
      const source = requireSubscription(entity, operation);
      const sessionId = parse(sessionBody, body)['session-id'];
      return ok({ expiration: new Date(broker.renewSessionLock(source, sessionId, caller)) });
    }
    case 'com.microsoft:get-session-state': {
      const source = requireSubscription(entity, operation);
      const state = broker.getSessionState(source, parse(sessionBody, body)['session-id'], caller);
      return ok({ 'session-state': state === null ? null : rhea.types.wrap_binary(state) });
    }
    case 'com.microsoft:set-session-state': {
      const source = requireSubscription(entity, operation);
      const parsed = parse(setSessionStateBody, body);
      broker.setSessionState(source, parsed['session-id'], parsed['session-state'] ?? null, caller);
      return ok({});
    }
    case 'com.microsoft:get-message-sessions': {
      const source = requireSubscription(entity, operation);
      const parsed = parse(listSessionsBody, body);
      const all = broker.listSessions(source, parsed['last-updated-time']?.getTime());
      const skip = parsed.skip ?? 0;
      const top = parsed.top ?? all.length;
      const page = all.slice(skip, skip + top);
      if (page.length === 0) return { statusCode: 204, statusDescription: 'No sessions' };
      return ok({ skip: rhea.types.wrap_int(skip + page.length), 'sessions-ids': page });
    }
    case 'com.microsoft:add-rule': {
      const source = requireSubscription(entity, operation);
      broker.createRule(source.topic, source.subscription, parseAddRule(body));
      return ok({});
    }
    case 'com.microsoft:remove-rule': {
      const source = requireSubscription(entity, operation);
      broker.deleteRule(source.topic, source.subscription, parseRemoveRule(body));
      return ok({});
    }
    case 'com.microsoft:enumerate-rules': {
      const source = requireSubscription(entity, operation);
      const { top, skip } = parseEnumerateRules(body);
      const all = broker.listRules(source.topic, source.subscription);
      const page = all.slice(skip, top === undefined ? undefined : skip + top);
      if (page.length === 0) return { statusCode: 204, statusDescription: 'No rules' };
      return ok({ rules: page.map(encodeRule) });
    }
    case 'com.microsoft:batch-delete-messages': {
      // Deletes up to message-count messages enqueued before enqueued-time-utc (purge/deleteMessages in
      // the newer clients); answers how many went.
      const source = requireSubscription(entity, operation);
      const parsed = parse(batchDeleteBody, body);
      const before =
        parsed['enqueued-time-utc'] instanceof Date ? parsed['enqueued-time-utc'].getTime() : Date.now();
      const deleted = broker.deleteMessages(
        source,
        parsed['message-count'],
        before,
        parsed['session-id'] ?? undefined,
      );
      return ok({ 'message-count': rhea.types.wrap_int(deleted) });
    }
    default:
      return {
        statusCode: 501,
        statusDescription: `The operation '${operation || '(none)'}' is not supported by the emulator.`,
        errorCondition: 'amqp:not-implemented',
      };
  }
}
