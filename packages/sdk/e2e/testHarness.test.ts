// The adapter author's test harness (@nimbus/sdk/testing) on the embedded emulator, used as an author uses it:
// a catalog, a host with handlers, publish, and the outcome the Resolver would record; retries brought forward
// and handoffs settled through the harness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HandlerRegistry, readHandoffToken, RetryPolicies } from '@nimbus/sdk';
import { MessageType, Prop, ResolutionStatus } from '@nimbus/sdk/contract';
import { createTestHarness } from '@nimbus/sdk/testing';
import { startEmulator } from '../../../emulator/index.ts';

const catalog = {
  endpoints: [
    { id: 'shop', produces: ['OrderPlaced'] },
    { id: 'billing', consumes: ['OrderPlaced'] },
  ],
  eventTypes: [{ id: 'OrderPlaced', sessionKey: 'orderId' }],
};

class PartnerDown extends Error {}

test('an author tests a subscriber with the harness: success, retry brought forward, handoff, unsupported', async () => {
  // No connection string: the harness starts the embedded emulator itself.
  const saved = process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
  delete process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
  await using harness = await createTestHarness({ catalog });
  if (saved !== undefined) process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING = saved;

  const attempts = new Map<string, number>();
  const handlers = new HandlerRegistry().on('OrderPlaced', (order: { orderId: string; kind: string }, ctx) => {
    const n = (attempts.get(order.orderId) ?? 0) + 1;
    attempts.set(order.orderId, n);
    if (order.kind === 'flaky' && n === 1) throw new PartnerDown('partner answered 503');
    if (order.kind === 'handoff') ctx.markPendingHandoff('ERP import', 'job-7', 60_000);
  });
  await harness.host('billing', handlers, {
    // A policy an hour long: only advanceRetries can make this test finish in time.
    retryPolicies: new RetryPolicies().addExceptionRule(PartnerDown, { maxRetries: 3, strategy: 'Fixed', baseDelayMs: 3_600_000 }),
  });

  const ok = await harness.publish('shop', 'OrderPlaced', { orderId: 'o-1', kind: 'ok' });
  const done = await harness.outcome(ok);
  assert.equal(done.status, ResolutionStatus.Completed);
  assert.equal(done.endpointId, 'billing');
  assert.deepEqual(
    done.history.map((h) => h.messageType),
    [MessageType.EventRequest, MessageType.ResolutionResponse],
  );

  const flaky = await harness.publish('shop', 'OrderPlaced', { orderId: 'o-2', kind: 'flaky' });
  const failed = await harness.outcome(flaky, { status: ResolutionStatus.Failed });
  assert.match(failed.errorText ?? '', /partner answered 503/);
  assert.equal(await harness.advanceRetries({ expect: 1 }), 1, 'the scheduled RetryRequest is brought forward');
  const retried = await harness.outcome(flaky, { status: ResolutionStatus.Completed, timeoutMs: 20_000 });
  assert.equal(attempts.get('o-2'), 2);
  assert.ok(retried.history.some((h) => h.messageType === MessageType.RetryRequest));

  const parked = await harness.publish('shop', 'OrderPlaced', { orderId: 'o-3', kind: 'handoff' });
  const pending = await harness.outcome(parked);
  assert.equal(pending.status, ResolutionStatus.Pending);
  assert.equal(pending.handoff?.reason, 'ERP import');
  assert.equal(pending.handoff?.externalJobId, 'job-7');
  await harness.completeHandoff(parked);
  const settled = await harness.outcome(parked, { status: ResolutionStatus.Completed });
  assert.equal(settled.messageType, MessageType.ResolutionResponse);
  assert.equal(attempts.get('o-3'), 1, 'settling a handoff never runs the handler again');
});

test('completeHandoff and failHandoff name the delivery that handed the event off, as the Manager does', async () => {
  await using harness = await createTestHarness({ catalog });
  const deliveries: string[] = [];
  const host = await harness.host(
    'billing',
    new HandlerRegistry().on('OrderPlaced', (_order, ctx) => {
      deliveries.push(readHandoffToken(ctx.markPendingHandoff('ERP import', 'job-8')).messageId);
    }),
  );
  const parked = await harness.publish('shop', 'OrderPlaced', { orderId: 'o-4' });
  const pending = await harness.outcome(parked);
  assert.equal(pending.status, ResolutionStatus.Pending);
  assert.deepEqual(deliveries.length, 1);
  assert.equal(pending.handoff?.handedOffByMessageId, deliveries[0], 'the row names the delivery that handed off');
  // The host stopped, the commands stay on the endpoint's subscription, where the test reads them as it receives them.
  await host.stop();
  await harness.failHandoff(parked, 'ERP said no');
  await harness.completeHandoff(parked);
  const receiver = await harness.client.acceptSession('billing', 'billing', pending.sessionId);
  try {
    const named: Array<[unknown, unknown]> = [];
    while (named.length < 2) {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
      assert.ok(m, `the harness's commands reach the endpoint (${named.length} of 2 seen)`);
      const p = m.applicationProperties ?? {};
      named.push([p[Prop.MessageType], p[Prop.HandedOffByMessageId]]);
    }
    assert.deepEqual(named, [
      [MessageType.HandoffFailedRequest, deliveries[0]],
      [MessageType.HandoffCompletedRequest, deliveries[0]],
    ]);
  } finally {
    await receiver.close();
  }
});

test('outcome() names what it saw when the expected status never comes', async () => {
  await using harness = await createTestHarness({ catalog });
  await harness.host('billing', new HandlerRegistry().on('OrderPlaced', () => undefined));
  const e = await harness.publish('shop', 'OrderPlaced', { orderId: 'o-9' });
  await harness.outcome(e);
  await assert.rejects(harness.outcome(e, { status: ResolutionStatus.Failed, timeoutMs: 500 }), /seen: billing: Completed/);
});

test('a connection string wins over an emulator factory: connectionString, else NIMBUS_SERVICEBUS_CONNECTION_STRING, else the emulator', async () => {
  const bus = await startEmulator({ port: 0 });
  let factoryCalls = 0;
  const emulator = () => {
    factoryCalls++;
    return Promise.reject(new Error('the emulator factory was called although a connection string was given'));
  };
  const saved = process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
  try {
    delete process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
    {
      await using harness = await createTestHarness({ catalog, connectionString: bus.connectionString, emulator });
      await harness.host('billing', new HandlerRegistry().on('OrderPlaced', () => undefined));
      const e = await harness.publish('shop', 'OrderPlaced', { orderId: 'cs-1' });
      assert.equal((await harness.outcome(e)).status, ResolutionStatus.Completed);
    }
    process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING = bus.connectionString;
    {
      // Provisioning ran against the namespace in the environment: the factory would have failed the harness.
      await using harness = await createTestHarness({ catalog, emulator });
      assert.ok(harness.client);
    }
    assert.equal(factoryCalls, 0);
  } finally {
    if (saved === undefined) delete process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING;
    else process.env.NIMBUS_SERVICEBUS_CONNECTION_STRING = saved;
    await bus.close();
  }
});
