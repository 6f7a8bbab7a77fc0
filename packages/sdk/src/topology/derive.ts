// Derives the platform topology (DESIGN.md §3) from a catalog. Pure: the same catalog always gives the same
// model, in a stable order, so the provisioner's diff and the console's Topology pages are reproducible.
import type { Catalog } from '../contract/catalogSchema.ts';
import { MessageType } from '../contract/messageTypes.ts';
import { Address, Prop, Subscription, Topic } from '../contract/properties.ts';
import { DEFAULT_RULE_NAME, TRUE_FILTER, type RuleModel, type SubscriptionModel, type TopicModel, type TopologyModel } from './model.ts';
import { assertValidName, forwarderName, TopologyError } from './names.ts';

/** Rule names we give our rules (fixed, so they never run into the length limit). */
export const RuleName = {
  ToEndpoint: 'ToEndpoint',
  FromEndpoint: 'FromEndpoint',
  Continuation: 'Continuation',
  Retry: 'Retry',
  Deferred: 'Deferred',
  DeferredProcessor: 'DeferredProcessor',
  Forward: 'Forward',
  FromManager: 'FromManager',
} as const;

// Names are validated before they reach these builders, so they can hold no quote and need no escaping.
const equals = (prop: string, value: string) => `user.${prop} = '${value}'`;
const set = (prop: string, value: string) => `SET user.${prop} = '${value}'`;

function endpointSubscriptions(endpoint: string): SubscriptionModel[] {
  const sub = (
    name: string,
    requiresSession: boolean,
    rules: RuleModel[],
    purpose: string,
    forwardTo?: string,
  ): SubscriptionModel => ({ topic: endpoint, name, requiresSession, rules, purpose, ...(forwardTo ? { forwardTo } : {}) });

  return [
    sub(endpoint, true, [{ name: RuleName.ToEndpoint, filter: equals(Prop.To, endpoint) }], 'main: the endpoint handler, ordered per session'),
    sub(
      Subscription.Resolver,
      false,
      [
        { name: RuleName.FromEndpoint, filter: equals(Prop.To, Address.Resolver), action: set(Prop.From, endpoint) },
        { name: RuleName.ToEndpoint, filter: equals(Prop.To, endpoint) },
      ],
      'responses and a copy of every request, forwarded to the Resolver',
      Topic.Resolver,
    ),
    sub(
      Subscription.Continuation,
      false,
      [
        {
          name: RuleName.Continuation,
          filter: equals(Prop.To, Address.Continuation),
          action: `${set(Prop.To, endpoint)}; ${set(Prop.From, Address.Continuation)}`,
        },
      ],
      'legacy continuation requests, readdressed to the endpoint',
      endpoint,
    ),
    sub(
      Subscription.Retry,
      false,
      [{ name: RuleName.Retry, filter: equals(Prop.To, Address.Retry), action: `${set(Prop.To, endpoint)}; ${set(Prop.From, Address.Retry)}` }],
      'scheduled retries, readdressed to the endpoint',
      endpoint,
    ),
    sub(Subscription.Deferred, true, [{ name: RuleName.Deferred, filter: equals(Prop.To, Address.Deferred) }], 'messages parked behind a blocked session'),
    sub(
      Subscription.DeferredProcessor,
      false,
      [{ name: RuleName.DeferredProcessor, filter: equals(Prop.To, Address.DeferredProcessor) }],
      "triggers that replay a session's parked messages",
    ),
  ];
}

function forwarder(producer: string, eventTypeId: string, consumer: string, consumerCount: number): SubscriptionModel {
  const name = forwarderName(eventTypeId, consumer, consumerCount);
  assertValidName(
    'forwarder subscription',
    name,
    `it forwards '${eventTypeId}' from '${producer}' to '${consumer}'; shorten the event type id or the endpoint id`,
  );
  return {
    topic: producer,
    name,
    requiresSession: false,
    forwardTo: consumer,
    purpose: `forwards ${eventTypeId} published by ${producer} to ${consumer}`,
    rules: [
      {
        name: RuleName.Forward,
        // MessageType = EventRequest keeps the producer's own control traffic off the forwarder; From IS NULL keeps
        // forwarded, parked, replayed and Manager copies off it: only original publishes are fanned out.
        filter: `${equals(Prop.EventTypeId, eventTypeId)} AND ${equals(Prop.MessageType, MessageType.EventRequest)} AND user.${Prop.From} IS NULL`,
        action: `${set(Prop.From, producer)}; SET user.${Prop.EventId} = newid(); ${set(Prop.To, consumer)}`,
      },
    ],
  };
}

