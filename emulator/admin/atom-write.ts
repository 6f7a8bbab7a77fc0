// Writing the ATOM documents the admin client parses. What the SDK (7.9.5) relies on, and why things are
// the way they are here:
// - An entry's <id> is a URL whose path names the entity: the client takes TopicName, SubscriptionName and
//   RuleName from it, not from the description.
// - The description and the runtime figures share one element (there is no separate runtime resource).
// - <CountDetails> must declare exactly one xmlns:prefix and use it on every count element.
// - Rule parameter values carry i:type="<4-char prefix>:<type>"; the client cuts the first five characters.
// - A feed's next page is announced with <link rel="next">, read only when the feed has more than one <link>.
// - Optional values are omitted rather than written as i:nil, which the client would read as an object.

import type {
  QueueDescription,
  QueueRuntime,
  EntityTimes,
  RuleDescription,
  RuleFilter,
  SqlParameters,
  SubscriptionDescription,
  SubscriptionRuntime,
  TopicDescription,
  TopicRuntime,
} from '../broker/api.ts';
import { formatDuration } from './duration.ts';
import type { AccessPolicy } from '../auth/policies.ts';
import { element, optionalText, textElement, xmlDocument, type XmlFragment } from './xml-writer.ts';

export const ATOM_NS = 'http://www.w3.org/2005/Atom';
export const SB_NS = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';
export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
export const XSD_NS = 'http://www.w3.org/2001/XMLSchema';
export const COUNT_NS = 'http://schemas.microsoft.com/netservices/2011/06/servicebus';
export const API_VERSION = '2021-05';

