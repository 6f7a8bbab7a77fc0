import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backoffDelayMs,
  delayWithHintMs,
  InvalidRetryPolicyError,
  retryDelayMs,
  retryPolicy,
} from './retryPolicy.ts';
import { RetryPolicies } from './retryPolicies.ts';

const seq = (p: ReturnType<typeof retryPolicy>, n: number) =>
  Array.from({ length: n }, (_, a) => retryDelayMs(p, a));

describe('backoff strategies', () => {
  test('Fixed, Linear and Exponential with a 5 s base', () => {
    assert.deepEqual(seq(retryPolicy({ strategy: 'Fixed', baseDelayMs: 5000 }), 4), [5000, 5000, 5000, 5000]);
    assert.deepEqual(
      seq(retryPolicy({ strategy: 'Linear', baseDelayMs: 5000 }), 4),
      [5000, 10000, 15000, 20000],
    );
    assert.deepEqual(
      seq(retryPolicy({ strategy: 'Exponential', baseDelayMs: 5000 }), 4),
      [5000, 10000, 20000, 40000],
    );
  });

  test('MaxDelay caps the backoff', () => {
    const p = retryPolicy({ strategy: 'Exponential', baseDelayMs: 5000, maxDelayMs: 12000 });
    assert.deepEqual(seq(p, 4), [5000, 10000, 12000, 12000]);
  });

  test('defaults: no retries, Fixed, one minute, no jitter', () => {
    const p = retryPolicy({});
    assert.equal(p.maxRetries, 0);
    assert.equal(backoffDelayMs(p, 3), 60_000);
    assert.equal(p.jitter, 'None');
    assert.equal(p.boundedJitterFactor, 0.25);
  });
});