export function deriveTopology(catalog: Catalog): TopologyModel {
  const endpointIds = catalog.endpoints.map((e) => e.id);
  for (const id of endpointIds) assertValidName('endpoint', id);
  // The catalog may spell a type differently in produces/consumes than in eventTypes; the declaration wins.
  const canonicalType = new Map(catalog.eventTypes.map((t) => [t.id.toLowerCase(), t.id]));
  const typeId = (id: string) => {
    const canonical = canonicalType.get(id.toLowerCase());
    if (!canonical) throw new TopologyError(`event type '${id}' is used by an endpoint but not declared in the catalog`);
    return canonical;
  };
  for (const t of catalog.eventTypes) assertValidName('event type', t.id);

  const consumersOf = new Map<string, string[]>();
  for (const endpoint of catalog.endpoints) {
    for (const consumed of endpoint.consumes) {
      const id = typeId(consumed);
      consumersOf.set(id, [...(consumersOf.get(id) ?? []), endpoint.id]);
    }
  }

  const topics: TopicModel[] = catalog.endpoints.map((endpoint) => {
    const subscriptions = endpointSubscriptions(endpoint.id);
    const produced = [...new Set(endpoint.produces.map(typeId))].sort();
    for (const eventTypeId of produced) {
      const consumers = consumersOf.get(eventTypeId) ?? [];
      for (const consumer of consumers) subscriptions.push(forwarder(endpoint.id, eventTypeId, consumer, consumers.length));
    }
    return { name: endpoint.id, kind: 'endpoint' as const, subscriptions };
  });

  topics.push({
    name: Topic.Resolver,
    kind: 'platform',
    subscriptions: [
      {
        topic: Topic.Resolver,
        name: Subscription.Resolver,
        requiresSession: true,
        rules: [{ name: DEFAULT_RULE_NAME, filter: TRUE_FILTER }],
        purpose: 'every response and request copy, per session, for the Resolver worker',
      },
    ],
  });
  topics.push({
    name: Topic.Manager,
    kind: 'platform',
    subscriptions: catalog.endpoints.map((endpoint) => ({
      topic: Topic.Manager,
      name: endpoint.id,
      requiresSession: false,
      forwardTo: endpoint.id,
      purpose: `operator commands for ${endpoint.id}, stamped From = Manager`,
      rules: [{ name: RuleName.FromManager, filter: equals(Prop.To, endpoint.id), action: set(Prop.From, Address.Manager) }],
    })),
  });

  assertNoCollisions(topics);
  return { topics };
}

/** Service Bus names are case-insensitive: two entities differing only in case are the same entity. */
function assertNoCollisions(topics: TopicModel[]): void {
  const topicNames = new Map<string, string>();
  for (const topic of topics) {
    const key = topic.name.toLowerCase();
    const other = topicNames.get(key);
    if (other !== undefined) throw new TopologyError(`topic '${topic.name}' collides with topic '${other}'`);
    topicNames.set(key, topic.name);
    const subs = new Map<string, SubscriptionModel>();
    for (const sub of topic.subscriptions) {
      const k = sub.name.toLowerCase();
      const clash = subs.get(k);
      if (clash) {
        throw new TopologyError(
          `subscription '${sub.name}' on topic '${topic.name}' is needed twice (${clash.purpose}; ${sub.purpose}); rename the event type or endpoint`,
        );
      }
      subs.set(k, sub);
    }
  }
}

/** Every subscription of the model, in order. */
export function allSubscriptions(model: TopologyModel): SubscriptionModel[] {
  return model.topics.flatMap((t) => t.subscriptions);
}
