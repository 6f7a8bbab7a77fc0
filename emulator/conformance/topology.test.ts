// The NimBus topology (DESIGN.md §3) provisioned through the admin client, and its routing checked message by
// message: every copy that must arrive arrives with the stamped properties, and nothing arrives anywhere else.
// Names are written out here (not imported from packages/sdk/src/contract) so the emulator's suite depends on nothing but
// the clients; the strings are the ones DESIGN.md §3 gives.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusMessage, ServiceBusReceivedMessage } from '@azure/service-bus';
import {
  type Harness,
  type SubscriptionSpec,
  createSubscriptionWithRules,
  receiveUntil,
  sleep,
  startHarness,
} from './helpers.ts';

let h: Harness;

/** Endpoint A produces InvoiceSent (consumed by C) and OrderPlaced (consumed by C and E). */
const endpoints = ['A', 'C', 'E'] as const;
const produces: Record<string, Array<{ eventType: string; consumers: string[] }>> = {
  A: [
    { eventType: 'InvoiceSent', consumers: ['C'] },
    { eventType: 'OrderPlaced', consumers: ['C', 'E'] },
  ],
  C: [],
  E: [],
};

function endpointSubscriptions(e: string): SubscriptionSpec[] {
  const subs: SubscriptionSpec[] = [
    {
      name: e,
      options: { requiresSession: true, lockDuration: 'PT5S' },
      rules: [{ name: 'main', filter: { sqlExpression: `user.To = '${e}'` } }],
    },
    {
      name: 'Resolver',
      options: { forwardTo: 'Resolver' },
      rules: [
        {
          name: 'to-resolver',
          filter: { sqlExpression: "user.To = 'Resolver'" },
          action: { sqlExpression: `SET user.From = '${e}'` },
        },
        { name: 'to-endpoint', filter: { sqlExpression: `user.To = '${e}'` } },
      ],
    },
    {
      name: 'Continuation',
      options: { forwardTo: e },
      rules: [
        {
          name: 'continuation',
          filter: { sqlExpression: "user.To = 'Continuation'" },
          action: { sqlExpression: `SET user.To = '${e}'; SET user.From = 'Continuation'` },
        },
      ],
    },
    {
      name: 'Retry',
      options: { forwardTo: e },
      rules: [
        {
          name: 'retry',
          filter: { sqlExpression: "user.To = 'Retry'" },
          action: { sqlExpression: `SET user.To = '${e}'; SET user.From = 'Retry'` },
        },
      ],
    },
    {
      name: 'Deferred',
      options: { requiresSession: true },
      rules: [{ name: 'deferred', filter: { sqlExpression: "user.To = 'Deferred'" } }],
    },
    {
      name: 'DeferredProcessor',
      rules: [{ name: 'deferred-processor', filter: { sqlExpression: "user.To = 'DeferredProcessor'" } }],
    },
  ];
  for (const { eventType, consumers } of produces[e] ?? []) {
    for (const c of consumers) {
      subs.push({
        name: consumers.length === 1 ? eventType : `${eventType}-${c}`,
        options: { forwardTo: c },
        rules: [
          {
            name: 'forward',
            filter: {
              sqlExpression: `user.EventTypeId = '${eventType}' AND user.MessageType = 'EventRequest' AND user.From IS NULL`,
            },
            action: {
              sqlExpression: `SET user.From = '${e}'; SET user.EventId = newid(); SET user.To = '${c}'`,
            },
          },
        ],
      });
    }
  }
  return subs;
}

async function provision(): Promise<void> {
  // Topics first: forward targets must exist before a subscription names them.
  for (const e of endpoints) await h.admin.createTopic(e);
  await h.admin.createTopic('Resolver');
  await h.admin.createTopic('Manager');
  for (const e of endpoints) {
    for (const s of endpointSubscriptions(e)) await createSubscriptionWithRules(h.admin, e, s);
  }
  await h.admin.createSubscription('Resolver', 'Resolver', { requiresSession: true, lockDuration: 'PT5S' });
  for (const e of endpoints) {
    await createSubscriptionWithRules(h.admin, 'Manager', {
      name: e,
      options: { forwardTo: e },
      rules: [
        {
          name: 'command',
          filter: { sqlExpression: `user.To = '${e}'` },
          action: { sqlExpression: "SET user.From = 'Manager'" },
        },
      ],
    });
  }
}

before(async () => {
  h = await startHarness();
  await provision();
});
after(async () => {
  await h?.close();
});

async function send(topic: string, m: ServiceBusMessage): Promise<void> {
  const sender = h.client.createSender(topic);
  try {
    await sender.sendMessages(m);
  } finally {
    await sender.close();
  }
}

/** Receives and completes `count` messages of `sessionId` on a session-enabled subscription. */
async function takeSession(
  topic: string,
  sub: string,
  sessionId: string,
  count: number,
): Promise<ServiceBusReceivedMessage[]> {
  const r = await h.client.acceptSession(topic, sub, sessionId);
  try {
    const got = await receiveUntil(r, count, { settle: 'complete' });
    assert.equal(
      got.length,
      count,
      `${topic}/${sub} session ${sessionId}: expected ${count} message(s), got ${got.length}`,
    );
    return got;
  } finally {
    await r.close();
  }
}

