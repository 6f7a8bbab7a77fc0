// The dispatcher's catch ladder, pipeline and observers over the fake DeliveryPort (testing/fakeDeliveryPort.ts):
// pure logic; the broker paths are covered end to end in e2e/.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { emptySessionState, eventBody } from './contract/index.ts';
import { Dispatcher } from './dispatcher.ts';
import { MessageAlreadyDeadLetteredError, TransientError } from './errors.ts';
import { HandlerRegistry } from './handlers.ts';
import type { LifecycleObserver, PipelineBehavior } from './pipeline.ts';
import { RetryPolicies } from './retryPolicies.ts';
import { FakeDeliveryPort } from './testing/fakeDeliveryPort.ts';
import { pino } from 'pino';
import type { Logger } from 'pino';

const received = (props: Record<string, unknown> = {}) => ({
  messageId: 'm1',
  sessionId: 's1',
  body: eventBody('OrderPlaced', { n: 1 }),
  applicationProperties: {
    To: 'billing',
    From: 'shop',
    MessageType: 'EventRequest',
    EventId: 'e1',
    EventTypeId: 'OrderPlaced',
    ...props,
  },
});

function observerLog(): { events: string[]; observer: LifecycleObserver } {
  const events: string[] = [];
  return {
    events,
    observer: {
      onMessageReceived: () => void events.push('received'),
      onMessageCompleted: () => void events.push('completed'),
      onMessageFailed: (_m, e) => void events.push(`failed:${(e as Error)?.name}`),
      onMessageDeadLettered: (_m, r) => void events.push(`deadLettered:${r}`),
    },
  };
}

function dispatcher(
  handler: (e: unknown) => void,
  extra: { behaviors?: PipelineBehavior[]; observers?: LifecycleObserver[] } = {},
) {
  return new Dispatcher({
    endpointId: 'billing',
    handlers: new HandlerRegistry().on('OrderPlaced', handler),
    ...extra,
  });
}

const signal = new AbortController().signal;

