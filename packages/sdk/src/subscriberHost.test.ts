// The subscriber host's handling of a delivery whose broker call did not answer within operationTimeoutMs (the
// link is taken for lost), over a fake client: the real host, dispatcher and session port, with a session receiver
// and a sender whose calls the test answers or leaves hanging. What the host does then is pure logic; the reset
// itself is covered end to end by e2e/sessionDrop.test.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusClient } from '@azure/service-bus';
import { CircuitBreaker } from './circuitBreaker.ts';
import { HandlerRegistry, type EventHandler } from './handlers.ts';
import { SubscriberHost } from './subscriberHost.ts';
import { RetryPolicies } from './retryPolicies.ts';
import { TransientError } from './errors.ts';
import type { DeliveryResult } from './dispatcher.ts';
import { capturedLogger, fakeBroker, host } from './testing/fakeSessionBroker.ts';

describe('a delivery whose broker call is given up (operationTimeoutMs)', () => {
  test('a completion that does not answer: the session counts as failed (the worker backs off), and neither the breaker nor onMessageFailed count it against the handler', async () => {
    const broker = fakeBroker({ deliveryCount: 0, completionHangs: true });
    const breaker = new CircuitBreaker({ failureThreshold: 1 });
    const failed: unknown[] = [];
    const { h, lines, delivery } = host(broker.client, { breaker, failed });
    await h.start();
    try {
      assert.equal(await delivery, 'transient');
      // The worker's next accept comes after the session's failure was handled.
      await broker.acceptedAgain;
      assert.equal(breaker.state, 'Closed', 'a completion given up is not a handler failure');
      assert.deepEqual(failed, [], 'onMessageFailed is not called for a completion given up');
      const failure = lines.find((l) => /^receiving from a session failed/.test(l.msg));
      assert.ok(failure, 'the session is logged as failed');
      assert.equal(typeof failure.delayMs, 'number', 'the worker backs off before accepting again');
      const said = lines.filter((l) => /may have landed/.test(l.msg));
      assert.equal(said.length, 1, 'the log says the completion may have landed after all');
      assert.match(said[0]!.msg, /if not, the delivery is redelivered/, 'delivery 1 of 10: it comes back');
      assert.equal(said[0]!.delivery, 1);
      assert.equal(said[0]!.maxDeliveryCount, 10);
      assert.ok(!lines.some((l) => /transient failure: left for redelivery/.test(l.msg)));
    } finally {
      await h.stop();
    }
  });

  test('on the last delivery the budget allows, a response send that does not answer still leads to the Resolver notification and the dead-letter', async () => {
    // Delivery 10 of 10 (the client reports 9 earlier deliveries): left unsettled, the broker would dead-letter it
    // silently and the Resolver's row would stay Pending.
    const broker = fakeBroker({ deliveryCount: 9, hangingSend: 0 });
    const { h, delivery } = host(broker.client);
    await h.start();
    try {
      assert.equal(await delivery, 'deadLettered');
      assert.equal(broker.sent.length, 2, 'the response (given up), then the notification');
      assert.equal(broker.sent[1]!.MessageType, 'ErrorResponse');
      assert.equal(broker.sent[1]!.DeadLetterReason, 'MaxDeliveryCountExceeded');
      assert.deepEqual(
        broker.deadLettered.map((d) => d.deadLetterReason),
        ['MaxDeliveryCountExceeded'],
      );
      // The description quotes the send given up; it must not say the delivery comes back (before, it ended "the
      // delivery is left for redelivery", in the dead-letter and in the Resolver's notification alike).
      const described = [broker.deadLettered[0]!.deadLetterErrorDescription, broker.sent[1]!.DeadLetterErrorDescription];
      for (const d of described) {
        assert.match(String(d), /^Delivery 10 of 10 ended transient: .*sending a message did not answer/);
        assert.doesNotMatch(String(d), /left for redelivery/);
        assert.match(String(d), /its last delivery \(10 of 10\): it is dead-lettered, not redelivered$/);
      }
    } finally {
      await h.stop();
    }
  });

  test('a response send that does not answer with deliveries left: logged as left for redelivery, with the delivery and the budget', async () => {
    const broker = fakeBroker({ deliveryCount: 2, hangingSend: 0 });
    const { h, lines, delivery } = host(broker.client);
    await h.start();
    try {
      assert.equal(await delivery, 'transient');
      assert.deepEqual(broker.deadLettered, []);
      const givenUp = lines.filter((l) => l.operation === 'sending a message');
      assert.equal(givenUp.length, 1);
      assert.match(givenUp[0]!.msg, /did not answer: the delivery is left for redelivery/);
      assert.equal(givenUp[0]!.delivery, 3, 'the client reports 2 earlier deliveries');
      assert.equal(givenUp[0]!.maxDeliveryCount, 10);
      const held = lines.filter((l) => /holding the session first/.test(l.msg));
      assert.equal(held.length, 1);
      assert.match(held[0]!.msg, /^delivery left for redelivery/);
      assert.equal(held[0]!.delivery, 3);
    } finally {
      await h.stop();
    }
  });

  test('on the last delivery, a completion that does not answer sends no budget notification after the response', async () => {
    // Everything the delivery had to tell the Resolver went before the completion, and the completion may have
    // landed: a MaxDeliveryCountExceeded notification now would contradict the response the Resolver already has.
    const broker = fakeBroker({ deliveryCount: 9, completionHangs: true });
    const { h, lines, delivery } = host(broker.client);
    await h.start();
    try {
      assert.equal(await delivery, 'transient');
      assert.deepEqual(
        broker.sent.map((m) => m.MessageType),
        ['ResolutionResponse'],
      );
      assert.deepEqual(broker.deadLettered, []);
      // Not settled by the SDK, on its last delivery: if the completion did not land, the broker dead-letters it at
      // the release - it does not come back. Before, the log said it was redelivered, and the hold that it was left
      // for redelivery.
      const said = lines.filter((l) => /may have landed/.test(l.msg));
      assert.equal(said.length, 1);
      assert.match(said[0]!.msg, /if not, the broker dead-letters it at the release \(MaxDeliveryCountExceeded\)/);
      assert.equal(said[0]!.delivery, 10);
      assert.equal(said[0]!.maxDeliveryCount, 10);
      const held = lines.filter((l) => /holding the session first/.test(l.msg));
      assert.equal(held.length, 1);
      assert.match(held[0]!.msg, /last delivery .*the broker dead-letters it at the release/);
      assert.deepEqual(
        lines.filter((l) => /redeliver/.test(l.msg) && !/may have landed/.test(l.msg)).map((l) => l.msg),
        [],
        'nothing else claims a redelivery',
      );
    } finally {
      await h.stop();
    }
  });
});

