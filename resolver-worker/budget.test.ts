// The throttle budget's arithmetic (pure): one count for reschedules and deliveries, the backoff, retry-after.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs, budgetExhausted, logicalAttempt, retryDelay, DEFAULT_BUDGET } from './budget.ts';

describe('throttle budget', () => {
  test('attempt = ThrottleRetryCount + delivery (the client counts deliveries from 0)', () => {
    assert.equal(logicalAttempt(undefined, 0), 1);
    assert.equal(logicalAttempt(0, 0), 1);
    assert.equal(logicalAttempt(3, 0), 4);
    assert.equal(logicalAttempt(3, 2), 6);
    assert.equal(logicalAttempt(Number.NaN, undefined), 1, 'unreadable values count as none');
    assert.equal(logicalAttempt(-4, -1), 1);
  });

  test('the tenth attempt is the last', () => {
    assert.equal(budgetExhausted(9), false);
    assert.equal(budgetExhausted(10), true);
    assert.equal(budgetExhausted(11), true);
  });

  test('backoff 5 s doubling to 300 s: nine reschedules add up to 1215 s', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((a) => backoffMs(a) / 1000);
    assert.deepEqual(delays, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
    assert.equal(delays.reduce((a, b) => a + b, 0), 1215);
    assert.equal(backoffMs(1000), DEFAULT_BUDGET.maxDelayMs, 'no overflow for absurd attempts');
  });

  test("the store's retry-after wins only when it is longer", () => {
    assert.deepEqual(retryDelay(1, 2_000), { delayMs: 5_000, source: 'backoff' });
    assert.deepEqual(retryDelay(1, 7_500), { delayMs: 7_500, source: 'provider' });
    assert.deepEqual(retryDelay(2, undefined), { delayMs: 10_000, source: 'backoff' });
  });
});
