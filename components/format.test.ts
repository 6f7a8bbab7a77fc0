// formatCount and compareText stand in for toLocaleString and localeCompare on the count tables (no Intl, see
// format.tsx): they must give what an en-US browser showed before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareText, countOf, formatCount } from './format.tsx';

test('formatCount groups thousands like en-US toLocaleString', () => {
  for (const n of [0, 7, 999, 1000, 12_345, 999_999, 1_000_000, 20_000, -1234, 1234567890]) {
    assert.equal(formatCount(n), n.toLocaleString('en-US'), String(n));
  }
  assert.equal(formatCount(1234.5), '1,234.5');
  assert.equal(formatCount(Number.NaN), 'NaN');
});

test('compareText orders ids and ISO times by code unit', () => {
  const ids = ['crmendpoint', 'billingendpoint', 'Billing', 'shop-endpoint', 'billingendpoint2'];
  assert.deepEqual([...ids].sort(compareText), ['Billing', 'billingendpoint', 'billingendpoint2', 'crmendpoint', 'shop-endpoint']);
  assert.ok(compareText('2026-12-03T10:00:00.000Z', '2026-12-03T09:59:59.999Z') > 0);
  assert.equal(compareText('a', 'a'), 0);
});

test('countOf puts the noun in the number the count needs', () => {
  assert.equal(countOf(1, 'failed event'), '1 failed event');
  assert.equal(countOf(0, 'group'), '0 groups');
  assert.equal(countOf(2, 'group'), '2 groups');
  assert.equal(countOf(12_345, 'event'), '12,345 events');
  assert.equal(countOf(1, 'entry', 'entries'), '1 entry');
  assert.equal(countOf(3, 'entry', 'entries'), '3 entries');
});
