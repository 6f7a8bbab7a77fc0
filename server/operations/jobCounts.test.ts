// The outcomes a pause keeps on the job (Job.pausedLot, jobCounts.ts) as later runs change it: a newer pause of
// the same rows replaces those it settled - also when it kept nothing of them - and keeps them where its step was
// stopped; a run's cursor passing their rows drops them, rows not yet passed staying for a cancel. And a stopped run's
// outcomes kept late (keepLateOutcomes), after another run wrote the job first. Pure logic on the job document (an
// in-memory stand-in for its store); the runner's side is in resume.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jobView, type Job, type JobStore } from './jobs.ts';
import { log, setConsoleLogSink } from '../log.ts';
import { keepLateOutcomes, lateOutcomesOnly, passPausedLot, pausedLotOutcomes, setPausedLot, type StepOutcome } from './jobCounts.ts';

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
 * keepLateOutcomes' store: the job document and its version in memory, each write stamping updatedAt as JobStore.save
 * does; `beforeSave` runs before the first write is answered (another run writing first) - `everySave`: before each.
 */
function storeOf(job: Job, beforeSave?: (job: Job) => void, { everySave = false } = {}) {
  let doc = structuredClone(job);
  let etag = 1;
  let writes = 0;
  const jobs = {
    read: async () => ({ job: structuredClone(doc), etag: String(etag) }),
    save: async (j: Job, version: string, at = new Date()) => {
      if ((writes++ === 0 || everySave) && beforeSave) {
        beforeSave(doc);
        etag++;
      }
      if (version !== String(etag)) return undefined;
      doc = { ...structuredClone(j), updatedAt: at.toISOString() };
      return String(++etag);
    },
  };
  return { jobs: jobs as unknown as JobStore, now: () => doc, writes: () => writes };
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

// Before, the fifth refused write gave up with nothing logged: the outcomes were dropped unseen.
test("a stopped run's late outcomes whose every write is refused are given up with a warning naming the job and their count, no details", async () => {
  const { jobs, now, writes } = storeOf(running(0), (doc) => (doc.cursor = 0), { everySave: true });
  const records: Array<Record<string, unknown>> = [];
  const level = log.level;
  setConsoleLogSink((record) => records.push(JSON.parse(record)));
  log.level = 'warn';
  try {
    assert.equal(await keepLateOutcomes(jobs, 'op', { from: 1, outcomes: [refused, { kind: 'done' }, failed] }), 0);
  } finally {
    log.level = level;
    setConsoleLogSink(undefined);
  }
  assert.equal(writes(), 5, 'five writes tried');
  assert.equal(now().pausedLot, undefined);
  const warned = records.filter((r) => r.operationId === 'op');
  assert.equal(warned.length, 1, 'one warning');
  assert.equal(warned[0]!.level, 40);
  assert.equal(warned[0]!.outcomes, 2, 'the refusal and the send failure not kept');
  assert.doesNotMatch(JSON.stringify(warned[0]), /already sent by alice|broker unavailable/, "no outcome's detail");
});

// Before, the late write moved updatedAt and left runningMs: the view (runningMs plus the time since updatedAt) lost
// the time since the successor's last save, and the job's speed rose with it.
test("a stopped run's late write of a running job moves runningMs with updatedAt, so the job's running time does not drop", async () => {
  // The successor's last save, 10 s before: the view counts those 10 s as running.
  const savedAt = new Date(Date.now() - 10_000).toISOString();
  const before: Job = { ...running(0), startedAt: savedAt, updatedAt: savedAt, runningMs: 1_000, done: 10, refused: 0, failed: 0, total: 20 };
  const { jobs, now } = storeOf(before);
  assert.equal(await keepLateOutcomes(jobs, 'op', { from: 0, outcomes: [refused] }), 1);
  const after = now();
  assert.equal(after.runningMs - 1_000, Date.parse(after.updatedAt) - Date.parse(savedAt), 'runningMs moved by exactly the time updatedAt moved');
  const at = Date.parse(after.updatedAt) + 1;
  assert.equal(jobView(after, null, at).perSecond, jobView(before, null, at).perSecond, 'the speed the view shows is as without the write');
});

test("a stopped run's late write of a paused job leaves runningMs: it was not running", async () => {
  const savedAt = '2026-01-01T00:00:00.000Z';
  const { jobs, now } = storeOf({ ...running(0), state: 'paused', startedAt: savedAt, updatedAt: savedAt, runningMs: 1_000 });
  assert.equal(await keepLateOutcomes(jobs, 'op', { from: 0, outcomes: [refused] }), 1);
  assert.equal(now().runningMs, 1_000);
});

// Before, a late outcome never replaced a kept one: a send failure an older run's pause kept, the job resumed, the
// resumed run refused on that row and its write refused (a successor paused the job first), was counted failed -
// the older step's kind, where a newer pause's lot replaces it (setPausedLot: the run that stepped the row last).
test("a stopped run's late outcome replaces a kept outcome the run had read before stepping the row, and only that one", async () => {
  const older = { row: 2, ...failed };
  const { jobs, now } = storeOf(running(0, [older, { row: 3, ...failed }]));
  const kept = await keepLateOutcomes(jobs, 'op', { from: 2, outcomes: [refused, refused], superseded: [older] });
  assert.equal(kept, 1);
  assert.deepEqual(now().pausedLot, [{ row: 2, ...refused }, { row: 3, ...failed }], 'row 3 was kept after the run read the job: it stands');
});

test("a stopped run's late outcome the same as the kept one writes nothing", async () => {
  const same = { row: 2, ...refused };
  const { jobs, writes } = storeOf(running(0, [same]));
  assert.equal(await keepLateOutcomes(jobs, 'op', { from: 2, outcomes: [refused], superseded: [same] }), 0);
  assert.equal(writes(), 0, "a successor's next write is not refused for nothing");
});

// A holder whose write was refused carries on only over a stopped run's late outcomes (runner.ts, carryOn): any other
// change - another run's progress, a cancel written - stops it as before.
test('a late write is told apart from any other: only the kept outcomes, runningMs and updatedAt changed', () => {
  const written: Job = { ...running(1, [{ row: 3, ...failed }]), updatedAt: '2026-01-01T00:00:00.000Z', runningMs: 1_000, done: 1 };
  const late: Job = { ...written, updatedAt: '2026-01-01T00:00:05.000Z', runningMs: 6_000, pausedLot: [{ row: 0, ...refused }, { row: 2, ...refused }, { row: 3, ...failed }] };
  assert.deepEqual(lateOutcomesOnly(written, late, 2), [{ row: 2, ...refused }, { row: 3, ...failed }], 'rows before the holder\'s cursor are its own to count');
  assert.deepEqual(lateOutcomesOnly(written, { ...written, pausedLot: undefined } as Job, 1), [], 'no kept outcome left');
  assert.equal(lateOutcomesOnly(written, { ...late, cursor: 2, done: 2 }, 2), undefined, "another run's progress");
  assert.equal(lateOutcomesOnly(written, { ...late, state: 'cancelled' }, 2), undefined, 'a cancel written');
});
