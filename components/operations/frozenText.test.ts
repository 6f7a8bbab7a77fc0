// The confirmation's words for a failure group's job (and the group's export and events links): the window the page
// counted in, the endpoints of the rows frozen (from the prepare answer, not the page's list) and, one line each, the
// endpoints left out and why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { frozenOn, leftOutLines } from './frozenText.ts';
import { groupEventsHref, groupExportHref, groupSelection, groupWhat } from './groupSelection.ts';
import { formatUtc } from '../timeZone.tsx';
import { endpointSearch, eventListSearch, parseSearch, toSearch } from '../urlState.ts';

test('the group is said with the exact start of the window the page counted in; the selection carries it', () => {
  // "the last hour" counted from 01:00 at 02:59 covers rows almost two hours old: the start itself is said, in the
  // console's time rule (here UTC).
  assert.equal(groupWhat('CRM API answered <n>', '2026-12-06T01:00:00.000Z', formatUtc), 'every event of “CRM API answered <n>” updated since 2026-12-06 01:00:00.000 UTC');
  assert.equal(groupWhat('CRM API answered <n>', null, formatUtc), 'every event of “CRM API answered <n>”');
  assert.deepEqual(groupSelection('0123456789abcdef0123', '2026-12-06T01:00:00.000Z'), { groupId: '0123456789abcdef0123', updatedFrom: '2026-12-06T01:00:00.000Z' });
  assert.deepEqual(groupSelection('0123456789abcdef0123', null), { groupId: '0123456789abcdef0123' });
});

test('with a status picked, the selection, its words and the export are of the group’s rows in that status alone', () => {
  const shown = { countedFrom: '2026-12-06T01:00:00.000Z', status: 'DeadLettered' } as const;
  assert.deepEqual(groupSelection('0123456789abcdef0123', shown.countedFrom, shown.status), { groupId: '0123456789abcdef0123', updatedFrom: shown.countedFrom, status: ['DeadLettered'] });
  assert.deepEqual(groupSelection('0123456789abcdef0123', null, 'Unsupported'), { groupId: '0123456789abcdef0123', status: ['Unsupported'] });
  assert.deepEqual(groupSelection('0123456789abcdef0123', null, ''), { groupId: '0123456789abcdef0123' });
  assert.equal(groupWhat('CRM API answered <n>', shown.countedFrom, formatUtc, shown.status), 'every DeadLettered event of “CRM API answered <n>” updated since 2026-12-06 01:00:00.000 UTC');
  assert.equal(groupWhat('CRM API answered <n>', null, formatUtc, ''), 'every event of “CRM API answered <n>”');
  assert.equal(
    groupExportHref('crmendpoint', '0123456789abcdef0123', shown.countedFrom, shown.status),
    '/api/endpoints/crmendpoint/events/export?groupId=0123456789abcdef0123&from=2026-12-06T01%3A00%3A00.000Z&status=DeadLettered&format=csv',
  );
  assert.equal(groupExportHref('crmendpoint', '0123456789abcdef0123', null, ''), '/api/endpoints/crmendpoint/events/export?groupId=0123456789abcdef0123&format=csv');
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

test('the group’s export is the group on that endpoint in the window the page counted in', () => {
  assert.equal(
    groupExportHref('crm endpoint', '0123456789abcdef0123', '2026-12-06T01:00:00.000Z'),
    '/api/endpoints/crm%20endpoint/events/export?groupId=0123456789abcdef0123&from=2026-12-06T01%3A00%3A00.000Z&format=csv',
  );
  assert.equal(groupExportHref('crmendpoint', '0123456789abcdef0123', null), '/api/endpoints/crmendpoint/events/export?groupId=0123456789abcdef0123&format=csv');
});

test('a group row’s endpoint link opens the Endpoint page on the rows the row counts: the group, the window, the status', () => {
  const href = groupEventsHref('crm endpoint', '0123456789abcdef0123', '2026-12-06T01:00:00.000Z', 'DeadLettered');
  assert.equal(href, '/endpoints/crm%20endpoint?status=DeadLettered&from=2026-12-06T01%3A00%3A00.000Z&groupId=0123456789abcdef0123');
  // What the Endpoint page reads from it (its own URL state): nothing dropped as unparseable, and the page's own URL
  // for that state (the same keys in the same order).
  const query = href.split('?')[1]!;
  const state = parseSearch(endpointSearch, new URLSearchParams(query));
  assert.deepEqual([state.status, state.from, state.groupId], [['DeadLettered'], '2026-12-06T01:00:00.000Z', '0123456789abcdef0123']);
  assert.equal(toSearch(eventListSearch, state), query);
  // Any status and any time: the group alone (only failed rows have one).
  assert.equal(groupEventsHref('crmendpoint', '0123456789abcdef0123', null, ''), '/endpoints/crmendpoint?groupId=0123456789abcdef0123');
});
