// The pages' URL schemas and the ISO-8601 helpers: pure, so checked here without a browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endpointsSearch, eventListSearch, parseSearch, toSearch } from './urlState.ts';
import { fromInputValue, toInputValue, toIsoWithOffset } from './isoTime.ts';

test('a page state parses from its URL and writes back to one canonical URL', () => {
  const s = parseSearch(endpointsSearch, new URLSearchParams('q=billing&unhealthy=1&sort=pending&other=x'));
  assert.deepEqual(s, { q: 'billing', unhealthy: true, sort: 'pending' });
  assert.equal(toSearch(endpointsSearch, s), 'q=billing&unhealthy=1&sort=pending');
  // Defaults are left out: the default state is the bare path.
  assert.equal(toSearch(endpointsSearch, parseSearch(endpointsSearch, {})), '');
});

test('values that do not parse fall back to their defaults, one field at a time', () => {
  assert.deepEqual(parseSearch(endpointsSearch, { sort: 'bogus', unhealthy: 'maybe', q: 'crm' }), { q: 'crm', unhealthy: false, sort: 'failed' });
  const e = parseSearch(eventListSearch, { status: 'DeadLettered,Nope,Failed', from: '2026-12-03 10:00', to: '2026-12-03T10:00:00+01:00', groupId: 'xyz' });
  assert.deepEqual(e.status, ['Failed', 'DeadLettered'], 'unknown statuses dropped, canonical order');
  assert.equal(e.from, '', 'a time without an offset is not accepted');
  assert.equal(e.to, '2026-12-03T10:00:00+01:00');
  assert.equal(e.groupId, '');
  assert.equal(toSearch(eventListSearch, e), 'status=Failed%2CDeadLettered&to=2026-12-03T10%3A00%3A00%2B01%3A00');
});

test('times go into URLs as ISO-8601 with the offset of the chosen zone', () => {
  const t = new Date('2026-12-03T10:26:40.123Z');
  assert.equal(toIsoWithOffset(t, 'utc'), '2026-12-03T10:26:40Z');
  const local = toIsoWithOffset(t, 'local');
  assert.match(local, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
  assert.equal(Date.parse(local), Date.parse('2026-12-03T10:26:40Z'), 'the same instant');
  assert.equal(toInputValue('2026-12-03T10:26:40Z', 'utc'), '2026-12-03T10:26');
  assert.equal(fromInputValue('2026-12-03T10:26', 'utc'), '2026-12-03T10:26:00Z');
  assert.equal(toInputValue(fromInputValue('2026-12-03T10:26', 'local'), 'local'), '2026-12-03T10:26', 'local round trip');
});
