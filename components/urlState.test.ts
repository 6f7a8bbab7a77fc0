// The pages' URL schemas and the ISO-8601 helpers: pure, so checked here without a browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { alertHistorySearch, alertRulesSearch, auditSearch, deadLettersSearch, endpointsSearch, eventListSearch, FAILURE_GROUP_STATUSES, failuresSearch, flowSearch, parseSearch, toSearch } from './urlState.ts';
import { fromInputValue, toInputValue, toIsoWithOffset } from './isoTime.ts';
import { EXACT_ID_FILTERS, exactIdProblem, type ExactIdFilter } from '../server/exactIdFilters.ts';
import { auditQuerySchema } from '../server/audit/auditLog.ts';
import { failureGroupsQuerySchema } from '../server/failures/groups.ts';
import { FAILURE_STATUSES } from '../lib/store/fingerprint.ts';

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

test("the session filter round-trips exactly, spaces and all; spaces alone are no filter", () => {
  for (const sessionId of ['S1 ', ' S1', 'ORD 42', ' a+b&c=d ']) {
    const url = toSearch(eventListSearch, { sessionId });
    assert.equal(parseSearch(eventListSearch, new URLSearchParams(url)).sessionId, sessionId, JSON.stringify(sessionId));
  }
  assert.equal(parseSearch(eventListSearch, { sessionId: '   ' }).sessionId, '');
  assert.equal(parseSearch(eventListSearch, { sessionId: 'x'.repeat(129) }).sessionId, '', 'longer than the list route takes');
});

test('the event id and event type filters round-trip exactly too, spaces and all; spaces alone are no filter', () => {
  for (const value of ['E1 ', ' E1', 'ORD 42', ' a+b&c=d ']) {
    const url = toSearch(eventListSearch, { eventId: value, eventTypeId: value });
    const parsed = parseSearch(eventListSearch, new URLSearchParams(url));
    assert.equal(parsed.eventId, value, `eventId ${JSON.stringify(value)}`);
    assert.equal(parsed.eventTypeId, value, `eventTypeId ${JSON.stringify(value)}`);
  }
  const blank = parseSearch(eventListSearch, { eventId: '   ', eventTypeId: '\t ' });
  assert.deepEqual([blank.eventId, blank.eventTypeId], ['', '']);
  const long = parseSearch(eventListSearch, { eventId: 'x'.repeat(129), eventTypeId: 'x'.repeat(261) });
  assert.deepEqual([long.eventId, long.eventTypeId], ['', ''], 'longer than the list route takes');
  assert.equal(parseSearch(eventListSearch, { eventTypeId: 'x'.repeat(260) }).eventTypeId, 'x'.repeat(260));
});

/** Each page's id filters: the fields its route takes by the one rule (server/exactIdFilters.ts). */
const ID_FILTERS_BY_PAGE = [
  ['Endpoint', eventListSearch, ['eventTypeId', 'sessionId', 'eventId']],
  ['Flow', flowSearch, ['eventTypeId']],
  ['Audit', auditSearch, ['endpointId', 'eventId']],
] as const;

test('an id filter its route refuses (the one rule, server/exactIdFilters.ts) is read as no filter; the rest as it is, on every page', () => {
  for (const [page, schema, fields] of ID_FILTERS_BY_PAGE) {
    for (const field of fields as readonly ExactIdFilter[]) {
      const { max } = EXACT_ID_FILTERS[field];
      for (const value of ['S1 ', ' S1', ' \t', 'x'.repeat(max), 'x'.repeat(max + 1)]) {
        const read = (parseSearch(schema, { [field]: value }) as Record<string, unknown>)[field];
        assert.equal(read, exactIdProblem(field, value) ? '' : value, `${page} ${field} ${JSON.stringify(value.slice(0, 8))}…(${value.length})`);
      }
    }
  }
});

test("Flow's event type and the Audit log's endpoint and event ids round-trip exactly, spaces and all (an endpoint id has none); spaces alone are no filter", () => {
  // They were trimmed: " abc" on Flow or Audit filtered "abc" while the Endpoint page looked for " abc".
  assert.equal(parseSearch(flowSearch, new URLSearchParams(toSearch(flowSearch, { eventTypeId: ' Order Placed ' }))).eventTypeId, ' Order Placed ');
  assert.equal(parseSearch(flowSearch, { eventTypeId: '   ' }).eventTypeId, '');
  const audit = parseSearch(auditSearch, new URLSearchParams(toSearch(auditSearch, { endpointId: 'billing', eventId: 'E1 ' })));
  assert.deepEqual([audit.endpointId, audit.eventId], ['billing', 'E1 ']);
  // An endpoint id has no spaces (the catalog's names): one with a space names no endpoint, so it is no filter.
  assert.equal(parseSearch(auditSearch, { endpointId: ' billing' }).endpointId, '');
  const blank = parseSearch(auditSearch, { endpointId: '  ', eventId: '\t' });
  assert.deepEqual([blank.endpointId, blank.eventId], ['', '']);
  // Free text keeps trimming: a user's sign-in name or id, and parts of an action's name.
  const text = parseSearch(auditSearch, { user: ' ada@test ', action: ' skip ', notAction: ' agent. ' });
  assert.deepEqual([text.user, text.action, text.notAction], ['ada@test', 'skip', 'agent.']);
});

