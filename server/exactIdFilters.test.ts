// The console's id filters: one rule for which values are a filter, which the list, Flow, Audit, metrics and Agent
// receive routes follow (a bulk selection too: server/api.test.ts) (and the URL state: components/urlState.test.ts), and the same rule for
// the ids a command names (the Agent API's publish, a resubmission's event type). Pure: no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXACT_ID_FILTERS, exactIdProblem, exactIdTargetProblem, type ExactIdFilter } from './exactIdFilters.ts';
import { eventListQuerySchema } from './queries.ts';
import { flowQuerySchema } from './flow.ts';
import { auditQuerySchema } from './audit/auditLog.ts';
import { metricsQuerySchema } from './history/metrics.ts';
import { receiveQueryFields, publishBody } from './agent/schemas.ts';
import { resubmitBody } from './schemas.ts';

const FIELDS = Object.keys(EXACT_ID_FILTERS) as ExactIdFilter[];

test('an id is a filter as it is, spaces and all, up to its length; empty is no filter', () => {
  for (const field of FIELDS) {
    const { max } = EXACT_ID_FILTERS[field];
    // Endpoint ids have no spaces (the catalog's names): theirs are in the next test.
    const spaced = field === 'endpointId' ? [] : ['S1 ', ' S1', ' a b '];
    for (const ok of ['', 'S1', ...spaced, 'x'.repeat(max)]) assert.equal(exactIdProblem(field, ok), undefined, `${field} ${JSON.stringify(ok)}`);
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

test('an endpoint id is made of the catalog name characters: one with a space or another character names no endpoint', async () => {
  const { NAME_PATTERN } = await import('@nimbus/sdk/contract');
  assert.equal(String(EXACT_ID_FILTERS.endpointId.chars), String(NAME_PATTERN), "the rule's characters are the catalog's");
  for (const ok of ['crmendpoint', 'a.b_c-1']) {
    assert.equal(exactIdProblem('endpointId', ok), undefined, ok);
    assert.equal(exactIdTargetProblem('endpointId', ok), undefined, ok);
  }
  for (const bad of ['crmendpoint ', ' crmendpoint', 'crm endpoint', 'crm/endpoint', 'crmendpoint\n']) {
    assert.equal(exactIdProblem('endpointId', bad), 'an endpoint id is made of letters, digits, ".", "_" and "-" alone (no spaces): this one names no endpoint', JSON.stringify(bad));
    assert.equal(exactIdTargetProblem('endpointId', bad), 'an endpoint id is made of letters, digits, ".", "_" and "-" alone (no spaces): this one names no endpoint', JSON.stringify(bad));
  }
});

/** Each route's id filters, all by the one rule. */
const ROUTES = [
  ['list', eventListQuerySchema, ['eventTypeId', 'sessionId', 'eventId']],
  ['flow', flowQuerySchema, ['eventTypeId']],
  ['audit', auditQuerySchema, ['endpointId', 'eventId']],
  ['metrics', metricsQuerySchema, ['endpointId', 'eventTypeId']],
  ['agent receive', receiveQueryFields.extend({ endpointId: receiveQueryFields.shape.endpointId.optional() }), ['eventTypeId']],
] as const;

test('the list, Flow, Audit, metrics and Agent receive routes refuse what the rule refuses, in its words, and take the rest as it is', () => {
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

test('an id a command names is taken as sent, spaces and all; empty, spaces alone and over-long are refused in words', () => {
  for (const field of FIELDS) {
    const { max } = EXACT_ID_FILTERS[field];
    const spaced = field === 'endpointId' ? [] : ['S1 ', ' S1'];
    for (const ok of ['S1', ...spaced, 'x'.repeat(max)]) assert.equal(exactIdTargetProblem(field, ok), undefined, `${field} ${JSON.stringify(ok)}`);
  }
  assert.equal(exactIdTargetProblem('sessionId', ''), 'a session id is empty');
  assert.equal(exactIdTargetProblem('sessionId', ' \t'), 'a session id of spaces alone names nothing; ids are taken exactly as sent');
  assert.equal(exactIdTargetProblem('eventTypeId', 'x'.repeat(261)), 'an event type id longer than 260 characters names nothing; no event type id is that long');

  // The Agent API's publish and the resubmit body: the value sent is the value used, never trimmed into another id.
  const publish = (fields: Record<string, string>) => publishBody.safeParse({ eventTypeId: 'InvoiceIssued', payload: {}, ...fields });
  assert.deepEqual(publish({ eventTypeId: ' InvoiceIssued', sessionId: 'INV-9 ' }).data, { eventTypeId: ' InvoiceIssued', sessionId: 'INV-9 ', payload: {} });
  assert.deepEqual(publish({ sessionId: '  ' }).error?.issues.map((i) => [i.path.join('.'), i.message]), [['sessionId', exactIdTargetProblem('sessionId', '  ')]]);
  assert.deepEqual(publish({ eventTypeId: '' }).error?.issues.map((i) => [i.path.join('.'), i.message]), [['eventTypeId', 'an event type id is empty']]);
  assert.equal(resubmitBody.parse({ payload: {}, eventTypeId: ' OrderPlaced' })?.eventTypeId, ' OrderPlaced');
  assert.deepEqual(resubmitBody.safeParse({ payload: {}, eventTypeId: '   ' }).error?.issues.map((i) => i.message), [exactIdTargetProblem('eventTypeId', '   ')]);
});

test('an id a command names shows its lengths in its JSON Schema (the MCP tools advertise them), and a selection refuses an empty endpoint', async () => {
  const { z } = await import('zod');
  const { exactIdTarget } = await import('./exactIdFilterSchema.ts');
  const { selectionSchema } = await import('./operations/selection.ts');
  assert.deepEqual(z.toJSONSchema(exactIdTarget('sessionId')), { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string', minLength: 1, maxLength: 128 });
  assert.equal((z.toJSONSchema(exactIdTarget('eventTypeId')) as { maxLength?: number }).maxLength, 260);
  // '' was a 400 before the rule and stays one: read as no filter it acted on the group on every endpoint.
  const groupId = 'a'.repeat(20);
  assert.deepEqual(selectionSchema.safeParse({ endpointId: '', groupId }).error?.issues.map((i) => i.message), ['an endpoint id is empty']);
  assert.equal(selectionSchema.safeParse({ groupId }).success, true, 'left out: the group on every endpoint the caller may act on');
  assert.match(selectionSchema.safeParse({ endpointId: ' billingendpoint', groupId }).error?.issues[0]?.message ?? '', /names no endpoint/);
});
