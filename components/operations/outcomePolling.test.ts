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
