// The confirmation's words for a failure group's job: the window the page counted in, the endpoints of the rows
// frozen (from the prepare answer, not the page's list) and, one line each, the endpoints left out and why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { frozenOn, leftOutLines } from './frozenText.ts';
import { groupSelection, groupWhat } from './groupSelection.ts';

test('the group is said with the window the page counted in; the selection carries its start', () => {
  assert.equal(groupWhat('CRM API answered <n>', '1'), 'every event of “CRM API answered <n>” updated in the last hour');
  assert.equal(groupWhat('CRM API answered <n>', ''), 'every event of “CRM API answered <n>”');
  assert.deepEqual(groupSelection('0123456789abcdef0123', '2026-12-06T01:00:00.000Z'), { groupId: '0123456789abcdef0123', updatedFrom: '2026-12-06T01:00:00.000Z' });
  assert.deepEqual(groupSelection('0123456789abcdef0123', null), { groupId: '0123456789abcdef0123' });
});

test('the endpoints of the rows frozen, as a phrase', () => {
  assert.equal(frozenOn([]), '');
  assert.equal(frozenOn(['crmendpoint']), 'on crmendpoint');
  assert.equal(frozenOn(['billingendpoint', 'crmendpoint']), 'on billingendpoint and crmendpoint');
  assert.equal(frozenOn(['a', 'b', 'c']), 'on a, b and c');
});

test('an endpoint left out says how many events and why', () => {
  const reason = 'resubmit needs the Operator role on endpoint billingendpoint; bob@test has Reader on endpoint billingendpoint';
  assert.deepEqual(leftOutLines('resubmit', [{ endpointId: 'billingendpoint', events: 1200, reason }]), [`1,200 events on billingendpoint will not be resubmitted: ${reason}.`]);
  assert.deepEqual(leftOutLines('skip', [{ endpointId: 'erpendpoint', events: 1, reason: 'r' }]), ['1 event on erpendpoint will not be skipped: r.']);
  assert.deepEqual(leftOutLines('skip', []), []);
});
