// The traffic plan: deterministic per seed, opens with every scenario, keeps sessions per customer, and only
// orders for customers that registered first.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TrafficPlanner, type PlannedEvent } from './traffic.ts';
import { CREDIT_LIMIT, crmThrottles, invoiceIdFor, ledgerJobOutcome } from './rules.ts';

const plan = (seed: number, n: number): PlannedEvent[] => {
  const p = new TrafficPlanner(seed);
  return Array.from({ length: n }, () => p.next());
};

describe('traffic planner', () => {
  test('the same seed gives the same events; another seed does not', () => {
    assert.deepEqual(plan(7, 300), plan(7, 300));
    assert.notDeepEqual(plan(7, 300), plan(8, 300));
  });

  test('the opening has one event of every scenario, set up to produce its outcome', () => {
    const opening = plan(1, 7);
    assert.deepEqual(
      new Set(opening.map((e) => e.scenario)),
      new Set([
        'customer-registered',
        'order',
        'order-credit-approval',
        'order-cancelled',
        'customer-updated',
        'order-malformed-address',
      ]),
    );
    const big = opening.find((e) => e.scenario === 'order')!;
    const orderId = String(big.payload.orderId);
    assert.ok(crmThrottles(orderId), 'the CRM throttles the first order once (retry path)');
    assert.equal(
      ledgerJobOutcome(invoiceIdFor(orderId)),
      'slow',
      'its invoice stays a pending handoff for a while',
    );
    const credit = opening.find((e) => e.scenario === 'order-credit-approval')!;
    assert.equal(credit.payload.paymentMethod, 'invoice');
    assert.ok(Number(credit.payload.total) > CREDIT_LIMIT);
    const cancel = opening.find((e) => e.scenario === 'order-cancelled')!;
    assert.equal(
      cancel.payload.orderId,
      credit.payload.orderId,
      'the cancellation parks behind the failed order',
    );
    assert.equal(cancel.sessionId, credit.sessionId);
    const malformed = opening.find((e) => e.scenario === 'order-malformed-address')!;
    assert.equal((malformed.payload.shippingAddress as Record<string, unknown>).postalCode, undefined);
  });

  test('operatorCases adds failing credit orders and slow handoffs, each in a session of its own', () => {
    const p = new TrafficPlanner(42, { operatorCases: 3 });
    const opening = Array.from({ length: 7 + 2 * 5 }, () => p.next());
    assert.deepEqual(opening.slice(0, 7), plan(42, 7), 'the standard opening comes first, unchanged');
    const credit = opening.filter((e) => e.scenario === 'order-credit-approval');
    assert.equal(credit.length, 3);
    assert.equal(new Set(credit.map((e) => e.sessionId)).size, 3);
    for (const c of credit) {
      assert.ok(
        opening.some((e) => e.scenario === 'order-cancelled' && e.payload.orderId === c.payload.orderId),
        'each failing order has a cancellation parked behind it',
      );
    }
    const slow = opening.filter(
      (e) => e.scenario === 'order' && ledgerJobOutcome(invoiceIdFor(String(e.payload.orderId))) === 'slow',
    );
    assert.ok(slow.length >= 3);
    assert.equal(new Set(slow.map((e) => e.sessionId)).size, slow.length);
  });

  test('sessions are per customer, and customers register before anything else of theirs', () => {
    const registered = new Set<string>();
    const scenarios = new Set<string>();
    for (const e of plan(42, 2000)) {
      scenarios.add(e.scenario);
      assert.equal(e.sessionId, e.payload.customerId, 'the session is the customer');
      if (e.scenario === 'customer-registered') registered.add(e.sessionId);
      else assert.ok(registered.has(e.sessionId), `${e.scenario} for unregistered ${e.sessionId}`);
    }
    assert.equal(scenarios.size, 6, 'every scenario recurs after the opening');
  });

  test('order totals add up and only the credit scenario exceeds the limit on invoice', () => {
    for (const e of plan(3, 1000).filter((x) => x.eventTypeId === 'OrderPlaced')) {
      const lines = e.payload.lines as Array<{ quantity: number; unitPrice: number }>;
      const sum = Math.round(lines.reduce((s, l) => s + l.quantity * l.unitPrice, 0) * 100) / 100;
      assert.equal(e.payload.total, sum);
      const overLimit = e.payload.paymentMethod === 'invoice' && Number(e.payload.total) > CREDIT_LIMIT;
      assert.equal(overLimit, e.scenario === 'order-credit-approval');
    }
  });
});