describe('a RetryRequest schedule that does not answer (after the completion)', () => {
  test('the delivery keeps its Failed outcome: no hold, no budget dead-letter, not logged as left for redelivery', async () => {
    // The last delivery the budget allows: before, the schedule given up took the budget path and dead-lettered a
    // message that was already completed.
    const broker = fakeBroker({ deliveryCount: 9, scheduleHangs: true });
    const failed: unknown[] = [];
    const { h, lines, delivery } = host(broker.client, {
      failed,
      handler: () => {
        throw new Error('downstream 503');
      },
      retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 1000 }),
    });
    await h.start();
    try {
      assert.equal(await delivery, 'handlerFailed');
      // The worker's next accept comes after the session was given up and its log lines written.
      await broker.acceptedAgain;
      assert.deepEqual(
        broker.sent.map((m) => m.MessageType),
        ['ErrorResponse'],
      );
      assert.deepEqual(broker.deadLettered, []);
      assert.deepEqual(failed, [], 'no onMessageFailed: nothing is left for redelivery');
      assert.ok(lines.some((l) => /RetryRequest was not scheduled/.test(l.msg)));
      assert.ok(lines.some((l) => /after the message was settled did not answer/.test(l.msg)));
      assert.ok(!lines.some((l) => /left for redelivery/.test(l.msg)), 'no hold, no redelivery claimed');
    } finally {
      await h.stop();
    }
  });
});

