// boundedCall and BoundedLink: a call that never answers is given up after its bound with its signal aborted (so a
// client call that takes one drops its request), a link whose call timed out fails later calls at once, and one
// given a stop signal refuses calls once it aborts. The session delivery port uses them for every broker call of a
// delivery.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type {
  ServiceBusReceivedMessage,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import { BoundedLink, OperationTimeoutError, boundedCall } from './boundedCall.ts';
import { SessionStateCache, sessionDeliveryPort } from './sessionPort.ts';

/** A call that never answers and reports the signal it was given. */
function hanging(): { call: (signal: AbortSignal) => Promise<never>; signal: () => AbortSignal | undefined } {
  let seen: AbortSignal | undefined;
  return {
    call: (signal) => {
      seen = signal;
      return new Promise<never>(() => undefined);
    },
    signal: () => seen,
  };
}

describe('boundedCall', () => {
  test('answers with the call’s value', async () => {
    assert.equal(await boundedCall('adding', async () => 42, { timeoutMs: 60_000 }), 42);
  });

  test('a call that never answers is given up with an OperationTimeoutError, and its signal aborts', async () => {
    const h = hanging();
    const error = await boundedCall('completing', h.call, { timeoutMs: 20, consequence: 'left for redelivery' }).then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof OperationTimeoutError);
    assert.equal(error.operation, 'completing');
    assert.match(error.message, /completing did not answer within 20 ms .*; left for redelivery/);
    assert.equal(h.signal()?.aborted, true);
    assert.equal(h.signal()?.reason, error);
  });

  test('a value that comes after the bound goes to late', async () => {
    let answer!: (v: string) => void;
    const late = new Promise<string>((resolve) => {
      void boundedCall('accepting', () => new Promise<string>((r) => (answer = r)), {
        timeoutMs: 20,
        late: resolve,
      }).catch(() => answer('receiver'));
    });
    // Were `late` never called, the wait above would never end: this test fails with a message of its own instead
    // (a guard against hanging, not a measure: `late` is called as soon as the call answers).
    let guard: NodeJS.Timeout | undefined;
    const neverCalled = new Promise<never>((_, reject) => {
      guard = setTimeout(() => reject(new Error('late was never called')), 10_000);
    });
    try {
      assert.equal(await Promise.race([late, neverCalled]), 'receiver');
    } finally {
      clearTimeout(guard);
    }
  });

  test('a stop signal gives the wait up at once', async () => {
    const stop = new AbortController();
    const h = hanging();
    const pending = boundedCall('sending', h.call, { timeoutMs: 60_000, signal: stop.signal, stopMessage: 'stopping' });
    stop.abort();
    await assert.rejects(pending, /sending given up: stopping/);
    assert.equal(h.signal()?.aborted, true);
  });
});

describe('BoundedLink', () => {
  test('after one call times out, later calls fail at once without being made', async () => {
    const link = new BoundedLink(20);
    await assert.rejects(link.run('sending', hanging().call), OperationTimeoutError);
    assert.equal(link.lost, true);
    assert.equal(link.lostTo?.operation, 'sending');
    let called = false;
    const error = await link
      .run('completing', async () => {
        called = true;
      })
      .then(
        () => assert.fail('resolved'),
        (e: unknown) => e as Error,
      );
    assert.equal(called, false);
    assert.match(error.message, /completing not attempted: sending did not answer/);
    assert.ok(error.cause instanceof OperationTimeoutError);
  });

  test('a call that fails on its own does not make the link lost', async () => {
    const link = new BoundedLink(60_000);
    await assert.rejects(link.run('sending', () => Promise.reject(new Error('refused'))), /refused/);
    assert.equal(link.lost, false);
  });

  test('once its stop signal aborts, a call not yet started is refused without being made; the one running keeps going', async () => {
    const stop = new AbortController();
    const link = new BoundedLink(60_000, undefined, { stopSignal: stop.signal, attemptAfterLoss: () => true });
    let answer!: (value: string) => void;
    const running = link.run('sending', () => new Promise<string>((r) => (answer = r)));
    stop.abort(new Error('subscriber host stopping'));
    let called = false;
    await assert.rejects(
      link.run('dead-lettering', async () => {
        called = true;
      }),
      /dead-lettering not attempted: subscriber host stopping/,
    );
    assert.equal(called, false);
    answer('sent');
    assert.equal(await running, 'sent');
    assert.equal(link.lost, false, 'a refused call says nothing about the connection');
  });

  test("stopRefuses 'lostBeforeStop': refused only after a loss to a call started before the stop", async () => {
    const never = (signal: AbortSignal) =>
      new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error)));
    const options = { attemptAfterLoss: () => true, stopRefuses: 'lostBeforeStop' as const };
    // A healthy link during a stop: its calls are made.
    const healthyStop = new AbortController();
    healthyStop.abort(new Error('subscriber host stopping'));
    const healthy = new BoundedLink(1, undefined, { ...options, stopSignal: healthyStop.signal });
    assert.equal(await healthy.run('sending', async () => 'sent'), 'sent');
    // Lost to a call the stop itself started: later calls are still made (attemptAfterLoss).
    await assert.rejects(healthy.run('notifying', never), OperationTimeoutError);
    assert.equal(healthy.lostBeforeStop, false);
    assert.equal(await healthy.run('dead-lettering', async () => 'dead-lettered'), 'dead-lettered');
    // Lost to the call in flight when the stop came: the calls after it are refused without being made.
    const stop = new AbortController();
    const silent = new BoundedLink(1, undefined, { ...options, stopSignal: stop.signal });
    const inFlight = silent.run('sending', (signal) => {
      stop.abort(new Error('subscriber host stopping'));
      return never(signal);
    });
    await assert.rejects(inFlight, OperationTimeoutError);
    assert.equal(silent.lostBeforeStop, true);
    let called = false;
    await assert.rejects(
      silent.run('dead-lettering', async () => {
        called = true;
      }),
      /dead-lettering not attempted: subscriber host stopping/,
    );
    assert.equal(called, false);
  });
});

describe('sessionDeliveryPort with a BoundedLink', () => {
  test('a send that never answers is aborted after the bound, and the completion is not attempted', async () => {
    let sendSignal: AbortSignal | undefined;
    let completions = 0;
    const sender = {
      entityPath: 'crm',
      sendMessages: (_m: unknown, options?: { abortSignal?: AbortSignal }) => {
        sendSignal = options?.abortSignal;
        return new Promise<void>(() => undefined);
      },
    } as unknown as ServiceBusSender;
    const receiver = {
      sessionId: 'R-1',
      isClosed: false,
      completeMessage: async () => void completions++,
    } as unknown as ServiceBusSessionReceiver;
    const link = new BoundedLink(20, 'the delivery is left for redelivery');
    const port = sessionDeliveryPort(
      receiver,
      sender,
      new SessionStateCache(receiver),
      { messageId: 'm-1' } as unknown as ServiceBusReceivedMessage,
      { link },
    );
    await assert.rejects(
      port.send({ body: '{}', applicationProperties: {} } as unknown as Parameters<typeof port.send>[0]),
      OperationTimeoutError,
    );
    assert.equal(sendSignal?.aborted, true, 'the client’s send was aborted');
    await assert.rejects(port.complete(), /completing the message not attempted/);
    assert.equal(completions, 0);
    assert.equal(link.lost, true);
  });
});
