import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCatalog } from '../contract/catalog.ts';
import { allSubscriptions, deriveTopology, forwarderName, TopologyError, type SubscriptionModel, type TopologyModel } from './index.ts';

const catalog = () =>
  parseCatalog({
    endpoints: [
      { id: 'shop', produces: ['OrderPlaced', 'CustomerRegistered', 'Unwanted'] },
      { id: 'billing', consumes: ['OrderPlaced'] },
      { id: 'crm', consumes: ['OrderPlaced', 'CustomerRegistered'] },
    ],
    eventTypes: [{ id: 'OrderPlaced' }, { id: 'CustomerRegistered' }, { id: 'Unwanted' }],
  });

function sub(model: TopologyModel, topic: string, name: string): SubscriptionModel {
  const found = model.topics.find((t) => t.name === topic)?.subscriptions.find((s) => s.name === name);
  assert.ok(found, `${topic}/${name} exists`);
  return found;
}

describe('deriveTopology', () => {
  const model = deriveTopology(catalog());

  test('one topic per endpoint plus Resolver and Manager', () => {
    assert.deepEqual(
      model.topics.map((t) => t.name),
      ['shop', 'billing', 'crm', 'Resolver', 'Manager'],
    );
  });

  test('the fixed endpoint subscriptions have the specification’s sessions, forwards and rules', () => {
    const main = sub(model, 'billing', 'billing');
    assert.equal(main.requiresSession, true);
    assert.equal(main.forwardTo, undefined);
    assert.deepEqual(main.rules, [{ name: 'ToEndpoint', filter: "user.To = 'billing'" }]);

    const resolver = sub(model, 'billing', 'Resolver');
    assert.equal(resolver.requiresSession, false);
    assert.equal(resolver.forwardTo, 'Resolver');
    assert.deepEqual(resolver.rules, [
      { name: 'FromEndpoint', filter: "user.To = 'Resolver'", action: "SET user.From = 'billing'" },
      { name: 'ToEndpoint', filter: "user.To = 'billing'" },
    ]);

    const continuation = sub(model, 'billing', 'Continuation');
    assert.equal(continuation.forwardTo, 'billing');
    assert.deepEqual(continuation.rules[0], {
      name: 'Continuation',
      filter: "user.To = 'Continuation'",
      action: "SET user.To = 'billing'; SET user.From = 'Continuation'",
    });

    const retry = sub(model, 'billing', 'Retry');
    assert.equal(retry.requiresSession, false);
    assert.equal(retry.forwardTo, 'billing');
    assert.equal(retry.rules[0]?.action, "SET user.To = 'billing'; SET user.From = 'Retry'");

    const deferred = sub(model, 'billing', 'Deferred');
    assert.equal(deferred.requiresSession, true);
    assert.deepEqual(deferred.rules, [{ name: 'Deferred', filter: "user.To = 'Deferred'" }]);

    const processor = sub(model, 'billing', 'DeferredProcessor');
    assert.equal(processor.requiresSession, false);
    assert.equal(processor.forwardTo, undefined);
    assert.deepEqual(processor.rules, [{ name: 'DeferredProcessor', filter: "user.To = 'DeferredProcessor'" }]);
  });

  test('forwarders: named after the type with one consumer, X-{C} per consumer with several', () => {
    const shopSubs = model.topics.find((t) => t.name === 'shop')!.subscriptions.map((s) => s.name);
    assert.deepEqual(shopSubs.slice(6), ['CustomerRegistered', 'OrderPlaced-billing', 'OrderPlaced-crm']);
    assert.ok(!shopSubs.includes('Unwanted'), 'a type nobody consumes gets no forwarder');

    const toCrm = sub(model, 'shop', 'OrderPlaced-crm');
    assert.equal(toCrm.requiresSession, false);
    assert.equal(toCrm.forwardTo, 'crm');
    assert.deepEqual(toCrm.rules, [
      {
        name: 'Forward',
        filter: "user.EventTypeId = 'OrderPlaced' AND user.MessageType = 'EventRequest' AND user.From IS NULL",
        action: "SET user.From = 'shop'; SET user.EventId = newid(); SET user.To = 'crm'",
      },
    ]);
    assert.equal(sub(model, 'shop', 'CustomerRegistered').forwardTo, 'crm');
    // Consumers do not get forwarders for what they only consume.
    assert.equal(model.topics.find((t) => t.name === 'billing')!.subscriptions.length, 6);
  });

  test('Resolver topic accepts everything per session; Manager forwards commands stamped From = Manager', () => {
    const resolver = sub(model, 'Resolver', 'Resolver');
    assert.equal(resolver.requiresSession, true);
    assert.deepEqual(resolver.rules, [{ name: '$Default', filter: '1=1' }]);

    const manager = model.topics.find((t) => t.name === 'Manager')!;
    assert.deepEqual(manager.subscriptions.map((s) => s.name), ['shop', 'billing', 'crm']);
    const toBilling = sub(model, 'Manager', 'billing');
    assert.equal(toBilling.requiresSession, false);
    assert.equal(toBilling.forwardTo, 'billing');
    assert.deepEqual(toBilling.rules, [{ name: 'FromManager', filter: "user.To = 'billing'", action: "SET user.From = 'Manager'" }]);
  });

  test('every forward target is a topic of the model', () => {
    const topics = new Set(model.topics.map((t) => t.name));
    for (const s of allSubscriptions(model)) if (s.forwardTo) assert.ok(topics.has(s.forwardTo), `${s.topic}/${s.name}`);
  });

  test('is deterministic', () => {
    assert.deepEqual(deriveTopology(catalog()), model);
  });

  test('an endpoint may consume its own event type: the forwarder readdresses it to itself', () => {
    const self = deriveTopology(parseCatalog({ endpoints: [{ id: 'erp', produces: ['Posted'], consumes: ['Posted'] }], eventTypes: [{ id: 'Posted' }] }));
    assert.equal(sub(self, 'erp', 'Posted').forwardTo, 'erp');
  });
});