describe('a session released at its lock horizon before its first receive', () => {
  test('the worker backs off before its next accept instead of accepting and releasing in a tight loop', async () => {
    // Every accept hands over a receiver already closed (the session lost at once): its horizon is 0.
    let accepts = 0;
    const client = {
      acceptNextSession: async () => {
        accepts++;
        return { sessionId: 'R-1', isClosed: true, sessionLockedUntilUtc: new Date(Date.now() + 60_000), close: async () => undefined };
      },
      createSender: () => ({ entityPath: 'billing', close: async () => undefined }),
      close: async () => undefined,
    } as unknown as ServiceBusClient;
    // A back-off long enough that a second accept before stop() can only come from a loop without it.
    const { h, lines } = host(client, { backoffMs: 20_000 });
    await h.start();
    try {
      // Until the back-off is logged, or the old tight loop has accepted many times over.
      const backedOff = () => lines.find((l) => /before its first receive; waiting/.test(l.msg));
      while (!backedOff() && accepts < 50) await new Promise((r) => setTimeout(r, 10));
      assert.equal(accepts, 1, 'no second accept during the back-off');
      assert.equal(backedOff()?.delayMs, 20_000);
    } finally {
      await h.stop();
    }
  });
});

describe("the circuit breaker's half-open probe", () => {
  test('a probe that throws before its outcome is counted (here onDelivery) still gives the probe slot back', async () => {
    let t = 0;
    const breaker = new CircuitBreaker({ failureThreshold: 1, openDurationMs: 1_000, now: () => t });
    breaker.record('failure');
    t += 1_000;
    assert.equal(breaker.state, 'HalfOpen');
    const broker = fakeBroker({ deliveryCount: 0 });
    const { h, delivery } = host(broker.client, { breaker, onDeliveryThrows: true });
    await h.start();
    try {
      assert.equal(await delivery, 'completed');
    } finally {
      // stop() returns once the session (and whatever it does on its way out) has ended.
      await h.stop();
    }
    assert.equal(breaker.state, 'HalfOpen', 'the outcome was never counted');
    t += breaker.acquireWaitMs;
    assert.ok(breaker.acquire()?.probe, 'the slot is free: the circuit is not stuck half-open with no probe running');
  });

  test('a worker stopping with the probe\'s message received but not started gives the probe slot back', async () => {
    let t = 0;
    const breaker = new CircuitBreaker({ failureThreshold: 1, openDurationMs: 1_000, now: () => t });
    breaker.record('failure');
    t += 1_000;
    let stopCalled!: (stopping: Promise<void>) => void;
    const stopped = new Promise<void>((resolve) => (stopCalled = resolve));
    // The host stops between the probe's receive and its delivery: the message is left for the next start.
    const broker = fakeBroker({ deliveryCount: 0, onFirstReceive: () => stopCalled(h.stop()) });
    const { h } = host(broker.client, { breaker });
    await h.start();
    await stopped;
    assert.deepEqual(broker.sent, [], 'the message was not handled');
    assert.equal(breaker.state, 'HalfOpen');
    t += breaker.acquireWaitMs;
    assert.ok(breaker.acquire()?.probe, 'the slot is free: a host started again with this breaker can probe');
  });
  test('a message received but not started when the host stops, on its last delivery: notified and dead-lettered, not left to the broker', async () => {
    // Before: left unsettled like any message not started; releasing the session counted its last delivery and the
    // broker dead-lettered it silently (MaxDeliveryCountExceeded), the Resolver row Pending. Earlier deliveries still
    // go back untouched (the test above, and "a worker stopping with the probe's message ...").
    let stopCalled!: (stopping: Promise<void>) => void;
    const stopped = new Promise<void>((resolve) => (stopCalled = resolve));
    let ran = false;
    const broker = fakeBroker({ deliveryCount: 9, onFirstReceive: () => stopCalled(h.stop()) });
    const { h, delivery } = host(broker.client, { handler: () => void (ran = true) });
    await h.start();
    await stopped; // h.stop() has returned: every delivery it let happen has been reported
    const result = await Promise.race([delivery, new Promise((r) => setImmediate(() => r('no delivery')))]);
    assert.equal(result, 'deadLettered');
    assert.equal(ran, false, 'the handler does not run after the stop');
    assert.deepEqual(
      broker.sent.map((p) => [p.MessageType, p.DeadLetterReason]),
      [['ErrorResponse', 'MaxDeliveryCountExceeded']],
    );
    assert.match(String(broker.sent[0]!.DeadLetterErrorDescription), /^Delivery 10 of 10 was cancelled: subscriber host stopping$/);
    assert.deepEqual(
      broker.deadLettered.map((o) => o.deadLetterReason),
      ['MaxDeliveryCountExceeded'],
    );
  });
  test('a half-open probe whose handler hangs is given up at probeTimeoutMs: the circuit opens and aborts the handler', async () => {
    // The real clock: the deadline is the breaker's own timer. One worker, so no other worker polls the state.
    // 2 s, not less: the deadline runs from the moment the probe's delivery is in hand (handling()), and on a loaded
    // machine the handler may start only hundreds of ms later (a CI run with 200 ms opened the circuit before the
    // handler ran, and the test waited for an abort that had already happened).
    const breaker = new CircuitBreaker({ failureThreshold: 1, openDurationMs: 0, probeTimeoutMs: 2_000 });
    const transitions: string[] = [];
    breaker.onStateChange((from, to) => transitions.push(`${from}->${to}`));
    breaker.record('failure');
    assert.equal(breaker.state, 'HalfOpen');
    let aborted!: (reason: unknown) => void;
    const handlerAborted = new Promise<unknown>((resolve) => (aborted = resolve));
    // A downstream that never answers and no timeout of its own: only the signal ends it.
    const handler: EventHandler = (_e, ctx) =>
      new Promise<void>((_, reject) => {
        const onAbort = () => {
          aborted(ctx.signal.reason);
          reject(ctx.signal.reason as Error);
        };
        if (ctx.signal.aborted) onAbort();
        else ctx.signal.addEventListener('abort', onAbort, { once: true });
      });
    const broker = fakeBroker({ deliveryCount: 0 });
    const { h, delivery } = host(broker.client, { breaker, handler });
    // The fake broker holds no socket and the breaker's deadline timer is unref'd: keep the event loop alive.
    const keepAlive = setInterval(() => undefined, 1_000);
    await h.start();
    try {
      // A delivery that ends without the handler aborted fails here at once, not at the file's time-out.
      const reason = await Promise.race([
        handlerAborted,
        delivery.then((d) => assert.fail(`the delivery ended (${d}) without the handler being aborted`)),
      ]);
      assert.match(String(reason as Error), /endpoint circuit opened/);
      assert.equal(await delivery, 'cancelled', 'stopped without an outcome: left for redelivery');
    } finally {
      await h.stop();
      clearInterval(keepAlive);
    }
    assert.deepEqual(transitions.slice(0, 3), ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Open']);
    assert.deepEqual(broker.sent, [], 'nothing answered for the probe given up');
  });
  test("a probe whose deadline has passed by the time its delivery is in hand: the delivery follows the circuit signal that opening aborted, not the fresh one", async () => {
    // The window 9b3386e closed, opened on demand with the breaker's clock: the probe's receive comes back after its
    // whole allowance (the receive wait plus probeTimeoutMs; a late drain on a loaded machine), so the state read in
    // permit.handling() gives the probe up and opens the circuit, which replaces the host's circuit controller. The
    // host reads no breaker state and awaits nothing between handling() and the dispatch, so this read is the one way
    // the deadline can be found passed in that window. Before the fix the delivery took the controller current at
    // dispatch - the fresh one - and the handler ran unbounded (the probe's deadline timer was cleared with the probe):
    // here it fails at once, when the handler starts under a live signal, instead of hanging until the file's time-out.
    let t = 0;
    const breaker = new CircuitBreaker({ failureThreshold: 1, openDurationMs: 1_000, probeTimeoutMs: 2_000, now: () => t });
    const transitions: string[] = [];
    breaker.onStateChange((from, to) => transitions.push(`${from}->${to}`));
    breaker.record('failure');
    t += 1_000;
    assert.equal(breaker.state, 'HalfOpen');
    let ranLive!: () => void;
    const handlerRanLive = new Promise<string>((resolve) => (ranLive = () => resolve('the handler ran under a live signal')));
    const handler: EventHandler = (_e, ctx) =>
      new Promise<void>((_, reject) => {
        if (ctx.signal.aborted) return reject(ctx.signal.reason as Error);
        ranLive();
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true });
      });
    // Past any allowance the probe could have: the receive wait (at most the 30 s idle timeout) plus probeTimeoutMs.
    const broker = fakeBroker({ deliveryCount: 0, onFirstReceive: () => void (t += 10 * 60_000) });
    const { h, delivery } = host(broker.client, { breaker, handler });
    await h.start();
    try {
      assert.equal(await Promise.race([delivery, handlerRanLive]), 'cancelled', 'cancelled before its handler: left for redelivery');
      assert.deepEqual(transitions, ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Open']);
      assert.deepEqual(broker.sent, [], 'nothing answered for the probe given up');
      assert.deepEqual(broker.completed, []);
    } finally {
      // On the old code the stop's signal is what ends the hung handler.
      await h.stop();
    }
  });
});

