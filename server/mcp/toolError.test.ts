// The text of an MCP tool error: what a route would answer for the same error (server/http.ts describeError). A
// failed change is audited with describeError's status and reason (tools.ts run, http.ts auditingFailure); the
// tool error said "internal error" for everything but an HttpError, so a busy store was audited 503 "busy" while the
// caller read an internal error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { StoreInputError, StoreThrottledError } from '../../lib/store/index.ts';
import { describeError, HttpError } from '../http.ts';
import { toolError } from './tools.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;

test('a tool error says the status, error and detail a route answers for the same error', () => {
  for (const err of [new StoreThrottledError('resubmit', 2000), new StoreInputError('pageSize must be a positive integer (got 0)'), new HttpError(404, 'not found', 'no event evt-1')]) {
    const answer = describeError(err);
    const r = toolError(err);
    assert.equal(r.isError, true);
    assert.equal(text(r), `${answer.error} (${answer.status}): ${answer.detail}`, err.name);
  }
});

test('refusals say refused or too many requests; an unknown failure says nothing of itself', () => {
  assert.equal(text(toolError(new HttpError(403, 'forbidden', 'resubmit needs the Operator role'))), 'refused (403): resubmit needs the Operator role');
  assert.equal(text(toolError(new HttpError(429, 'too many requests', 'try again in 3 s'))), 'too many requests (429): try again in 3 s');
  const r = toolError(new Error('connection string AccountKey=secret'));
  assert.equal(text(r), 'internal error: the console could not complete the call');
});