describe('dispatcher ladder and observers', () => {
  test('success: Received then Completed; settlement in order', async () => {
    const port = new FakeDeliveryPort();
    const { events, observer } = observerLog();
    const result = await dispatcher(() => undefined, { observers: [observer] }).dispatch(
      received(),
      port,
      signal,
    );
    assert.equal(result, 'completed');
    assert.deepEqual(port.log, ['send ResolutionResponse', 'complete']);
    assert.deepEqual(events, ['received', 'completed']);
  });

  test('Retry-disposition failure: settled, and nothing fires after Received', async () => {
    const port = new FakeDeliveryPort();
    const { events, observer } = observerLog();
    const result = await dispatcher(
      () => {
        throw new Error('no');
      },
      { observers: [observer] },
    ).dispatch(received(), port, signal);
    assert.equal(result, 'handlerFailed');
    assert.deepEqual(port.log, ['send ErrorResponse', 'setState', 'complete']);
    assert.deepEqual(events, ['received']);
  });

  test('a behaviour that throws before next: handler not run, notification then dead-letter, Failed + DeadLettered', async () => {
    const port = new FakeDeliveryPort();
    let ran = false;
    const { events, observer } = observerLog();
    const boom: PipelineBehavior = async () => {
      throw new Error('service mode: endpoint paused');
    };
    const result = await dispatcher(() => void (ran = true), {
      behaviors: [boom],
      observers: [observer],
    }).dispatch(received(), port, signal);
    assert.equal(result, 'deadLettered');
    assert.equal(ran, false);
    assert.deepEqual(port.log, ['send ErrorResponse', 'deadLetter Failed to handle message.']);
    assert.deepEqual(events, ['received', 'failed:Error', 'deadLettered:Failed to handle message.']);
  });

  test('a behaviour that does not call next: a success without the handler, settled and answered', async () => {
    // Before: nothing was settled ('shortCircuited', an empty log); the host held the session and let the message
    // come back until its deliveries were spent, and the broker dead-lettered it silently with the row Pending.
    const port = new FakeDeliveryPort();
    const { events, observer } = observerLog();
    let ran = false;
    const noop: PipelineBehavior = async () => undefined;
    const result = await dispatcher(() => void (ran = true), { behaviors: [noop], observers: [observer] }).dispatch(
      received(),
      port,
      signal,
    );
    assert.equal(result, 'shortCircuited');
    assert.equal(ran, false);
    assert.deepEqual(port.log, ['send ResolutionResponse', 'complete']);
    assert.deepEqual(events, ['received', 'completed']);
  });

  test('a short-circuit on the last delivery is settled like any other, not left to the broker', async () => {
    const port = new FakeDeliveryPort();
    const noop: PipelineBehavior = async () => undefined;
    const result = await dispatcher(() => undefined, { behaviors: [noop] }).dispatch(
      { ...received(), deliveryCount: 9 },
      port,
      signal,
    );
    assert.equal(result, 'shortCircuited');
    assert.deepEqual(port.log, ['send ResolutionResponse', 'complete']);
  });

  test('a short-circuit does not overtake a block: the delivery is parked, the handler not run', async () => {
    const port = new FakeDeliveryPort();
    port.state = { ...emptySessionState(), BlockedByEventId: 'e0', BlockedByMessageId: 'm0' };
    let ran = false;
    const noop: PipelineBehavior = async () => undefined;
    const result = await dispatcher(() => void (ran = true), { behaviors: [noop] }).dispatch(
      received(),
      port,
      signal,
    );
    assert.equal(result, 'deferred');
    assert.equal(ran, false);
    assert.deepEqual(port.log, ['send DeferralResponse', 'send EventRequest', 'setState', 'complete']);
    assert.equal(port.sent[1]?.props.To, 'Deferred');
    assert.equal(port.state.NextDeferralSequence, 1);
  });

  test('a short-circuited RetryRequest of the blocker releases the session as a successful retry does', async () => {
    const port = new FakeDeliveryPort();
    port.state = { ...emptySessionState(), BlockedByEventId: 'e1', BlockedByMessageId: 'm0', NextDeferralSequence: 1, DeferredCount: 1 };
    const noop: PipelineBehavior = async () => undefined;
    const result = await dispatcher(() => assert.fail('not run'), { behaviors: [noop] }).dispatch(
      { ...received({ From: 'Retry', MessageType: 'RetryRequest', RetryCount: 1 }), messageId: 'retry-1' },
      port,
      signal,
    );
    assert.equal(result, 'shortCircuited');
    assert.deepEqual(port.log, ['setState', 'send ProcessDeferredRequest', 'send ResolutionResponse', 'complete']);
    assert.equal(port.state.BlockedByEventId, null);
  });

  test('a short-circuit whose settlement the broker refuses is transient, and on the last delivery takes the budget path', async () => {
    const noop: PipelineBehavior = async () => undefined;
    const d = dispatcher(() => undefined, { behaviors: [noop] });
    const port = new FakeDeliveryPort();
    port.failOn = 'complete';
    assert.equal(await d.dispatch(received(), port, signal), 'transient');
    const last = new FakeDeliveryPort();
    last.failOn = 'complete';
    assert.equal(await d.dispatch({ ...received(), deliveryCount: 9 }, last, signal), 'deadLettered');
    assert.deepEqual(last.log, ['send ResolutionResponse', 'send ErrorResponse', 'deadLetter MaxDeliveryCountExceeded']);
  });

  test('a behaviour that dead-letters and returns without throwing still gets the notification, no second dead-letter', async () => {
    const port = new FakeDeliveryPort();
    const { events, observer } = observerLog();
    const reject: PipelineBehavior = async (ctx) => {
      await ctx.deadLetter('Unknown tenant');
    };
    const result = await dispatcher(() => assert.fail('not run'), { behaviors: [reject], observers: [observer] }).dispatch(
      received(),
      port,
      signal,
    );
    assert.equal(result, 'middlewareDeadLettered');
    assert.deepEqual(port.log, ['deadLetter Unknown tenant', 'send ErrorResponse']);
    assert.deepEqual(events, ['received', 'failed:MessageAlreadyDeadLetteredError', 'deadLettered:Unknown tenant']);
  });

  test('a behaviour that swallows a handler failure makes it look completed (after the failure was settled)', async () => {
    const port = new FakeDeliveryPort();
    const { events, observer } = observerLog();
    const swallow: PipelineBehavior = async (_ctx, next) => {
      try {
        await next();
      } catch {
        // deliberately swallowed
      }
    };
    await dispatcher(
      () => {
        throw new Error('no');
      },
      { behaviors: [swallow], observers: [observer] },
    ).dispatch(received(), port, signal);
    assert.deepEqual(events, ['received', 'completed']);
    assert.deepEqual(port.log, ['send ErrorResponse', 'setState', 'complete']);
  });

  test('behaviours run outermost first', async () => {
    const order: string[] = [];
    const b =
      (name: string): PipelineBehavior =>
      async (_c, next) => {
        order.push(`${name}>`);
        await next();
        order.push(`<${name}`);
      };
    await dispatcher(() => void order.push('handler'), { behaviors: [b('a'), b('b')] }).dispatch(
      received(),
      new FakeDeliveryPort(),
      signal,
    );
    assert.deepEqual(order, ['a>', 'b>', 'handler', '<b', '<a']);
  });

  test('a behaviour that dead-letters itself: one dead-letter, then the notification', async () => {
    const port = new FakeDeliveryPort();
    const { events, observer } = observerLog();
    const reject: PipelineBehavior = async (ctx) => {
      await ctx.deadLetter('Tenant unknown');
      throw new MessageAlreadyDeadLetteredError('Tenant unknown');
    };
    const result = await dispatcher(() => undefined, { behaviors: [reject], observers: [observer] }).dispatch(
      received(),
      port,
      signal,
    );
    assert.equal(result, 'middlewareDeadLettered');
    assert.deepEqual(port.log, ['deadLetter Tenant unknown', 'send ErrorResponse']);
    assert.deepEqual(events, [
      'received',
      'failed:MessageAlreadyDeadLetteredError',
      'deadLettered:Tenant unknown',
    ]);
  });

  test('settlement runs to the end when the processor stops after the handler has an outcome', async () => {
    const port = new FakeDeliveryPort();
    const controller = new AbortController();
    const result = await dispatcher(() => {
      controller.abort();
      throw new Error('failed while stopping');
    }).dispatch(received(), port, controller.signal);
    assert.equal(result, 'handlerFailed');
    assert.deepEqual(port.log, ['send ErrorResponse', 'setState', 'complete']);
  });

  test('a handler that honours the stop signal leaves the message unsettled, with no observer after Received', async () => {
    const port = new FakeDeliveryPort();
    const controller = new AbortController();
    const { events, observer } = observerLog();
    const result = await dispatcher(
      () => {
        controller.abort();
        controller.signal.throwIfAborted();
      },
      { observers: [observer] },
    ).dispatch(received(), port, controller.signal);
    assert.equal(result, 'cancelled');
    assert.deepEqual(port.log, []);
    assert.deepEqual(events, ['received']);
  });

  test('a broker failure mid-settlement is transient: the rest is not attempted and the message is redelivered', async () => {
    const port = new FakeDeliveryPort();
    port.failOn = 'setState';
    const { events, observer } = observerLog();
    const result = await dispatcher(
      () => {
        throw new Error('no');
      },
      { observers: [observer] },
    ).dispatch(received(), port, signal);
    assert.equal(result, 'transient');
    assert.deepEqual(port.log, ['send ErrorResponse']);
    assert.deepEqual(events, ['received', 'failed:TransientError']);
  });

  test('a failing dead-letter notification does not stop the dead-letter', async () => {
    const port = new FakeDeliveryPort();
    port.failOn = 'send ErrorResponse';
    const result = await dispatcher(() => undefined).dispatch(
      received({ EventTypeId: 'OrderPlaced', MessageType: 'ErrorResponse' }),
      port,
      signal,
    );
    assert.equal(result, 'deadLettered');
    assert.deepEqual(port.log, ['deadLetter Failed to handle message.']);
  });

  test('a throwing observer is ignored', async () => {
    const port = new FakeDeliveryPort();
    const bad: LifecycleObserver = {
      onMessageReceived: () => {
        throw new Error('observer bug');
      },
    };
    assert.equal(
      await dispatcher(() => undefined, { observers: [bad] }).dispatch(received(), port, signal),
      'completed',
    );
  });

  test('a typed handler schema mismatch is permanent', async () => {
    const { z } = await import('zod');
    const port = new FakeDeliveryPort();
    const d = new Dispatcher({
      endpointId: 'billing',
      handlers: new HandlerRegistry().on('OrderPlaced', () => undefined, {
        schema: z.object({ orderId: z.string() }),
      }),
    });
    assert.equal(await d.dispatch(received(), port, signal), 'deadLettered');
    assert.match(
      port.log.at(-1)!,
      /^deadLetter Permanent failure: PermanentFailureError: OrderPlaced payload does not match its schema/,
    );
  });

  test('markPendingHandoff: last call wins; expectedBy relative to now', async () => {
    const port = new FakeDeliveryPort();
    const sentProps: Record<string, unknown>[] = [];
    port.send = async (m) => void sentProps.push(m.applicationProperties);
    const d = new Dispatcher({
      endpointId: 'billing',
      now: () => new Date('2026-12-02T10:00:00.000Z'),
      handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
        ctx.markPendingHandoff('first', 'job-1');
        ctx.markPendingHandoff('second', 'job-2', 60_000);
      }),
    });
    await d.dispatch(received(), port, signal);
    assert.equal(sentProps[0]!.MessageType, 'PendingHandoffResponse');
    assert.equal(sentProps[0]!.HandoffReason, 'second');
    assert.equal(sentProps[0]!.ExternalJobId, 'job-2');
    assert.equal(sentProps[0]!.ExpectedBy, '2026-12-02T10:01:00.000Z');
    assert.equal(port.state.BlockedByEventId, 'e1');
  });

  test('markPendingHandoff refuses an expectedBy outside the years 0000-9999 (the handler fails), as an invalid one', async () => {
    for (const expectedBy of [new Date(Date.UTC(10000, 0, 1)), new Date(Date.UTC(-1, 0, 1)), 10_000 * 365 * 86_400_000]) {
      const port = new FakeDeliveryPort();
      const sent: Array<Record<string, unknown>> = [];
      port.send = async (m) => void sent.push(m.applicationProperties);
      const d = new Dispatcher({
        endpointId: 'billing',
        now: () => new Date('2026-12-02T10:00:00.000Z'),
        handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
          ctx.markPendingHandoff('r', 'job-1', expectedBy);
        }),
      });
      assert.equal(await d.dispatch(received(), port, signal), 'handlerFailed', String(expectedBy));
      assert.equal(sent[0]!.MessageType, 'ErrorResponse');
      assert.equal(sent.some((p) => p.MessageType === 'PendingHandoffResponse'), false);
    }
  });

  test('markPendingHandoff then throw: the failure path wins', async () => {
    const port = new FakeDeliveryPort();
    const d = new Dispatcher({
      endpointId: 'billing',
      handlers: new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
        ctx.markPendingHandoff('r');
        throw new Error('then it broke');
      }),
    });
    assert.equal(await d.dispatch(received(), port, signal), 'handlerFailed');
    assert.deepEqual(port.log, ['send ErrorResponse', 'setState', 'complete']);
  });
});

