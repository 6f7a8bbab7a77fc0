// Entity name validation and the defaults Azure Service Bus applies when a create request leaves a field out.

import { BrokerError, MAX_DURATION_MS } from './api.ts';
import type { SubscriptionDescription, TopicDescription } from './api.ts';

const TOPIC_NAME = /^[A-Za-z0-9][A-Za-z0-9._\-/]*$/;
const CHILD_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function validateTopicName(name: string): void {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > 260 ||
    !TOPIC_NAME.test(name) ||
    name.endsWith('/')
  ) {
    throw new BrokerError(
      'BadRequest',
      `Invalid topic name '${String(name)}': use letters, digits, '.', '-', '_' and '/', at most 260 characters.`,
    );
  }
}

export function validateChildName(kind: 'subscription' | 'rule', name: string): void {
  const ok = typeof name === 'string' && name.length > 0 && name.length <= 50 && CHILD_NAME.test(name);
  // '$Default' is the one rule name that may start with '$'.
  if (!ok && !(kind === 'rule' && name === '$Default')) {
    throw new BrokerError(
      'BadRequest',
      `Invalid ${kind} name '${String(name)}': use letters, digits, '.', '-' and '_', at most 50 characters.`,
    );
  }
}

export function topicDefaults(name: string): TopicDescription {
  return {
    name,
    status: 'Active',
    defaultMessageTimeToLiveMs: MAX_DURATION_MS,
    maxSizeInMegabytes: 1024,
    maxMessageSizeInKilobytes: 256,
    requiresDuplicateDetection: false,
    duplicateDetectionHistoryTimeWindowMs: 10 * 60_000,
    enableBatchedOperations: true,
    supportOrdering: true,
    enablePartitioning: false,
    autoDeleteOnIdleMs: MAX_DURATION_MS,
  };
}

export function subscriptionDefaults(topicName: string, subscriptionName: string): SubscriptionDescription {
  return {
    topicName,
    subscriptionName,
    status: 'Active',
    lockDurationMs: 60_000,
    requiresSession: false,
    defaultMessageTimeToLiveMs: MAX_DURATION_MS,
    deadLetteringOnMessageExpiration: false,
    deadLetteringOnFilterEvaluationExceptions: true,
    maxDeliveryCount: 10,
    enableBatchedOperations: true,
    autoDeleteOnIdleMs: MAX_DURATION_MS,
  };
}

/** Drops keys whose value is undefined so that a partial update does not erase fields. */
export function definedOnly<T extends object>(d: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(d)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

export function checkPositiveDuration(field: string, value: number | undefined): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new BrokerError('BadRequest', `${field} must be a positive duration.`);
  }
}