test("the Audit log's text filters take in the URL what the route takes: a longer one is no filter, never a 400", () => {
  // The URL state took 100 characters of an action while GET /api/audit took 64: a link with 65 to 100 put the
  // route's 400 in the page's error box. Each length either both take or neither does.
  for (const field of ['user', 'action', 'notAction'] as const) {
    for (const length of [1, 64, 65, 100, 200, 201, 256, 257]) {
      const value = 'a'.repeat(length);
      const inUrl = parseSearch(auditSearch, { [field]: value })[field];
      const byRoute = auditQuerySchema.safeParse({ [field]: value }).success;
      assert.equal(inUrl === value, byRoute, `${field} of ${length}: the URL state ${inUrl === value ? 'keeps' : 'drops'} it, the route ${byRoute ? 'takes' : 'refuses'} it`);
    }
  }
  assert.equal(parseSearch(auditSearch, { action: 'a'.repeat(64) }).action.length, 64, 'the longest the route takes');
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

test('dead letters: reason and paging trail round-trip; bad sequence numbers are dropped', () => {
  const s = parseSearch(deadLettersSearch, new URLSearchParams('reason=CosmosDbThrottled&from=37&prev=12,x,25'));
  assert.deepEqual(s, { reason: 'CosmosDbThrottled', from: '37', prev: ['12', '25'] });
  assert.equal(toSearch(deadLettersSearch, s), 'reason=CosmosDbThrottled&from=37&prev=12%2C25');
  assert.deepEqual(parseSearch(deadLettersSearch, { from: '12a' }), { reason: '', from: '', prev: [] });
});

test("the Failures page's status is one the failure groups route takes, kept in the URL beside the window", () => {
  // The statuses the page offers are the ones failures are grouped from (lib/store/fingerprint.ts), each one the
  // route takes as its `status` filter.
  assert.deepEqual([...FAILURE_GROUP_STATUSES], [...FAILURE_STATUSES]);
  for (const status of FAILURE_GROUP_STATUSES) {
    const s = parseSearch(failuresSearch, new URLSearchParams(`since=24&status=${status}`));
    assert.deepEqual(s, { since: '24', status });
    assert.equal(toSearch(failuresSearch, s), `since=24&status=${status}`);
    assert.deepEqual(failureGroupsQuerySchema.parse({ status }).status, [status]);
  }
  // No status is every failure (the default: the bare path); one the page does not offer falls back to it alone.
  assert.deepEqual(parseSearch(failuresSearch, {}), { since: '', status: '' });
  assert.deepEqual(parseSearch(failuresSearch, { since: '1', status: 'Completed' }), { since: '1', status: '' });
  assert.deepEqual(parseSearch(failuresSearch, { status: 'failed' }).status, '', 'statuses are matched as the route names them');
  assert.equal(toSearch(failuresSearch, { since: '', status: '' }), '');
});

test('alerts: rule and history state fall back field by field', () => {
  assert.deepEqual(parseSearch(alertRulesSearch, { type: 'failureRate', sort: 'state', dir: 'up', firing: '1' }), {
    q: '',
    type: 'failureRate',
    firing: true,
    sort: 'state',
    dir: undefined,
  });
  assert.equal(parseSearch(alertRulesSearch, { type: 'nope' }).type, '');
  const h = parseSearch(alertHistorySearch, { state: 'firing', limit: '300', sort: 'rule', dir: 'asc' });
  assert.equal(h.limit, 300);
  assert.equal(toSearch(alertHistorySearch, h), 'state=firing&sort=rule&dir=asc&limit=300');
  assert.equal(parseSearch(alertHistorySearch, { limit: '150' }).limit, 100, 'a limit off the page grid falls back');
  assert.equal(parseSearch(alertHistorySearch, { limit: '5000' }).limit, 100);
});

test("a URL's instant is what the routes take: the page's rule and zod's z.iso.datetime({ offset: true }) agree", async () => {
  const { z } = await import('zod');
  const { ISO_INSTANT } = await import('./urlState.ts');
  const routes = z.iso.datetime({ offset: true });
  const cases = [
    '2026-12-03T10:00:00Z', '2026-12-03T10:00:00+01:00', '2026-12-03T10:00:00-05:30', '2026-12-03T10:00:00.5Z',
    '2026-12-03T10:00:00.123456789+14:00', '2026-12-03T10:00Z', '2026-12-03T10:00+01:00', '2026-12-03 10:00:00Z',
    '2026-12-03T10:00:00', '2026-12-03T10:00:00z', '2026-12-03T10:00:00+0100', '2026-12-03T10:00:00+01',
    '2026-12-03T24:00:00Z', '2026-12-03T23:60:00Z', '2026-12-03T23:59:60Z', '2026-12-03T10:00:00+24:00',
    '2026-12-03T10:00:00+23:59', '2026-12-03T10:00:00.Z', '2026-12-03T10:00:00,5Z', '+010000-01-01T00:00:00Z',
    '2026-13-01T00:00:00Z', '2026-00-01T00:00:00Z', '2026-01-00T00:00:00Z', '2026-01-32T00:00:00Z',
    '2026-04-31T00:00:00Z', '2026-04-30T00:00:00Z', '2026-06-31T00:00:00Z', '2026-09-30T00:00:00Z', '2026-11-31T00:00:00Z',
    ' 2026-12-03T10:00:00Z', '2026-12-03T10:00:00Z ', '', 'now',
  ];
  // 29, 30 February over leap rules (every 4 years, not centuries, but every 400).
  for (const year of ['2024', '2025', '2026', '2000', '1900', '2100', '2400', '1600', '0000', '0004', '0100', '9996', '9999'])
    for (const day of ['28', '29', '30']) cases.push(`${year}-02-${day}T12:00:00Z`);
  for (const value of cases) assert.equal(ISO_INSTANT.test(value), routes.safeParse(value).success, JSON.stringify(value));
});