describe('validation behaviour', () => {
  const signal = new AbortController().signal;
  test('an EventRequest without EventTypeId is dead-lettered with its stable reason', async () => {
    const port = new FakeDeliveryPort();
    const d = new Dispatcher({
      endpointId: 'billing',
      handlers: new HandlerRegistry().on('OrderPlaced', () => undefined),
    });
    assert.equal(
      await d.dispatch({ ...received({ EventTypeId: undefined }), body: '{}' }, port, signal),
      'middlewareDeadLettered',
    );
    assert.deepEqual(port.log, [
      'deadLetter Validation failed: EventTypeId is required for EventRequest',
      'send ErrorResponse',
    ]);
  });

  test('a command without EventTypeId passes validation; validation can be turned off', async () => {
    const port = new FakeDeliveryPort();
    port.state = { ...emptySessionState(), BlockedByEventId: 'e1' };
    const d = new Dispatcher({ endpointId: 'billing', handlers: new HandlerRegistry() });
    assert.equal(
      await d.dispatch(
        received({ MessageType: 'SkipRequest', From: 'Manager', EventTypeId: undefined }),
        port,
        signal,
      ),
      'completed',
    );
    const off = new Dispatcher({
      endpointId: 'billing',
      validation: false,
      handlers: new HandlerRegistry().on('OrderPlaced', () => undefined),
    });
    const port2 = new FakeDeliveryPort();
    assert.equal(await off.dispatch(received({ EventId: undefined }), port2, signal), 'completed');
    assert.deepEqual(port2.log, ['send ResolutionResponse', 'complete']);
  });
});