describe('the rest of a batch that goes back with the session', () => {
  test('the circuit opens under a batch: the rest on its last delivery is notified and dead-lettered, the rest with deliveries left goes back untouched', async () => {
    // Before: the rest went back with the session, a delivery counted each, and the broker dead-lettered those on
    // their last delivery silently (MaxDeliveryCountExceeded) with the Resolver rows Pending: only e-1 was answered.
    const breaker = new CircuitBreaker({ failureThreshold: 1, openDurationMs: 10 });
    const broker = fakeBroker({ deliveryCount: 0, batch: [0, 9, 0, 9] });
    const handled: string[] = [];
    const results: DeliveryResult[] = [];
    const { h } = host(broker.client, {
      breaker,
      results,
      handler: (_e, ctx) => {
        handled.push(ctx.eventId);
        throw new Error('partner down'); // e-1 fails: the threshold of one opens the circuit
      },
    });
    await h.start();
    try {
      await broker.acceptedAgain; // the session was released: the batch is over
      assert.deepEqual(handled, ['e-1'], 'no handler runs after the circuit opened');
      assert.deepEqual(results, ['handlerFailed', 'deadLettered', 'deadLettered']);
      assert.deepEqual(
        broker.sent.map((p) => [p.EventId, p.MessageType, p.DeadLetterReason]),
        [
          ['e-1', 'ErrorResponse', undefined],
          ['e-2', 'ErrorResponse', 'MaxDeliveryCountExceeded'],
          ['e-4', 'ErrorResponse', 'MaxDeliveryCountExceeded'],
        ],
      );
      assert.deepEqual(
        broker.deadLettered.map((d) => [d.messageId, d.deadLetterReason, d.deadLetterErrorDescription]),
        [
          ['m-2', 'MaxDeliveryCountExceeded', 'Delivery 10 of 10 was cancelled: endpoint circuit opened'],
          ['m-4', 'MaxDeliveryCountExceeded', 'Delivery 10 of 10 was cancelled: endpoint circuit opened'],
        ],
      );
      assert.deepEqual(broker.completed, ['m-1'], 'm-3 (deliveries left) is not settled: it comes back');
    } finally {
      await h.stop();
    }
  });

  test('the host stops with a batch received: a message on its last delivery behind one with deliveries left still takes the budget path', async () => {
    // Before: the first message not on its last delivery ended the batch, so m-2 behind it went back with the session
    // and the broker dead-lettered it silently.
    let stopCalled!: (stopping: Promise<void>) => void;
    const stopped = new Promise<void>((resolve) => (stopCalled = resolve));
    const handled: string[] = [];
    const broker = fakeBroker({ deliveryCount: 0, batch: [0, 9], onFirstReceive: () => stopCalled(h.stop()) });
    const { h } = host(broker.client, { handler: (_e, ctx) => void handled.push(ctx.eventId) });
    await h.start();
    await stopped; // stop() waited for the session: every delivery it let happen has been reported
    assert.deepEqual(handled, []);
    assert.deepEqual(
      broker.sent.map((p) => [p.EventId, p.MessageType, p.DeadLetterReason]),
      [['e-2', 'ErrorResponse', 'MaxDeliveryCountExceeded']],
    );
    assert.deepEqual(
      broker.deadLettered.map((d) => [d.messageId, d.deadLetterErrorDescription]),
      [['m-2', 'Delivery 10 of 10 was cancelled: subscriber host stopping']],
    );
    assert.deepEqual(broker.completed, []);
  });
  test('the circuit opens under a batch: a replayed copy on its last delivery behind one that went back goes back too', async () => {
    // Its budget path would move the session's replay cursor past the copy that went back, which would then come
    // back "already handled" and be completed without running - lost. Before: m-3 was notified and dead-lettered.
    const breaker = new CircuitBreaker({ failureThreshold: 1, openDurationMs: 10 });
    const broker = fakeBroker({ deliveryCount: 0, batch: [0, 0, 9], replayed: [1, 2] });
    const results: DeliveryResult[] = [];
    const { h } = host(broker.client, {
      breaker,
      results,
      handler: () => {
        throw new Error('partner down'); // e-1 fails: the threshold of one opens the circuit
      },
    });
    await h.start();
    try {
      await broker.acceptedAgain; // the session was released: the batch is over
      assert.deepEqual(results, ['handlerFailed']);
      assert.deepEqual(broker.sent.map((p) => [p.EventId, p.MessageType]), [['e-1', 'ErrorResponse']]);
      assert.deepEqual(broker.deadLettered, [], 'm-3 goes back with m-2: the broker dead-letters it, the next copy reports the gap');
    } finally {
      await h.stop();
    }
  });
  test('behind a delivery left unsettled with the circuit closed: the rest on its last delivery is notified and dead-lettered, the rest with deliveries left goes back untouched', async () => {
    // Before: the session was released right after m-1's hold with the rest untouched, a delivery counted each, and
    // the broker dead-lettered m-2 and m-4 silently (MaxDeliveryCountExceeded) with the Resolver rows Pending.
    const broker = fakeBroker({ deliveryCount: 0, batch: [0, 9, 0, 9] });
    const handled: string[] = [];
    const results: DeliveryResult[] = [];
    const { h } = host(broker.client, {
      results,
      handler: (_e, ctx) => {
        handled.push(ctx.eventId);
        throw new TransientError('inventory store unavailable'); // m-1 is left for redelivery
      },
    });
    await h.start();
    try {
      await broker.acceptedAgain; // the session was released: the batch is over
      assert.deepEqual(handled, ['e-1'], 'no handler runs behind the delivery left unsettled');
      assert.deepEqual(results, ['transient', 'deadLettered', 'deadLettered']);
      const description = 'Delivery 10 of 10 was cancelled: an earlier message of the session was left for redelivery';
      assert.deepEqual(
        broker.sent.map((p) => [p.EventId, p.MessageType, p.DeadLetterReason, p.DeadLetterErrorDescription]),
        [
          ['e-2', 'ErrorResponse', 'MaxDeliveryCountExceeded', description],
          ['e-4', 'ErrorResponse', 'MaxDeliveryCountExceeded', description],
        ],
      );
      assert.deepEqual(
        broker.deadLettered.map((d) => [d.messageId, d.deadLetterReason, d.deadLetterErrorDescription]),
        [
          ['m-2', 'MaxDeliveryCountExceeded', description],
          ['m-4', 'MaxDeliveryCountExceeded', description],
        ],
      );
      assert.deepEqual(broker.completed, [], 'm-1 and m-3 are not settled: they come back');
    } finally {
      await h.stop();
    }
  });
  for (const circuit of ['closed', 'opened by it'] as const) {
    test(`behind a replayed copy left unsettled (circuit ${circuit}): a replayed copy on its last delivery goes back too`, async () => {
      // Its budget path would move the session's replay cursor past m-1, which would then come back "already handled"
      // and be completed without running - lost. Before: with the circuit opened by m-1's failure, m-2 was notified
      // and dead-lettered (only a message of the rest that went back kept it back, not the unsettled delivery itself).
      const breaker = circuit === 'closed' ? undefined : new CircuitBreaker({ failureThreshold: 1, openDurationMs: 60_000 });
      const broker = fakeBroker({ deliveryCount: 0, batch: [0, 9], replayed: [0, 1] });
      const results: DeliveryResult[] = [];
      const { h } = host(broker.client, {
        ...(breaker ? { breaker } : {}),
        results,
        handler: () => {
          throw new TransientError('inventory store unavailable');
        },
      });
      await h.start();
      try {
        // The session was released: the batch is over (no second accept while the circuit stays open).
        await broker.released;
        assert.deepEqual(results, ['transient']);
        assert.deepEqual(broker.sent, []);
        assert.deepEqual(broker.deadLettered, [], 'm-2 goes back with m-1: the broker dead-letters it, the next copy reports the gap');
        assert.deepEqual(broker.completed, []);
        if (breaker) assert.equal(breaker.state, 'Open');
      } finally {
        await h.stop();
      }
    });
  }
});

