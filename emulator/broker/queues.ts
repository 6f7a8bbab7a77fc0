// Queues. A queue is a TopicState (its sending side: status, size limits, duplicate detection, scheduled
// messages, sequence numbers) holding exactly one SubscriptionState named QUEUE_STORE (its receiving side:
// locks, sessions, dead-letter queue, forwarding). Routing, delivery, sessions, scheduling, persistence and
// the AMQP plane's receive and $management paths are the subscriptions' own code; this file only maps
// Azure's QueueDescription onto the two halves and back.

import { BrokerError, QUEUE_STORE } from './api.ts';
import type {
  EntityTimes,
  QueueDescription,
  QueueRuntime,
  SubscriptionDescription,
  TopicDescription,
} from './api.ts';
import type { BrokerCore } from './core.ts';
import { checkSubscriptionFields, sortedEntities } from './entities.ts';
import type { Entities } from './entities.ts';
import {
  checkPositiveDuration,
  definedOnly,
  subscriptionDefaults,
  topicDefaults,
  validateTopicName,
} from './entity-defaults.ts';
import { checkDuplicateFlagUnchanged, checkDuplicateWindow } from './duplicates.ts';
import { SubscriptionState, TopicState } from './model.ts';

type TopicPart = Partial<TopicDescription>;
type StorePart = Partial<SubscriptionDescription>;

/** The QueueDescription fields each half owns (status and TTL go to both). */
function split(d: Partial<QueueDescription>): { topic: TopicPart; store: StorePart } {
  const topic: TopicPart = definedOnly({
    status: d.status,
    defaultMessageTimeToLiveMs: d.defaultMessageTimeToLiveMs,
    maxSizeInMegabytes: d.maxSizeInMegabytes,
    maxMessageSizeInKilobytes: d.maxMessageSizeInKilobytes,
    requiresDuplicateDetection: d.requiresDuplicateDetection,
    duplicateDetectionHistoryTimeWindowMs: d.duplicateDetectionHistoryTimeWindowMs,
    enableBatchedOperations: d.enableBatchedOperations,
    enablePartitioning: d.enablePartitioning,
    autoDeleteOnIdleMs: d.autoDeleteOnIdleMs,
    userMetadata: d.userMetadata,
  });
  const store: StorePart = definedOnly({
    status: d.status,
    lockDurationMs: d.lockDurationMs,
    requiresSession: d.requiresSession,
    defaultMessageTimeToLiveMs: d.defaultMessageTimeToLiveMs,
    deadLetteringOnMessageExpiration: d.deadLetteringOnMessageExpiration,
    maxDeliveryCount: d.maxDeliveryCount,
    enableBatchedOperations: d.enableBatchedOperations,
    autoDeleteOnIdleMs: d.autoDeleteOnIdleMs,
    forwardTo: d.forwardTo,
    forwardDeadLetteredMessagesTo: d.forwardDeadLetteredMessagesTo,
  });
  // An update that sends these as undefined clears them (as Azure's PUT replaces the description).
  for (const key of ['forwardTo', 'forwardDeadLetteredMessagesTo'] as const) {
    if (key in d && d[key] === undefined) (store as Record<string, unknown>)[key] = undefined;
  }
  return { topic, store };
}

export function queueView(q: TopicState): QueueDescription & EntityTimes {
  const store = q.subs.get(QUEUE_STORE) as SubscriptionState;
  const t = q.desc;
  const s = store.desc;
  const view: QueueDescription & EntityTimes = {
    name: t.name,
    status: t.status,
    lockDurationMs: s.lockDurationMs,
    requiresSession: s.requiresSession,
    defaultMessageTimeToLiveMs: s.defaultMessageTimeToLiveMs,
    deadLetteringOnMessageExpiration: s.deadLetteringOnMessageExpiration,
    maxDeliveryCount: s.maxDeliveryCount,
    enableBatchedOperations: t.enableBatchedOperations,
    maxSizeInMegabytes: t.maxSizeInMegabytes,
    maxMessageSizeInKilobytes: t.maxMessageSizeInKilobytes,
    requiresDuplicateDetection: t.requiresDuplicateDetection,
    duplicateDetectionHistoryTimeWindowMs: t.duplicateDetectionHistoryTimeWindowMs,
    enablePartitioning: t.enablePartitioning,
    autoDeleteOnIdleMs: t.autoDeleteOnIdleMs,
    ...q.times,
  };
  if (s.forwardTo !== undefined) view.forwardTo = s.forwardTo;
  if (s.forwardDeadLetteredMessagesTo !== undefined)
    view.forwardDeadLetteredMessagesTo = s.forwardDeadLetteredMessagesTo;
  if (t.userMetadata !== undefined) view.userMetadata = t.userMetadata;
  return view;
}