describe('a lock lost while the handler ran', () => {
  for (const [what, handler] of [
    ['success', () => undefined],
    [
      'failure',
      () => {
        throw new Error('boom');
      },
    ],
  ] as const) {
    test(`a ${what} settles nothing and is left for redelivery as transient`, async () => {
      const port = new FakeDeliveryPort();
      let lost = false;
      port.lockLost = () => lost;
      const { events, observer } = observerLog();
      const d = dispatcher(
        () => {
          lost = true; // the lock expires while the handler runs
          handler();
        },
        { observers: [observer] },
      );
      assert.equal(await d.dispatch(received(), port, signal), 'transient');
      assert.deepEqual(port.log, []);
      assert.deepEqual(events, ['received', 'failed:TransientError']);
    });
  }
});

describe("cancellation: only the processor's own signal", () => {
  // The processor aborts its signal with a reason of its own; a handler that honours it rejects with that reason
  // (fetch does) or with an AbortError whose cause is that reason (timers/promises, events do). Each handler
  // below is running when the host starts stopping.
  const host = () => {
    const c = new AbortController();
    return { signal: c.signal, stop: () => c.abort(new Error('subscriber host stopping')) };
  };

  test("a handler's own timeout abort while the host is stopping is a failure, settled in full", async () => {
    const port = new FakeDeliveryPort();
    const { signal, stop } = host();
    const { setTimeout: wait } = await import('node:timers/promises');
    const result = await dispatcher(async () => {
      stop();
      // The handler's own deadline on a slow call: rejects with an AbortError whose cause is a TimeoutError.
      await wait(60_000, undefined, { signal: AbortSignal.timeout(1) });
    }).dispatch(received(), port, signal);
    assert.equal(result, 'handlerFailed');
    assert.deepEqual(port.log, ['send ErrorResponse', 'setState', 'complete']);
  });

  test("a handler's own AbortController abort while the host is stopping is a failure, not a cancellation", async () => {
    const port = new FakeDeliveryPort();
    const { signal, stop } = host();
    const result = await dispatcher(() => {
      stop();
      const own = new AbortController();
      own.abort(); // reason: a DOMException named AbortError, unrelated to the processor's signal
      throw own.signal.reason;
    }).dispatch(received(), port, signal);
    assert.equal(result, 'handlerFailed');
    assert.deepEqual(port.log, ['send ErrorResponse', 'setState', 'complete']);
  });

  test("an AbortError carrying the processor's reason as its cause is the cancellation: nothing settled", async () => {
    const port = new FakeDeliveryPort();
    const { signal, stop } = host();
    const { setTimeout: wait } = await import('node:timers/promises');
    const result = await dispatcher(async () => {
      const waiting = wait(60_000, undefined, { signal }); // rejects with AbortError { cause: signal.reason }
      stop();
      await waiting;
    }).dispatch(received(), port, signal);
    assert.equal(result, 'cancelled');
    assert.deepEqual(port.log, []);
  });

  test('the processor’s reason itself (what fetch rejects with) is the cancellation', async () => {
    const port = new FakeDeliveryPort();
    const { signal, stop } = host();
    const result = await dispatcher(() => {
      stop();
      throw signal.reason;
    }).dispatch(received(), port, signal);
    assert.equal(result, 'cancelled');
    assert.deepEqual(port.log, []);
  });
});

describe('a transient outcome on the last delivery the budget allows', () => {
  // The subscription dead-letters on its 10th delivery (wire count 9); the SDK gets there first, with a
  // notification, so the Resolver records DeadLettered instead of leaving the event Pending.
  type Build = (port: FakeDeliveryPort, observers: LifecycleObserver[]) => Dispatcher;
  const causes: Array<[string, Build]> = [
    [
      'a TransientError from the handler',
      (_port, observers) =>
        dispatcher(
          () => {
            throw new TransientError('downstream socket reset');
          },
          { observers },
        ),
    ],
    [
      'an inbox outage',
      (_port, observers) =>
        new Dispatcher({
          endpointId: 'billing',
          handlers: new HandlerRegistry().on('OrderPlaced', () => undefined),
          observers,
          inbox: {
            has: async () => {
              throw new Error('inbox store unavailable');
            },
            add: async () => undefined,
          },
        }),
    ],
    [
      'a failed settlement step',
      (port, observers) => {
        port.failOn = 'complete';
        return dispatcher(() => undefined, { observers });
      },
    ],
    [
      'an unreadable session state',
      (port, observers) => {
        port.readState = async () => {
          throw new Error('session state read timed out');
        };
        return dispatcher(() => undefined, { observers });
      },
    ],
  ];
  for (const [what, build] of causes) {
    test(`${what}: notification, then dead-letter with the reason; earlier deliveries settle nothing`, async () => {
      const early = new FakeDeliveryPort();
      assert.equal(await build(early, []).dispatch(received(), early, signal), 'transient');
      assert.ok(
        !early.log.some((x) => x.startsWith('deadLetter')),
        'the first delivery is left for redelivery',
      );

      const port = new FakeDeliveryPort();
      const { events, observer } = observerLog();
      const result = await build(port, [observer]).dispatch(
        { ...received(), deliveryCount: 9 },
        port,
        signal,
      );
      assert.equal(result, 'deadLettered');
      assert.deepEqual(port.log.slice(-2), ['send ErrorResponse', 'deadLetter MaxDeliveryCountExceeded']);
      const note = port.sent.at(-1)!;
      assert.equal(note.props.DeadLetterReason, 'MaxDeliveryCountExceeded');
      assert.match(String(note.props.DeadLetterErrorDescription), /^Delivery 10 of 10 ended transient: /);
      assert.equal(events[0], 'received');
      assert.equal(events.at(-1), 'deadLettered:MaxDeliveryCountExceeded');
    });
  }

  test('a host configured for a larger budget leaves the 10th delivery to redelivery', async () => {
    const port = new FakeDeliveryPort();
    const d = new Dispatcher({
      endpointId: 'billing',
      maxDeliveryCount: 20,
      handlers: new HandlerRegistry().on('OrderPlaced', () => {
        throw new TransientError('x');
      }),
    });
    assert.equal(await d.dispatch({ ...received(), deliveryCount: 9 }, port, signal), 'transient');
    assert.deepEqual(port.log, []);
  });
});

