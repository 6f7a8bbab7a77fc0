// How a job's event is sorted by its row now: a failed status written after the job started is "failed again";
// one not changed since is "still failed" (refused, not reached, not sent). Pure: rows built here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StatusRow } from '../../lib/store/schemas.ts';
import { classifyRow } from './outcome.ts';

const STARTED = '2026-12-05T03:00:00.000Z';
const row = (status: StatusRow['status'], updatedAt: string, enqueuedAt: string | null = null) => ({ status, updatedAt, enqueuedAt }) as StatusRow;

test('failed after the job started is failed again; failed before it is still failed', () => {
  assert.equal(classifyRow(row('Failed', '2026-12-05T03:00:01.000Z'), STARTED), 'failedAgain');
  assert.equal(classifyRow(row('DeadLettered', '2026-12-05T03:00:01.000Z'), STARTED), 'failedAgain');
  assert.equal(classifyRow(row('Unsupported', '2026-12-05T02:59:59.000Z'), STARTED), 'stillFailed');
  assert.equal(classifyRow(row('Failed', '2026-12-05T03:00:01.000Z'), null), 'stillFailed', 'a job not started retried nothing');
});

test('the other statuses, and a row that is gone or unreadable', () => {
  assert.equal(classifyRow(row('Completed', STARTED), STARTED), 'completed');
  assert.equal(classifyRow(row('Skipped', STARTED), STARTED), 'skipped');
  assert.equal(classifyRow(row('Pending', STARTED), STARTED), 'inProgress');
  assert.equal(classifyRow(row('Deferred', STARTED), STARTED), 'inProgress');
  assert.equal(classifyRow(null, STARTED), 'unknown');
  assert.equal(classifyRow(undefined, STARTED), 'unknown');
});

test('a failed row rewritten after the job started with its old failure (a restore) is still failed, not failed again', () => {
  // The Manager could not send the event's command and put the row back: written now, the failure from before.
  assert.equal(classifyRow(row('Failed', '2026-12-05T03:00:05.000Z', '2026-12-05T02:10:00.000Z'), STARTED), 'stillFailed');
  assert.equal(classifyRow(row('Failed', '2026-12-05T03:00:05.000Z', '2026-12-05T03:00:04.000Z'), STARTED), 'failedAgain');
});