export class Queues {
  constructor(
    private readonly c: BrokerCore,
    private readonly entities: Entities,
  ) {}

  create(d: Partial<QueueDescription> & { name: string }): QueueDescription & EntityTimes {
    const c = this.c;
    validateTopicName(d.name);
    this.entities.checkNameFree(d.name);
    const { topic: tp, store: sp } = split(d);
    checkPositiveDuration('defaultMessageTimeToLive', d.defaultMessageTimeToLiveMs);
    checkDuplicateWindow(d.duplicateDetectionHistoryTimeWindowMs);
    checkSubscriptionFields(sp);
    const now = c.now();
    const times = (): EntityTimes => ({ createdAt: now, updatedAt: now, accessedAt: now });
    const queue = new TopicState({ ...topicDefaults(d.name), ...tp, name: d.name }, times(), true);
    const store = new SubscriptionState(
      queue,
      {
        ...subscriptionDefaults(d.name, QUEUE_STORE),
        deadLetteringOnFilterEvaluationExceptions: false,
        ...sp,
        topicName: d.name,
        subscriptionName: QUEUE_STORE,
      },
      times(),
    );
    queue.subs.set(QUEUE_STORE, store);
    c.topics.set(d.name, queue);
    this.entities.journalTopic(queue);
    c.append({ k: 'sub', d: { ...store.desc, ...store.times } });
    c.log.info({ queue: d.name }, 'queue created');
    return queueView(queue);
  }

  update(d: Partial<QueueDescription> & { name: string }): QueueDescription & EntityTimes {
    const c = this.c;
    const queue = c.queue(d.name);
    const store = queue.subs.get(QUEUE_STORE) as SubscriptionState;
    const { topic: tp, store: sp } = split(d);
    checkPositiveDuration('defaultMessageTimeToLive', d.defaultMessageTimeToLiveMs);
    checkDuplicateWindow(d.duplicateDetectionHistoryTimeWindowMs);
    checkDuplicateFlagUnchanged(queue, d.requiresDuplicateDetection, 'queue');
    this.entities.updateSubscriptionState(store, sp, 'queue');
    queue.desc = { ...queue.desc, ...tp, name: queue.desc.name };
    if ('userMetadata' in d && d.userMetadata === undefined) delete queue.desc.userMetadata;
    queue.times.updatedAt = c.now();
    this.entities.journalTopic(queue);
    return queueView(queue);
  }

  list(): Array<QueueDescription & EntityTimes> {
    return sortedEntities(this.c, true).map(queueView);
  }

  runtime(name: string): QueueRuntime {
    const queue = this.c.queue(name);
    const store = queue.subs.get(QUEUE_STORE) as SubscriptionState;
    if (!store) throw new BrokerError('EntityNotFound', `The messaging entity '${name}' could not be found.`);
    const active = store.main.messages.size;
    const dead = store.deadLetter.messages.size;
    const tdead = store.transferDeadLetter.messages.size;
    let size = store.main.bytes + store.deadLetter.bytes + store.transferDeadLetter.bytes;
    for (const item of queue.scheduled.values()) size += item.size;
    return {
      name,
      ...queue.times,
      sizeInBytes: size,
      activeMessageCount: active,
      deadLetterMessageCount: dead,
      scheduledMessageCount: queue.scheduled.size,
      transferMessageCount: 0,
      transferDeadLetterMessageCount: tdead,
      totalMessageCount: active + dead + tdead + queue.scheduled.size,
    };
  }
}
