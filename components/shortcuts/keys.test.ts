import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTyping, stepKey } from './keys.ts';

test('single keys map to their actions; unknown keys do nothing', () => {
  assert.deepEqual(stepKey('/', false), { action: 'search', pendingG: false });
  assert.deepEqual(stepKey('?', false), { action: 'help', pendingG: false });
  assert.deepEqual(stepKey('j', false), { action: 'next', pendingG: false });
  assert.deepEqual(stepKey('x', false), { action: null, pendingG: false });
  // e and m alone are not shortcuts: only after g.
  assert.deepEqual(stepKey('e', false), { action: null, pendingG: false });
});

test('g starts a sequence that the next key completes or cancels', () => {
  assert.deepEqual(stepKey('g', false), { action: null, pendingG: true });
  assert.deepEqual(stepKey('e', true), { action: 'go-endpoints', pendingG: false });
  assert.deepEqual(stepKey('m', true), { action: 'go-monitor', pendingG: false });
  // g then r is not "resubmit": the unknown pair cancels.
  assert.deepEqual(stepKey('r', true), { action: null, pendingG: false });
});

test('text fields, selects and editors are typing; checkboxes and buttons are not', () => {
  assert.equal(isTyping({ tagName: 'INPUT', type: 'text' }), true);
  assert.equal(isTyping({ tagName: 'INPUT' }), true);
  assert.equal(isTyping({ tagName: 'input', type: 'search' }), true);
  assert.equal(isTyping({ tagName: 'TEXTAREA' }), true);
  assert.equal(isTyping({ tagName: 'SELECT' }), true);
  assert.equal(isTyping({ tagName: 'DIV', isContentEditable: true }), true);
  assert.equal(isTyping({ tagName: 'INPUT', type: 'checkbox' }), false);
  assert.equal(isTyping({ tagName: 'BUTTON' }), false);
  assert.equal(isTyping({ tagName: 'BODY' }), false);
  assert.equal(isTyping(null), false);
});
