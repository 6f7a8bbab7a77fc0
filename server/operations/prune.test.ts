// Retention of bulk jobs (prune.ts) on the embedded Cosmos server with the real client: nothing deleted a job's
// documents before, so every job - and every confirmation dialog's discarded one, with its frozen selection -
// stayed for ever. An ended job past NIMBUS_JOB_RETENTION_DAYS goes with its control and every selection chunk; a
// recent one and an unfinished old one stay; a discarded job's selection goes when it is discarded. One replica
// sweeps at a time (a lease), each at most once an hour, at most PRUNE_BATCH jobs, and a failed delete is retried
// at the next sweep; a runner that stops mid-sweep ends it between two jobs. Each test removes the jobs it made, so
// no test finds another's. The clocks are injected: jobs' ends are planted in the past, nothing waits for time to pass.
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseStore } from '../../lib/store/index.ts';
import { startStoreFixture, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import type { Manager } from '../manager/manager.ts';
import { CHUNK_DELETES_AT_ONCE, CHUNK_ROWS, JobStore, type Job } from './jobs.ts';
import { JobPruner, PRUNE_EVERY_MS, pruneEndedJobs } from './prune.ts';
import { OperationsRunner } from './runner.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const EP = 'billingendpoint';
const DAY = 24 * 60 * 60_000;
let f: StoreFixture;
let jobs: JobStore;

before(async () => {
  f = await startStoreFixture({ now: () => new Date() });
  jobs = new JobStore(new PlatformDocs({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database }));
});
after(async () => {
  jobs?.docs.close();
  await f?.close();
});

/** The jobs the running test made: removed after it (afterEach), so a later test's sweep or runner never finds them. */
const made: Job[] = [];

/** A job of `n` rows (more than CHUNK_ROWS: several selection documents), held (prepared) or queued. */
async function create(n: number, hold = false): Promise<Job> {
  const rows = Array.from({ length: n }, (_, i) => ({ endpointId: EP, eventId: `e-${i}`, sessionId: 'S-1' }));
  const job = await jobs.create({ kind: 'resubmit', selection: { endpointId: EP }, rows, startedBy: 'tester', ratePerSecond: 0, hold });
  made.push(job);
  return job;
}

/** A job as the runner leaves it: in `state`, ended at `finishedAt` (null: not ended, or an old job without it). */
async function planted(state: Job['state'], finishedAt: number | null, n = CHUNK_ROWS + 1): Promise<Job> {
  const job = await create(n);
  const saved = { ...job, state, startedAt: new Date(finishedAt ?? Date.now()).toISOString(), finishedAt: finishedAt === null ? null : new Date(finishedAt).toISOString() };
  assert.ok(await jobs.save(saved, (await jobs.read(job.operationId))!.etag));
  return saved;
}

/** Which of a job's documents are still stored: the job, its control and each selection chunk. */
async function stored(job: Pick<Job, 'operationId' | 'chunks'>): Promise<string[]> {
  const names = [`job_${job.operationId}`, `jobctl_${job.operationId}`, ...Array.from({ length: job.chunks }, (_, n) => `jobsel_${job.operationId}_${n}`)];
  const present = await Promise.all(names.map(async (name) => ((await jobs.docs.read(name)) ? name.replace(job.operationId, 'ID') : null)));
  return present.filter((p): p is string => p !== null);
}
/**
 * The leases, on a clock that follows `clock` from a year after the last test's: the sweep lease a test left held
 * (it is never released) has run out for the next one.
 */
let leaseEpoch = Date.now();
function leasesFollowing(clock: () => number = Date.now): LeaseStore {
  const base = (leaseEpoch += 365 * DAY);
  const start = clock();
  return new LeaseStore(f.store.database, { now: () => base + clock() - start });
}

const ALL_OF_TWO_CHUNKS = ['job_ID', 'jobctl_ID', 'jobsel_ID_0', 'jobsel_ID_1'];

describe('bulk job retention', () => {
  afterEach(async () => {
    await Promise.all(made.splice(0).map((job) => jobs.remove(job)));
  });

  test('an ended job past the retention goes with its control and every selection chunk; a recent one, and an unfinished old one, stay', async () => {
    // The sweep's clock is 40 days ahead: a job that ended now ended 40 days before it.
    const now = Date.now() + 40 * DAY;
    const old = await planted('completed', now - 31 * DAY);
    const oldCancelled = await planted('cancelled', now - 300 * DAY);
    const recent = await planted('failed', now - 29 * DAY);
    const oldPaused = await planted('paused', null);
    const oldPrepared = await create(3, true);
    // An ended job written before jobs kept their end (none should exist; if one does, its last write counts).
    const noEnd = await planted('failed', null);
    assert.equal(old.chunks, 2);
    assert.deepEqual(await stored(old), ALL_OF_TWO_CHUNKS);

    const pruner = new JobPruner({ jobs, leases: leasesFollowing(), owner: 'replica-a', retentionDays: 30, now: () => now });
    assert.equal(await pruner.sweepIfDue(), 3);

    for (const gone of [old, oldCancelled, noEnd]) assert.deepEqual(await stored(gone), [], `${gone.state} ended past the retention: every document deleted`);
    assert.equal(await jobs.get(old.operationId), null, 'GET /api/operations/{id} reads it as an unknown id (getJob: 404)');
    assert.deepEqual(await stored(recent), ALL_OF_TWO_CHUNKS, 'ended within the retention: kept');
    assert.deepEqual(await stored(oldPaused), ALL_OF_TWO_CHUNKS, 'not ended (paused), however old: kept');
    assert.deepEqual(await stored(oldPrepared), ['job_ID', 'jobctl_ID', 'jobsel_ID_0'], 'prepared (not ended): kept');
    assert.equal((await jobs.rows(recent)).length, CHUNK_ROWS + 1);
  });

  test("a discarded job's selection goes when it is discarded (cancelled or expired); the job stays, answering with no rows, until its retention", async () => {
    const cancelled = await create(CHUNK_ROWS + 1, true);
    assert.deepEqual(await stored(cancelled), ALL_OF_TWO_CHUNKS);
    assert.equal((await jobs.settlePrepared(cancelled.operationId, 'cancel', 'tester')).result, 'discarded');
    assert.deepEqual(await stored(cancelled), ['job_ID', 'jobctl_ID'], 'the audit link still answers; the selection is gone');
    const discarded = (await jobs.get(cancelled.operationId))!;
    assert.equal(discarded.state, 'discarded');
    assert.deepEqual(await jobs.rows(discarded), [], 'its rows read as none (it acted on none), not a missing-part error');
    assert.deepEqual(await jobs.rows(discarded, 10), []);
    // A copy read while it was prepared (a reader racing the discard) copes too.
    assert.deepEqual(await jobs.rows(cancelled), []);

    const expiring = await create(5, true);
    const past = Date.parse(expiring.expiresAt!) + 1;
    assert.equal((await jobs.settlePrepared(expiring.operationId, 'expire', 'runner', past)).result, 'expired');
    assert.deepEqual(await stored(expiring), ['job_ID', 'jobctl_ID']);

    // Its end is its discard time: past the retention, the rest goes too.
    const pruner = new JobPruner({ jobs, leases: leasesFollowing(), owner: 'replica-d', retentionDays: 1, now: () => past + 2 * DAY });
    await pruner.sweepIfDue();
    assert.deepEqual(await stored(cancelled), []);
    assert.deepEqual(await stored(expiring), []);
  });

  test('one replica sweeps at a time, each at most once an hour; the lease passes on once it has run out', async () => {
    let now = Date.now() + 400 * DAY;
    const clock = () => now;
    const leases = leasesFollowing(clock);
    const a = new JobPruner({ jobs, leases, owner: 'replica-1', retentionDays: 30, now: clock });
    const b = new JobPruner({ jobs, leases, owner: 'replica-2', retentionDays: 30, now: clock });

    const first = await planted('completed', now - 31 * DAY, 1);
    assert.ok((await a.sweepIfDue()) >= 1);
    assert.deepEqual(await stored(first), []);

    const second = await planted('completed', now - 31 * DAY, 1);
    assert.equal(await b.sweepIfDue(), 0, 'the other replica finds the sweep lease held');
    now += PRUNE_EVERY_MS / 2;
    assert.equal(await a.sweepIfDue(), 0, 'within the hour: not due on this replica');
    assert.equal(await b.sweepIfDue(), 0, 'within the hour of its own try: not due');
    assert.deepEqual(await stored(second), ['job_ID', 'jobctl_ID', 'jobsel_ID_0']);

    // Replica 1 stopped (it never sweeps again): once its lease ran out, replica 2's next hour sweeps.
    now += PRUNE_EVERY_MS / 2 + 1;
    assert.equal(await b.sweepIfDue(), 1);
    assert.deepEqual(await stored(second), []);
  });

  test('a sweep deletes at most its batch, the first ended first; the rest wait for the next one', async () => {
    // Ended one after the other: a job's last write is its end.
    const ends = [Date.parse('2000-01-01T00:00:00Z'), Date.parse('2000-01-02T00:00:00Z'), Date.parse('2000-01-03T00:00:00Z')];
    const planted3 = [];
    for (const end of ends) planted3.push(await planted('completed', end, 1));
    const before = new Date('2001-01-01T00:00:00Z');
    assert.deepEqual(await pruneEndedJobs(jobs, before, 2), { deleted: 2, failed: 0 });
    assert.deepEqual(
      await Promise.all(planted3.map(async (j) => (await stored(j)).length > 0)),
      [false, false, true],
      'the two that ended first are gone, the latest stays',
    );
    assert.deepEqual(await pruneEndedJobs(jobs, before, 2), { deleted: 1, failed: 0 });
    assert.deepEqual(await stored(planted3[2]!), []);
  });

  test('a delete that fails is logged and retried at the next sweep, and the other jobs are still deleted', async () => {
    const failing = await planted('completed', Date.parse('1999-01-01T00:00:00Z'), 1);
    const other = await planted('completed', Date.parse('1999-01-02T00:00:00Z'), 1);
    // A store that refuses the first job's control document once (a Cosmos 503): its selection is already deleted.
    class RefusesOnce extends JobStore {
      refused = false;
      override async remove(job: Pick<Job, 'operationId' | 'chunks'>): Promise<void> {
        if (!this.refused && job.operationId === failing.operationId) {
          this.refused = true;
          await this.docs.delete(`jobsel_${job.operationId}_0`);
          throw new Error('simulated Cosmos 503 on a delete');
        }
        return super.remove(job);
      }
    }
    const store = new RefusesOnce(jobs.docs);
    let now = Date.parse('1999-06-01T00:00:00Z');
    const pruner = new JobPruner({ jobs: store, leases: leasesFollowing(() => now), owner: 'replica-f', retentionDays: 30, now: () => now });
    assert.equal(await pruner.sweepIfDue(), 1, 'the sweep does not throw; the other job is deleted');
    assert.ok(store.refused);
    assert.deepEqual(await stored(failing), ['job_ID', 'jobctl_ID'], 'left for the next sweep');
    assert.deepEqual(await stored(other), []);
    now += PRUNE_EVERY_MS;
    assert.equal(await pruner.sweepIfDue(), 1, 'the next sweep deletes the rest (a chunk already gone is fine)');
    assert.deepEqual(await stored(failing), []);
  });

  test("the runner sweeps beside its scan, with the console's retention", async () => {
    const old = await planted('completed', Date.now() - 31 * DAY, 1);
    const recent = await planted('completed', Date.now() - 29 * DAY, 1);
    // No job is left to run (every test removes its own), so the runner never sends a command: it is given no Manager.
    assert.deepEqual(await jobs.unfinished(), [], 'no job an earlier test left for the runner to run');
    const runner = new OperationsRunner({ store: f.store, jobs, leases: leasesFollowing(), manager: undefined as unknown as Manager, scanEveryMs: 3_600_000, prune: { retentionDays: 30 } });
    try {
      runner.start();
      await waitFor('the runner deleted the old job', async () => (await stored(old)).length === 0, { timeoutMs: 30_000 });
      assert.deepEqual(await stored(recent), ['job_ID', 'jobctl_ID', 'jobsel_ID_0']);
    } finally {
      await runner.stop();
    }
  });

  test('a runner stopped during a sweep ends it after the job being deleted; the next sweep deletes the rest', async () => {
    const planted3 = [];
    for (let i = 0; i < 10; i++) planted3.push(await planted('completed', Date.now() - 31 * DAY, 2 * CHUNK_ROWS + 1));
    // The first delete waits until stop() has been called: the sweep is under way when the console stops.
    let removes = 0;
    let sweepStarted!: () => void;
    const started = new Promise<void>((r) => (sweepStarted = r));
    let release!: () => void;
    const stopCalled = new Promise<void>((r) => (release = r));
    class Gated extends JobStore {
      override async remove(job: Pick<Job, 'operationId' | 'chunks'>): Promise<void> {
        if (++removes === 1) {
          sweepStarted();
          await stopCalled;
        }
        return super.remove(job);
      }
    }
    const gated = new Gated(jobs.docs);
    const runner = new OperationsRunner({ store: f.store, jobs: gated, leases: leasesFollowing(), manager: undefined as unknown as Manager, scanEveryMs: 3_600_000, prune: { retentionDays: 30 } });
    runner.start();
    await started;
    const stopping = runner.stop();
    release();
    await stopping;
    assert.equal(removes, 1, 'stop() waited for the job being deleted, and the sweep deleted no further job');
    const left = (await Promise.all(planted3.map(async (j) => (await stored(j)).length > 0))).filter(Boolean).length;
    assert.ok(left >= planted3.length - 1, `the other planted jobs are left for the next sweep (${left} of ${planted3.length} left)`);

    const next = new JobPruner({ jobs, leases: leasesFollowing(), owner: 'replica-n', retentionDays: 30 });
    assert.ok((await next.sweepIfDue()) >= left);
    for (const j of planted3) assert.deepEqual(await stored(j), []);
  });

  test("a job's selection chunks are deleted a few at a time, not one after the other", async () => {
    // The same container through a PlatformDocs that counts the deletes in flight.
    class Counting extends PlatformDocs {
      inFlight = 0;
      most = 0;
      override async delete(name: string): Promise<void> {
        this.most = Math.max(this.most, ++this.inFlight);
        try {
          await super.delete(name);
        } finally {
          this.inFlight--;
        }
      }
    }
    const docs = new Counting({ endpoint: f.cosmos.endpoint, key: f.cosmos.key, database: f.database });
    try {
      const counted = new JobStore(docs);
      const held = await create(12 * CHUNK_ROWS + 1, true);
      assert.equal(held.chunks, 13);
      assert.equal((await counted.settlePrepared(held.operationId, 'cancel', 'tester')).result, 'discarded');
      assert.deepEqual(await stored(held), ['job_ID', 'jobctl_ID'], 'every chunk deleted');
      assert.equal(docs.most, CHUNK_DELETES_AT_ONCE, 'the discard had CHUNK_DELETES_AT_ONCE deletes out at once');

      docs.most = 0;
      await counted.remove(await planted('completed', Date.now(), 12 * CHUNK_ROWS + 1));
      assert.equal(docs.most, CHUNK_DELETES_AT_ONCE, "the sweep's remove too");
    } finally {
      docs.close();
    }
  });
});