/** Where the documents say they come from: the Host the client addressed (used in ids, links and ForwardTo). */
export interface AtomContext {
  host: string;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The https address Azure uses in ids and links; the client only reads its path and query. */
export function resourceUrl(ctx: AtomContext, path: string, query: Record<string, string> = {}): string {
  const url = new URL(`https://${ctx.host}/`);
  url.pathname = `/${encodeURI(path)}`;
  url.searchParams.set('api-version', API_VERSION);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  return url.toString();
}

function entry(
  ctx: AtomContext,
  path: string,
  title: string,
  times: { createdAt: number; updatedAt: number },
  content: XmlFragment,
): XmlFragment {
  const url = resourceUrl(ctx, path);
  return element('entry', { xmlns: ATOM_NS }, [
    textElement('id', url),
    textElement('title', title, { type: 'text' }),
    textElement('published', iso(times.createdAt)),
    textElement('updated', iso(times.updatedAt)),
    element('author', undefined, [textElement('name', ctx.host)]),
    element('link', { rel: 'self', href: url }, []),
    element('content', { type: 'application/xml' }, [content]),
  ]);
}

function description(name: string, children: Array<XmlFragment | undefined>): XmlFragment {
  return element(name, { xmlns: SB_NS, 'xmlns:i': XSI_NS }, children);
}

function countDetails(c: {
  activeMessageCount: number;
  deadLetterMessageCount: number;
  scheduledMessageCount: number;
  transferMessageCount: number;
  transferDeadLetterMessageCount: number;
}): XmlFragment {
  return element('CountDetails', { 'xmlns:d2p1': COUNT_NS }, [
    textElement('d2p1:ActiveMessageCount', c.activeMessageCount),
    textElement('d2p1:DeadLetterMessageCount', c.deadLetterMessageCount),
    textElement('d2p1:ScheduledMessageCount', c.scheduledMessageCount),
    textElement('d2p1:TransferMessageCount', c.transferMessageCount),
    textElement('d2p1:TransferDeadLetterMessageCount', c.transferDeadLetterMessageCount),
  ]);
}

/** Azure answers ForwardTo with the absolute address of the target. */
function forwardAddress(ctx: AtomContext, name: string | undefined): string | undefined {
  return name === undefined || name === '' ? undefined : `sb://${ctx.host}/${name}`;
}

/** A topic's or queue's shared access policies, as Azure lists them (the client reads KeyName, Rights and both keys). */
function authorizationRules(policies: readonly AccessPolicy[]): XmlFragment | undefined {
  if (policies.length === 0) return undefined;
  return element(
    'AuthorizationRules',
    undefined,
    policies.map((p) =>
      element('AuthorizationRule', { 'i:type': 'SharedAccessAuthorizationRule' }, [
        textElement('ClaimType', 'SharedAccessKey'),
        textElement('ClaimValue', 'None'),
        element(
          'Rights',
          undefined,
          p.rights.map((r) => textElement('AccessRights', r)),
        ),
        textElement('KeyName', p.keyName),
        textElement('PrimaryKey', p.primaryKey),
        textElement('SecondaryKey', p.secondaryKey),
      ]),
    ),
  );
}

export function topicContent(
  topic: TopicDescription & EntityTimes,
  runtime: TopicRuntime,
  policies: readonly AccessPolicy[] = [],
): XmlFragment {
  return description('TopicDescription', [
    textElement('DefaultMessageTimeToLive', formatDuration(topic.defaultMessageTimeToLiveMs)),
    textElement('MaxSizeInMegabytes', topic.maxSizeInMegabytes),
    textElement('RequiresDuplicateDetection', topic.requiresDuplicateDetection),
    textElement(
      'DuplicateDetectionHistoryTimeWindow',
      formatDuration(topic.duplicateDetectionHistoryTimeWindowMs),
    ),
    textElement('EnableBatchedOperations', topic.enableBatchedOperations),
    textElement('SizeInBytes', runtime.sizeInBytes),
    authorizationRules(policies),
    textElement('FilteringMessagesBeforePublishing', false),
    textElement('IsAnonymousAccessible', false),
    textElement('Status', topic.status),
    textElement('CreatedAt', iso(topic.createdAt)),
    textElement('UpdatedAt', iso(topic.updatedAt)),
    textElement('AccessedAt', iso(runtime.accessedAt)),
    textElement('SupportOrdering', topic.supportOrdering),
    countDetails({
      activeMessageCount: 0,
      deadLetterMessageCount: 0,
      scheduledMessageCount: runtime.scheduledMessageCount,
      transferMessageCount: 0,
      transferDeadLetterMessageCount: 0,
    }),
    textElement('AutoDeleteOnIdle', formatDuration(topic.autoDeleteOnIdleMs)),
    textElement('EnablePartitioning', topic.enablePartitioning),
    textElement('IsExpress', false),
    textElement('EntityAvailabilityStatus', 'Available'),
    textElement('EnableSubscriptionPartitioning', false),
    textElement('EnableExpress', false),
    optionalText('UserMetadata', topic.userMetadata),
    textElement('MaxMessageSizeInKilobytes', topic.maxMessageSizeInKilobytes),
    textElement('SubscriptionCount', runtime.subscriptionCount),
  ]);
}

export function topicEntry(
  ctx: AtomContext,
  topic: TopicDescription & EntityTimes,
  runtime: TopicRuntime,
  policies: readonly AccessPolicy[] = [],
): XmlFragment {
  return entry(ctx, topic.name, topic.name, topic, topicContent(topic, runtime, policies));
}

/** Azure's QueueDescription, elements in the service's order. */
export function queueContent(
  ctx: AtomContext,
  q: QueueDescription & EntityTimes,
  runtime: QueueRuntime,
  policies: readonly AccessPolicy[] = [],
): XmlFragment {
  return description('QueueDescription', [
    textElement('LockDuration', formatDuration(q.lockDurationMs)),
    textElement('MaxSizeInMegabytes', q.maxSizeInMegabytes),
    textElement('RequiresDuplicateDetection', q.requiresDuplicateDetection),
    textElement('RequiresSession', q.requiresSession),
    textElement('DefaultMessageTimeToLive', formatDuration(q.defaultMessageTimeToLiveMs)),
    textElement('DeadLetteringOnMessageExpiration', q.deadLetteringOnMessageExpiration),
    textElement(
      'DuplicateDetectionHistoryTimeWindow',
      formatDuration(q.duplicateDetectionHistoryTimeWindowMs),
    ),
    textElement('MaxDeliveryCount', q.maxDeliveryCount),
    textElement('EnableBatchedOperations', q.enableBatchedOperations),
    textElement('SizeInBytes', runtime.sizeInBytes),
    textElement('MessageCount', runtime.totalMessageCount),
    textElement('IsAnonymousAccessible', false),
    authorizationRules(policies),
    textElement('Status', q.status),
    optionalText('ForwardTo', forwardAddress(ctx, q.forwardTo)),
    textElement('CreatedAt', iso(q.createdAt)),
    textElement('UpdatedAt', iso(q.updatedAt)),
    textElement('AccessedAt', iso(runtime.accessedAt)),
    textElement('SupportOrdering', true),
    countDetails(runtime),
    textElement('AutoDeleteOnIdle', formatDuration(q.autoDeleteOnIdleMs)),
    textElement('EnablePartitioning', q.enablePartitioning),
    textElement('EntityAvailabilityStatus', 'Available'),
    optionalText('ForwardDeadLetteredMessagesTo', forwardAddress(ctx, q.forwardDeadLetteredMessagesTo)),
    textElement('EnableExpress', false),
    optionalText('UserMetadata', q.userMetadata),
    textElement('MaxMessageSizeInKilobytes', q.maxMessageSizeInKilobytes),
  ]);
}

export function queueEntry(
  ctx: AtomContext,
  q: QueueDescription & EntityTimes,
  runtime: QueueRuntime,
  policies: readonly AccessPolicy[] = [],
): XmlFragment {
  return entry(ctx, q.name, q.name, q, queueContent(ctx, q, runtime, policies));
}

export function subscriptionContent(
  ctx: AtomContext,
  sub: SubscriptionDescription & EntityTimes,
  runtime: SubscriptionRuntime,
): XmlFragment {
  return description('SubscriptionDescription', [
    textElement('LockDuration', formatDuration(sub.lockDurationMs)),
    textElement('RequiresSession', sub.requiresSession),
    textElement('DefaultMessageTimeToLive', formatDuration(sub.defaultMessageTimeToLiveMs)),
    textElement('DeadLetteringOnMessageExpiration', sub.deadLetteringOnMessageExpiration),
    textElement('DeadLetteringOnFilterEvaluationExceptions', sub.deadLetteringOnFilterEvaluationExceptions),
    textElement('MessageCount', runtime.totalMessageCount),
    textElement('MaxDeliveryCount', sub.maxDeliveryCount),
    textElement('EnableBatchedOperations', sub.enableBatchedOperations),
    textElement('Status', sub.status),
    optionalText('ForwardTo', forwardAddress(ctx, sub.forwardTo)),
    textElement('CreatedAt', iso(sub.createdAt)),
    textElement('UpdatedAt', iso(sub.updatedAt)),
    textElement('AccessedAt', iso(runtime.accessedAt)),
    countDetails(runtime),
    optionalText('UserMetadata', sub.userMetadata),
    optionalText('ForwardDeadLetteredMessagesTo', forwardAddress(ctx, sub.forwardDeadLetteredMessagesTo)),
    textElement('AutoDeleteOnIdle', formatDuration(sub.autoDeleteOnIdleMs)),
    textElement('EntityAvailabilityStatus', 'Available'),
  ]);
}

export function subscriptionEntry(
  ctx: AtomContext,
  sub: SubscriptionDescription & EntityTimes,
  runtime: SubscriptionRuntime,
): XmlFragment {
  return entry(
    ctx,
    `${sub.topicName}/Subscriptions/${sub.subscriptionName}`,
    sub.subscriptionName,
    sub,
    subscriptionContent(ctx, sub, runtime),
  );
}

type KeyValue = string | number | boolean | Date | null;

function typedValue(value: Exclude<KeyValue, null>): XmlFragment {
  let type: string;
  let text: string;
  if (typeof value === 'string') {
    type = 'string';
    text = value;
  } else if (typeof value === 'boolean') {
    type = 'boolean';
    text = String(value);
  } else if (typeof value === 'number') {
    // The client understands int and double only (not long).
    type = Number.isInteger(value) && Math.abs(value) <= 2147483647 ? 'int' : 'double';
    text = String(value);
  } else {
    type = 'dateTime';
    text = value.toISOString();
  }
  return textElement('Value', text, { 'i:type': `d6p1:${type}`, 'xmlns:d6p1': XSD_NS });
}

function keyValues(name: string, values: Record<string, KeyValue> | undefined): XmlFragment | undefined {
  if (!values) return undefined;
  // A null cannot be expressed in a form the client reads back; such entries are left out.
  const items = Object.entries(values).filter((e): e is [string, Exclude<KeyValue, null>] => e[1] !== null);
  if (items.length === 0) return undefined;
  return element(
    name,
    undefined,
    items.map(([k, v]) =>
      element('KeyValueOfstringanyType', undefined, [textElement('Key', k), typedValue(v)]),
    ),
  );
}

function filterElement(filter: RuleFilter): XmlFragment {
  switch (filter.kind) {
    case 'true':
      return element('Filter', { 'i:type': 'TrueFilter' }, [
        textElement('SqlExpression', '1=1'),
        textElement('CompatibilityLevel', 20),
      ]);
    case 'false':
      return element('Filter', { 'i:type': 'FalseFilter' }, [
        textElement('SqlExpression', '1=0'),
        textElement('CompatibilityLevel', 20),
      ]);
    case 'sql':
      return element('Filter', { 'i:type': 'SqlFilter' }, [
        textElement('SqlExpression', filter.sqlExpression),
        keyValues('Parameters', filter.parameters as SqlParameters | undefined),
        textElement('CompatibilityLevel', 20),
      ]);
    case 'correlation':
      return element('Filter', { 'i:type': 'CorrelationFilter' }, [
        optionalText('CorrelationId', filter.correlationId),
        optionalText('MessageId', filter.messageId),
        optionalText('To', filter.to),
        optionalText('ReplyTo', filter.replyTo),
        optionalText('Label', filter.subject),
        optionalText('SessionId', filter.sessionId),
        optionalText('ReplyToSessionId', filter.replyToSessionId),
        optionalText('ContentType', filter.contentType),
        keyValues('Properties', filter.applicationProperties),
      ]);
  }
}

export function ruleContent(rule: RuleDescription & { createdAt: number }): XmlFragment {
  const action = rule.action
    ? element('Action', { 'i:type': 'SqlRuleAction' }, [
        textElement('SqlExpression', rule.action.sqlExpression),
        keyValues('Parameters', rule.action.parameters),
        textElement('CompatibilityLevel', 20),
      ])
    : element('Action', { 'i:type': 'EmptyRuleAction' }, []);
  return description('RuleDescription', [
    filterElement(rule.filter),
    action,
    textElement('CreatedAt', iso(rule.createdAt)),
    textElement('Name', rule.name),
  ]);
}

export function ruleEntry(
  ctx: AtomContext,
  topic: string,
  subscription: string,
  rule: RuleDescription & { createdAt: number },
): XmlFragment {
  return entry(
    ctx,
    `${topic}/Subscriptions/${subscription}/Rules/${rule.name}`,
    rule.name,
    { createdAt: rule.createdAt, updatedAt: rule.createdAt },
    ruleContent(rule),
  );
}

export interface FeedPage {
  title: string;
  /** Path of the listed collection, e.g. "$Resources/Topics" or "orders/Subscriptions". */
  path: string;
  entries: XmlFragment[];
  /** The $skip of the next page, when there is one. */
  nextSkip?: number;
  top: number;
}

export function feed(ctx: AtomContext, page: FeedPage, now: number): XmlFragment {
  const self = resourceUrl(ctx, page.path);
  return element('feed', { xmlns: ATOM_NS }, [
    textElement('title', page.title, { type: 'text' }),
    textElement('id', self),
    textElement('updated', iso(now)),
    element('link', { rel: 'self', href: self }, []),
    page.nextSkip === undefined
      ? undefined
      : element(
          'link',
          {
            rel: 'next',
            href: resourceUrl(ctx, page.path, { $skip: String(page.nextSkip), $top: String(page.top) }),
          },
          [],
        ),
    ...page.entries,
  ]);
}

/** The error body the client turns into RestError.message (it reads Error/Detail). */
export function errorDocument(status: number, detail: string): string {
  return xmlDocument(
    element('Error', undefined, [textElement('Code', status), textElement('Detail', detail)]),
  );
}

export { xmlDocument };

/** GET /$namespaceinfo: what getNamespaceProperties() reads. */
export function namespaceEntry(ctx: AtomContext, name: string, createdAt: number): XmlFragment {
  return entry(
    ctx,
    '$namespaceinfo',
    name,
    { createdAt, updatedAt: createdAt },
    element('NamespaceInfo', { xmlns: SB_NS, 'xmlns:i': XSI_NS }, [
      textElement('CreatedTime', iso(createdAt)),
      textElement('MessagingSKU', 'Standard'),
      textElement('ModifiedTime', iso(createdAt)),
      textElement('Name', name),
      textElement('NamespaceType', 'Messaging'),
    ]),
  );
}
