// The opt-in circuit breaker on the emulator: retry-disposition failures open it, an open circuit leaves messages
// on the subscription, the half-open probe takes exactly one delivery.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from '@nimbus/sdk';
import { HandlerRegistry } from '@nimbus/sdk';
import { eventually, story, storyOf, withHarness } from './harness.ts';

describe('circuit breaker', () => {
  test('opens after failures, holds new work back, probes once when half-open', async () => {
    await withHarness(async (h) => {
      const timeline: string[] = [];
      const breaker = new CircuitBreaker({ failureThreshold: 2, windowMs: 60_000, openDurationMs: 1500 });
      h.host({
        endpointId: 'crm',
        circuitBreaker: breaker,
        observers: [{ onCircuitStateChanged: (_e, from, to) => void timeline.push(`${from}->${to}`) }],
        onDelivery: (result, sessionId) => void timeline.push(`${sessionId}:${result}`),
        handlers: new HandlerRegistry().on('CustomerUpdated', () => {
          throw new Error('partner down');
        }),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'CB-1', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'CB-2', n: 2 });
      await eventually(() => (timeline.includes('Closed->Open') ? true : undefined), 'the circuit to open');
      await pub.publish('CustomerUpdated', { customerId: 'CB-3', n: 3 });
      const probe = await h.resolver('CB-3', 2, 20_000);
      assert.deepEqual(storyOf(probe).responses, ['ErrorResponse:E3']);
      await eventually(
        () => (timeline.includes('HalfOpen->Open') ? true : undefined),
        'the failed probe to reopen the circuit',
      );
      const deliveries = timeline.filter((x) => x.includes(':'));
      assert.deepEqual(deliveries.slice(0, 2).sort(), ['CB-1:handlerFailed', 'CB-2:handlerFailed']);
      // CB-3 was published while open and handled only as the half-open probe.
      const i = (x: string) => timeline.indexOf(x);
      assert.ok(
        i('Open->HalfOpen') >= 0 && i('Open->HalfOpen') < i('CB-3:handlerFailed'),
        timeline.join(', '),
      );
      assert.ok(i('CB-3:handlerFailed') < i('HalfOpen->Open'), timeline.join(', '));
    });
  });

  test('opening cancels the handlers in flight in every session; a cancelled delivery is redelivered, not failed', async () => {
    await withHarness(async (h) => {
      const timeline: string[] = [];
      const breaker = new CircuitBreaker({ failureThreshold: 1, windowMs: 60_000, openDurationMs: 1000 });
      let healthyStarted = false;
      const healthySignals: string[] = [];
      h.host({
        endpointId: 'crm',
        circuitBreaker: breaker,
        observers: [{ onCircuitStateChanged: (_e, from, to) => void timeline.push(`${from}->${to}`) }],
        onDelivery: (result, sessionId) => void timeline.push(`${sessionId}:${result}`),
        handlers: new HandlerRegistry().on<{ customerId: string }>('CustomerUpdated', async (e, ctx) => {
          if (e.customerId === 'CB-FAIL') throw new Error('partner down');
          if (healthySignals.length > 0) return; // the redelivery after the pause: healthy again
          healthyStarted = true;
          // A healthy, slow handler that honours ctx.signal (it would finish on its own after 15 s).
          await new Promise<void>((resolve, reject) => {
            const done = setTimeout(resolve, 15_000);
            ctx.signal.addEventListener(
              'abort',
              () => {
                clearTimeout(done);
                healthySignals.push('aborted');
                reject(ctx.signal.reason);
              },
              { once: true },
            );
          });
          healthySignals.push('finished');
        }),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'CB-SLOW', n: 1 });
      await eventually(() => (healthyStarted ? true : undefined), 'the slow handler to start');
      await pub.publish('CustomerUpdated', { customerId: 'CB-FAIL', n: 2 });
      await eventually(() => (timeline.includes('Closed->Open') ? true : undefined), 'the circuit to open');
      // The slow session's answer: the redelivery's success, with no ErrorResponse before it.
      const slow = await h.resolver('CB-SLOW', 2, 20_000);
      assert.deepEqual(story(slow), ['EventRequest:E1', 'ResolutionResponse:E1']);
      assert.deepEqual(healthySignals, ['aborted'], 'the in-flight handler saw its signal abort');
      const i = (x: string) => timeline.indexOf(x);
      assert.ok(i('CB-SLOW:cancelled') > i('Closed->Open'), timeline.join(', '));
      assert.ok(i('CB-SLOW:completed') > i('Open->HalfOpen'), timeline.join(', '));
    });
  });
});
