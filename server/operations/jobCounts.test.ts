// The outcomes a pause keeps on the job (Job.pausedLot, jobCounts.ts) as later runs change it: a newer pause of
// the same rows replaces them - also when it kept nothing - and a run's cursor passing their rows drops them, rows
// not yet passed staying for a cancel. Pure logic on the job document; the runner's side is in resume.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Job } from './jobs.ts';
import { passPausedLot, pausedLotOutcomes, setPausedLot, type StepOutcome } from './jobCounts.ts';

const refused: StepOutcome = { kind: 'refused', status: 409, detail: 'already sent by alice' };
const failed: StepOutcome = { kind: 'failed', status: 503, detail: 'broker unavailable' };

/** Only the fields the paused-lot logic reads. */
const jobAt = (cursor: number): Job => ({ cursor }) as Job;

test('a newer pause that kept nothing of the lot replaces what an older pause kept', () => {
  const job = jobAt(0);
  setPausedLot(job, [{ kind: 'done' }, refused, failed]);
  setPausedLot(job, [{ kind: 'done' }, undefined, undefined]);
  assert.equal(job.pausedLot, undefined);
  assert.deepEqual(pausedLotOutcomes(job), []);
});

test("a newer pause of a smaller lot replaces its rows' kept outcomes and leaves those past it", () => {
  const job = jobAt(0);
  setPausedLot(job, [undefined, refused, undefined, failed]);
  setPausedLot(job, [{ kind: 'done' }, undefined]);
  assert.deepEqual(job.pausedLot, [{ row: 3, ...failed }]);
  assert.deepEqual(pausedLotOutcomes(job)[3], failed);
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
