// The Jobs drawer stops reading a job's follow-up once nothing in it can change: ended, nothing in progress.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUTCOME_POLL_MS, outcomePollMs } from './outcomePolling.ts';

const counts = (inProgress: number) => ({ counts: { completed: 3, failedAgain: 1, stillFailed: 0, inProgress, skipped: 0, unknown: 0 } });

test('a job still going, or whose events are still being handled, is read again', () => {
  for (const state of ['queued', 'running', 'paused'] as const) assert.equal(outcomePollMs(state, counts(0)), OUTCOME_POLL_MS, state);
  assert.equal(outcomePollMs('completed', counts(2)), OUTCOME_POLL_MS);
  assert.equal(outcomePollMs('completed', undefined), OUTCOME_POLL_MS, 'not read yet');
});

test('an ended job with nothing in progress is not read again', () => {
  for (const state of ['completed', 'cancelled', 'failed'] as const) assert.equal(outcomePollMs(state, counts(0)), false, state);
});

test('the end of a job is a new outcome query, so the line is read once after the end', async () => {
  // Read before the end, the last answer can have nothing in progress (events not reached yet are still failed);
  // under the same key the interval would then stop on it, and the ended job would show that pre-end answer.
  const { operationOutcomeQuery } = await import('../queries.ts');
  const key = (state: 'running' | 'paused' | 'completed' | 'cancelled') => JSON.stringify(operationOutcomeQuery('op-1', state).queryKey);
  assert.notEqual(key('running'), key('completed'));
  assert.equal(key('running'), key('paused'), 'pausing and resuming keep the query');
  assert.equal(key('completed'), key('cancelled'));
});