describe('names', () => {
  test('forwarderName', () => {
    assert.equal(forwarderName('OrderPlaced', 'billing', 1), 'OrderPlaced');
    assert.equal(forwarderName('OrderPlaced', 'billing', 2), 'OrderPlaced-billing');
  });

  test('a forwarder name over 50 characters is refused, naming it and the fix', () => {
    const longType = 'CustomerLoyaltyProgrammeMembershipUpgraded'; // 42 characters: fine alone
    const c = parseCatalog({
      endpoints: [
        { id: 'shop', produces: [longType] },
        { id: 'loyaltyservice', consumes: [longType] },
        { id: 'crm', consumes: [longType] },
      ],
      eventTypes: [{ id: longType }],
    });
    assert.throws(
      () => deriveTopology(c),
      (error: Error) =>
        error instanceof TopologyError &&
        error.message.includes(`forwarder subscription name '${longType}-loyaltyservice' is 57 characters long (at most 50)`) &&
        error.message.includes('shorten the event type id or the endpoint id'),
    );
  });

  test('names that would collide on one topic are refused', () => {
    const c = parseCatalog({
      endpoints: [
        { id: 'shop', produces: ['Deferred2', 'A'] },
        { id: 'x', consumes: ['A'] },
        { id: 'y', consumes: ['A', 'A-x'] },
        { id: 'z', produces: ['A-x'] },
      ],
      eventTypes: [{ id: 'Deferred2' }, { id: 'A' }, { id: 'A-x' }],
    });
    // shop: forwarders A-x and A-y; z: forwarder A-x (single consumer) - no clash on one topic, so it derives.
    assert.doesNotThrow(() => deriveTopology(c));
    const clash = parseCatalog({
      endpoints: [
        { id: 'shop', produces: ['A', 'A-x'] },
        { id: 'x', consumes: ['A'] },
        { id: 'y', consumes: ['A', 'A-x'] },
      ],
      eventTypes: [{ id: 'A' }, { id: 'A-x' }],
    });
    assert.throws(() => deriveTopology(clash), /subscription 'A-x' on topic 'shop' is needed twice/);
  });
});