describe('a batch whose session lock is lost under it', () => {
  for (const [how, lose] of [
    ['the broker detached the receiver (isClosed)', (r: ReturnType<typeof fakeBroker>['receiver']) => r.detach()],
    ['the lock expiry passed (renewal failed)', (r: ReturnType<typeof fakeBroker>['receiver']) => void (r.sessionLockedUntilUtc = new Date(Date.now() - 1))],
  ] as const) {
    test(`${how} after the first message settled: the rest runs no handler, is not settled, and one warning names the session`, async () => {
      // Before: e-2's handler ran (its effects happened), then its settlement was given up as the lock was lost and
      // the message came back to run again - a double run.
      const handled: string[] = [];
      const results: DeliveryResult[] = [];
      const broker = fakeBroker({
        deliveryCount: 0,
        batch: [0, 0, 9],
        afterComplete: (id) => {
          if (id === 'm-1') lose(broker.receiver);
        },
      });
      const { h, lines } = host(broker.client, { results, handler: (_e, ctx) => void handled.push(ctx.eventId) });
      await h.start();
      try {
        await broker.acceptedAgain; // the session was released: the batch is over
        assert.deepEqual(handled, ['e-1']);
        // e-3, on its last delivery, takes the budget path: the broker dead-letters it at the release whatever we do,
        // and the notification needs no session lock (its own dead-letter is refused: transient). Before this, it
        // was left to the broker's silent dead-letter with the Resolver's row Pending.
        assert.deepEqual(results, ['completed', 'transient']);
        assert.deepEqual(broker.completed, ['m-1']);
        assert.deepEqual(
          broker.sent.map((p) => [p.EventId, p.MessageType, p.DeadLetterReason]),
          [
            ['e-1', 'ResolutionResponse', undefined],
            ['e-3', 'ErrorResponse', 'MaxDeliveryCountExceeded'],
          ],
          'nothing sent for e-2 (deliveries left: it comes back); the last delivery is notified',
        );
        assert.deepEqual(broker.deadLettered, []);
        const warned = lines.filter((l) => /session lock lost during a batch/.test(l.msg));
        assert.equal(warned.length, 1);
        assert.equal(warned[0]!.level, 40);
        assert.equal(warned[0]!.sessionId, 'R-1');
        assert.equal(warned[0]!.left, 2);
      } finally {
        await h.stop();
      }
    });
  }
});

