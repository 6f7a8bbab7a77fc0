// Reading the ATOM entries the admin client PUTs: <entry><content><TopicDescription|SubscriptionDescription|
// RuleDescription>…</…></content></entry>. Namespace prefixes are arbitrary on the wire (the JS client writes
// p4:type / l28:string, .NET writes i:type / d2p1:…), so they are stripped before anything is read. Every
// value is validated with zod; a bad one becomes an AtomFormatError naming the field (HTTP 400).

import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { z } from 'zod';
import type {
  EntityStatus,
  RuleAction,
  RuleDescription,
  RuleFilter,
  SqlParameters,
  SubscriptionDescription,
  TopicDescription,
  QueueDescription,
} from '../broker/api.ts';
import { DurationFormatError, parseDuration } from './duration.ts';

export class AtomFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AtomFormatError';
  }
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  // Keep values exactly as sent (a correlation filter on ' x' must not become 'x'); whitespace between
  // elements lands in '#text' keys, which nothing here reads.
  trimValues: false,
  isArray: (name) => name === 'KeyValueOfstringanyType',
});

export interface EntryContent {
  /** Local name of the element inside <content>, e.g. "TopicDescription". */
  root: string;
  body: Record<string, unknown>;
}

/** Parse a request body down to the description element inside <content>. */
export function readEntry(xml: string): EntryContent {
  if (xml.trim() === '') throw new AtomFormatError('The request body is empty; expected an ATOM <entry>.');
  // A DTD could declare entities that expand without bound; the ATOM API never sends one.
  if (/<!DOCTYPE/i.test(xml)) throw new AtomFormatError('DOCTYPE declarations are not accepted.');
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    throw new AtomFormatError(
      `The request body is not well-formed XML: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col}).`,
    );
  }
  const doc: unknown = parser.parse(xml);
  const entry = asRecord(asRecord(doc)?.['entry']);
  const content = asRecord(entry?.['content']);
  if (!content) throw new AtomFormatError('Expected an ATOM <entry> with a <content> element.');
  const roots = Object.keys(content).filter((k) => !k.startsWith('@_') && k !== '#text');
  if (roots.length !== 1 || roots[0] === undefined) {
    throw new AtomFormatError('Expected exactly one description element inside <content>.');
  }
  const root = roots[0];
  const value = content[root];
  // An empty <TopicDescription/> parses as "" and means "all defaults".
  const body = value === '' ? {} : asRecord(value);
  if (!body) throw new AtomFormatError(`<${root}> must contain elements.`);
  return { root, body };
}

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Scalar fields.
// ---------------------------------------------------------------------------------------------------------

/** An element's text: plain text, text beside attributes, i:nil → absent. Elements with children stay as they are (and fail validation). */
function elementText(v: unknown): unknown {
  const rec = asRecord(v);
  if (!rec) return v;
  if (rec['@_nil'] === 'true') return undefined;
  const keys = Object.keys(rec);
  if (keys.every((k) => k.startsWith('@_') || k === '#text'))
    return typeof rec['#text'] === 'string' ? rec['#text'] : '';
  return v;
}

const text = z.preprocess(elementText, z.string({ error: 'must be a text value' }).optional());

const bool = z.preprocess(
  elementText,
  z
    .string({ error: 'must be true or false' })
    .trim()
    .toLowerCase()
    .pipe(z.enum(['true', 'false'], { error: 'must be true or false' }))
    .transform((s) => s === 'true')
    .optional(),
);

const int = z.preprocess(
  elementText,
  z
    .string({ error: 'must be a whole number' })
    .trim()
    .regex(/^-?\d{1,15}$/, { error: 'must be a whole number' })
    .transform(Number)
    .optional(),
);

