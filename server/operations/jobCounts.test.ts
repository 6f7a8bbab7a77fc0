// The outcomes a pause keeps on the job (Job.pausedLot, jobCounts.ts) as later runs change it: a newer pause of
// the same rows replaces those it settled - also when it kept nothing of them - and keeps them where its step was
// stopped; a run's cursor passing their rows drops them, rows not yet passed staying for a cancel. Pure logic on the job document; the runner's side is in resume.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Job } from './jobs.ts';
import { passPausedLot, pausedLotOutcomes, setPausedLot, type StepOutcome } from './jobCounts.ts';

const refused: StepOutcome = { kind: 'refused', status: 409, detail: 'already sent by alice' };
const failed: StepOutcome = { kind: 'failed', status: 503, detail: 'broker unavailable' };

/** Only the fields the paused-lot logic reads. */
const jobAt = (cursor: number): Job => ({ cursor }) as Job;

test('a newer pause that settled the lot with nothing to keep replaces what an older pause kept', () => {
  const job = jobAt(0);
  setPausedLot(job, [{ kind: 'done' }, refused, failed]);
  setPausedLot(job, [{ kind: 'done' }, { kind: 'done' }, { kind: 'done' }]);
  assert.equal(job.pausedLot, undefined);
  assert.deepEqual(pausedLotOutcomes(job), []);
});

test("a newer pause of a smaller lot replaces its rows' kept outcomes and leaves those past it", () => {
  const job = jobAt(0);
  setPausedLot(job, [undefined, refused, undefined, failed]);
  setPausedLot(job, [{ kind: 'done' }, { kind: 'done' }]);
  assert.deepEqual(job.pausedLot, [{ row: 3, ...failed }]);
  assert.deepEqual(pausedLotOutcomes(job)[3], failed);
});

// Before, a stopped step replaced the kept outcome with nothing, where a cancel in the same lot counts it (runner.ts).
test('a newer pause whose step of a row was stopped keeps what was kept of it; a row it settled is replaced', () => {
  const job = jobAt(0);
  setPausedLot(job, [refused, undefined, failed]);
  setPausedLot(job, [undefined, failed, { kind: 'done' }]);
  assert.deepEqual(job.pausedLot, [{ row: 0, ...refused }, { row: 1, ...failed }]);
});

test('the cursor passing part of a kept lot drops only the rows it passed', () => {
  const job = jobAt(0);
  setPausedLot(job, [refused, undefined, failed]);
  job.cursor = 2;
  passPausedLot(job);
  assert.deepEqual(job.pausedLot, [{ row: 2, ...failed }]);
  job.cursor = 3;
  passPausedLot(job);
  assert.equal(job.pausedLot, undefined);
});