describe('a local clock ahead of the broker by more than a lock', () => {
  test("the session lock reads as expired from the accept on: the handler's outcome is settled, not thrown away as a lost lock", async () => {
    // Before: the dispatcher's check after the handler compared sessionLockedUntilUtc with the local clock, so under
    // this skew every delivery ended transient after its handler ran (its effects happened), and came back to run
    // again until the budget path dead-lettered it.
    const broker = fakeBroker({ deliveryCount: 0 });
    broker.receiver.sessionLockedUntilUtc = new Date(Date.now() - 600_000 + 30_000);
    let runs = 0;
    const { h, delivery } = host(broker.client, { handler: () => void runs++ });
    await h.start();
    try {
      assert.equal(await delivery, 'completed');
      assert.equal(runs, 1);
      assert.deepEqual(broker.completed, ['m-1']);
      assert.deepEqual(broker.sent.map((p) => p.MessageType), ['ResolutionResponse']);
    } finally {
      await h.stop();
    }
  });
  test('a transient outcome holds the session before giving it back, as under a clock that agrees with the broker', async () => {
    // Before: hold() compared sessionLockedUntilUtc with the local clock itself, so under this skew every lock read as
    // lost and no hold happened: the session was released at once and the message came straight back, a delivery
    // of its budget spent on each round trip - the outage burning the budget the hold exists to save.
    const broker = fakeBroker({ deliveryCount: 0 });
    broker.receiver.sessionLockedUntilUtc = new Date(Date.now() - 600_000 + 30_000);
    const { h, lines, delivery } = host(broker.client, {
      handler: () => {
        throw new TransientError('inventory store unavailable');
      },
    });
    await h.start();
    try {
      assert.equal(await delivery, 'transient');
      await broker.acceptedAgain; // the session was given back: whatever hold there was is over
      const held = lines.filter((l) => /holding the session first/.test(l.msg));
      assert.equal(held.length, 1, 'the session was held before it was given back');
      assert.equal(held[0]!.holdMs, 20, 'the configured first hold (transientHold.initialMs)');
      assert.deepEqual(broker.completed, []);
      assert.deepEqual(broker.deadLettered, []);
    } finally {
      await h.stop();
    }
  });
});