describe('jitter', () => {
  test('Full jitter stays in [d, 2d)', () => {
    const p = retryPolicy({ baseDelayMs: 1000, jitter: 'Full' });
    assert.equal(
      retryDelayMs(p, 0, () => 0),
      1000,
    );
    assert.equal(
      retryDelayMs(p, 0, () => 0.5),
      1500,
    );
    assert.equal(
      retryDelayMs(p, 0, () => 0.999999999),
      1999,
    );
    assert.equal(
      retryDelayMs(p, 0, () => 1),
      1999,
      'a random source returning 1 still stays below 2d',
    );
  });

  test('Bounded jitter stays in [d, d*(1+factor))', () => {
    const p = retryPolicy({ baseDelayMs: 1000, jitter: 'Bounded' });
    assert.equal(
      retryDelayMs(p, 0, () => 0),
      1000,
    );
    assert.equal(
      retryDelayMs(p, 0, () => 0.5),
      1125,
    );
    assert.equal(
      retryDelayMs(p, 0, () => 0.9999999),
      1249,
    );
    const wide = retryPolicy({ baseDelayMs: 1000, jitter: 'Bounded', boundedJitterFactor: 1.5 });
    assert.equal(
      retryDelayMs(wide, 0, () => 0.5),
      1750,
    );
  });

  test('None ignores the random source', () => {
    const p = retryPolicy({ baseDelayMs: 1000 });
    assert.equal(
      retryDelayMs(p, 0, () => 0.7),
      1000,
    );
  });

  test('MaxDelay is applied after jitter', () => {
    const p = retryPolicy({ baseDelayMs: 1000, jitter: 'Full', maxDelayMs: 1200 });
    assert.equal(
      retryDelayMs(p, 0, () => 0.1),
      1100,
    );
    assert.equal(
      retryDelayMs(p, 0, () => 0.9),
      1200,
    );
  });

  test('the bounded factor must be finite and non-negative', () => {
    for (const bad of [-0.1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(
        () => retryPolicy({ jitter: 'Bounded', boundedJitterFactor: bad }),
        InvalidRetryPolicyError,
      );
    }
    assert.equal(retryPolicy({ jitter: 'Bounded', boundedJitterFactor: 0 }).boundedJitterFactor, 0);
  });

  test('unknown fields and negative delays are refused with a clear message', () => {
    assert.throws(() => retryPolicy({ baseDelayMs: -1 }), /baseDelayMs/);
    assert.throws(() => retryPolicy({ maxRetries: 1.5 }), /maxRetries/);
    assert.throws(() => retryPolicy({ strategy: 'Quadratic' as never }), /strategy/);
  });
});

describe('retry-after hints', () => {
  test('the longer of policy delay and hint, capped at MaxDelay', () => {
    const p = retryPolicy({ baseDelayMs: 1000, maxDelayMs: 10_000 });
    assert.equal(delayWithHintMs(p, 1000, undefined), 1000);
    assert.equal(delayWithHintMs(p, 1000, 500), 1000);
    assert.equal(delayWithHintMs(p, 1000, 4000), 4000);
    assert.equal(delayWithHintMs(p, 1000, 60_000), 10_000);
  });
});

class UnavailableError extends Error {
  override name = 'UnavailableError';
}
class GatewayTimeoutError extends UnavailableError {
  override name = 'GatewayTimeoutError';
}
class ThrottledError extends Error {
  override name = 'ThrottledError';
  constructor(readonly retryAfterMs: number) {
    super('throttled');
  }
}

describe('policy resolution order', () => {
  const policies = () =>
    new RetryPolicies()
      .addExceptionRule(UnavailableError, { maxRetries: 4, baseDelayMs: 15_000 })
      .addExceptionTextRule('timeout', { maxRetries: 2, baseDelayMs: 600_000 })
      .addEventTypePolicy('OrderPlaced', { maxRetries: 3, baseDelayMs: 120_000 })
      .setDefaultPolicy({ maxRetries: 1, baseDelayMs: 1000 });

  test('a typed rule matches the error, subclasses and inner causes', () => {
    const p = policies();
    assert.equal(p.resolve(new UnavailableError('x'), 'OrderPlaced')?.policy.baseDelayMs, 15_000);
    assert.equal(p.resolve(new GatewayTimeoutError('x'), 'Other')?.policy.baseDelayMs, 15_000);
    const wrapped = new Error('outer', {
      cause: new Error('middle', { cause: new UnavailableError('inner') }),
    });
    assert.equal(p.resolve(wrapped, 'Other')?.source, 'exception-rule');
    assert.equal(
      p.resolve(new AggregateError([new UnavailableError('a')]), 'Other')?.policy.baseDelayMs,
      15_000,
    );
  });

  test('a text rule matches case-insensitively, including inner causes', () => {
    const p = policies();
    assert.equal(
      p.resolve(new Error('Request Timeout after 30s'), 'OrderPlaced')?.policy.baseDelayMs,
      600_000,
    );
    assert.equal(
      p.resolve(new Error('outer', { cause: new Error('socket TIMEOUT') }), 'X')?.policy.baseDelayMs,
      600_000,
    );
  });

  test('rules are checked in registration order; then event type; then default', () => {
    const p = policies();
    // The typed rule is first, so an UnavailableError mentioning a timeout takes the typed rule's policy.
    assert.equal(p.resolve(new UnavailableError('timeout'), 'OrderPlaced')?.policy.baseDelayMs, 15_000);
    assert.equal(p.resolve(new Error('boom'), 'orderplaced')?.source, 'event-type');
    assert.equal(p.resolve(new Error('boom'), 'Other')?.source, 'default');
    assert.equal(new RetryPolicies().resolve(new Error('boom'), 'Other'), undefined);
  });

  test('a rule scoped to other event types is skipped', () => {
    const p = new RetryPolicies()
      .addExceptionTextRule('timeout', { maxRetries: 1, baseDelayMs: 1 }, { eventTypes: ['InvoiceIssued'] })
      .addEventTypePolicy('OrderPlaced', { maxRetries: 1, baseDelayMs: 2 });
    assert.equal(p.resolve(new Error('timeout'), 'OrderPlaced')?.policy.baseDelayMs, 2);
    assert.equal(p.resolve(new Error('timeout'), 'invoiceissued')?.policy.baseDelayMs, 1);
  });

  test('nextRetry counts the budget: MaxRetries N gives at most N retries with delays for attempts 0..N-1', () => {
    const p = new RetryPolicies().setDefaultPolicy({
      maxRetries: 3,
      strategy: 'Exponential',
      baseDelayMs: 1000,
    });
    assert.deepEqual(p.nextRetry(new Error('x'), 'A', 0), { retryCount: 1, delayMs: 1000 });
    assert.deepEqual(p.nextRetry(new Error('x'), 'A', 1), { retryCount: 2, delayMs: 2000 });
    assert.deepEqual(p.nextRetry(new Error('x'), 'A', 2), { retryCount: 3, delayMs: 4000 });
    assert.equal(p.nextRetry(new Error('x'), 'A', 3), undefined);
  });

  test('a Retry-After hint anywhere in the chain lengthens the delay, capped at MaxDelay', () => {
    const p = new RetryPolicies().addExceptionRule(ThrottledError, {
      maxRetries: 2,
      baseDelayMs: 1000,
      maxDelayMs: 30_000,
    });
    assert.equal(p.nextRetry(new ThrottledError(5000), 'A', 0)?.delayMs, 5000);
    assert.equal(
      p.nextRetry(new Error('wrap', { cause: new ThrottledError(90_000) }), 'A', 0)?.delayMs,
      30_000,
    );
    assert.equal(p.nextRetry(new ThrottledError(10), 'A', 0)?.delayMs, 1000);
  });
});
