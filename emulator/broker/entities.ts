// Entities and rules: creating, updating, deleting and listing topics, subscriptions and their rules, with
// Azure's defaults and checks. Queues are in queues.ts; both use the same state (model.ts).

import { BrokerError } from './api.ts';
import type {
  EntityTimes,
  RuleDescription,
  SubscriptionDescription,
  SubscriptionRuntime,
  TopicDescription,
  TopicRuntime,
} from './api.ts';
import type { BrokerCore } from './core.ts';
import {
  checkPositiveDuration,
  definedOnly,
  subscriptionDefaults,
  topicDefaults,
  validateChildName,
  validateTopicName,
} from './entity-defaults.ts';
import { checkDuplicateFlagUnchanged, checkDuplicateWindow } from './duplicates.ts';
import { SubscriptionState, TopicState } from './model.ts';
import { compileRule } from './rules.ts';
import type { CompiledRule } from './rules.ts';

export class Entities {
  constructor(private readonly c: BrokerCore) {}

  // Topics -------------------------------------------------------------------------------------------------

  createTopic(d: Partial<TopicDescription> & { name: string }): TopicDescription & EntityTimes {
    const c = this.c;
    validateTopicName(d.name);
    this.checkNameFree(d.name);
    checkPositiveDuration('defaultMessageTimeToLive', d.defaultMessageTimeToLiveMs);
    checkDuplicateWindow(d.duplicateDetectionHistoryTimeWindowMs);
    const now = c.now();
    const topic = new TopicState(
      { ...topicDefaults(d.name), ...definedOnly(d) },
      { createdAt: now, updatedAt: now, accessedAt: now },
    );
    c.topics.set(d.name, topic);
    this.journalTopic(topic);
    c.log.info({ topic: d.name }, 'topic created');
    return topicView(topic);
  }

  updateTopic(d: Partial<TopicDescription> & { name: string }): TopicDescription & EntityTimes {
    const topic = this.c.topic(d.name);
    checkPositiveDuration('defaultMessageTimeToLive', d.defaultMessageTimeToLiveMs);
    checkDuplicateWindow(d.duplicateDetectionHistoryTimeWindowMs);
    checkDuplicateFlagUnchanged(topic, d.requiresDuplicateDetection, 'topic');
    topic.desc = { ...topic.desc, ...definedOnly(d), name: topic.desc.name };
    if ('userMetadata' in d && d.userMetadata === undefined) delete topic.desc.userMetadata;
    topic.times.updatedAt = this.c.now();
    this.journalTopic(topic);
    return topicView(topic);
  }

  /** Deletes a topic or a queue with everything in it. */
  deleteEntity(topic: TopicState): void {
    const c = this.c;
    for (const sub of [...topic.subs.values()]) this.removeSubscription(sub, false);
    for (const item of topic.scheduled.values()) c.storedBytes -= item.size;
    topic.scheduled.clear();
    topic.deleted = true;
    c.topics.delete(topic.desc.name);
    c.append({ k: 'deltopic', t: topic.desc.name });
    c.log.info({ entity: topic.desc.name }, topic.isQueue ? 'queue deleted' : 'topic deleted');
  }

  listTopics(): Array<TopicDescription & EntityTimes> {
    return sortedEntities(this.c, false).map(topicView);
  }

  topicRuntime(name: string): TopicRuntime {
    const topic = this.c.topic(name);
    let size = 0;
    for (const item of topic.scheduled.values()) size += item.size;
    for (const sub of topic.subs.values()) {
      size += sub.main.bytes + sub.deadLetter.bytes + sub.transferDeadLetter.bytes;
    }
    return {
      name,
      ...topic.times,
      sizeInBytes: size,
      subscriptionCount: topic.subs.size,
      scheduledMessageCount: topic.scheduled.size,
    };
  }

  // Subscriptions ------------------------------------------------------------------------------------------