const duration = z.preprocess(
  elementText,
  z
    .string({ error: 'must be an ISO 8601 duration' })
    .transform((s, ctx) => {
      try {
        return parseDuration(s);
      } catch (err) {
        ctx.addIssue({
          code: 'custom',
          message: err instanceof DurationFormatError ? err.message : 'invalid duration',
        });
        return z.NEVER;
      }
    })
    .optional(),
);

const status = z.preprocess(
  elementText,
  z
    .enum(['Active', 'Disabled', 'SendDisabled', 'ReceiveDisabled'], {
      error: 'must be Active, Disabled, SendDisabled or ReceiveDisabled',
    })
    .optional(),
);

/**
 * ForwardTo arrives as an absolute address (the client prefixes sb://host/); the broker wants the entity name.
 * An empty value means "no forwarding".
 */
const entityReference = z.preprocess(
  elementText,
  z
    .string({ error: 'must be an entity name or address' })
    .trim()
    .transform((s) => {
      const m = /^[a-z][a-z0-9+.-]*:\/\/[^/]*\/(.*)$/i.exec(s);
      const name = (m ? (m[1] ?? '') : s).replace(/\/+$/, '');
      return name === '' ? undefined : name;
    })
    .optional(),
);

function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : what}: ${i.message}`);
  throw new AtomFormatError(`Invalid ${what}: ${issues.join('; ')}`);
}

// ---------------------------------------------------------------------------------------------------------
// Topics and subscriptions.
// ---------------------------------------------------------------------------------------------------------

const topicSchema = z.object({
  DefaultMessageTimeToLive: duration,
  MaxSizeInMegabytes: int,
  RequiresDuplicateDetection: bool,
  DuplicateDetectionHistoryTimeWindow: duration,
  EnableBatchedOperations: bool,
  Status: status,
  UserMetadata: text,
  SupportOrdering: bool,
  AutoDeleteOnIdle: duration,
  EnablePartitioning: bool,
  MaxMessageSizeInKilobytes: int,
});

/** Topic fields present in the request (absent ones are left out, so the broker applies its defaults). */
export function readTopicDescription(body: Record<string, unknown>): Partial<Omit<TopicDescription, 'name'>> {
  const t = parseOrThrow(topicSchema, body, 'TopicDescription');
  return definedOnly({
    defaultMessageTimeToLiveMs: t.DefaultMessageTimeToLive,
    maxSizeInMegabytes: t.MaxSizeInMegabytes,
    requiresDuplicateDetection: t.RequiresDuplicateDetection,
    duplicateDetectionHistoryTimeWindowMs: t.DuplicateDetectionHistoryTimeWindow,
    enableBatchedOperations: t.EnableBatchedOperations,
    status: t.Status as EntityStatus | undefined,
    userMetadata: t.UserMetadata,
    supportOrdering: t.SupportOrdering,
    autoDeleteOnIdleMs: t.AutoDeleteOnIdle,
    enablePartitioning: t.EnablePartitioning,
    maxMessageSizeInKilobytes: t.MaxMessageSizeInKilobytes,
  });
}

const queueSchema = z.object({
  LockDuration: duration,
  MaxSizeInMegabytes: int,
  RequiresDuplicateDetection: bool,
  RequiresSession: bool,
  DefaultMessageTimeToLive: duration,
  DeadLetteringOnMessageExpiration: bool,
  DuplicateDetectionHistoryTimeWindow: duration,
  MaxDeliveryCount: int,
  EnableBatchedOperations: bool,
  Status: status,
  ForwardTo: entityReference,
  UserMetadata: text,
  AutoDeleteOnIdle: duration,
  EnablePartitioning: bool,
  ForwardDeadLetteredMessagesTo: entityReference,
  MaxMessageSizeInKilobytes: int,
});

/** Queue fields present in the request (absent ones are left out, so the broker applies its defaults). */
export function readQueueDescription(body: Record<string, unknown>): Partial<Omit<QueueDescription, 'name'>> {
  const q = parseOrThrow(queueSchema, body, 'QueueDescription');
  return definedOnly({
    lockDurationMs: q.LockDuration,
    maxSizeInMegabytes: q.MaxSizeInMegabytes,
    requiresDuplicateDetection: q.RequiresDuplicateDetection,
    requiresSession: q.RequiresSession,
    defaultMessageTimeToLiveMs: q.DefaultMessageTimeToLive,
    deadLetteringOnMessageExpiration: q.DeadLetteringOnMessageExpiration,
    duplicateDetectionHistoryTimeWindowMs: q.DuplicateDetectionHistoryTimeWindow,
    maxDeliveryCount: q.MaxDeliveryCount,
    enableBatchedOperations: q.EnableBatchedOperations,
    status: q.Status as EntityStatus | undefined,
    forwardTo: q.ForwardTo,
    userMetadata: q.UserMetadata,
    autoDeleteOnIdleMs: q.AutoDeleteOnIdle,
    enablePartitioning: q.EnablePartitioning,
    forwardDeadLetteredMessagesTo: q.ForwardDeadLetteredMessagesTo,
    maxMessageSizeInKilobytes: q.MaxMessageSizeInKilobytes,
  });
}

const subscriptionSchema = z.object({
  LockDuration: duration,
  RequiresSession: bool,
  DefaultMessageTimeToLive: duration,
  DeadLetteringOnMessageExpiration: bool,
  DeadLetteringOnFilterEvaluationExceptions: bool,
  MaxDeliveryCount: int,
  EnableBatchedOperations: bool,
  Status: status,
  ForwardTo: entityReference,
  UserMetadata: text,
  ForwardDeadLetteredMessagesTo: entityReference,
  AutoDeleteOnIdle: duration,
});

export interface SubscriptionRequest {
  description: Partial<Omit<SubscriptionDescription, 'topicName' | 'subscriptionName'>>;
  /** From <DefaultRuleDescription>; absent = the broker's '$Default' true rule. */
  defaultRule?: RuleDescription;
}

export function readSubscriptionDescription(body: Record<string, unknown>): SubscriptionRequest {
  const s = parseOrThrow(subscriptionSchema, body, 'SubscriptionDescription');
  const description = definedOnly({
    lockDurationMs: s.LockDuration,
    requiresSession: s.RequiresSession,
    defaultMessageTimeToLiveMs: s.DefaultMessageTimeToLive,
    deadLetteringOnMessageExpiration: s.DeadLetteringOnMessageExpiration,
    deadLetteringOnFilterEvaluationExceptions: s.DeadLetteringOnFilterEvaluationExceptions,
    maxDeliveryCount: s.MaxDeliveryCount,
    enableBatchedOperations: s.EnableBatchedOperations,
    status: s.Status as EntityStatus | undefined,
    forwardTo: s.ForwardTo,
    userMetadata: s.UserMetadata,
    forwardDeadLetteredMessagesTo: s.ForwardDeadLetteredMessagesTo,
    autoDeleteOnIdleMs: s.AutoDeleteOnIdle,
  });
  const rawRule = body['DefaultRuleDescription'];
  if (rawRule === undefined) return { description };
  const ruleBody = rawRule === '' ? {} : asRecord(rawRule);
  if (!ruleBody)
    throw new AtomFormatError(
      'Invalid SubscriptionDescription: DefaultRuleDescription must contain elements.',
    );
  const rule = readRuleDescription(ruleBody);
  return { description, defaultRule: { ...rule, name: rule.name ?? '$Default' } };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

// ---------------------------------------------------------------------------------------------------------
// Rules.
// ---------------------------------------------------------------------------------------------------------

type ParamValue = string | number | boolean | Date | null;

const NUMERIC_TYPES = new Set([
  'double',
  'float',
  'decimal',
  'int',
  'long',
  'short',
  'byte',
  'unsignedInt',
  'unsignedLong',
  'unsignedShort',
  'unsignedByte',
]);

/** Local part of an xsi:type value: "l28:string" → "string". */
function localType(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const i = v.indexOf(':');
  return i >= 0 ? v.slice(i + 1) : v;
}

function readTypedValue(raw: unknown, where: string): ParamValue {
  const rec = asRecord(raw);
  if (rec && rec['@_nil'] === 'true') return null;
  const type = rec ? localType(rec['@_type']) : undefined;
  const value = elementText(raw);
  if (typeof value !== 'string') throw new AtomFormatError(`${where}: the value must be text.`);
  if (type === undefined || type === 'string') return value;
  if (NUMERIC_TYPES.has(type)) {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n))
      throw new AtomFormatError(`${where}: '${value.slice(0, 40)}' is not a number.`);
    return n;
  }
  if (type === 'boolean') {
    const b = value.trim().toLowerCase();
    if (b !== 'true' && b !== 'false')
      throw new AtomFormatError(`${where}: '${value.slice(0, 40)}' is not a boolean.`);
    return b === 'true';
  }
  if (type === 'dateTime') {
    const d = new Date(value);
    if (Number.isNaN(d.getTime()))
      throw new AtomFormatError(`${where}: '${value.slice(0, 40)}' is not a date.`);
    return d;
  }
  throw new AtomFormatError(`${where}: values of type '${type.slice(0, 40)}' are not supported.`);
}

/** <Parameters>/<Properties>: a list of KeyValueOfstringanyType. */
function readKeyValues(raw: unknown, where: string): Record<string, ParamValue> | undefined {
  if (raw === undefined || raw === '') return undefined;
  const rec = asRecord(raw);
  const list = rec?.['KeyValueOfstringanyType'];
  if (!rec || (list !== undefined && !Array.isArray(list)))
    throw new AtomFormatError(`${where} must be a list of KeyValueOfstringanyType.`);
  if (list === undefined || list.length === 0) return undefined;
  const out: Record<string, ParamValue> = {};
  for (const item of list as unknown[]) {
    const kv = asRecord(item);
    const key = elementText(kv?.['Key']);
    if (!kv || typeof key !== 'string' || key === '')
      throw new AtomFormatError(`${where}: every entry needs a non-empty Key.`);
    out[key] = readTypedValue(kv['Value'], `${where} '${key}'`);
  }
  return out;
}

const correlationSchema = z.object({
  CorrelationId: text,
  MessageId: text,
  To: text,
  ReplyTo: text,
  Label: text,
  SessionId: text,
  ReplyToSessionId: text,
  ContentType: text,
});

function readFilter(raw: unknown): RuleFilter {
  if (raw === undefined || raw === '') return { kind: 'true' };
  const f = asRecord(raw);
  if (!f) throw new AtomFormatError('Invalid RuleDescription: Filter must contain elements.');
  const type = localType(f['@_type']);
  const sql = elementText(f['SqlExpression']);
  if (type === 'TrueFilter') return { kind: 'true' };
  if (type === 'FalseFilter') return { kind: 'false' };
  if (type === 'SqlFilter' || (type === undefined && sql !== undefined)) {
    if (typeof sql !== 'string' || sql.trim() === '')
      throw new AtomFormatError('Invalid SqlFilter: SqlExpression is required.');
    const parameters = readKeyValues(f['Parameters'], 'SqlFilter Parameters');
    return parameters
      ? { kind: 'sql', sqlExpression: sql, parameters: parameters as SqlParameters }
      : { kind: 'sql', sqlExpression: sql };
  }
  if (type === 'CorrelationFilter' || type === undefined) {
    const c = parseOrThrow(correlationSchema, f, 'CorrelationFilter');
    const applicationProperties = readKeyValues(f['Properties'], 'CorrelationFilter Properties');
    return {
      kind: 'correlation',
      ...definedOnly({
        correlationId: c.CorrelationId,
        messageId: c.MessageId,
        to: c.To,
        replyTo: c.ReplyTo,
        subject: c.Label,
        sessionId: c.SessionId,
        replyToSessionId: c.ReplyToSessionId,
        contentType: c.ContentType,
        applicationProperties,
      }),
    };
  }
  throw new AtomFormatError(
    `Unsupported filter type '${type.slice(0, 40)}' (expected SqlFilter, CorrelationFilter, TrueFilter or FalseFilter).`,
  );
}

function readAction(raw: unknown): RuleAction | undefined {
  if (raw === undefined || raw === '') return undefined;
  const a = asRecord(raw);
  if (!a) throw new AtomFormatError('Invalid RuleDescription: Action must contain elements.');
  const type = localType(a['@_type']);
  if (type === 'EmptyRuleAction') return undefined;
  const sql = elementText(a['SqlExpression']);
  if (type !== undefined && type !== 'SqlRuleAction') {
    throw new AtomFormatError(
      `Unsupported action type '${type.slice(0, 40)}' (expected SqlRuleAction or EmptyRuleAction).`,
    );
  }
  if (sql === undefined && type === undefined) return undefined;
  if (typeof sql !== 'string' || sql.trim() === '')
    throw new AtomFormatError('Invalid SqlRuleAction: SqlExpression is required.');
  const parameters = readKeyValues(a['Parameters'], 'SqlRuleAction Parameters');
  return parameters
    ? { sqlExpression: sql, parameters: parameters as SqlParameters }
    : { sqlExpression: sql };
}

/** A rule as sent; `name` is what the body says (the URL's name wins where both exist). */
export function readRuleDescription(
  body: Record<string, unknown>,
): Omit<RuleDescription, 'name'> & { name?: string } {
  const name = elementText(body['Name']);
  if (name !== undefined && typeof name !== 'string')
    throw new AtomFormatError('Invalid RuleDescription: Name must be text.');
  const filter = readFilter(body['Filter']);
  const action = readAction(body['Action']);
  return { filter, ...(action ? { action } : {}), ...(name ? { name } : {}) };
}

// ---------------------------------------------------------------------------------------------------------
// AuthorizationRules (the shared access policies a TopicDescription carries).
// ---------------------------------------------------------------------------------------------------------

function oneOrMany(v: unknown): unknown[] {
  if (v === undefined || v === '') return [];
  return Array.isArray(v) ? v : [v];
}

const authorizationRuleSchema = z.object({
  ClaimType: z.preprocess(
    elementText,
    z.literal('SharedAccessKey', { error: 'must be SharedAccessKey' }).optional(),
  ),
  KeyName: z.preprocess(elementText, z.string({ error: 'is required' })),
  PrimaryKey: text,
  SecondaryKey: text,
  Rights: z.preprocess((v) => oneOrMany(asRecord(v)?.['AccessRights']).map(elementText), z.array(z.string())),
});

/**
 * The <AuthorizationRules> of a description: undefined when the element is absent (a PUT without it leaves
 * the entity with none), otherwise each rule as policy input (keys may be missing: they are generated).
 */
export function readAuthorizationRules(
  body: Record<string, unknown>,
): Array<{ keyName: string; rights: string[]; primaryKey?: string; secondaryKey?: string }> | undefined {
  if (!('AuthorizationRules' in body)) return undefined;
  // <AuthorizationRules/> (or only whitespace inside) is an empty list.
  const container = asRecord(body['AuthorizationRules']);
  const rules = container ? oneOrMany(container['AuthorizationRule']) : [];
  return rules.map((raw, i) => {
    const r = parseOrThrow(authorizationRuleSchema, raw, `AuthorizationRule ${i + 1}`);
    return {
      keyName: r.KeyName,
      rights: r.Rights,
      ...(r.PrimaryKey ? { primaryKey: r.PrimaryKey } : {}),
      ...(r.SecondaryKey ? { secondaryKey: r.SecondaryKey } : {}),
    };
  });
}