describe('a transient outcome with lock renewal off and the lock expiry unreadable', () => {
  test('the session is released without a hold: nothing renews the lock, so no back-off may outlast it', async () => {
    // Renewal off, and the local clock ahead of the broker's by about a lock: the first lock reads under 1 s, so the
    // horizon has no end. Before, the hold was then the whole back-off (240 s on the fourth delivery) while the lock,
    // renewed by nobody, lapsed about 30 s after the accept and the session went to whoever asked.
    const broker = fakeBroker({ deliveryCount: 3 });
    broker.receiver.sessionLockedUntilUtc = new Date(Date.now() - 600_000 + 30_000);
    let heldNow!: () => void;
    const held = new Promise<void>((resolve) => (heldNow = resolve));
    const { lines, logger } = capturedLogger((l) => {
      if (/holding the session first/.test(l.msg)) heldNow();
    });
    let delivered!: (r: DeliveryResult) => void;
    const delivery = new Promise<DeliveryResult>((resolve) => (delivered = resolve));
    const h = new SubscriberHost({
      client: broker.client,
      endpointId: 'billing',
      handlers: new HandlerRegistry().on('OrderPlaced', () => {
        throw new TransientError('inventory store unavailable');
      }),
      sessionConnection: 'shared',
      checkEntities: false,
      deferredProcessor: false,
      maxConcurrentSessions: 1,
      operationTimeoutMs: 50,
      maxAutoLockRenewalDurationInMs: 0,
      logger,
      onDelivery: (r) => delivered(r),
    });
    await h.start();
    try {
      assert.equal(await delivery, 'transient');
      // Whichever comes first: the session given back, or a hold begun (before: a hold of the full back-off).
      const first = await Promise.race([broker.released.then(() => 'released'), held.then(() => 'held')]);
      assert.equal(first, 'released');
      assert.equal(lines.filter((l) => /holding the session first/.test(l.msg)).length, 0);
      const said = lines.filter((l) => /released without a hold/.test(l.msg));
      assert.equal(said.length, 1);
      assert.equal(said[0]!.backoffMs, 240_000, 'the back-off it did not hold: 30 s doubled three times');
      assert.deepEqual(broker.completed, []);
      assert.deepEqual(broker.deadLettered, []);
    } finally {
      await h.stop();
    }
  });
});
