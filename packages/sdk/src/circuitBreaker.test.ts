import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from './circuitBreaker.ts';

class Throttled extends Error {}

describe('circuit breaker', () => {
  function breaker() {
    let t = 0;
    const transitions: string[] = [];
    const b = new CircuitBreaker({
      failureThreshold: 3,
      windowMs: 1000,
      openDurationMs: 500,
      exclude: [Throttled],
      now: () => t,
    });
    b.onStateChange((from, to) => transitions.push(`${from}->${to}`));
    return { b, transitions, advance: (ms: number) => (t += ms) };
  }

  test('opens after the threshold within the window; failures outside the window do not count', () => {
    const { b, transitions, advance } = breaker();
    b.record('failure');
    advance(1200);
    b.record('failure');
    b.record('failure');
    assert.equal(b.state, 'Closed');
    b.record('failure');
    assert.equal(b.state, 'Open');
    assert.equal(b.tryAcquire(), false);
    assert.deepEqual(transitions, ['Closed->Open']);
  });

  test('excluded error types and successes do not count', () => {
    const { b } = breaker();
    for (let i = 0; i < 5; i++) b.record('failure', new Error('wrapped', { cause: new Throttled() }));
    b.record('success');
    assert.equal(b.state, 'Closed');
  });

  test('half-opens after the pause with a single probe; success closes, failure reopens', () => {
    const { b, transitions, advance } = breaker();
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(499);
    assert.equal(b.state, 'Open');
    advance(1);
    assert.equal(b.state, 'HalfOpen');
    assert.equal(b.tryAcquire(), true);
    assert.equal(b.tryAcquire(), false, 'one probe at a time');
    b.record('failure');
    assert.equal(b.state, 'Open');
    advance(500);
    assert.equal(b.tryAcquire(), true);
    b.record('success');
    assert.equal(b.state, 'Closed');
    assert.deepEqual(transitions, [
      'Closed->Open',
      'Open->HalfOpen',
      'HalfOpen->Open',
      'Open->HalfOpen',
      'HalfOpen->Closed',
    ]);
  });
});
