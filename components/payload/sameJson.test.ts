import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sameJson } from './sameJson.ts';

test('the same JSON in another layout or member order is the same; any other value is not', () => {
  const stored = JSON.parse('{"orderId":"ORD-1","lines":[{"sku":"A","qty":1}],"total":8,"note":null}') as unknown;
  assert.equal(sameJson(stored, JSON.parse('{\n  "total": 8.0,\n  "note": null,\n  "lines": [ { "qty": 1, "sku": "A" } ],\n  "orderId": "ORD-1"\n}')), true);
  assert.equal(sameJson(stored, { orderId: 'ORD-1', lines: [{ sku: 'A', qty: 1 }], total: 9, note: null }), false);
  assert.equal(sameJson(stored, { orderId: 'ORD-1', lines: [{ sku: 'A', qty: 1 }], total: 8 }), false, 'a member left out');
  assert.equal(sameJson(stored, { orderId: 'ORD-1', lines: [{ sku: 'A', qty: 1 }], total: 8, note: null, extra: 1 }), false, 'a member added');
  assert.equal(sameJson({ note: null }, { note: undefined }), false);
  assert.equal(sameJson([1, 2], [2, 1]), false, 'array order counts');
  assert.equal(sameJson([1], { 0: 1 }), false);
  assert.equal(sameJson('8', 8), false);
  assert.equal(sameJson({}, []), false);
});
