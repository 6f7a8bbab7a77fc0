// The Jobs drawer reads a job's follow-up every 5 s until it is settled - ended, read after the end, and nothing in
// progress but events waiting for someone (a handoff, a Deferred event) - then once a minute while such events
// remain, and not at all when nothing is in progress. An older replica's answer (no `waiting`) never settles it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUTCOME_POLL_MS, OUTCOME_WAITING_POLL_MS, outcomePollMs, outcomeSettled } from './outcomePolling.ts';

const ENDED = '2026-12-05T07:00:00.000Z';
const AFTER = '2026-12-05T07:00:01.000Z';
const BEFORE = '2026-12-05T06:59:59.000Z';
const read = (inProgress: number, waiting = 0, at = AFTER) => ({ counts: { completed: 3, failedAgain: 1, stillFailed: 0, inProgress, skipped: 0, unknown: 0 }, waiting, at });
const op = (state: 'queued' | 'running' | 'paused' | 'completed' | 'cancelled' | 'failed', finishedAt: string | null = ENDED) => ({ state, finishedAt });

test('a job still going, or whose events are still being handled, is read again', () => {
  for (const state of ['queued', 'running', 'paused'] as const) assert.equal(outcomePollMs(op(state, null), read(0)), OUTCOME_POLL_MS, state);
  assert.equal(outcomePollMs(op('completed'), read(2)), OUTCOME_POLL_MS);
  assert.equal(outcomePollMs(op('completed'), read(2, 1)), OUTCOME_POLL_MS, 'one of the two is on its way');
  assert.equal(outcomePollMs(op('completed'), undefined), OUTCOME_POLL_MS, 'not read yet');
});

test('an ended job with nothing in progress is not read again', () => {
  for (const state of ['completed', 'cancelled', 'failed'] as const) assert.equal(outcomePollMs(op(state), read(0)), false, state);
});

test('an ended job whose only events in progress wait for someone (handoffs, Deferred) is read again only slowly', () => {
  // Read every 5 s, it queried the store all night for a handoff nobody reports; stopped outright, a Deferred event
  // whose blocker had just completed (replayed a moment later) stayed "1 in progress" for good.
  assert.equal(outcomePollMs(op('completed'), read(4, 4)), OUTCOME_WAITING_POLL_MS);
  assert.equal(outcomePollMs(op('cancelled'), read(1, 1)), OUTCOME_WAITING_POLL_MS);
  assert.ok(OUTCOME_WAITING_POLL_MS > OUTCOME_POLL_MS);
  // The line says how old it is and offers Refresh, as when reads stop.
  assert.equal(outcomeSettled(op('completed'), read(4, 4)), true);
  assert.equal(outcomeSettled(op('completed'), read(0)), true);
  assert.equal(outcomeSettled(op('completed'), read(2, 1)), false);
  assert.equal(outcomeSettled(op('running', null), read(0)), false);
});

test('an answer from an older replica (no waiting count) keeps the reads going', () => {
  // Old code compared inProgress with undefined (false): it stopped, with events on their way, on a rolling deploy.
  const { waiting: _w, ...older } = read(3);
  assert.equal(outcomePollMs(op('completed'), older), OUTCOME_POLL_MS);
  assert.equal(outcomeSettled(op('completed'), older), false);
});

test('an answer read before the job ended never stops the reads', () => {
  assert.equal(outcomePollMs(op('completed'), read(0, 0, BEFORE)), OUTCOME_POLL_MS);
  assert.equal(outcomePollMs(op('completed'), read(3, 3, BEFORE)), OUTCOME_POLL_MS);
});

test('the end of a job is a new outcome query, so the line is read once after the end', async () => {
  // Read before the end, the last answer can have nothing in progress (events not reached yet are still failed);
  // under the same key the interval would then stop on it, and the ended job would show that pre-end answer.
  const { operationOutcomeQuery } = await import('../queries.ts');
  const key = (state: 'running' | 'paused' | 'completed' | 'cancelled') => JSON.stringify(operationOutcomeQuery('op-1', op(state)).queryKey);
  assert.notEqual(key('running'), key('completed'));
  assert.equal(key('running'), key('paused'), 'pausing and resuming keep the query');
  assert.equal(key('completed'), key('cancelled'));
});
