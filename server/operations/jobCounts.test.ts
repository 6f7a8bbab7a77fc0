// The outcomes a pause keeps on the job (Job.pausedLot, jobCounts.ts) as later runs change it: a newer pause of
// the same rows replaces those it settled - also when it kept nothing of them - and keeps them where its step was
// stopped; a run's cursor passing their rows drops them, rows not yet passed staying for a cancel. And a stopped run's
// outcomes kept late (keepLateOutcomes), after another run wrote the job first. Pure logic on the job document (an
// in-memory stand-in for its store); the runner's side is in resume.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Job, JobStore } from './jobs.ts';
import { keepLateOutcomes, passPausedLot, pausedLotOutcomes, setPausedLot, type StepOutcome } from './jobCounts.ts';

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

/**
 * keepLateOutcomes' store: the job document and its version in memory; `beforeSave` runs once before the first
 * write is answered (another run writing first).
 */
function storeOf(job: Job, beforeSave?: (job: Job) => void) {
  let doc = structuredClone(job);
  let etag = 1;
  let writes = 0;
  const jobs = {
    read: async () => ({ job: structuredClone(doc), etag: String(etag) }),
    save: async (j: Job, at: string) => {
      if (writes++ === 0 && beforeSave) {
        beforeSave(doc);
        etag++;
      }
      if (at !== String(etag)) return undefined;
      doc = structuredClone(j);
      return String(++etag);
    },
  };
  return { jobs: jobs as unknown as JobStore, now: () => doc };
}

const running = (cursor: number, pausedLot?: Job['pausedLot']): Job => ({ operationId: 'op', state: 'running', cursor, inFlightTo: 4, ...(pausedLot ? { pausedLot } : {}) }) as Job;

test("a stopped run's late outcomes are kept where the job's cursor has not passed and nothing is kept; done and stopped steps are not", async () => {
  const { jobs, now } = storeOf(running(1, [{ row: 3, ...refused }]));
  const kept = await keepLateOutcomes(jobs, 'op', { from: 0, outcomes: [failed, { kind: 'done' }, refused, failed] });
  assert.equal(kept, 1);
  assert.deepEqual(now().pausedLot, [{ row: 2, ...refused }, { row: 3, ...refused }], 'row 0 passed, row 1 done, row 3 kept already: only row 2 added');
});

test("a stopped run's late outcomes leave an ended job alone: its cancel's listed rows are the late count's", async () => {
  const { jobs, now } = storeOf({ ...running(0), state: 'cancelled', awaitingReceipt: [2] });
  assert.equal(await keepLateOutcomes(jobs, 'op', { from: 0, outcomes: [undefined, undefined, refused] }), 0);
  assert.equal(now().pausedLot, undefined);
});

// The successor wrote first: the write is refused, the newer version read again, and what the successor kept stands.
test("a stopped run's late outcomes whose write is refused are merged into the newer version, not over what it keeps", async () => {
  const { jobs, now } = storeOf(running(0), (doc) => (doc.pausedLot = [{ row: 2, ...failed }]));
  assert.equal(await keepLateOutcomes(jobs, 'op', { from: 2, outcomes: [refused, failed] }), 1);
  assert.deepEqual(now().pausedLot, [{ row: 2, ...failed }, { row: 3, ...failed }]);
});