describe('a release whose settlement is interrupted after the state write', () => {
  // The session is blocked by e1 with two messages parked behind it.
  const blockedPort = () => {
    const port = new FakeDeliveryPort();
    port.state = {
      ...emptySessionState(),
      BlockedByEventId: 'e1',
      BlockedByMessageId: 'm0',
      NextDeferralSequence: 2,
      DeferredCount: 2,
    };
    return port;
  };
  const retry = {
    ...received({ From: 'Retry', MessageType: 'RetryRequest', RetryCount: 1 }),
    messageId: 'retry-1',
    deliveryCount: 0,
  };

  test('a successful retry whose answer was refused finishes the replay request and the answer on its redelivery', async () => {
    let runs = 0;
    const d = dispatcher(() => void runs++);
    const port = blockedPort();
    port.failOn = 'send ResolutionResponse';
    assert.equal(await d.dispatch(retry, port, signal), 'transient');
    assert.deepEqual(port.log, ['setState', 'send ProcessDeferredRequest']);
    assert.equal(port.state.BlockedByEventId, null);

    port.log = [];
    port.failOn = undefined;
    assert.equal(await d.dispatch({ ...retry, deliveryCount: 1 }, port, signal), 'completed');
    // Before: completed as a late retry with no answer (the row stayed Pending) and no replay request.
    assert.deepEqual(port.log, ['send ProcessDeferredRequest', 'send ResolutionResponse', 'complete']);
    // The handler ran once: the release recorded its answer, so a second run (which could fail or mark a handoff
    // over the row the Resolver has closed) is not needed to finish it.
    assert.equal(runs, 1, 'the redelivered releasing retry does not run the handler again');
  });

  test('a skip whose completion was refused answers again with the same MessageIds on its redelivery', async () => {
    const d = dispatcher(() => undefined);
    const port = blockedPort();
    const skip = {
      ...received({ From: 'Manager', MessageType: 'SkipRequest' }),
      messageId: 'skip-1',
      deliveryCount: 0,
    };
    port.failOn = 'complete';
    assert.equal(await d.dispatch(skip, port, signal), 'transient');
    const first = port.sentIds();
    assert.deepEqual(
      first.map((x) => x.split(' ')[0]),
      ['ProcessDeferredRequest', 'SkipResponse'],
    );

    port.log = [];
    port.sent = [];
    port.failOn = undefined;
    assert.equal(await d.dispatch({ ...skip, deliveryCount: 1 }, port, signal), 'completed');
    assert.deepEqual(port.log, ['send ProcessDeferredRequest', 'send SkipResponse', 'complete']);
    assert.deepEqual(
      port.sentIds(),
      first,
      'the Resolver and the deferred processor see the same messages again',
    );
  });
});

describe('a step that fails after the completion (the RetryRequest schedule)', () => {
  // The specification's Retry order: ErrorResponse, block, complete, then schedule the RetryRequest. A schedule that
  // fails then has nothing to redeliver: before, it took the transient path (onMessageFailed, a hold, and on the last
  // delivery a MaxDeliveryCountExceeded notification and a dead-letter of the completed message).
  const retrying = (observers: LifecycleObserver[], logger?: Logger) =>
    new Dispatcher({
      endpointId: 'billing',
      handlers: new HandlerRegistry().on('OrderPlaced', () => {
        throw new Error('downstream 503');
      }),
      retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 3, baseDelayMs: 1000 }),
      observers,
      ...(logger ? { logger } : {}),
    });

  for (const deliveryCount of [0, 9]) {
    test(`an EventRequest (delivery ${deliveryCount + 1} of 10): the failure stays Failed and blocked, nothing transient, no dead-letter`, async () => {
      const port = new FakeDeliveryPort();
      port.failOn = 'schedule';
      const { events, observer } = observerLog();
      const lines: Array<{ level: number; msg: string }> = [];
      const logger = pino(
        { level: 'debug' },
        { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) },
      );
      const result = await retrying([observer], logger).dispatch(
        { ...received(), deliveryCount },
        port,
        signal,
      );
      assert.equal(result, 'handlerFailed');
      assert.deepEqual(port.log, ['send ErrorResponse', 'setState', 'complete']);
      assert.equal(port.state.BlockedByEventId, 'e1', 'the session stays blocked for an operator');
      assert.deepEqual(events, ['received'], 'no onMessageFailed: nothing is left for redelivery');
      assert.ok(
        lines.some((l) => l.level === 40 && /RetryRequest was not scheduled/.test(l.msg)),
        'the warning says the retry was not scheduled',
      );
      assert.ok(!lines.some((l) => /left for redelivery/.test(l.msg)));
    });
  }

  test('a RetryRequest that fails again (last delivery): settled as a failed retry, not dead-lettered', async () => {
    const port = new FakeDeliveryPort();
    port.state = { ...emptySessionState(), BlockedByEventId: 'e1', BlockedByMessageId: 'm0' };
    port.failOn = 'schedule';
    const { events, observer } = observerLog();
    const retry = {
      ...received({ From: 'Retry', MessageType: 'RetryRequest', RetryCount: 1 }),
      messageId: 'retry-1',
      deliveryCount: 9,
    };
    assert.equal(await retrying([observer]).dispatch(retry, port, signal), 'handlerFailed');
    assert.deepEqual(port.log, ['send ErrorResponse', 'complete']);
    assert.deepEqual(events, ['received']);
  });
});

