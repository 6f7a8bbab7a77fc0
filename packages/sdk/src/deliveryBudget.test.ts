// The delivery budget arithmetic: attempts, the last delivery, the hold after a transient outcome.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { attemptOf, deliveryStanding, isLastDelivery, observedLockMs, transientHoldMs } from './deliveryBudget.ts';

describe('delivery budget', () => {
  test('the attempt is the wire count plus one; missing or odd counts are the first attempt', () => {
    assert.equal(attemptOf(0), 1);
    assert.equal(attemptOf(3), 4);
    assert.equal(attemptOf(undefined), 1);
    assert.equal(attemptOf(-2), 1);
    assert.equal(attemptOf(1.5), 1);
  });

  test('the last delivery is the one the max delivery count ends with', () => {
    assert.equal(isLastDelivery(8, 10), false);
    assert.equal(isLastDelivery(9, 10), true);
    assert.equal(isLastDelivery(12, 10), true);
    assert.equal(isLastDelivery(0, 1), true);
  });

  test("a delivery's standing, as the host's logs name it: 1-based delivery, the budget, and whether it is the last", () => {
    assert.deepEqual(deliveryStanding(2, 10), { delivery: 3, maxDeliveryCount: 10, last: false });
    assert.deepEqual(deliveryStanding(9, 10), { delivery: 10, maxDeliveryCount: 10, last: true });
    assert.deepEqual(deliveryStanding(undefined, 3), { delivery: 1, maxDeliveryCount: 3, last: false });
  });

  test('the hold is a lock duration, doubling per earlier delivery, capped', () => {
    const holds = [0, 1, 2, 3, 4, 5, 9].map((dc) => transientHoldMs(dc, 30_000));
    assert.deepEqual(holds, [30_000, 60_000, 120_000, 240_000, 300_000, 300_000, 300_000]);
    assert.equal(transientHoldMs(2, 30_000, { initialMs: 100, maxMs: 250 }), 250);
    assert.equal(transientHoldMs(0, 5_000), 5_000);
  });

  test('the observed lock duration falls back to 30 s when the broker tells nothing sensible', () => {
    assert.equal(observedLockMs(new Date(10_000 + 5_000), 10_000), 5_000);
    assert.equal(observedLockMs(undefined, 0), 30_000);
    assert.equal(observedLockMs(new Date(0), 10_000), 30_000, 'already past: a skewed clock');
    assert.equal(observedLockMs(new Date(10_000_000), 0), 30_000, 'longer than Service Bus allows');
  });
});