  createSubscription(
    d: Partial<SubscriptionDescription> & { topicName: string; subscriptionName: string },
    defaultRule?: RuleDescription,
  ): SubscriptionDescription & EntityTimes {
    const c = this.c;
    const topic = c.topic(d.topicName);
    validateChildName('subscription', d.subscriptionName);
    if (topic.subs.has(d.subscriptionName)) {
      throw new BrokerError(
        'EntityAlreadyExists',
        `Subscription '${d.subscriptionName}' already exists on topic '${d.topicName}'.`,
      );
    }
    checkSubscriptionFields(d);
    const rule = compileRule(defaultRule ?? { name: '$Default', filter: { kind: 'true' } }, c.now());
    if (defaultRule) validateChildName('rule', defaultRule.name);
    const now = c.now();
    const sub = new SubscriptionState(
      topic,
      { ...subscriptionDefaults(d.topicName, d.subscriptionName), ...definedOnly(d) },
      { createdAt: now, updatedAt: now, accessedAt: now },
    );
    sub.rules.set(rule.description.name, rule);
    topic.subs.set(d.subscriptionName, sub);
    c.append({ k: 'sub', d: { ...sub.desc, ...sub.times } });
    c.append({ k: 'rule', t: d.topicName, s: d.subscriptionName, d: rule.description, c: rule.createdAt });
    c.log.info({ topic: d.topicName, subscription: d.subscriptionName }, 'subscription created');
    return subView(sub);
  }

  /** Applies a description update to a subscription or a queue's store. */
  updateSubscriptionState(
    sub: SubscriptionState,
    d: Partial<SubscriptionDescription>,
    entityKind: 'subscription' | 'queue',
  ): void {
    checkSubscriptionFields(d);
    if (d.requiresSession !== undefined && d.requiresSession !== sub.desc.requiresSession) {
      throw new BrokerError(
        'BadRequest',
        `The RequiresSession property of an existing ${entityKind} cannot be changed.`,
      );
    }
    sub.desc = {
      ...sub.desc,
      ...definedOnly(d),
      topicName: sub.desc.topicName,
      subscriptionName: sub.desc.subscriptionName,
    };
    // An update replaces the description (as Azure's PUT does): optional fields sent as undefined are cleared.
    for (const key of ['forwardTo', 'forwardDeadLetteredMessagesTo', 'userMetadata'] as const) {
      if (key in d && d[key] === undefined) delete sub.desc[key];
    }
    sub.times.updatedAt = this.c.now();
    this.c.append({ k: 'sub', d: { ...sub.desc, ...sub.times } });
    // A status change may make receivers able to read again.
    for (const l of sub.listeners) l.signal();
    for (const s of sub.sessions.values()) s.holder?.signal();
  }

  listSubscriptions(topic: string): Array<SubscriptionDescription & EntityTimes> {
    return [...this.c.topic(topic).subs.values()]
      .sort((a, b) => (a.desc.subscriptionName < b.desc.subscriptionName ? -1 : 1))
      .map(subView);
  }

  subscriptionRuntime(topic: string, subName: string): SubscriptionRuntime {
    const sub = this.c.sub(topic, subName);
    const active = sub.main.messages.size;
    const dead = sub.deadLetter.messages.size;
    const tdead = sub.transferDeadLetter.messages.size;
    // Scheduled messages wait at the topic until they are routed; each subscription reports the topic's count.
    const scheduled = sub.topic.scheduled.size;
    return {
      topicName: topic,
      subscriptionName: subName,
      ...sub.times,
      activeMessageCount: active,
      deadLetterMessageCount: dead,
      scheduledMessageCount: scheduled,
      transferMessageCount: 0,
      transferDeadLetterMessageCount: tdead,
      totalMessageCount: active + dead + tdead,
    };
  }

