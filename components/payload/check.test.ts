// The editor's payload check: JSON syntax errors at their line and column, schema problems at the member they
// concern, with the demo catalog's real OrderPlaced schema.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseCatalog } from '@nimbus/sdk/catalog';
import { checkPayloadText, compileSchema, locatePath } from './check.ts';

const catalog = parseCatalog(JSON.parse(readFileSync(new URL('../../catalog/demo.json', import.meta.url), 'utf8')));
const orderPlaced = compileSchema(catalog.eventTypes.find((t) => t.id === 'OrderPlaced')!.schema);
const valid = { orderId: 'ORD-1', customerId: 'C-1', lines: [{ sku: 'MUG', quantity: 1, unitPrice: 2 }], total: 2, currency: 'EUR' };

describe('checkPayloadText', () => {
  test('a syntax error is reported once, at its line and column', () => {
    const r = checkPayloadText('{\n  "orderId": "ORD-1"\n  "total": 2\n}', null);
    assert.equal(r.ok, false);
    assert.equal(r.problems.length, 1);
    assert.deepEqual([r.problems[0]!.line, r.problems[0]!.column], [3, 3]);
    assert.match(r.problems[0]!.message, /^Line 3, column 3: Invalid JSON: Expected ',' or '}'/);
    assert.doesNotMatch(r.problems[0]!.message, /position/, 'the place is said once');
  });

  test('a truncated document points at its end', () => {
    const text = '{"orderId": "ORD-1",';
    const r = checkPayloadText(text, null);
    assert.equal(r.ok, false);
    assert.equal(r.problems[0]!.from, text.length);
  });

  test('empty and null are refused; without a schema any other JSON passes', () => {
    assert.match(checkPayloadText('  ', null).problems[0]!.message, /empty/);
    assert.match(checkPayloadText('null', null).problems[0]!.message, /must not be null/);
    assert.deepEqual(checkPayloadText('{"a": 1}', null), { ok: true, value: { a: 1 }, problems: [] });
  });

  test("schema problems name the path and sit on the member (or the object missing it)", () => {
    const text = JSON.stringify({ ...valid, customerId: undefined, lines: [{ quantity: 1.5 }] }, null, 2);
    const r = checkPayloadText(text, orderPlaced, 'OrderPlaced');
    assert.equal(r.ok, false);
    const byPath = new Map(r.problems.map((p) => [p.message.replace(/^Line \d+, column \d+: /, '').split(':')[0], p]));
    assert.deepEqual([...byPath.keys()].sort(), ['customerId', 'lines.0.quantity']);
    const quantity = byPath.get('lines.0.quantity')!;
    assert.equal(text.slice(quantity.from, quantity.to), '"quantity": 1.5');
    assert.match(quantity.message, /^Line 5, column 7: lines\.0\.quantity: Invalid input: expected int/);
    assert.match(byPath.get('customerId')!.message, /^Line 1, column 1: customerId: required property is missing/);
  });

  test('a payload matching the schema passes with its value', () => {
    const r = checkPayloadText(JSON.stringify({ ...valid, extra: true }), orderPlaced);
    assert.equal(r.ok, true);
  });

  test('locatePath finds array items and nested members', () => {
    const text = '{"a": [1, {"b": 2}]}';
    const r = locatePath(text, ['a', 1, 'b']);
    assert.equal(text.slice(r.from, r.to), '"b": 2');
    assert.equal(text.slice(...Object.values(locatePath(text, ['a', 5])) as [number, number]), '[');
  });
});
