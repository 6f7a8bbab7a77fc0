// The console's id filters: one rule for which values are a filter, which the list, Flow and Audit routes follow (and
// the URL state: components/urlState.test.ts). Pure: no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXACT_ID_FILTERS, exactIdProblem, type ExactIdFilter } from './exactIdFilters.ts';
import { eventListQuerySchema } from './queries.ts';
import { flowQuerySchema } from './flow.ts';
import { auditQuerySchema } from './audit/auditLog.ts';

const FIELDS = Object.keys(EXACT_ID_FILTERS) as ExactIdFilter[];

test('an id is a filter as it is, spaces and all, up to its length; empty is no filter', () => {
  for (const field of FIELDS) {
    const { max } = EXACT_ID_FILTERS[field];
    for (const ok of ['', 'S1', 'S1 ', ' S1', ' a b ', 'x'.repeat(max)]) assert.equal(exactIdProblem(field, ok), undefined, `${field} ${JSON.stringify(ok)}`);
  }
  assert.deepEqual([EXACT_ID_FILTERS.eventTypeId.max, EXACT_ID_FILTERS.sessionId.max, EXACT_ID_FILTERS.eventId.max, EXACT_ID_FILTERS.endpointId.max], [260, 128, 128, 50]);
});

test('spaces alone and an over-long id are not a filter, each said in words naming the field', () => {
  assert.equal(exactIdProblem('eventId', '   '), 'an event id of spaces alone is not a filter; leave it empty for every event');
  assert.equal(exactIdProblem('sessionId', '\t '), 'a session id of spaces alone is not a filter; leave it empty for every session');
  assert.equal(exactIdProblem('eventTypeId', ' '), 'an event type id of spaces alone is not a filter; leave it empty for every event type');
  assert.equal(exactIdProblem('eventId', 'x'.repeat(129)), 'an event id longer than 128 characters is not a filter; no event id is that long');
  assert.equal(exactIdProblem('eventTypeId', 'x'.repeat(261)), 'an event type id longer than 260 characters is not a filter; no event type id is that long');
  assert.equal(exactIdProblem('endpointId', '  '), 'an endpoint id of spaces alone is not a filter; leave it empty for every endpoint');
  assert.equal(exactIdProblem('endpointId', 'x'.repeat(51)), 'an endpoint id longer than 50 characters is not a filter; no endpoint id is that long');
});

/** Each route's id filters, all by the one rule. */
const ROUTES = [
  ['list', eventListQuerySchema, ['eventTypeId', 'sessionId', 'eventId']],
  ['flow', flowQuerySchema, ['eventTypeId']],
  ['audit', auditQuerySchema, ['endpointId', 'eventId']],
] as const;

test('the list, Flow and Audit routes refuse what the rule refuses, in its words, and take the rest as it is', () => {
  for (const [route, schema, fields] of ROUTES) {
    for (const field of fields as readonly ExactIdFilter[]) {
      const { max } = EXACT_ID_FILTERS[field];
      for (const value of ['S1 ', ' S1', '  ', 'x'.repeat(max), 'x'.repeat(max + 1)]) {
        const problem = exactIdProblem(field, value);
        const parsed = schema.safeParse({ [field]: value });
        const what = `${route} ${field} ${JSON.stringify(value.slice(0, 8))}…(${value.length})`;
        if (problem) assert.deepEqual(parsed.error?.issues.map((i) => i.message), [problem], `${what}: refused in the rule's words`);
        else assert.equal(parsed.success && (parsed.data as Record<string, unknown>)[field], value, `${what}: taken as it is`);
      }
      assert.equal((schema.parse({ [field]: '' }) as Record<string, unknown>)[field], undefined, `${route} ${field}: empty is no filter`);
    }
  }
});