  removeSubscription(sub: SubscriptionState, journal: boolean): void {
    const c = this.c;
    const topic = sub.topic;
    sub.deleted = true;
    topic.subs.delete(sub.desc.subscriptionName);
    for (const q of [sub.main, sub.deadLetter, sub.transferDeadLetter]) {
      c.storedBytes -= q.bytes;
      q.messages.clear();
      q.available.clear();
      q.bytes = 0;
    }
    const err = `The messaging entity '${sub.path}' was deleted.`;
    for (const l of [...sub.listeners]) l.closedByBroker('EntityNotFound', err);
    for (const s of sub.sessions.values()) s.holder?.closedByBroker('EntityNotFound', err);
    for (const w of sub.waiters) if (!w.done) w.fail(new BrokerError('EntityNotFound', err));
    sub.waiters.length = 0;
    sub.listeners.clear();
    sub.sessions.clear();
    sub.ready.clear();
    sub.locks.clear();
    if (journal) c.append({ k: 'delsub', t: topic.desc.name, s: sub.desc.subscriptionName });
    if (!topic.isQueue) {
      c.log.info({ topic: topic.desc.name, subscription: sub.desc.subscriptionName }, 'subscription deleted');
    }
  }

  // Rules --------------------------------------------------------------------------------------------------

  createRule(topic: string, subName: string, rule: RuleDescription): RuleDescription & { createdAt: number } {
    const sub = this.c.sub(topic, subName);
    validateChildName('rule', rule.name);
    if (sub.rules.has(rule.name)) {
      throw new BrokerError('EntityAlreadyExists', `Rule '${rule.name}' already exists on '${sub.path}'.`);
    }
    const compiled = compileRule(rule, this.c.now());
    sub.rules.set(rule.name, compiled);
    this.c.append({ k: 'rule', t: topic, s: subName, d: compiled.description, c: compiled.createdAt });
    return ruleView(compiled);
  }

  updateRule(topic: string, subName: string, rule: RuleDescription): RuleDescription & { createdAt: number } {
    const sub = this.c.sub(topic, subName);
    const old = this.c.rule(topic, subName, rule.name);
    const compiled = compileRule(rule, old.createdAt);
    sub.rules.set(rule.name, compiled);
    this.c.append({ k: 'rule', t: topic, s: subName, d: compiled.description, c: compiled.createdAt });
    return ruleView(compiled);
  }

  deleteRule(topic: string, subName: string, rule: string): void {
    const sub = this.c.sub(topic, subName);
    this.c.rule(topic, subName, rule);
    sub.rules.delete(rule);
    this.c.append({ k: 'delrule', t: topic, s: subName, r: rule });
  }

  /** Topics and queues share one name space, as on Azure. */
  checkNameFree(name: string): void {
    const existing = this.c.topics.get(name);
    if (existing) {
      throw new BrokerError(
        'EntityAlreadyExists',
        `${existing.isQueue ? 'Queue' : 'Topic'} '${name}' already exists.`,
      );
    }
  }

  journalTopic(t: TopicState): void {
    this.c.append({
      k: 'topic',
      d: { ...t.desc, ...t.times },
      ...(t.isQueue ? { queue: true as const } : {}),
    });
  }
}

export function checkSubscriptionFields(d: Partial<SubscriptionDescription>): void {
  checkPositiveDuration('lockDuration', d.lockDurationMs);
  checkPositiveDuration('defaultMessageTimeToLive', d.defaultMessageTimeToLiveMs);
  if (d.maxDeliveryCount !== undefined && (!Number.isInteger(d.maxDeliveryCount) || d.maxDeliveryCount < 1)) {
    throw new BrokerError('BadRequest', 'maxDeliveryCount must be a positive integer.');
  }
  if (d.forwardTo) validateTopicName(d.forwardTo);
  if (d.forwardDeadLetteredMessagesTo) validateTopicName(d.forwardDeadLetteredMessagesTo);
}

export function sortedEntities(c: BrokerCore, queues: boolean): TopicState[] {
  return [...c.topics.values()]
    .filter((t) => t.isQueue === queues)
    .sort((a, b) => (a.desc.name < b.desc.name ? -1 : a.desc.name > b.desc.name ? 1 : 0));
}

export function topicView(t: TopicState): TopicDescription & EntityTimes {
  return { ...t.desc, ...t.times };
}

export function subView(s: SubscriptionState): SubscriptionDescription & EntityTimes {
  return { ...s.desc, ...s.times };
}

export function ruleView(r: CompiledRule): RuleDescription & { createdAt: number } {
  return { ...r.description, createdAt: r.createdAt };
}