async function take(topic: string, sub: string, count: number): Promise<ServiceBusReceivedMessage[]> {
  const r = h.client.createReceiver(topic, sub);
  try {
    const got = await receiveUntil(r, count, { settle: 'complete' });
    assert.equal(got.length, count, `${topic}/${sub}: expected ${count} message(s), got ${got.length}`);
    return got;
  } finally {
    await r.close();
  }
}

/** Asserts that no subscription anywhere holds a message (active, dead-lettered or transfer-dead-lettered). */
async function assertNothingElseAnywhere(): Promise<void> {
  await sleep(300); // let any stray forward land before looking
  const leftovers: string[] = [];
  for (const topic of [...endpoints, 'Resolver', 'Manager']) {
    for await (const rt of h.admin.listSubscriptionsRuntimeProperties(topic)) {
      const n = rt.activeMessageCount + rt.deadLetterMessageCount + rt.transferDeadLetterMessageCount;
      if (n > 0) {
        leftovers.push(
          `${topic}/${rt.subscriptionName}: active=${rt.activeMessageCount} dlq=${rt.deadLetterMessageCount} tdlq=${rt.transferDeadLetterMessageCount}`,
        );
      }
    }
  }
  assert.deepEqual(leftovers, []);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

describe('NimBus topology routing', () => {
  test('provisioning created the expected subscriptions', async () => {
    const names: string[] = [];
    for await (const s of h.admin.listSubscriptions('A')) names.push(s.subscriptionName);
    assert.deepEqual(
      names.sort(),
      [
        'A',
        'Continuation',
        'Deferred',
        'DeferredProcessor',
        'InvoiceSent',
        'OrderPlaced-C',
        'OrderPlaced-E',
        'Resolver',
        'Retry',
      ].sort(),
    );
    const main = await h.admin.getSubscription('A', 'A');
    assert.equal(main.requiresSession, true);
    const rules: string[] = [];
    for await (const r of h.admin.listRules('A', 'Resolver')) rules.push(r.name);
    assert.deepEqual(rules.sort(), ['to-endpoint', 'to-resolver']);
  });

  test("an EventRequest published on A's topic reaches C's main subscription with From=A, EventId and To=C, and the Resolver", async () => {
    await send('A', {
      messageId: 'evt-1',
      sessionId: 'order-1',
      body: { invoice: 1 },
      applicationProperties: { EventTypeId: 'InvoiceSent', MessageType: 'EventRequest', To: 'InvoiceSent' },
    });
    const [atC] = await takeSession('C', 'C', 'order-1', 1);
    assert.equal(atC!.messageId, 'evt-1');
    assert.deepEqual(atC!.body, { invoice: 1 });
    assert.equal(atC!.applicationProperties?.From, 'A');
    assert.equal(atC!.applicationProperties?.To, 'C');
    assert.match(String(atC!.applicationProperties?.EventId), UUID);
    // C's Resolver subscription (rule user.To = 'C') copies the request to the Resolver's history.
    const [atResolver] = await takeSession('Resolver', 'Resolver', 'order-1', 1);
    assert.equal(atResolver!.messageId, 'evt-1');
    assert.equal(atResolver!.applicationProperties?.To, 'C');
    assert.equal(atResolver!.applicationProperties?.From, 'A');
    assert.equal(atResolver!.applicationProperties?.EventId, atC!.applicationProperties?.EventId);
    await assertNothingElseAnywhere();
  });

  test('an event type with two consumers reaches each consumer once, with distinct EventIds', async () => {
    await send('A', {
      messageId: 'evt-2',
      sessionId: 'order-2',
      body: 'placed',
      applicationProperties: { EventTypeId: 'OrderPlaced', MessageType: 'EventRequest', To: 'OrderPlaced' },
    });
    const [atC] = await takeSession('C', 'C', 'order-2', 1);
    const [atE] = await takeSession('E', 'E', 'order-2', 1);
    assert.equal(atC!.applicationProperties?.To, 'C');
    assert.equal(atE!.applicationProperties?.To, 'E');
    assert.equal(atC!.applicationProperties?.From, 'A');
    assert.equal(atE!.applicationProperties?.From, 'A');
    assert.notEqual(atC!.applicationProperties?.EventId, atE!.applicationProperties?.EventId);
    const resolverCopies = await takeSession('Resolver', 'Resolver', 'order-2', 2);
    assert.deepEqual(resolverCopies.map((m) => m.applicationProperties?.To).sort(), ['C', 'E']);
    await assertNothingElseAnywhere();
  });

  test("a response with To='Resolver' reaches the Resolver topic with From stamped", async () => {
    await send('C', {
      messageId: 'resp-1',
      sessionId: 'order-1',
      body: 'done',
      applicationProperties: {
        EventTypeId: 'InvoiceSent',
        MessageType: 'ResolutionResponse',
        To: 'Resolver',
      },
    });
    const [m] = await takeSession('Resolver', 'Resolver', 'order-1', 1);
    assert.equal(m!.messageId, 'resp-1');
    assert.equal(m!.applicationProperties?.From, 'C');
    assert.equal(m!.applicationProperties?.To, 'Resolver');
    await assertNothingElseAnywhere();
  });

  test('a response never leaks through a forwarder, even on the producing topic with a forwarded event type', async () => {
    await send('A', {
      messageId: 'resp-2',
      sessionId: 'order-3',
      body: 'error',
      applicationProperties: { EventTypeId: 'InvoiceSent', MessageType: 'ErrorResponse', To: 'Resolver' },
    });
    const [m] = await takeSession('Resolver', 'Resolver', 'order-3', 1);
    assert.equal(m!.applicationProperties?.From, 'A');
    await assertNothingElseAnywhere(); // in particular nothing at C
  });

  test('an EventRequest that already carries From is not forwarded again', async () => {
    await send('A', {
      messageId: 'evt-3',
      sessionId: 'order-4',
      body: 'x',
      applicationProperties: {
        EventTypeId: 'InvoiceSent',
        MessageType: 'EventRequest',
        From: 'Somebody',
        To: 'Nobody',
      },
    });
    await assertNothingElseAnywhere();
  });

  test("a Retry message comes back to the main subscription with From='Retry'", async () => {
    await send('C', {
      messageId: 'retry-1',
      sessionId: 'order-5',
      body: 'again',
      applicationProperties: {
        EventTypeId: 'InvoiceSent',
        MessageType: 'EventRequest',
        From: 'A',
        To: 'Retry',
        RetryCount: 1,
      },
    });
    const [m] = await takeSession('C', 'C', 'order-5', 1);
    assert.equal(m!.messageId, 'retry-1');
    assert.equal(m!.applicationProperties?.From, 'Retry');
    assert.equal(m!.applicationProperties?.To, 'C');
    assert.equal(m!.applicationProperties?.RetryCount, 1);
    // Back on C with To='C', the Resolver subscription's second rule records it too.
    const [r] = await takeSession('Resolver', 'Resolver', 'order-5', 1);
    assert.equal(r!.applicationProperties?.From, 'Retry');
    await assertNothingElseAnywhere();
  });

  test("a Continuation message comes back to the main subscription with From='Continuation'", async () => {
    await send('E', {
      messageId: 'cont-1',
      sessionId: 'order-6',
      body: 'continue',
      applicationProperties: { MessageType: 'EventRequest', To: 'Continuation' },
    });
    const [m] = await takeSession('E', 'E', 'order-6', 1);
    assert.equal(m!.applicationProperties?.From, 'Continuation');
    assert.equal(m!.applicationProperties?.To, 'E');
    await takeSession('Resolver', 'Resolver', 'order-6', 1);
    await assertNothingElseAnywhere();
  });

  test("a Manager command with To='E' reaches E's main subscription with From='Manager' and also the Resolver", async () => {
    await send('Manager', {
      messageId: 'cmd-1',
      sessionId: 'order-7',
      body: { command: 'resubmit' },
      applicationProperties: { MessageType: 'ResubmissionRequest', To: 'E' },
    });
    const [m] = await takeSession('E', 'E', 'order-7', 1);
    assert.equal(m!.messageId, 'cmd-1');
    assert.equal(m!.applicationProperties?.From, 'Manager');
    assert.equal(m!.applicationProperties?.To, 'E');
    const [r] = await takeSession('Resolver', 'Resolver', 'order-7', 1);
    assert.equal(r!.applicationProperties?.From, 'Manager');
    await assertNothingElseAnywhere(); // not at A or C
  });

  test("a heartbeat sent straight to E with From='Manager' reaches E's main subscription", async () => {
    await send('E', {
      messageId: 'hb-1',
      sessionId: 'heartbeat',
      body: 'ping',
      applicationProperties: { MessageType: 'HeartbeatRequest', From: 'Manager', To: 'E' },
    });
    const [m] = await takeSession('E', 'E', 'heartbeat', 1);
    assert.equal(m!.applicationProperties?.From, 'Manager');
    await takeSession('Resolver', 'Resolver', 'heartbeat', 1);
    await assertNothingElseAnywhere();
  });

  test('Deferred and DeferredProcessor addresses reach their own subscriptions only', async () => {
    await send('C', {
      messageId: 'park-1',
      sessionId: 'parked-session',
      body: 'parked',
      applicationProperties: { MessageType: 'EventRequest', To: 'Deferred', OriginalSessionId: 'order-8' },
    });
    await send('C', {
      messageId: 'proc-1',
      body: 'process',
      applicationProperties: { MessageType: 'ProcessDeferredRequest', To: 'DeferredProcessor' },
    });
    const [parked] = await takeSession('C', 'Deferred', 'parked-session', 1);
    assert.equal(parked!.messageId, 'park-1');
    const [proc] = await take('C', 'DeferredProcessor', 1);
    assert.equal(proc!.messageId, 'proc-1');
    await assertNothingElseAnywhere();
  });
});