describe('a replayed copy that is dead-lettered: the dead-letter before the replay cursor', () => {
  // Sequence 0 of a one-copy pass up to 1, with a third message parked since (NextDeferralSequence 2).
  const replayingPort = () => {
    const port = new FakeDeliveryPort();
    port.state = { ...emptySessionState(), NextDeferralSequence: 2, NextReplaySequence: 0, DeferredCount: 2 };
    return port;
  };
  const copy = (deliveryCount: number, body?: string) => ({
    ...received({ ReplaySequence: 0, ReplayUntil: 1, ReplayPassEnd: true }),
    deliveryCount,
    ...(body !== undefined ? { body } : {}),
  });
  const unreadable = JSON.stringify({
    EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{not json' },
    ErrorContent: null,
  });
  const throwing: PipelineBehavior = async () => {
    throw new Error('tenant lookup failed');
  };
  const cases: Array<[string, () => Dispatcher, string | undefined, string]> = [
    [
      'a permanent failure (unreadable payload)',
      () => dispatcher(() => undefined),
      unreadable,
      'deadLetter Permanent failure',
    ],
    [
      'a behaviour that throws',
      () => dispatcher(() => undefined, { behaviors: [throwing] }),
      undefined,
      'deadLetter Failed to handle message.',
    ],
  ];
  for (const [what, build, body, deadLetter] of cases) {
    test(`${what}: a dead-letter that fails leaves the cursor, so the redelivery dead-letters it again`, async () => {
      const d = build();
      const port = replayingPort();
      port.failOn = 'deadLetter';
      assert.equal(await d.dispatch(copy(0, body), port, signal), 'transient');
      assert.equal(
        port.state.NextReplaySequence,
        0,
        'the cursor is not advanced past a copy still on the queue',
      );
      assert.deepEqual(port.log, ['send ErrorResponse'], 'only the notification got out');

      port.failOn = undefined;
      port.log = [];
      // Before: the cursor had been written first, and the redelivery was completed as "already handled": the
      // Resolver said DeadLettered, the dead-letter queue was empty and the payload gone.
      assert.equal(await d.dispatch(copy(1, body), port, signal), 'deadLettered');
      assert.ok(
        port.log.some((x) => x.startsWith(deadLetter)),
        `dead-lettered on the redelivery: ${port.log.join(', ')}`,
      );
      assert.ok(!port.log.includes('complete'));
      assert.equal(port.state.NextReplaySequence, 1, 'then the cursor moves on');
      assert.ok(port.log.includes('send ProcessDeferredRequest'), 'and the next pass is asked for');
    });
  }

  test('a cursor write that fails after the dead-letter: not transient; the session goes on past the sequence', async () => {
    const port = replayingPort();
    port.failOn = 'setState';
    const { events, observer } = observerLog();
    const d = dispatcher(() => undefined, { observers: [observer] });
    assert.equal(await d.dispatch(copy(0, unreadable), port, signal), 'deadLettered');
    assert.match(port.log.at(-1)!, /^deadLetter Permanent failure/);
    assert.deepEqual(
      events.map((e) => e.split(':')[0]),
      ['received', 'failed', 'deadLettered'],
      'reported as dead-lettered, not as a transient failure',
    );
    assert.equal(events[1], 'failed:PayloadDeserializationError');
    assert.equal(port.state.NextReplaySequence, 0, 'the cursor stays behind');
    port.failOn = undefined;

    // A pass that finds nothing below its bound: its marker skips sequence 0 with a ReplayGap notice.
    const marker = (until: number) => ({
      ...received({
        MessageType: 'ProcessDeferredRequest',
        From: undefined,
        EventTypeId: undefined,
        ReplayUntil: until,
        ReplayPassEnd: true,
      }),
      messageId: `marker-${until}`,
      body: JSON.stringify({}),
    });
    const gapPort = replayingPort();
    gapPort.state = { ...port.state };
    assert.equal(await d.dispatch(marker(1), gapPort, signal), 'completed');
    assert.equal(gapPort.sent[0]!.props.DeadLetterReason, 'ReplayGap');
    assert.equal(gapPort.state.NextReplaySequence, 1);

    // The next pass's copy (sequence 1, parked meanwhile) moves the cursor past it as well, with a ReplayGap notice
    // for sequence 0: this side cannot tell a cursor write lost after a dead-letter from a parked copy lost on the
    // way (replayGaps.test.ts); the Resolver has both the dead-letter's notification and the notice, in history.
    port.log = [];
    port.sent = [];
    const next = { ...received({ ReplaySequence: 1, ReplayUntil: 2, ReplayPassEnd: true }), messageId: 'm2' };
    assert.equal(
      await d.dispatch(
        { ...next, applicationProperties: { ...next.applicationProperties, EventId: 'e2' } },
        port,
        signal,
      ),
      'completed',
    );
    assert.equal(port.state.NextReplaySequence, 2, 'no longer draining');
    assert.deepEqual(
      port.sent.map((p) => p.props.DeadLetterReason).filter((r) => r !== undefined),
      ['ReplayGap'],
    );
  });
});

describe('a behaviour that dead-letters the message and returns without throwing', () => {
  // Before: nothing told the Resolver (its row stayed Pending while the message sat in the DLQ), observers heard
  // "completed", and a behaviour that had not called next() was reported shortCircuited, so the host held the
  // session for a lock duration for a message that was settled.
  const deadLetterAndReturn: PipelineBehavior = async (ctx) => {
    await ctx.deadLetter('Unknown tenant', 'tenant 42 is not configured');
  };

  test('the Resolver is notified with the reason and description, as when it throws; no hold', async () => {
    const port = new FakeDeliveryPort();
    const { events, observer } = observerLog();
    let ran = false;
    const result = await dispatcher(() => void (ran = true), {
      behaviors: [deadLetterAndReturn],
      observers: [observer],
    }).dispatch(received(), port, signal);
    assert.equal(result, 'middlewareDeadLettered', 'settled: the host does not hold the session');
    assert.equal(ran, false);
    assert.deepEqual(port.log, ['deadLetter Unknown tenant', 'send ErrorResponse']);
    assert.equal(port.sent[0]!.props.DeadLetterReason, 'Unknown tenant');
    assert.equal(port.sent[0]!.props.DeadLetterErrorDescription, 'tenant 42 is not configured');
    assert.deepEqual(events, [
      'received',
      'failed:MessageAlreadyDeadLetteredError',
      'deadLettered:Unknown tenant',
    ]);
  });

  test('a replayed copy still moves the replay cursor and ends its pass', async () => {
    const port = new FakeDeliveryPort();
    port.state = { ...emptySessionState(), NextDeferralSequence: 2, NextReplaySequence: 0, DeferredCount: 2 };
    const result = await dispatcher(() => undefined, { behaviors: [deadLetterAndReturn] }).dispatch(
      received({ ReplaySequence: 0, ReplayUntil: 1, ReplayPassEnd: true }),
      port,
      signal,
    );
    assert.equal(result, 'middlewareDeadLettered');
    assert.deepEqual(port.log, [
      'deadLetter Unknown tenant',
      'send ErrorResponse',
      'setState',
      'send ProcessDeferredRequest',
    ]);
    assert.equal(port.state.NextReplaySequence, 1);
  });

  test('a dead-letter the broker refused, caught by the behaviour: transient, not completed as a short-circuit', async () => {
    // Before: the behaviour's return was settled as a short-circuit success - a ResolutionResponse and the
    // completion - so a message the behaviour meant to refuse was gone, recorded Completed.
    const catchesRefusal: PipelineBehavior = async (ctx) => {
      try {
        await ctx.deadLetter('Unknown tenant', 'tenant 42 is not configured');
      } catch {
        // the behaviour logs and returns
      }
    };
    const first = new FakeDeliveryPort();
    first.failOn = 'deadLetter';
    const result = await dispatcher(() => undefined, { behaviors: [catchesRefusal] }).dispatch(received(), first, signal);
    assert.equal(result, 'transient');
    assert.deepEqual(first.log, [], 'nothing sent, nothing completed: the message comes back');
    // On the last delivery the budget path dead-letters it and tells the Resolver.
    const last = new FakeDeliveryPort();
    last.failOn = 'deadLetter Unknown';
    const final = await dispatcher(() => undefined, { behaviors: [catchesRefusal] }).dispatch(
      { ...received(), deliveryCount: 9 },
      last,
      signal,
    );
    assert.equal(final, 'deadLettered');
    assert.equal(last.log.includes('complete'), false);
    assert.equal(last.log.some((l) => l.startsWith('deadLetter MaxDeliveryCountExceeded')), true, last.log.join(', '));
  });
});

describe('a behaviour that throws after the terminal step settled the message', () => {
  // Before: the error went through the catch ladder as if nothing were settled - a "Failed to handle message."
  // notification to the Resolver (its Completed/Failed/Deferred row overwritten as DeadLettered) and a dead-letter
  // of a message the broker had already completed (refused, so the delivery even ended transient).
  const throwsAfterNext: PipelineBehavior = async (_ctx, next) => {
    let settled: unknown;
    try {
      await next();
    } catch (error) {
      settled = error;
    }
    throw new Error('audit write failed', { cause: settled });
  };
  const unreadable = JSON.stringify({
    EventContent: { EventTypeId: 'OrderPlaced', EventJson: '{not json' },
    ErrorContent: null,
  });
  const cases: Array<[string, () => (e: unknown) => void, (port: FakeDeliveryPort) => void, string | undefined]> = [
    ['completed (a success)', () => () => undefined, () => undefined, undefined],
    [
      'handlerFailed (a Retry-disposition failure, blocked)',
      () => () => {
        throw new Error('downstream 503');
      },
      () => undefined,
      undefined,
    ],
    [
      'deferred (parked behind a block)',
      () => () => undefined,
      (port) => {
        port.state = { ...emptySessionState(), BlockedByEventId: 'e0', BlockedByMessageId: 'm0' };
      },
      undefined,
    ],
    ['deadLettered (a permanent failure)', () => () => undefined, () => undefined, unreadable],
  ];
  for (const [what, handler, prepare, body] of cases) {
    for (const deliveryCount of [0, 9]) {
      test(`${what}, delivery ${deliveryCount + 1} of 10: the settlement stands; the error is logged and observed, nothing contradicts it`, async () => {
        const message = { ...received(), deliveryCount, ...(body !== undefined ? { body } : {}) };
        // The same delivery without the behaviour: what the settlement is.
        const baseline = new FakeDeliveryPort();
        prepare(baseline);
        const expected = await dispatcher(handler()).dispatch(message, baseline, signal);
        assert.notEqual(expected, 'transient');

        const port = new FakeDeliveryPort();
        prepare(port);
        port.failOn = 'deadLetter Failed to handle message.';
        const { events, observer } = observerLog();
        const lines: Array<{ level: number; msg: string }> = [];
        const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
        const d = new Dispatcher({
          endpointId: 'billing',
          handlers: new HandlerRegistry().on('OrderPlaced', handler()),
          behaviors: [throwsAfterNext],
          observers: [observer],
          logger,
        });
        const { result, error } = await d.dispatchDetailed(message, port, signal);
        assert.equal(result, expected, 'the delivery keeps its settlement (not transient, not dead-lettered anew)');
        assert.deepEqual(port.log, baseline.log, 'no notification or dead-letter after the settlement');
        assert.deepEqual(port.sent.length, baseline.sent.length);
        assert.ok(error !== undefined);
        assert.ok(events.includes('failed:Error'), `the behaviour's error is observed: ${events.join(', ')}`);
        assert.ok(!events.includes('deadLettered:Failed to handle message.'));
        assert.ok(
          lines.some((l) => l.level === 40 && /behaviour threw after the message was settled/.test(l.msg)),
          'and logged as what it is',
        );
      });
    }
  }
});

describe('the last-delivery dead-letter of a replayed copy: the dead-letter before the replay cursor', () => {
  // The SDK's budget may end before the subscription's (maxDeliveryCount below it): a dead-letter that fails then
  // leaves the message to come back. Before, the cursor had been written first, and the redelivery was completed as
  // "already handled": the Resolver said DeadLettered, the dead-letter queue was empty and the payload gone.
  test('a dead-letter that fails leaves the cursor, so the redelivery dead-letters it again', async () => {
    const port = new FakeDeliveryPort();
    port.state = { ...emptySessionState(), NextDeferralSequence: 2, NextReplaySequence: 0, DeferredCount: 2 };
    const d = new Dispatcher({
      endpointId: 'billing',
      maxDeliveryCount: 3,
      handlers: new HandlerRegistry().on('OrderPlaced', () => {
        throw new TransientError('downstream socket reset');
      }),
    });
    const copy = (deliveryCount: number) => ({
      ...received({ ReplaySequence: 0, ReplayUntil: 1, ReplayPassEnd: true }),
      deliveryCount,
    });
    port.failOn = 'deadLetter';
    assert.equal(await d.dispatch(copy(2), port, signal), 'transient');
    assert.equal(port.state.NextReplaySequence, 0, 'the cursor is not advanced past a copy still on the queue');
    assert.deepEqual(port.log, ['send ErrorResponse'], 'only the notification got out');

    port.failOn = undefined;
    port.log = [];
    // Still on the last delivery the SDK allows (its own count ended): the transient handler again.
    assert.equal(await d.dispatch(copy(3), port, signal), 'deadLettered');
    assert.deepEqual(port.log.slice(0, 2), ['send ErrorResponse', 'deadLetter MaxDeliveryCountExceeded']);
    assert.ok(!port.log.includes('complete'));
    assert.equal(port.state.NextReplaySequence, 1, 'then the cursor moves on');
    assert.ok(port.log.includes('send ProcessDeferredRequest'), 'and the next pass is asked for');
  });
});

describe('a cancelled delivery on the last delivery the budget allows', () => {
  // A cancelled delivery is left unsettled; releasing its session counts the delivery (as an abandon or a lock
  // expiry would), so on the last one the broker dead-letters it silently (MaxDeliveryCountExceeded) and the
  // Resolver row stays Pending. Before, nothing was sent and nothing dead-lettered.
  const stopping = () => {
    const c = new AbortController();
    c.abort(new Error('subscriber host stopping'));
    return c;
  };
  type Build = (c: AbortController, observers: LifecycleObserver[]) => Dispatcher;
  const cases: Array<[string, Build, AbortController | undefined]> = [
    [
      'a handler that honours the stop signal',
      (c, observers) =>
        dispatcher(
          () => {
            c.abort(new Error('endpoint circuit opened'));
            c.signal.throwIfAborted();
          },
          { observers },
        ),
      undefined,
    ],
    ['a delivery that starts after the stop', (_c, observers) => dispatcher(() => undefined, { observers }), stopping()],
    [
      'a behaviour that throws the cancellation',
      (c, observers) =>
        dispatcher(() => undefined, {
          observers,
          behaviors: [
            async () => {
              c.signal.throwIfAborted();
            },
          ],
        }),
      stopping(),
    ],
  ];
  for (const [what, build, given] of cases) {
    test(`${what}: earlier deliveries settle nothing; the last takes the budget path`, async () => {
      const early = new FakeDeliveryPort();
      const first = given ?? new AbortController();
      assert.equal(await build(first, []).dispatch(received(), early, first.signal), 'cancelled');
      assert.deepEqual(early.log, [], 'left unsettled: it comes back');

      const c = given ?? new AbortController();
      const port = new FakeDeliveryPort();
      const { events, observer } = observerLog();
      const result = await build(c, [observer]).dispatch({ ...received(), deliveryCount: 9 }, port, c.signal);
      assert.equal(result, 'deadLettered');
      assert.deepEqual(port.log, ['send ErrorResponse', 'deadLetter MaxDeliveryCountExceeded']);
      const note = port.sent.at(-1)!;
      assert.equal(note.props.DeadLetterReason, 'MaxDeliveryCountExceeded');
      assert.match(
        String(note.props.DeadLetterErrorDescription),
        /^Delivery 10 of 10 was cancelled: (subscriber host stopping|endpoint circuit opened)$/,
      );
      assert.equal(events.at(-1), 'deadLettered:MaxDeliveryCountExceeded');
    });
  }
});

describe('a behaviour that dead-letters the message and throws MessageAlreadyDeadLetteredError', () => {
  test('the notification carries the reason and description the behaviour dead-lettered with', async () => {
    // Before: the error's message was both the reason and the description (the returning path had been fixed).
    const port = new FakeDeliveryPort();
    const reject: PipelineBehavior = async (ctx) => {
      await ctx.deadLetter('Unknown tenant', 'tenant 42 is not configured');
      throw new MessageAlreadyDeadLetteredError('tenant check rejected the message');
    };
    const result = await dispatcher(() => undefined, { behaviors: [reject] }).dispatch(received(), port, signal);
    assert.equal(result, 'middlewareDeadLettered');
    assert.deepEqual(port.log, ['deadLetter Unknown tenant', 'send ErrorResponse']);
    assert.equal(port.sent[0]!.props.DeadLetterReason, 'Unknown tenant');
    assert.equal(port.sent[0]!.props.DeadLetterErrorDescription, 'tenant 42 is not configured');
  });
});
