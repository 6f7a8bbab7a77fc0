import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffJson } from './diff.ts';

test('diff names changed paths and types, never values', () => {
  const d = diffJson({ a: 1, b: { c: 'secret', d: [1, 2] }, gone: true }, { a: 2, b: { c: 'other secret', d: [1] }, added: null });
  assert.deepEqual(d.changes, [
    { path: '/a', op: 'changed', from: 'number', to: 'number' },
    { path: '/b/c', op: 'changed', from: 'string', to: 'string' },
    { path: '/b/d/1', op: 'removed', from: 'number' },
    { path: '/gone', op: 'removed', from: 'boolean' },
    { path: '/added', op: 'added', to: 'null' },
  ]);
  assert.ok(!JSON.stringify(d).includes('secret'));
  assert.deepEqual(diffJson({ x: [1, { y: 'z' }] }, { x: [1, { y: 'z' }] }).changes, []);
  assert.deepEqual(diffJson('a', { a: 1 }).changes, [{ path: '', op: 'changed', from: 'string', to: 'object' }]);
});

test('a large edit is truncated', () => {
  const before = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]));
  const d = diffJson(before, {}, 10);
  assert.equal(d.changes.length, 10);
  assert.equal(d.truncated, true);
});

test('keys named like Object.prototype members are added and removed like any other', () => {
  // User JSON may carry `constructor` or `toString`; they are not "already there" on an empty object.
  assert.deepEqual(diffJson({}, { toString: 1, constructor: 'x' }).changes, [
    { path: '/toString', op: 'added', to: 'number' },
    { path: '/constructor', op: 'added', to: 'string' },
  ]);
  assert.deepEqual(diffJson({ constructor: 'x', hasOwnProperty: true }, {}).changes, [
    { path: '/constructor', op: 'removed', from: 'string' },
    { path: '/hasOwnProperty', op: 'removed', from: 'boolean' },
  ]);
});
