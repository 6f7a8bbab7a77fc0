// A bulk job that stops after a lot was sent and resumes from its saved cursor, on the embedded platform (real
// Service Bus emulator, embedded Cosmos, real clients): each event gets the job's command at most once, even when
// the endpoint has failed it again meanwhile (so the Manager would see a new failure to claim); and a 'duplicate'
// answer for another operator's identical command still Pending is counted refused, naming who sent it, not done.
// A job taken over by another replica while its holder stalled past the lease's expiry: the stalled holder's next
// write is refused, so it neither writes over its successor nor sends another lot, and a cancel made meanwhile stands;
// a holder that stalls after its in-flight mark landed sends nothing either (it checks its lease's expiry first), nor
// one that stalls inside the Manager after its claims (the Manager asks the runner's guard right before the send,
// and undoes the claim), nor one whose one-event retries come after the lease ended; a healthy holder waiting to
// retry a claim being sent elsewhere stops at the operator's cancel, sending nothing, and counts the events its lot had
// found refused or failed - also when it paused first and the paused job was cancelled, even after a resume whose
// replica stopped before stepping the lot again, and when its lease ended in the lot (the job cancelled afterwards,
// by a successor while it was still in the lot, or inside a successor's smaller lot, or paused or cancelled in a
// successor's later lot, or after a later run sent its rows again and stopped in its lot - the cancel's receipt read
// throwing, or its lease ending - where that run's sends count done; or a successor writing the job first, so the lot's
// keeping write is refused: taking it over paused, or with smaller lots and cancelled after its first) or while it applied the operator's cancel and a successor cancelled meanwhile, or its
// cancel's receipt read, or the wish's read that applies the cancel, threw; a cancel read between lots whose receipt
// read throws writes the lots counted since the last progress save; a holder whose lease ends as it applies the operator's
// cancel or pause still writes it, conditionally, and a successor that read the job before it landed stops at its
// own refused write, while a successor whose write a stopped run's late outcomes refused carries the job on at once
// (no scan). A cancelled job counts the
// lot an earlier run sent past the saved cursor, and a receipt a stalled holder writes after its successor's cancel
// counted (found by the holder, or by the cancelling run's second look when the holder read the job before the cancel
// landed); a run whose final write is refused does not log the job completed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { AuditType, LeaseStore, type Lease, type MessageStore } from '../../lib/store/index.ts';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { claimExpectation, claimWrite, Manager } from '../manager/manager.ts';
import { HttpError } from '../http.ts';
import { log, setConsoleLogSink } from '../log.ts';
import { JobStore, jobView, type Job } from './jobs.ts';
import { LEASE_TTL_MS, OperationsRunner } from './runner.ts';
import { freezeSelection } from './selection.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';
import { seedFailedEvents } from './testing/failedEvents.ts';
import { beforeReceiptRead, receiptReadFails } from './testing/receiptReads.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let manager: Manager;

before(async () => {
  stack = await startConsoleTestStack('opsresume');
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});
after(async () => {
  await manager?.close();
  await stack?.close();
});

/** The first progress write after the cursor moved fails (a Cosmos 503), as a crash after a sent lot would lose it. */
class LosesFirstProgress extends JobStore {
  lost = false;
  override async save(job: Job, etag: string): Promise<string | undefined> {
    if (!this.lost && job.cursor > 0) {
      this.lost = true;
      throw new Error('simulated Cosmos 503 on the progress write');
    }
    return super.save(job, etag);
  }
}

function jobStore<J extends JobStore>(make: (docs: PlatformDocs) => J): J {
  return make(new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! }));
}

/** `n` Failed events `prefix-i` on EP, as the Resolver records them: the request with a payload, then its error. */
const seedFailed = (prefix: string, n: number): Promise<string[]> => seedFailedEvents(stack.store, EP, prefix, n);

/** The endpoint handles the command on the event's row and fails again (as the Resolver records it). */
async function failAgain(eventId: string): Promise<void> {
  const row = (await stack.store.listEventRows(EP, eventId))[0]!;
  const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: row.sessionId, parentMessageId: row.lastMessageId, errorType: 'E', errorText: 'boom again' });
  await stack.store.recordOutcome({ history: { ...error, enqueuedAt: new Date().toISOString() } as never, status: error });
  assert.equal((await stack.store.listEventRows(EP, eventId))[0]!.status, 'Failed');
}

/** Resubmit receipts of the event (one per command sent), by the operation they name. */
async function resubmitsOf(eventId: string, operationId: string): Promise<number> {
  const audits = await stack.store.listAudits(eventId, { pageSize: 50 });
  return audits.items.filter((a) => a.type === AuditType.Resubmit && a.data?.includes(`"operationId":"${operationId}"`)).length;
}

function runnerWith(jobs: JobStore): OperationsRunner {
  return new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager, scanEveryMs: 3_600_000 });
}

/** Runs the job on a fresh runner until `what` - its reaching `state` - happened; then stops it and closes `jobs`. */
async function runUntil(what: string, jobs: JobStore, id: string, state: Job['state']): Promise<Job> {
  const runner = runnerWith(jobs);
  runner.kick();
  const end = await jobOnce(what, jobs, id, state);
  await runner.stop();
  jobs.docs.close();
  return end;
}

/** A resubmit job of the listed events, frozen now, unlimited rate. */
async function resubmitJob(jobs: JobStore, ids: string[]): Promise<Job> {
  const rows = await freezeSelection(stack.store, { endpointId: EP, eventIds: ids }, { all: true });
  assert.equal(rows.length, ids.length);
  return jobs.create({ kind: 'resubmit', selection: { endpointId: EP, eventIds: ids }, rows, startedBy: 'tester', ratePerSecond: 0 });
}

/** The job once `what` - its reaching `state` - happened (a final state: the copy read after the wait is still in it). */
async function jobOnce(what: string, jobs: JobStore, id: string, state: Job['state']): Promise<Job> {
  await waitFor(what, async () => (await jobs.get(id))?.state === state, { timeoutMs: 60_000 });
  return (await jobs.get(id))!;
}

/**
 * A resubmit job of `ids` whose first run sent them as one lot, then lost its progress write and ended (the cursor
 * saved is 0, the in-flight mark past the lot); the run has given its lease back.
 */
async function sentWithProgressLost(ids: string[]): Promise<{ jobs: LosesFirstProgress; job: Job }> {
  const jobs = jobStore((docs) => new LosesFirstProgress(docs));
  const job = await resubmitJob(jobs, ids);
  const first = runnerWith(jobs);
  first.kick();
  await waitFor('the lost progress write', () => jobs.lost, { timeoutMs: 60_000 });
  await first.stop();
  return { jobs, job };
}

test('a job resumed after its progress write failed sends no second command to events failed again meanwhile', { timeout: 120_000 }, async () => {
  const ids = await seedFailed('rs', 5);
  // First run: the lot of five is sent, then the progress write fails and the run ends (the cursor saved is 0).
  const { jobs, job } = await sentWithProgressLost(ids);
  const saved = (await jobs.get(job.operationId))!;
  assert.equal(saved.cursor, 0);
  assert.equal(saved.state, 'running');
  for (const id of ids) assert.equal(await resubmitsOf(id, job.operationId), 1, `${id}: one command in the first run`);

  // Meanwhile the endpoint handles each resubmit and fails again: each row is a claimable failure once more.
  for (const id of ids) await failAgain(id);

  // A restarted console resumes the job from cursor 0.
  const end = await runUntil('the job to complete', jobs, job.operationId, 'completed');
  const perEvent = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await resubmitsOf(id, job.operationId)] as const)));
  assert.deepEqual(perEvent, Object.fromEntries(ids.map((id) => [id, 1])), 'each event resubmitted once by the job');
  assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 5, refused: 0, failed: 0 });
  for (const id of ids) assert.equal((await stack.store.listEventRows(EP, id))[0]!.status, 'Failed', `${id} was left failed, not claimed again`);
});

test("another operator's identical resubmit still Pending is counted refused, naming them, not sent", { timeout: 120_000 }, async () => {
  const ids = await seedFailed('dup', 2);
  const jobs = jobStore((docs) => new JobStore(docs));
  const job = await resubmitJob(jobs, ids);
  // After the selection was frozen, alice resubmits the first event by hand: its row is her Pending claim.
  const hers = await manager.execute(EP, ids[0]!, { kind: 'resubmit' }, 'alice');
  assert.equal(hers.outcome, 'sent');

  const end = await runUntil('the job to complete', jobs, job.operationId, 'completed');
  assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 1, refused: 1, failed: 0 });
  assert.equal(end.refusals?.length, 1);
  assert.equal(end.refusals![0]!.eventId, ids[0]);
  assert.match(end.refusals![0]!.detail, /already sent by alice/);
  assert.equal(await resubmitsOf(ids[0]!, job.operationId), 0, 'the job sent nothing for her event');
  assert.equal(await resubmitsOf(ids[1]!, job.operationId), 1);
});

/**
 * Counts the lots the runner hands to the Manager, and those of each job apart (a runner also picks up the jobs an
 * earlier test left unfinished).
 */
class CountingManager extends Manager {
  lots = 0;
  readonly lotsOf = new Map<string, number>();
  override executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
    this.lots++;
    const operationId = args[3]?.operationId;
    if (operationId) this.lotsOf.set(operationId, (this.lotsOf.get(operationId) ?? 0) + 1);
    return super.executeMany(...args);
  }
}

test('a job stopped while it waits for its rate slot sends no further lot', { timeout: 120_000 }, async () => {
  const ids = await seedFailed('stopwait', 3);
  const counting = new CountingManager({ store: stack.store, client: stack.serviceBus.client });
  let stopped: Promise<void> | undefined;
  // The runner stops while it writes the second lot's in-flight mark, the write just before it waits for the lot's
  // slot (one command a second): the wait then begins with the stop signal already aborted.
  class StopsAtSecondLot extends JobStore {
    override async save(job: Job, etag: string): Promise<string | undefined> {
      if (job.inFlightTo === 2 && !stopped) stopped = runner.stop();
      return super.save(job, etag);
    }
  }
  const jobs = jobStore((docs) => new StopsAtSecondLot(docs));
  const rows = await freezeSelection(stack.store, { endpointId: EP, eventIds: ids }, { all: true });
  const job = await jobs.create({ kind: 'resubmit', selection: { endpointId: EP, eventIds: ids }, rows, startedBy: 'tester', ratePerSecond: 1 });
  const runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager: counting, scanEveryMs: 3_600_000 });
  runner.kick();
  await waitFor('the stop at the second lot', () => stopped !== undefined, { timeoutMs: 60_000 });
  await stopped;
  const saved = (await jobs.get(job.operationId))!;
  jobs.docs.close();
  await counting.close();
  assert.equal(counting.lots, 1, 'only the first lot went to the Manager');
  assert.deepEqual([saved.state, saved.cursor, saved.done], ['running', 1, 1], 'the job keeps its place for the next run');
  assert.equal(await resubmitsOf(ids[1]!, job.operationId), 0, 'the second event got no command');
});

test('an event failed in two sessions, resumed after its progress write failed, gets no second command', { timeout: 120_000 }, async () => {
  // The selection keeps the older row (session A); the Manager sends the command on the newer failed row (session B),
  // so the job's receipt names B. The resume check matched receipts by the frozen row's session and sent it again.
  const eventId = 'two-sessions-0';
  for (const sessionId of ['S-two-A', 'S-two-B']) {
    const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { sessionId } });
    const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorType: 'E', errorText: `boom in ${sessionId}` });
    for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  }
  const { jobs, job } = await sentWithProgressLost([eventId]);
  assert.equal(await resubmitsOf(eventId, job.operationId), 1, 'one command in the first run');
  // The endpoint fails the command again on the row it was sent on: that row is a claimable failure once more.
  const claimed = (await stack.store.listEventRows(EP, eventId)).find((r) => r.status === 'Pending');
  assert.ok(claimed, 'one row was claimed by the command');
  const again = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: claimed.sessionId, parentMessageId: claimed.lastMessageId, errorType: 'E', errorText: 'boom again' });
  await stack.store.recordOutcome({ history: { ...again, enqueuedAt: new Date().toISOString() } as never, status: again });

  const end = await runUntil('the job to complete', jobs, job.operationId, 'completed');
  assert.equal(await resubmitsOf(eventId, job.operationId), 1, 'the event was resubmitted once by the job');
  assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 1, refused: 0, failed: 0 });
});

/**
 * Where replica A stalls: at the write of the job's in-flight mark up to `mark` (before it reaches Cosmos, or -
 * `markLands` - after it landed); inside Manager.executeMany once the claim of event `claimOf` is written, before
 * the send; inside it once the command of event `receiptOf` is sent, before its receipt is written; or once
 * Manager.executeMany has answered the lot of event `lotOf`, before the runner steps its events.
 */
type StallAt = { mark: number; markLands: boolean } | { claimOf: string } | { receiptOf: string } | { lotOf: string };

/**
 * `leases`, calling `released()` once it has given back the lease of operation `id()`: the run of that job is then
 * over, its late count included (#run's finally), so a test can look at what it left.
 */
function tellsRelease<L extends LeaseStore>(leases: L, id: () => string, released: () => void): L {
  const release = leases.release.bind(leases);
  leases.release = async (lease) => {
    try {
      await release(lease);
    } finally {
      if (lease.name === `operation_${id()}`) released();
    }
  };
  return leases;
}

/**
 * Replica A, to be stalled past its lease's expiry (a GC pause, a frozen VM, a slow network) at `at` until `goOn()`;
 * from the stall on its lease renewals come back with nothing new (it has not seen its lease end, as a stalled
 * process has not) while its clock reads past the lease's expiry (the stall lasted that long) - or, `seesLeaseEnd`,
 * they answer that the lease is gone (its renewal timer still ran during the stall; `leaseEndSeen` once one did).
 * `over` settles when a run of it has ended and given its lease back (whatever the run did after the stall).
 */
function stalledReplica(at: StallAt, { seesLeaseEnd = false } = {}) {
  let goOn!: () => void;
  const resumed = new Promise<void>((r) => (goOn = r));
  let ended!: () => void;
  const over = new Promise<void>((r) => (ended = r));
  let stalled = false;
  /** Set once the stall has begun (after the mark landed, when it lands). */
  let holding = false;
  /** When the stall began and ended, by the real clock: the test's own wait for B is no part of A's stall. */
  let stallBegan: number | undefined;
  let stallEnded: number | undefined;
  const stall = async () => {
    stalled = true;
    holding = true;
    stallBegan = Date.now();
    await resumed;
    stallEnded = Date.now();
  };
  /**
   * A's clock: the real one less the time the test held A, plus the stall A is meant to have had (past its lease's
   * TTL, short of WITHHELD_UNDO_MS) - so what A's Manager decides after the stall does not depend on how long B took
   * on a loaded machine.
   */
  const aNow = () => {
    const held = stallBegan === undefined ? 0 : (stallEnded ?? Date.now()) - stallBegan;
    return Date.now() - held + (stalled ? LEASE_TTL_MS + 1_000 : 0);
  };
  let leaseEndSeen = false;
  class StallsAtMark extends JobStore {
    target = '';
    /** What the stalled write answered once it went on: the new version, or undefined when refused. */
    answer: string | undefined = 'not yet';
    /** Called with each read of the job once the stall has begun, before the read is answered. */
    afterStallRead: ((read: Awaited<ReturnType<JobStore['read']>>) => Promise<void>) | undefined;
    override async read(id: string): ReturnType<JobStore['read']> {
      const read = await super.read(id);
      if (stalled && id === this.target) await this.afterStallRead?.(read);
      return read;
    }
    override async save(job: Job, etag: string): Promise<string | undefined> {
      if (!('mark' in at) || stalled || job.operationId !== this.target || job.inFlightTo !== at.mark) return super.save(job, etag);
      stalled = true;
      if (at.markLands) this.answer = await super.save(job, etag);
      await stall();
      if (!at.markLands) this.answer = await super.save(job, etag);
      return this.answer;
    }
  }
  class BlindRenewals extends LeaseStore {
    override async renew(lease: Lease, ttlMs: number): Promise<Lease | undefined> {
      if (!stalled) return super.renew(lease, ttlMs);
      if (!seesLeaseEnd) return lease;
      leaseEndSeen = true;
      return undefined;
    }
  }
  const leases = tellsRelease(new BlindRenewals(stack.store.database, { now: () => Date.now() + (stalled ? LEASE_TTL_MS + 1_000 : 0) }), () => jobs.target, ended);
  const jobs = jobStore((docs) => new StallsAtMark(docs));
  // The Manager's claims go through the store as ever; only their answer is held, as a process paused just after
  // the claims' bulk write returned would hold it.
  const store = new Proxy(stack.store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (name === 'writeStatuses' && 'claimOf' in at) {
        return async (...args: Parameters<MessageStore['writeStatuses']>) => {
          const written = await target.writeStatuses(...args);
          if (!stalled && args[0].some((w) => w.input.eventId === at.claimOf)) await stall();
          return written;
        };
      }
      if (name === 'recordAudits' && 'receiptOf' in at) {
        return async (...args: Parameters<MessageStore['recordAudits']>) => {
          if (!stalled && args[0].some((w) => w.eventId === at.receiptOf)) await stall();
          return target.recordAudits(...args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  class StallsAfterLot extends CountingManager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const answers = await super.executeMany(...args);
      if ('lotOf' in at && !stalled && args[0].some((t) => t.eventId === at.lotOf)) await stall();
      return answers;
    }
  }
  const counting = new StallsAfterLot({ store, client: stack.serviceBus.client, now: aNow });
  const finished: Job[] = [];
  // Lots of one, so the in-flight mark is written before each event's command.
  const runner = new OperationsRunner({ store: stack.store, jobs, leases, manager: counting, scanEveryMs: 3_600_000, concurrency: 1, onFinished: (j) => void finished.push(j) });
  return { jobs, runner, manager: counting, finished, goOn, over, at, stalled: () => holding, leaseEndSeen: () => leaseEndSeen };
}

/**
 * A resubmit job of three events, run by replica A until it stalls at its second lot (its first lot sent): at the
 * lot's in-flight mark, before the mark's write reaches Cosmos or (`markLands`) after it landed, or - `inside` -
 * inside Manager.executeMany once the lot's claim is written.
 */
async function stalledAtSecondLot(prefix: string, where: { markLands?: boolean; inside?: boolean } = {}) {
  const ids = await seedFailed(prefix, 3);
  const rowsBefore = await Promise.all(ids.map(async (id) => (await stack.store.listEventRows(EP, id))[0]!));
  const a = stalledReplica(where.inside ? { claimOf: ids[1]! } : { mark: 2, markLands: where.markLands ?? false });
  const job = await resubmitJob(a.jobs, ids);
  a.jobs.target = job.operationId;
  a.runner.kick();
  await waitFor("replica A stalled at its second lot", () => a.stalled(), { timeoutMs: 60_000 });
  return { ids, a, job, rowsBefore };
}

/**
 * Lets the stalled replica A go on, not knowing its lease ended, once B has left the job as `end`; when A's run is
 * over, checks that A's stalled mark write was refused (or, when it had landed before B read the job, accepted),
 * that A handed the Manager no further lot than the `lots` it had when it stalled, and that the job is still as B
 * left it, recorded finished once, by B.
 */
async function goOnAfter(a: ReturnType<typeof stalledReplica>, b: ReturnType<typeof successorReplica>, end: Job, lots = 1): Promise<void> {
  await b.runner.stop();
  a.goOn();
  await a.over;
  await a.runner.stop();
  const now = await b.jobs.get(end.operationId);
  a.jobs.docs.close();
  b.jobs.docs.close();
  await a.manager.close();
  if ('mark' in a.at && a.at.markLands) assert.equal(typeof a.jobs.answer, 'string', "A's in-flight mark write was accepted (before B read the job)");
  else if ('mark' in a.at) assert.equal(a.jobs.answer, undefined, "A's in-flight mark write was refused (B wrote the job since A read it)");
  assert.equal(a.manager.lotsOf.get(end.operationId), lots, 'A handed no further lot to the Manager');
  assert.deepEqual(now, end, 'the job is as B left it');
  const recorded = [a, b].map((r) => r.finished.filter((j) => j.operationId === end.operationId).length);
  assert.deepEqual(recorded, [0, 1], 'the job was recorded finished once, by B');
}

/** Replica B, whose clock is past replica A's lease (A's TTL has run out for it): it takes the job over. */
function successorReplica(make: (docs: PlatformDocs) => JobStore = (docs) => new JobStore(docs)) {
  const jobs = jobStore(make);
  const finished: Job[] = [];
  const leases = new LeaseStore(stack.store.database, { now: () => Date.now() + LEASE_TTL_MS + 1_000 });
  const runner = new OperationsRunner({ store: stack.store, jobs, leases, manager, scanEveryMs: 3_600_000, onFinished: (j) => void finished.push(j) });
  return { jobs, runner, finished };
}

/** The operator cancels the job while replica A is stalled; replica B takes it over and cancels it. */
async function cancelledBySuccessor(operationId: string): Promise<{ b: ReturnType<typeof successorReplica>; end: Job }> {
  const b = successorReplica();
  await b.jobs.setControl(operationId, 'cancel', 'operator');
  b.runner.kick();
  return { b, end: await jobOnce('B to cancel the job', b.jobs, operationId, 'cancelled') };
}

test('a runner that lost its lease while stalled writes nothing over its successor and sends no further lot', { timeout: 120_000 }, async () => {
  const { ids, a, job } = await stalledAtSecondLot('lease');
  assert.equal(a.manager.lotsOf.get(job.operationId), 1, 'A sent its first lot before it stalled');

  // Meanwhile A's lease runs out: replica B takes the job over and completes it (A's first event found by its receipt).
  const b = successorReplica();
  b.runner.kick();
  const end = await jobOnce('B to complete the job', b.jobs, job.operationId, 'completed');
  await goOnAfter(a, b, end);
  assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 3, refused: 0, failed: 0 });
  for (const id of ids) assert.equal(await resubmitsOf(id, job.operationId), 1, `${id}: one command`);
});

/** The operator cancels while replica A is stalled at its second lot; B applies the cancel; A then sends nothing. */
async function cancelWhileStalled(prefix: string, markLands: boolean): Promise<void> {
  const { ids, a, job } = await stalledAtSecondLot(prefix, { markLands });
  assert.equal(a.manager.lotsOf.get(job.operationId), 1, 'A sent its first lot before it stalled');

  // The operator cancels (the route writes the wish, never the job: JobStore.setControl), and A's lease runs out.
  const b = successorReplica();
  await b.jobs.setControl(job.operationId, 'cancel', 'operator');
  b.runner.kick();
  const end = await jobOnce('B to cancel the job', b.jobs, job.operationId, 'cancelled');
  await goOnAfter(a, b, end);
  assert.equal(await resubmitsOf(ids[0]!, job.operationId), 1, 'the event sent before the cancel');
  for (const id of ids.slice(1)) assert.equal(await resubmitsOf(id, job.operationId), 0, `${id}: no command after the cancel`);
}

test('a cancel made while the lease holder is stalled stands: the successor cancels, the stalled runner sends nothing', { timeout: 120_000 }, async () => {
  await cancelWhileStalled('leasecancel', false);
});

// Before, only the write of the in-flight mark guarded a send: a holder that stalled after that write landed (in the
// receipt reads, the rate slot, just before the Manager) sent its lot after the cancel, its progress write refused
// only afterwards. Now the runner checks its lease's expiry right before it sends.
test('a lease holder stalled after its in-flight mark landed sends nothing after a cancel made meanwhile', { timeout: 120_000 }, async () => {
  await cancelWhileStalled('leasemark', true);
});

// Before, the check of the lease came before Manager.executeMany only: a stall inside it - after the claims were
// written, before the broker send - sent the lot after the successor's cancel. The Manager now asks the runner's
// guard right before the send. Then (before the undo) the withheld claim stayed: the cancelled job left the event
// Pending, a command nothing would send; now the claim is undone and audited, the event as it was before the job.
test('a lease holder stalled inside the Manager, its claims written, sends nothing after a cancel made meanwhile and undoes its claim', { timeout: 120_000 }, async () => {
  const { ids, a, job, rowsBefore } = await stalledAtSecondLot('leaseinside', { inside: true });
  assert.equal(a.manager.lotsOf.get(job.operationId), 2, 'A handed its second lot to the Manager, and stalled in it');
  const b = successorReplica();
  await b.jobs.setControl(job.operationId, 'cancel', 'operator');
  b.runner.kick();
  const end = await jobOnce('B to cancel the job', b.jobs, job.operationId, 'cancelled');
  await goOnAfter(a, b, end, 2);
  assert.equal(await resubmitsOf(ids[0]!, job.operationId), 1, 'the event sent before the cancel');
  for (const id of ids.slice(1)) assert.equal(await resubmitsOf(id, job.operationId), 0, `${id}: no command after the cancel`);
  assert.equal(end.done, 1, 'B counted the first event (saved with the mark) and nothing of the withheld lot');
  const left = (await stack.store.listEventRows(EP, ids[1]!))[0]!;
  const was = rowsBefore[1]!;
  assert.deepEqual([left.status, left.lastMessageId, left.errorText], [was.status, was.lastMessageId, was.errorText], "A's claim is undone: the event is as it was before the job");
  const audits = (await stack.store.listAudits(ids[1]!)).items;
  assert.deepEqual(audits.map((x) => x.type), [AuditType.CommandNotSent], 'the withheld command is in the trail, with no receipt');
  assert.match(audits[0]!.comment ?? '', /withheld - the lease of bulk operation .* ended before the send; the event was put back to Failed/);
});

// Before, the withheld claim stayed: a successor that carried the job on found the event claimed by the same
// command without a receipt, was told "being sent right now", and retried every 4 s until the claim was
// CLAIM_GRACE_MS (30 s) old. Now the claim is undone, and the successor claims the event afresh in its lot.
test('a lease holder stalled inside the Manager leaves its withheld event claimable: the successor carries the job on without a retry', { timeout: 120_000 }, async () => {
  const { ids, a, job } = await stalledAtSecondLot('leasecarry', { inside: true });
  a.goOn(); // A wakes, not knowing its lease ended: its guard says no, and the Manager undoes the claim
  await a.over;
  await a.runner.stop();
  a.jobs.docs.close();
  await a.manager.close();
  assert.equal((await stack.store.listEventRows(EP, ids[1]!))[0]!.status, 'Failed', "A's claim is undone");

  class CountsRetries extends Manager {
    retries = 0;
    override execute(...args: Parameters<Manager['execute']>): ReturnType<Manager['execute']> {
      this.retries++;
      return super.execute(...args);
    }
  }
  const jobs = jobStore((docs) => new JobStore(docs));
  const counting = new CountsRetries({ store: stack.store, client: stack.serviceBus.client });
  const b = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager: counting, scanEveryMs: 3_600_000 });
  try {
    b.kick();
    const end = await jobOnce('B to complete the job', jobs, job.operationId, 'completed');
    assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 3, refused: 0, failed: 0 });
    assert.equal(counting.retries, 0, 'no one-event retry: B claimed the withheld event afresh in its lot');
    for (const id of ids) assert.equal(await resubmitsOf(id, job.operationId), 1, `${id}: one command`);
  } finally {
    await b.stop();
    jobs.docs.close();
    await counting.close();
  }
});

// Before, the one-event retries of a lot's events (a claim being sent elsewhere: 4 s apart, up to 44 s) did not
// look at the lease: a holder stalled after the lot's first answer went on retrying after its successor's cancel,
// and re-sent the claim under the job's name once it was CLAIM_GRACE_MS old.
test("a lease holder stalled after its lot's first answer makes no retry after a cancel made meanwhile", { timeout: 120_000 }, async () => {
  const [id] = await seedFailed('leaseretry', 1);
  const a = stalledReplica({ lotOf: id! });
  const job = await resubmitJob(a.jobs, [id!]);
  a.jobs.target = job.operationId;
  // After the selection was frozen, a claim of the same command whose send is still in progress elsewhere: the
  // Manager answers 409 "being sent right now", and the runner waits to try again.
  const row = (await stack.store.listEventRows(EP, id!))[0]!;
  const claim = await stack.store.writeStatus(claimWrite({ kind: 'resubmit' }, row, row.lastMessageId, row.eventTypeId, row.payload), claimExpectation(row));
  assert.equal(claim.outcome, 'written');
  a.runner.kick();
  await waitFor("replica A stalled after its lot's answer", () => a.stalled(), { timeoutMs: 60_000 });
  const { b, end } = await cancelledBySuccessor(job.operationId);
  await goOnAfter(a, b, end, 1);
  assert.equal(await resubmitsOf(id!, job.operationId), 0, 'A sent no command after the cancel');
  assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 0, refused: 0, failed: 0 });
});

// Before, the waits on a claim "being sent right now" (4 s apart, up to 44 s) read only the lease, never the
// operator's wish: a healthy holder went on retrying after a cancel and, once the claim was CLAIM_GRACE_MS old,
// re-sent it under the job's name - and completed the job, the cancel lost.
test("a healthy lease holder waiting on a claim being sent elsewhere stops at the operator's cancel: no retry, no command", { timeout: 120_000 }, async () => {
  const [id] = await seedFailed('cancelwait', 1);
  const jobs = jobStore((docs) => new JobStore(docs));
  const job = await resubmitJob(jobs, [id!]);
  // After the selection was frozen, a claim of the same command whose send is still in progress elsewhere: the
  // Manager answers 409 "being sent right now", and the runner waits to try again.
  const row = (await stack.store.listEventRows(EP, id!))[0]!;
  const claim = await stack.store.writeStatus(claimWrite({ kind: 'resubmit' }, row, row.lastMessageId, row.eventTypeId, row.payload), claimExpectation(row));
  assert.equal(claim.outcome, 'written');
  /** The operator cancels once the lot's first answer is in, before the runner's first wait begins; retries counted. */
  class CancelsAfterTheLot extends Manager {
    retries = 0;
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const answers = await super.executeMany(...args);
      if (args[3]?.operationId === job.operationId) await jobs.setControl(job.operationId, 'cancel', 'operator');
      return answers;
    }
    override execute(...args: Parameters<Manager['execute']>): ReturnType<Manager['execute']> {
      if (args[4]?.operationId === job.operationId) this.retries++;
      return super.execute(...args);
    }
  }
  const counting = new CancelsAfterTheLot({ store: stack.store, client: stack.serviceBus.client });
  const runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager: counting, scanEveryMs: 3_600_000 });
  try {
    runner.kick();
    await waitFor('the job to end', async () => ['cancelled', 'completed'].includes((await jobs.get(job.operationId))?.state ?? ''), { timeoutMs: 60_000 });
    const end = (await jobs.get(job.operationId))!;
    assert.equal(end.state, 'cancelled', "the operator's cancel stands");
    assert.equal(counting.retries, 0, 'no one-event retry after the cancel');
    assert.equal(await resubmitsOf(id!, job.operationId), 0, 'no command under the job after the cancel');
    assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 0, refused: 0, failed: 0 });
  } finally {
    await runner.stop();
    jobs.docs.close();
    await counting.close();
  }
});

// Before, a lot stopped at the operator's cancel in its retry wait was counted by receipts alone: its events the
// Manager had already refused, or could not send, were counted nowhere - the cancelled job read done 1, refused 0,
// failed 0 for a lot that had met a refusal and a send failure too.
test("a lot stopped by a cancel in its retry wait counts the events it had found refused or failed", { timeout: 120_000 }, async () => {
  await stoppedInRetryWait('cancelsettled', false);
});

// Before, a pause in the lot's retry wait dropped what the lot had settled: the paused job, then cancelled, was never
// stepped again, and its cancel counted by receipts alone - done 1, refused 0, failed 0, awaiting [1, 2, 3].
test("a lot paused in its retry wait, the job then cancelled, counts the events it had found refused or failed", { timeout: 120_000 }, async () => {
  await stoppedInRetryWait('pausesettled', true);
});

// Before, the resume's first write dropped the pause's kept outcomes before the lot was stepped again: a replica that
// stopped right then left the job without them, and its cancel counted by receipts alone - done 1, refused 0,
// failed 0, awaiting [1, 2, 3] (the gap the kept outcomes close).
test("a lot paused in its retry wait, resumed on a replica that stops before stepping it again, then cancelled, counts the events it had found refused or failed", { timeout: 120_000 }, async () => {
  await stoppedInRetryWait('resumestopped', true, true);
});

/**
 * A resubmit job of four Failed events `[sent, waiting, hers, unsent]`, a lot of them, made after the selection was
 * frozen into one event of each kind the lot meets: `waiting` claimed by a send in progress elsewhere (the lot's one
 * retry wait), `hers` resubmitted by alice, still Pending (refused: sent by someone else); `sent` and `unsent` as
 * they were (the caller's Manager makes `unsent`'s send fail).
 */
async function lotOfFour(prefix: string, jobs: JobStore): Promise<{ ids: [string, string, string, string]; job: Job }> {
  const ids = (await seedFailed(prefix, 4)) as [string, string, string, string];
  const [, waiting, hers] = ids;
  const job = await resubmitJob(jobs, ids);
  const row = (await stack.store.listEventRows(EP, waiting))[0]!;
  const claim = await stack.store.writeStatus(claimWrite({ kind: 'resubmit' }, row, row.lastMessageId, row.eventTypeId, row.payload), claimExpectation(row));
  assert.equal(claim.outcome, 'written');
  assert.equal((await manager.execute(EP, hers, { kind: 'resubmit' }, 'alice')).outcome, 'sent');
  return { ids, job };
}

/**
 * The cancelled job of lotOfFour counts each event its lot settled once - `sent` done, `hers` refused, `unsent`
 * failed - and `waiting`, whose wait was stopped, awaits a receipt, uncounted; only `sent` got the job's command.
 */
async function lotCounted(jobs: JobStore, operationId: string, ids: [string, string, string, string]): Promise<void> {
  const [sent, , hers, unsent] = ids;
  const end = (await jobs.get(operationId))!;
  assert.equal(end.state, 'cancelled');
  assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 1, refused: 1, failed: 1 }, 'each event the lot settled is counted');
  assert.deepEqual([end.refusals?.map((r) => r.eventId), end.errors.map((e) => e.eventId)], [[hers], [unsent]]);
  assert.match(end.refusals![0]!.detail, /already sent by alice/);
  assert.deepEqual(end.awaitingReceipt, [1], 'the event whose wait was stopped awaits a receipt, uncounted');
  assert.equal(end.pausedLot, undefined, "the lot's kept outcomes are counted, and gone from the job");
  assert.deepEqual(await Promise.all(ids.map((id) => resubmitsOf(id, operationId))), [1, 0, 0, 0], `only ${sent} got the job's command`);
}

/**
 * The Manager of a run of lotOfFour's job: `unsent`'s command cannot be sent (the answer a broker outage gives, each
 * try); the operator asks `control` once the lot's first answer is in, so the wait on `waiting` ends there.
 */
function stopsAfterTheLot(jobs: JobStore, operationId: string, unsent: string, control: 'cancel' | 'pause'): Manager {
  class StopsAfterTheLot extends Manager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const [targets, ...rest] = args;
      const answers = await super.executeMany(targets.filter((t) => t.eventId !== unsent), ...rest);
      if (args[3]?.operationId === operationId) await jobs.setControl(operationId, control, 'operator');
      return targets.map((t) => (t.eventId === unsent ? { ok: false, error: new Error('simulated Service Bus outage') } : answers.shift()!));
    }
    override async execute(...args: Parameters<Manager['execute']>): ReturnType<Manager['execute']> {
      if (args[1] === unsent) throw new Error('simulated Service Bus outage');
      return super.execute(...args);
    }
  }
  return new StopsAfterTheLot({ store: stack.store, client: stack.serviceBus.client });
}

/**
 * A lot of four events stopped by the operator in its retry wait: one sent, one waiting on a claim being sent
 * elsewhere, one refused, one whose command cannot be sent. The operator cancels - or, `pauseFirst`, pauses, and
 * cancels the paused job; `resumeStopped`: resumes it first, on a replica that stops at the resumed run's first
 * write (before it steps the lot again). Either way the cancelled job counts each event the lot settled.
 */
async function stoppedInRetryWait(prefix: string, pauseFirst: boolean, resumeStopped = false): Promise<void> {
  /** Once `resumed` is set, the first write of a running job stops the replica (the run then saves and returns). */
  const stopAt = { resumed: false, stopped: undefined as Promise<void> | undefined };
  class StopsAtTheResume extends JobStore {
    override async save(job: Job, etag: string): Promise<string | undefined> {
      if (stopAt.resumed && job.state === 'running' && !stopAt.stopped) stopAt.stopped = runner.stop();
      return super.save(job, etag);
    }
  }
  const jobs = jobStore((docs) => new StopsAtTheResume(docs));
  const { ids, job } = await lotOfFour(prefix, jobs);
  const faulty = stopsAfterTheLot(jobs, job.operationId, ids[3], pauseFirst ? 'pause' : 'cancel');
  let runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager: faulty, scanEveryMs: 3_600_000 });
  try {
    runner.kick();
    if (pauseFirst) {
      const paused = await jobOnce('the job to be paused', jobs, job.operationId, 'paused');
      assert.deepEqual({ done: paused.done, refused: paused.refused, failed: paused.failed, cursor: paused.cursor }, { done: 0, refused: 0, failed: 0, cursor: 0 }, 'the paused lot is not counted yet');
      if (resumeStopped) {
        stopAt.resumed = true;
        await jobs.setControl(job.operationId, 'run', 'operator');
        // Kicked until the pausing run has given the job back and the resumed run has begun (and stopped).
        await waitFor('the replica to stop at the resumed run', () => (runner.kick(), stopAt.stopped !== undefined), { timeoutMs: 60_000 });
        await stopAt.stopped;
        const resumed = (await jobs.get(job.operationId))!;
        assert.deepEqual([resumed.state, resumed.cursor, resumed.done], ['running', 0, 0], 'the resumed run stopped before stepping the lot again');
        runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager: faulty, scanEveryMs: 3_600_000 });
      }
      await jobs.setControl(job.operationId, 'cancel', 'operator');
    }
    // The runner looks for jobs every hour here: kicked (as the route does) until the pausing run has given the job
    // back and the cancel is applied.
    await waitFor('the job to be cancelled', async () => (runner.kick(), (await jobs.get(job.operationId))?.state === 'cancelled'), { timeoutMs: 60_000 });
    await lotCounted(jobs, job.operationId, ids);
  } finally {
    await runner.stop();
    jobs.docs.close();
    await faulty.close();
  }
}

// Before, a lot its holder's lease ended in was counted by nobody: the holder stopped without a write, and the cancel
// that followed counted the lot by receipts alone - its refusal and its send failure nowhere: done 1, refused 0,
// failed 0, awaiting [1, 2, 3].
leaseEndTest('a lot whose lease ended in it, the job then cancelled, counts the events it had found refused or failed', 'lostlot', { at: 'lastTry', then: 'operatorCancels' });

// Before, the same when a successor took the job over and cancelled it while the holder was still in the lot: the
// holder's late count looked for receipts alone - done 1, refused 0, failed 0, awaiting [1, 2, 3].
leaseEndTest("a lot whose lease ended in it, a successor's cancel made meanwhile, counts the events it had found refused or failed", 'lostlotcancel', { at: 'lastTry', then: 'successorCancels' });

// Before, a cancel inside a successor's lot counted that lot's own outcomes and dropped the rest of what the stopped
// lot had kept: a successor with lots of two, cancelled in its first, counted rows 0-1 and listed the kept refusal
// and send failure of rows 2-3 as awaiting a receipt - done 1, refused 0, failed 0, awaiting [1, 2, 3].
leaseEndTest("a lot whose lease ended in it, the job then cancelled inside a successor's smaller lot, counts the events it had found refused or failed", 'lostlotsmaller', { at: 'lastTry', then: 'cancelledInSmallerLot' });

// A pause in a successor's later lot, whose step of a row the holder had kept a send failure for was stopped, must
// keep that send failure for the cancel of the paused job, as the successor's own cancel there counts it.
leaseEndTest("a lot whose lease ended in it, the job then paused in a successor's later lot and cancelled, counts the events it had found refused or failed", 'lostlotpaused', { at: 'lastTry', then: 'pausedInLaterLot' });

leaseEndTest("a lot whose lease ended in it, the job then cancelled in a successor's later lot, counts the events it had found refused or failed", 'lostlotlater', { at: 'lastTry', then: 'cancelledInLaterLot' });

// Before, a later run whose own lot held only done and stopped steps kept nothing when its cancel's receipt read threw
// (keepUncounted wrote only a lot with a refusal or a send failure): the holder's older kept outcomes stayed on rows
// the later run had sent, and the next run's cancel read done 1, refused 1, failed 1 where that run's own cancel,
// its reads answered, reads 3, 0, 0 - `waiting` awaiting a receipt either way.
leaseEndTest("a lot whose lease ended in it, a later run sending its rows again, that run's cancel's receipt read throwing, counts that run's sends done", 'lostlotunread', { at: 'lastTry', then: 'cancelUnreadInLaterRun' });

// Before, the same when the later run's lease ended in its lot: its all-done-or-stopped lot was not kept.
leaseEndTest("a lot whose lease ended in it, a later run sending its rows again and its lease ending in its lot, the job then cancelled, counts that run's sends done", 'lostlotagain', { at: 'lastTry', then: 'leaseEndsInLaterRun' });

// Before, a holder whose keep write was refused because a successor had written the job first - here taking it over
// with the operator's pause - counted its lot only into a cancel that had landed by the time its run ended; the
// paused job's cancel came later and counted the lot by receipts alone: done 1, refused 0, failed 0, awaiting [1, 2, 3].
leaseEndTest("a lot whose lease ended in it, a successor that took it over paused writing the job first, the paused job then cancelled, counts the events it had found refused or failed", 'lostlottakenpaused', { at: 'lastTry', then: 'successorPauses' });

// Before, the same with a successor with lots of two that wrote the job first and was cancelled after its first lot,
// before it stepped the holder's refused and failed rows again: done 2, refused 0, failed 0, awaiting [2, 3].
leaseEndTest("a lot whose lease ended in it, a successor with smaller lots writing the job first and cancelled after its first lot, counts the events it had found refused or failed", 'lostlotfirstlot', { at: 'lastTry', then: 'successorCancelledAfterFirstLot' });

// Before, a successor whose write (its first lot's progress) the holder's late outcomes had refused stopped there, and
// the job waited for the next scan - an hour here: left running at cursor 0. Now it reads the job again, takes the
// late outcomes - its lease still held, nothing else changed - and completes the job by itself.
leaseEndTest("a successor whose write a stopped run's late outcomes refused carries the job on at once, without waiting for a scan", 'lostlotcarry', { at: 'lastTry', then: 'successorCarriesOn' });

// A kept refusal says only that the run that kept it sent nothing: a row the job sent afterwards - a later run whose
// write keeping its lot was refused (a successor wrote the job first), or one whose lot then stopped with nothing to
// write, the refusal kept late over it (keepLateOutcomes) - counts done by its receipt. Before, the cancel took the
// kept refusal and read no receipt: done 1, refused 1, failed 1.
leaseEndTest("a lot whose lease ended in it, a kept refusal's event then sent by the job, the job then cancelled, counts that event done", 'lostlotsentlater', { at: 'lastTry', then: 'sentAfterKept' });

/**
 * Where the holder's lease ends in lotOfFour's lot, and what follows. `lastTry`: as `unsent`'s last try fails (its
 * lot's retry wait on `waiting` is then stopped by the lease's end), and `then` (leaseEndsInLot). `wish`: as the run
 * reads the operator's `control` again to apply it, that wish having stopped the lot in its retry wait;
 * `successorReadsFirst`: a successor takes the job over and reads it then, its write waiting until the holder's landed.
 */
type LeaseEnd =
  | {
      at: 'lastTry';
      then:
        | 'operatorCancels'
        | 'successorCancels'
        | 'cancelledInSmallerLot'
        | 'pausedInLaterLot'
        | 'cancelledInLaterLot'
        | 'cancelUnreadInLaterRun'
        | 'leaseEndsInLaterRun'
        | 'successorPauses'
        | 'successorCancelledAfterFirstLot'
        | 'successorCarriesOn'
        | 'sentAfterKept';
    }
  | { at: 'wish'; control: 'cancel' | 'pause'; successorReadsFirst?: boolean };

/** A test of leaseEndsInLot: `prefix` names its events. */
function leaseEndTest(name: string, prefix: string, end: LeaseEnd): void {
  test(name, { timeout: 120_000 }, () => leaseEndsInLot(prefix, end));
}

/**
 * A lot of four events whose holder's lease ends in it (lotOfFour: one sent, one waiting on a claim being sent
 * elsewhere, one refused - alice's resubmit, still Pending - and one whose command cannot be sent); where, `end`
 * (LeaseEnd). From then on the holder's renewals answer that the lease is gone and its clock reads past it. Each way
 * the cancelled job counts each event the lot settled, once.
 *
 * `lastTry`: the operator then cancels and another runner applies it - or, `successorCancels`, a successor whose
 * clock is past the lease takes the job over and cancels it right then, while the holder is still in its lot; or,
 * `cancelledInSmallerLot`, a successor with lots of two takes the job over once the holder kept the lot's outcomes,
 * and the operator cancels while it waits on `waiting` in its first lot; or, `pausedInLaterLot` and
 * `cancelledInLaterLot`, such a successor is stopped in its second lot (stoppedInLaterLot); or, `cancelUnreadInLaterRun`
 * and `leaseEndsInLaterRun`, a later run with the same lot size sends the lot's rows again (sentInLaterRun); or,
 * `successorPauses`, `successorCancelledAfterFirstLot` and `successorCarriesOn`, a successor writes the job first, so
 * the holder's write keeping its lot is refused (successorFirst); or, `sentAfterKept`, the job's command is sent for the kept refusal's
 * event (sentAfterKept).
 *
 * `wish`: no one has written the job since the holder did, so its write of the cancel or pause, conditional on that
 * version, lands. A paused job is then cancelled; a fresh runner applies any cancel still to be applied.
 */
async function leaseEndsInLot(prefix: string, end: LeaseEnd): Promise<void> {
  const atWish = end.at === 'wish' ? end : undefined;
  let lost = false;
  let refused!: () => void;
  const renewalRefused = new Promise<void>((r) => (refused = r));
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  let wishes = 0;
  /** `wish`: the run's first read of the wish is its retry wait's; at the second, applying it, the lease ends. */
  class EndsAtTheSecondWish extends JobStore {
    override async control(id: string): ReturnType<JobStore['control']> {
      const wish = await super.control(id);
      if (id === job.operationId && wish?.control === atWish!.control && ++wishes === 2) {
        lost = true;
        await renewalRefused;
        if (b) {
          b.runner.kick();
          await bAtItsWrite;
        }
      }
      return wish;
    }
    override async save(j: Job, etag: string): Promise<string | undefined> {
      const next = await super.save(j, etag);
      if (next && j.operationId === job.operationId && j.state === 'cancelled') holderWrote();
      return next;
    }
  }
  let holderWrote!: () => void;
  const written = new Promise<void>((r) => (holderWrote = r));
  let bAtIt!: () => void;
  const bAtItsWrite = new Promise<void>((r) => (bAtIt = r));
  let bAnswer: string | undefined = 'not yet';
  /** The successor's first write of the job waits for the holder's (or, when it makes none, the end of its run). */
  class WritesAfterTheHolder extends JobStore {
    override async save(j: Job, etag: string): Promise<string | undefined> {
      if (j.operationId !== job.operationId || bAnswer !== 'not yet') return super.save(j, etag);
      bAtIt();
      await Promise.race([written, over]);
      return (bAnswer = await super.save(j, etag));
    }
  }
  const b = atWish?.successorReadsFirst ? successorReplica((docs) => new WritesAfterTheHolder(docs)) : undefined;
  const jobs = jobStore((docs) => (atWish ? new EndsAtTheSecondWish(docs) : new JobStore(docs)));
  const { ids, job } = await lotOfFour(prefix, jobs);
  const unsent = ids[3];
  /** The holder's lease store: once `lost`, its renewals answer that the lease is gone and its clock reads past it. */
  class EndsWhenLost extends LeaseStore {
    override async renew(lease: Lease, ttlMs: number): Promise<Lease | undefined> {
      if (!lost) return super.renew(lease, ttlMs);
      // After this answer's turn of the event loop: holdLease has aborted the lease's signal on it by then.
      setImmediate(refused);
      return undefined;
    }
  }
  let byB: Job | undefined;
  let first: Awaited<ReturnType<typeof successorFirst>> | undefined;
  /** `lastTry`: `unsent`'s command cannot be sent (a broker outage's answer); the lease ends at its third and last try. */
  class LeaseEndsAtTheLastTry extends Manager {
    tries = 0;
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const [targets, ...rest] = args;
      const answers = await super.executeMany(targets.filter((t) => t.eventId !== unsent), ...rest);
      return targets.map((t) => (t.eventId === unsent ? { ok: false, error: new Error('simulated Service Bus outage') } : answers.shift()!));
    }
    override async execute(...args: Parameters<Manager['execute']>): ReturnType<Manager['execute']> {
      if (args[1] !== unsent) return super.execute(...args);
      if (++this.tries === 2) {
        lost = true;
        // The successor's cancel, made while the holder is in its lot; the job as it left it.
        if (end.at === 'lastTry' && end.then === 'successorCancels') {
          const { b: successor, end: cancelled } = await cancelledBySuccessor(job.operationId);
          await successor.runner.stop();
          successor.jobs.docs.close();
          byB = cancelled;
        }
        if (end.at === 'lastTry' && (end.then === 'successorPauses' || end.then === 'successorCancelledAfterFirstLot' || end.then === 'successorCarriesOn')) {
          const how = end.then === 'successorPauses' ? 'pause' : end.then === 'successorCancelledAfterFirstLot' ? 'firstLot' : 'carriesOn';
          first = await successorFirst(job.operationId, ids, how, over);
        }
      }
      throw new Error('simulated Service Bus outage');
    }
  }
  const faulty = atWish ? stopsAfterTheLot(jobs, job.operationId, unsent, atWish.control) : new LeaseEndsAtTheLastTry({ store: stack.store, client: stack.serviceBus.client });
  const leases = tellsRelease(new EndsWhenLost(stack.store.database, { now: () => Date.now() + (lost ? LEASE_TTL_MS + 1_000 : 0) }), () => job.operationId, released);
  const finished: Job[] = [];
  const holder = new OperationsRunner({ store: stack.store, jobs, leases, manager: faulty, scanEveryMs: 3_600_000, onFinished: (j) => void finished.push(j) });
  try {
    holder.kick();
    await over; // the holder's run has ended (its late count included) and given the lease back
    await holder.stop();
    await b?.runner.stop();
    if (end.at === 'wish') {
      assert.equal(wishes, 2, "the lease ended as the run applied the operator's wish");
      if (b) assert.deepEqual([bAnswer, b.finished.length], [undefined, 0], "the successor's write was refused; it recorded nothing");
      const left = (await jobs.get(job.operationId))!;
      if (end.control === 'pause') {
        assert.deepEqual([left.state, left.pausedLot?.map((r) => [r.row, r.kind])], ['paused', [[2, 'refused'], [3, 'failed']]], 'the holder wrote the pause, its lot kept');
        await jobs.setControl(job.operationId, 'cancel', 'operator');
      } else assert.equal(left.state, 'cancelled', 'the holder wrote the cancel');
      await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), job.operationId, 'cancelled');
      if (end.control === 'cancel') assert.deepEqual(await jobs.get(job.operationId), left, 'the cancelled job was not run again: it is as the holder left it');
      await lotCounted(jobs, job.operationId, ids);
      assert.equal(finished.filter((j) => j.operationId === job.operationId).length, end.control === 'cancel' ? 1 : 0, 'the holder recorded the job finished when it wrote the cancel');
      return;
    }
    if (first) return await first.ended();
    if (end.then === 'successorCancels') {
      assert.deepEqual([byB?.done, byB?.refused, byB?.failed, byB?.awaitingReceipt], [1, 0, 0, [1, 2, 3]], 'the successor counted the lot by receipts');
    } else if (end.then !== 'operatorCancels') {
      const kept = (await jobs.get(job.operationId))!.pausedLot?.map((r) => [r.row, r.kind]);
      assert.deepEqual(kept, [[2, 'refused'], [3, 'failed']], "the holder kept its lot's refusal and send failure on the job");
      if (end.then === 'cancelUnreadInLaterRun' || end.then === 'leaseEndsInLaterRun') return await sentInLaterRun(job.operationId, ids, end.then === 'cancelUnreadInLaterRun' ? 'cancelUnread' : 'leaseEnds');
      if (end.then === 'sentAfterKept') return await sentAfterKept(job.operationId, ids);
      if (end.then !== 'cancelledInSmallerLot') return await stoppedInLaterLot(job.operationId, ids, end.then === 'pausedInLaterLot' ? 'pause' : 'cancel');
      await cancelledInSmallerLot(job.operationId);
    } else {
      await jobs.setControl(job.operationId, 'cancel', 'operator');
      await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), job.operationId, 'cancelled');
    }
    await lotCounted(jobs, job.operationId, ids);
  } finally {
    await holder.stop();
    await b?.runner.stop();
    b?.jobs.docs.close();
    jobs.docs.close();
    await faulty.close();
  }
}

/**
 * After the holder kept lotOfFour's refusal of `hers` (row 2) on the job, alice's command on it fails again and the
 * job's command is sent for it - as a later run's step sends it, in a lot whose write keeping it is then refused - and
 * the operator cancels: `hers` counts done by the job's receipt, not refused by the kept outcome.
 */
async function sentAfterKept(operationId: string, ids: [string, string, string, string]): Promise<void> {
  const [, , hers, unsent] = ids;
  await failAgain(hers);
  assert.equal((await manager.execute(EP, hers, { kind: 'resubmit' }, 'tester', { operationId })).outcome, 'sent');
  const jobs = jobStore((docs) => new JobStore(docs));
  try {
    await jobs.setControl(operationId, 'cancel', 'operator');
    await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), operationId, 'cancelled');
    const end = (await jobs.get(operationId))!;
    assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 2, refused: 0, failed: 1 }, 'hers counted done by its receipt');
    assert.deepEqual([end.refusals ?? [], end.errors.map((e) => e.eventId), end.awaitingReceipt, end.pausedLot], [[], [unsent], [1], undefined]);
    assert.deepEqual(await Promise.all(ids.map((id) => resubmitsOf(id, operationId))), [1, 0, 1, 0]);
  } finally {
    jobs.docs.close();
  }
}

/**
 * A successor B whose clock is past the holder's lease takes lotOfFour's job over while the holder is still in its
 * lot, and writes the job first: `pause`, with the operator's pause (it writes the job paused, nothing stepped); or
 * `firstLot` and `carriesOn`, with lots of two - the endpoint having answered `waiting`'s claim with a new failure, B's
 * first lot finds `sent` by its receipt and sends `waiting`, once the holder's run is `over` (its late write kept its
 * lot's refusal and send failure on B's version), and B's progress write after that lot is refused by that late
 * write: B reads the job again and carries on (its runner looks for jobs every hour: no scan does it). `firstLot`: the
 * operator cancels once that lot's first answer is in (B's clock, the test's, then reads the wish before its second
 * lot: no timing), and B cancels the job; `carriesOn`: B steps the second lot - `hers` refused again, `unsent` sent -
 * and completes it. Answers once B has written the job; `ended()`, called after the holder's run ended, has the
 * paused job cancelled by a fresh runner, and checks that each event is counted once: `hers` refused and `unsent`
 * failed as the holder found them, not awaiting a receipt (or, `carriesOn`, as B found them).
 */
async function successorFirst(operationId: string, ids: [string, string, string, string], how: 'pause' | 'firstLot' | 'carriesOn', holderOver: Promise<void>) {
  const [sent, waiting, hers, unsent] = ids;
  let wrote!: () => void;
  const written = new Promise<void>((r) => (wrote = r));
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  let refusedWrites = 0;
  class TellsFirstWrite extends JobStore {
    override async save(j: Job, etag: string): Promise<string | undefined> {
      const next = await super.save(j, etag);
      if (next && j.operationId === operationId) wrote();
      if (!next && j.operationId === operationId) refusedWrites++;
      return next;
    }
  }
  const jobs = jobStore((docs) => new TellsFirstWrite(docs));
  let t = 0;
  class CancelsAfterTheFirstLot extends Manager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      if (args[3]?.operationId !== operationId) return super.executeMany(...args);
      await holderOver;
      const answers = await super.executeMany(...args);
      t += 500;
      if (how === 'firstLot') await jobs.setControl(operationId, 'cancel', 'operator');
      return answers;
    }
  }
  if (how === 'pause') await jobs.setControl(operationId, 'pause', 'operator');
  else await failAgain(waiting);
  const manager = new CancelsAfterTheFirstLot({ store: stack.store, client: stack.serviceBus.client });
  const leases = tellsRelease(new LeaseStore(stack.store.database, { now: () => Date.now() + LEASE_TTL_MS + 1_000 }), () => operationId, released);
  const finished: Job[] = [];
  const runner = new OperationsRunner({ store: stack.store, jobs, leases, manager, scanEveryMs: 3_600_000, concurrency: how === 'pause' ? 4 : 2, now: () => t, onFinished: (j) => void finished.push(j) });
  runner.kick();
  await written;
  const taken = (await jobs.get(operationId))!;
  assert.deepEqual([taken.state, taken.cursor, taken.pausedLot], [how === 'pause' ? 'paused' : 'running', 0, undefined], 'B wrote the job first, nothing of the lot kept');
  return {
    ended: async () => {
      try {
        await over; // B's run has ended: it paused the job, or cancelled or completed it
        await runner.stop();
        const left = (await jobs.get(operationId))!;
        if (how === 'pause') {
          assert.deepEqual([left.state, left.cursor, left.pausedLot?.map((r) => [r.row, r.kind])], ['paused', 0, [[2, 'refused'], [3, 'failed']]], 'the holder kept its lot on the paused job');
          await jobs.setControl(operationId, 'cancel', 'operator');
          await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), operationId, 'cancelled');
        } else {
          assert.equal(refusedWrites, 1, "B's write after its first lot was refused: the holder kept its lot on B's version first");
          const [state, cursor] = how === 'firstLot' ? ['cancelled', 2] : ['completed', 4];
          assert.deepEqual([left.state, left.cursor, finished.map((j) => j.operationId)], [state, cursor, [operationId]], `B read the job again, carried on and ${state} it by itself`);
        }
        const end = (await jobs.get(operationId))!;
        const [done, failed, sentTo] = how === 'pause' ? [1, 1, [1, 0, 0, 0]] : how === 'firstLot' ? [2, 1, [1, 1, 0, 0]] : [3, 0, [1, 1, 0, 1]];
        assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done, refused: 1, failed }, how === 'carriesOn' ? 'each event counted once, as B found it' : 'each event counted once, hers and unsent as the holder found them');
        assert.deepEqual([end.refusals?.map((r) => r.eventId), end.errors.map((e) => e.eventId)], [[hers], how === 'carriesOn' ? [] : [unsent]]);
        assert.match(end.refusals![0]!.detail, /already sent by alice/);
        assert.deepEqual([end.awaitingReceipt, end.pausedLot], [how === 'pause' ? [1] : undefined, undefined], how === 'pause' ? 'only the event whose wait was stopped awaits a receipt' : 'nothing awaits a receipt or stays kept');
        assert.deepEqual(await Promise.all(ids.map((id) => resubmitsOf(id, operationId))), sentTo, `${sent}${how === 'pause' ? '' : ` and ${waiting}`}${how === 'carriesOn' ? ` and ${unsent}` : ''} got the job's command`);
      } finally {
        await runner.stop();
        jobs.docs.close();
        await manager.close();
      }
    },
  };
}

/**
 * A successor with lots of two (another NIMBUS_OPERATIONS_CONCURRENCY) runs the job of lotOfFour on from row 0 - its
 * first lot `sent` (found by its receipt) and `waiting` (the claim still being sent elsewhere) - and the operator
 * cancels once that lot's first answer is in, so its wait on `waiting` stops at the cancel and the run cancels the job.
 */
async function cancelledInSmallerLot(operationId: string): Promise<void> {
  const jobs = jobStore((docs) => new JobStore(docs));
  class CancelsAfterTheLot extends Manager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const answers = await super.executeMany(...args);
      if (args[3]?.operationId === operationId) await jobs.setControl(operationId, 'cancel', 'operator');
      return answers;
    }
  }
  const cancelling = new CancelsAfterTheLot({ store: stack.store, client: stack.serviceBus.client });
  const runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager: cancelling, scanEveryMs: 3_600_000, concurrency: 2 });
  try {
    runner.kick();
    await jobOnce('the successor to cancel the job', jobs, operationId, 'cancelled');
  } finally {
    await runner.stop();
    jobs.docs.close();
    await cancelling.close();
  }
}

/**
 * A successor with lots of two runs the job of lotOfFour on from row 0 after the holder kept its lot's refusal (row 2)
 * and send failure (row 3): meanwhile the endpoint answered `waiting`'s claim with a new failure, so its first lot
 * sends `waiting` (and finds `sent` by its receipt) and is counted; and a send in progress elsewhere claimed
 * `unsent`, so in its second lot `hers` is refused again and `unsent` waits - until the operator's `control`, asked
 * once that lot's first answer is in, stops the wait. A pause is followed by a cancel of the paused job. Either way
 * the cancelled job counts `unsent` by the holder's kept send failure, as the successor's step of it was stopped.
 */
async function stoppedInLaterLot(operationId: string, ids: [string, string, string, string], control: 'cancel' | 'pause'): Promise<void> {
  const [sent, waiting, hers, unsent] = ids;
  await failAgain(waiting);
  const row = (await stack.store.listEventRows(EP, unsent))[0]!;
  const claim = await stack.store.writeStatus(claimWrite({ kind: 'resubmit' }, row, row.lastMessageId, row.eventTypeId, row.payload), claimExpectation(row));
  assert.equal(claim.outcome, 'written');
  const jobs = jobStore((docs) => new JobStore(docs));
  class StopsAfterTheSecondLot extends Manager {
    lots = 0;
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const answers = await super.executeMany(...args);
      if (args[3]?.operationId === operationId && ++this.lots === 2) await jobs.setControl(operationId, control, 'operator');
      return answers;
    }
  }
  const stopping = new StopsAfterTheSecondLot({ store: stack.store, client: stack.serviceBus.client });
  const runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager: stopping, scanEveryMs: 3_600_000, concurrency: 2 });
  try {
    runner.kick();
    if (control === 'pause') {
      const paused = await jobOnce('the successor to pause the job', jobs, operationId, 'paused');
      assert.deepEqual([paused.cursor, paused.done, stopping.lots], [2, 2, 2], 'the successor counted its first lot and paused in its second');
      await jobs.setControl(operationId, 'cancel', 'operator');
      // Kicked until the pausing run has given the job back and the cancel is applied.
      await waitFor('the job to be cancelled', async () => (runner.kick(), (await jobs.get(operationId))?.state === 'cancelled'), { timeoutMs: 60_000 });
    } else await jobOnce('the successor to cancel the job', jobs, operationId, 'cancelled');
    const end = (await jobs.get(operationId))!;
    assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 2, refused: 1, failed: 1 }, 'each event counted once, unsent by the kept send failure');
    assert.deepEqual([end.refusals?.map((r) => r.eventId), end.errors.map((e) => e.eventId)], [[hers], [unsent]]);
    assert.deepEqual([end.awaitingReceipt, end.pausedLot], [undefined, undefined], 'nothing awaits a receipt or stays kept');
    assert.deepEqual(await Promise.all(ids.map((id) => resubmitsOf(id, operationId))), [1, 1, 0, 0], `${sent} and ${waiting} got the job's command`);
  } finally {
    await runner.stop();
    jobs.docs.close();
    await stopping.close();
  }
}

/**
 * A later run S of lotOfFour's job, with the same lot size, after the holder kept its lot's refusal (row 2) and send
 * failure (row 3): meanwhile alice's command on `hers` failed again, the broker is back, and a send in progress
 * elsewhere claimed `waiting` afresh. S finds `sent` by its receipt, sends `hers` and `unsent` (done both), and waits on
 * `waiting` until `stop` ends that step: the operator's cancel, whose receipt read for `waiting` then throws
 * (`cancelUnread`: the job stays running with the cancel), or its lease's end (`leaseEnds`: its renewals answer that
 * the lease is gone; the operator cancels afterwards). Either way S's lot - done, stopped, done, done - replaces what
 * the holder kept of the rows it settled, and the next run's cancel counts S's sends done: 3, 0, 0, `waiting` awaiting
 * a receipt, as S's own cancel would have.
 */
async function sentInLaterRun(operationId: string, ids: [string, string, string, string], stop: 'cancelUnread' | 'leaseEnds'): Promise<void> {
  const [, waiting, hers] = ids;
  await failAgain(hers);
  await failAgain(waiting);
  const row = (await stack.store.listEventRows(EP, waiting))[0]!;
  const claim = await stack.store.writeStatus(claimWrite({ kind: 'resubmit' }, row, row.lastMessageId, row.eventTypeId, row.payload), claimExpectation(row));
  assert.equal(claim.outcome, 'written');
  const jobs = jobStore((docs) => new JobStore(docs));
  let lost = false;
  let looks = 0;
  // S looks for `waiting`'s receipt three times: below the in-flight mark (#sentEarlier), in its step (the claim being
  // sent elsewhere), and - `cancelUnread` - in its cancel, where the store does not answer.
  const store = beforeReceiptRead(stack.store, (eventId) => {
    if (eventId === waiting && ++looks === 3 && stop === 'cancelUnread') receiptReadFails();
  });
  /** Once the lot's first answer is in: the operator cancels, or S's lease ends (its wait on `waiting` then stops). */
  class StopsAfterTheLot extends Manager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const answers = await super.executeMany(...args);
      if (args[3]?.operationId === operationId) {
        if (stop === 'cancelUnread') await jobs.setControl(operationId, 'cancel', 'operator');
        else lost = true;
      }
      return answers;
    }
  }
  class EndsWhenLost extends LeaseStore {
    override async renew(lease: Lease, ttlMs: number): Promise<Lease | undefined> {
      return lost ? undefined : super.renew(lease, ttlMs);
    }
  }
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  const leases = tellsRelease(new EndsWhenLost(stack.store.database, { now: () => Date.now() + (lost ? LEASE_TTL_MS + 1_000 : 0) }), () => operationId, released);
  const stopping = new StopsAfterTheLot({ store: stack.store, client: stack.serviceBus.client });
  const runner = new OperationsRunner({ store, jobs, leases, manager: stopping, scanEveryMs: 3_600_000 });
  try {
    runner.kick();
    await over; // S's run has ended (thrown at the cancel's receipt read, or stopped by its lease's end)
    await runner.stop();
    assert.equal(looks, stop === 'cancelUnread' ? 3 : 2, stop === 'cancelUnread' ? "the cancel's receipt read was the one that threw" : 'S looked for no receipt after its lot');
    const left = (await jobs.get(operationId))!;
    assert.deepEqual([left.state, left.cursor, left.pausedLot], ['running', 0, undefined], "S's lot replaced what the holder kept of the rows it settled, the cancel not yet written");
    if (stop === 'leaseEnds') await jobs.setControl(operationId, 'cancel', 'operator');
    await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), operationId, 'cancelled');
    const end = (await jobs.get(operationId))!;
    assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 3, refused: 0, failed: 0 }, "S's sends counted done, nothing of the holder's older kept outcomes");
    assert.deepEqual([end.refusals ?? [], end.errors, end.awaitingReceipt, end.pausedLot], [[], [], [1], undefined], 'the event whose wait was stopped awaits a receipt');
    assert.deepEqual(await Promise.all(ids.map((id) => resubmitsOf(id, operationId))), [1, 0, 1, 1], "sent, hers and unsent got the job's command once each");
  } finally {
    await runner.stop();
    jobs.docs.close();
    await stopping.close();
  }
}

// Before, a holder whose lease ended while it applied the operator's cancel to its lot (the cancel's receipt reads
// outlasted it) wrote nothing and kept nothing of the lot: the successor's cancel counted it by receipts, and the
// holder's late count looked for receipts alone - done 1, refused 0, failed 0, awaiting [1, 2, 3].
test("a lot stopped by the operator's cancel, a successor cancelling while the holder counts it, counts the events it had found refused or failed", { timeout: 120_000 }, async () => {
  const jobs = jobStore((docs) => new JobStore(docs));
  const { ids, job } = await lotOfFour('cancelcounting', jobs);
  const [, waiting, , unsent] = ids;
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  let b: ReturnType<typeof successorReplica> | undefined;
  let byB: Job | undefined;
  let looks = 0;
  // The holder's second look for `waiting`'s receipt is its cancel's (its step looked first): a successor whose
  // clock is past the lease takes the job over right then and applies the cancel, so the holder's write is refused.
  const store = beforeReceiptRead(stack.store, async (eventId) => {
    if (eventId === waiting && ++looks === 2) ({ b, end: byB } = await cancelledBySuccessor(job.operationId));
  });
  const faulty = stopsAfterTheLot(jobs, job.operationId, unsent, 'cancel');
  const holder = new OperationsRunner({ store, jobs, leases: tellsRelease(new LeaseStore(stack.store.database), () => job.operationId, released), manager: faulty, scanEveryMs: 3_600_000 });
  try {
    holder.kick();
    await over; // the holder's run has ended (its late count included) and given the lease back
    assert.deepEqual([byB?.done, byB?.refused, byB?.failed, byB?.awaitingReceipt], [1, 0, 0, [1, 2, 3]], 'the successor counted the lot by receipts');
    await lotCounted(jobs, job.operationId, ids);
  } finally {
    await holder.stop();
    await b?.runner.stop();
    b?.jobs.docs.close();
    jobs.docs.close();
    await faulty.close();
  }
});

// Before, a holder whose cancel of its lot could not read a receipt (the store did not answer) threw before writing
// anything: the job stayed running without the lot, and the next run's cancel counted it by receipts alone - done 1,
// refused 0, failed 0, awaiting [1, 2, 3]. Now the holder keeps the lot on the job and the next run's cancel counts it.
test("a lot stopped by the operator's cancel, the cancel's receipt read throwing, counts the events it had found refused or failed", { timeout: 120_000 }, () =>
  cancelApplyUnread('cancelunread', 'receipt'),
);

// Before, a holder whose read of the operator's wish, made to apply the cancel that stopped its lot's retry wait, threw
// (the store stopped answering after the wait's read) threw with it, before the lot was kept: the job stayed running
// without the lot's refusal and send failure, and the next run's cancel read done 1, refused 0, failed 0, awaiting
// [1, 2, 3]. Now that read's failure falls through to keeping the lot, as a lease's end does.
test("a lot stopped by the operator's cancel, the wish's read that applies it throwing, counts the events it had found refused or failed", { timeout: 120_000 }, () =>
  cancelApplyUnread('wishunread', 'wish'),
);

/**
 * A lot of lotOfFour stopped by the operator's cancel in its retry wait, where a read the holder makes to apply the
 * cancel does not answer (the store stopping): `receipt`, the cancel's look for `waiting`'s receipt (its step looked
 * first); `wish`, the second read of the wish that finds the cancel - the one that applies it (the retry wait's was
 * the first). Either way the holder keeps its lot on the job, leaving it running with the cancel, and the next run's
 * cancel counts each event the lot settled, once.
 */
async function cancelApplyUnread(prefix: string, unread: 'receipt' | 'wish'): Promise<void> {
  let reads = 0;
  /** `wish`: the second read of the job's wish that would find the cancel - the one that applies it - does not answer. */
  class SecondCancelReadThrows extends JobStore {
    override async control(id: string): ReturnType<JobStore['control']> {
      const wish = await super.control(id);
      if (unread === 'wish' && id === job.operationId && wish?.control === 'cancel' && ++reads === 2) throw new Error('simulated Cosmos 503 on the wish read');
      return wish;
    }
  }
  const jobs = jobStore((docs) => new SecondCancelReadThrows(docs));
  const { ids, job } = await lotOfFour(prefix, jobs);
  const [, waiting, , unsent] = ids;
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  // `receipt`: the holder's second look for `waiting`'s receipt is its cancel's (its step looked first): the store does not answer.
  const store = beforeReceiptRead(stack.store, (eventId) => {
    if (unread === 'receipt' && eventId === waiting && ++reads === 2) receiptReadFails();
  });
  const faulty = stopsAfterTheLot(jobs, job.operationId, unsent, 'cancel');
  const holder = new OperationsRunner({ store, jobs, leases: tellsRelease(new LeaseStore(stack.store.database), () => job.operationId, released), manager: faulty, scanEveryMs: 3_600_000 });
  try {
    holder.kick();
    await over; // the holder's run has ended (thrown at the receipt read, or past the wish's) and given the lease back
    await holder.stop();
    assert.equal(reads, 2, unread === 'receipt' ? "the cancel's receipt read was the one that threw" : 'the read applying the cancel was the one that threw');
    const left = (await jobs.get(job.operationId))!;
    assert.deepEqual([left.state, left.pausedLot?.map((r) => [r.row, r.kind])], ['running', [[2, 'refused'], [3, 'failed']]], 'the holder kept its lot on the job, the cancel not yet applied');
    await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), job.operationId, 'cancelled');
    await lotCounted(jobs, job.operationId, ids);
  } finally {
    await holder.stop();
    jobs.docs.close();
    await faulty.close();
  }
}

// Before, the write that keeps the lot after the cancel's receipt read threw was awaited with its error dropped: a
// write that threw left no trace. Now it is logged - the job's id and the error's message, nothing of the events.
test("a lot stopped by the operator's cancel, the cancel's receipt read throwing and the write keeping the lot throwing too, logs that write's failure", { timeout: 120_000 }, async () => {
  let receiptThrown = false;
  /** Once the cancel's receipt read has thrown, the job's next write (the one keeping the lot) throws too. */
  class KeepThrows extends JobStore {
    override async save(j: Job, etag: string): Promise<string | undefined> {
      if (receiptThrown && j.operationId === job.operationId) throw new Error('simulated Cosmos 503 on the keeping write');
      return super.save(j, etag);
    }
  }
  const jobs = jobStore((docs) => new KeepThrows(docs));
  const { ids, job } = await lotOfFour('keepthrows', jobs);
  const [, waiting, , unsent] = ids;
  let looks = 0;
  const store = beforeReceiptRead(stack.store, (eventId) => {
    if (eventId === waiting && ++looks === 2) {
      receiptThrown = true;
      receiptReadFails();
    }
  });
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  const faulty = stopsAfterTheLot(jobs, job.operationId, unsent, 'cancel');
  const holder = new OperationsRunner({ store, jobs, leases: tellsRelease(new LeaseStore(stack.store.database), () => job.operationId, released), manager: faulty, scanEveryMs: 3_600_000 });
  const records: Array<Record<string, unknown>> = [];
  const level = log.level;
  setConsoleLogSink((record) => records.push(JSON.parse(record)));
  log.level = 'warn';
  try {
    holder.kick();
    await over; // the holder's run has ended and given the lease back: whatever it logged is in `records`
    await holder.stop();
    const logged = records.filter((r) => r.operationId === job.operationId && r.err === 'simulated Cosmos 503 on the keeping write');
    // The write keeping the lot, then the run's late keep of the same outcomes as it ends (keepLateOutcomes: a run
    // that stops without its write landing tries once more), each logged once.
    assert.deepEqual(
      logged.map((r) => r.msg),
      ["operation's progress not written after its cancel's receipt read failed", 'refusals and send failures of a stopped operation run not kept'],
      "the keeping write's failure is logged once, and so is the late keep's",
    );
    for (const r of logged) assert.deepEqual(Object.keys(r).filter((k) => !['level', 'time', 'pid', 'hostname', 'name', 'msg', 'operationId', 'err'].includes(k)), [], 'nothing but the job and the error');
    assert.equal((await jobs.get(job.operationId))?.pausedLot, undefined, 'the lot was not kept: its write threw');
  } finally {
    log.level = level;
    setConsoleLogSink(undefined);
    await holder.stop();
    jobs.docs.close();
    await faulty.close();
  }
});

// Before, a cancel read between lots whose receipt read threw wrote nothing: a run resumed below a larger in-flight
// mark (or one under a rate limit, whose mark runs ahead) had counted lots since its last progress save, and their
// refusals and send failures - no receipt shows them - were lost: the next cancel read done 3, refused 0, the refused
// event listed as awaiting a receipt, where it is 3, 1 and none awaiting. The run's clock is the test's, stepped at
// fixed points, so the run reads the wish between two lots without a progress save after the last - no timing.
test("a cancel read between lots of a resumed run, its receipt read throwing, keeps the refusals counted since the last progress save", { timeout: 120_000 }, async () => {
  const ids = await seedFailed('betweenlots', 4);
  const [first, hers, third] = ids;
  // A first run sends the lot of four - `hers`, resubmitted by alice after the selection was frozen, refused - and
  // loses its progress write: cursor 0, in-flight mark 4.
  const jobs = jobStore((docs) => new LosesFirstProgress(docs));
  const job = await resubmitJob(jobs, ids);
  assert.equal((await manager.execute(EP, hers!, { kind: 'resubmit' }, 'alice')).outcome, 'sent');
  const earlier = runnerWith(jobs);
  earlier.kick();
  await waitFor('the lost progress write', () => jobs.lost, { timeoutMs: 60_000 });
  await earlier.stop();
  jobs.docs.close();

  // The resumed run has lots of one. Its clock (`t`) moves only here: by 300 ms as its first write lands, so it read
  // the wish last (start-up) 300 ms after its last save; by 200 ms as it looks for `first`'s receipt, so its first lot
  // is saved; by 300 ms as it looks for `hers`'s, when the operator cancels - its second lot, `hers` refused, is not
  // saved (300 ms since the save), and the wish is read before the third lot (500 ms since the last read). Then the
  // cancel's look for `third`'s receipt throws.
  let t = 0;
  let firstWrite = true;
  class StepsAtFirstWrite extends JobStore {
    override async save(j: Job, etag: string): Promise<string | undefined> {
      const next = await super.save(j, etag);
      if (j.operationId === job.operationId && firstWrite) {
        firstWrite = false;
        t += 300;
      }
      return next;
    }
  }
  const resumed = jobStore((docs) => new StepsAtFirstWrite(docs));
  let thrown = false;
  const store = beforeReceiptRead(stack.store, async (eventId) => {
    if (eventId === first) t += 200;
    if (eventId === hers) {
      t += 300;
      await resumed.setControl(job.operationId, 'cancel', 'operator');
    }
    if (eventId === third && !thrown) {
      thrown = true;
      receiptReadFails();
    }
  });
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  const leases = tellsRelease(new LeaseStore(stack.store.database), () => job.operationId, released);
  const runner = new OperationsRunner({ store, jobs: resumed, leases, manager, scanEveryMs: 3_600_000, concurrency: 1, now: () => t });
  try {
    runner.kick();
    await over; // the resumed run has ended (thrown at the cancel's receipt read) and given the lease back
    await runner.stop();
    assert.equal(thrown, true, "the cancel's receipt read threw");
    const left = (await resumed.get(job.operationId))!;
    assert.deepEqual([left.state, left.cursor, left.done, left.refused], ['running', 2, 1, 1], 'the run wrote its counted lots, the cancel not yet written');
    await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), job.operationId, 'cancelled');
    const end = (await resumed.get(job.operationId))!;
    assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 3, refused: 1, failed: 0 }, "the refusal counted since the last progress save is kept");
    assert.deepEqual([end.refusals?.map((r) => r.eventId), end.awaitingReceipt], [[hers], undefined]);
    assert.match(end.refusals![0]!.detail, /already sent by alice/);
    assert.deepEqual(await Promise.all(ids.map((id) => resubmitsOf(id, job.operationId))), [1, 0, 1, 1], "each event but hers got the job's command once");
  } finally {
    await runner.stop();
    resumed.docs.close();
  }
});

// Before, a run that stopped without a write of its own - its lease seen lost before a lot, so no progress save -
// added nothing late: only a refused write did. Under a rate limit the in-flight mark runs ahead of the cursor, and
// the refusal counted since the last save was only in the run's memory; a cancel before any run stepped the row again
// listed it as awaiting a receipt: done 1, refused 0, awaiting [1, 2, 3], where it is 1, 1 and [2, 3]. The run's
// clock (`now`) stands still, so it saves no progress after its mark; its lease store says the lease is gone once
// `hers` was answered, and its clock is then past the lease's expiry, so the next lot is not sent - no timing.
test("a run that stops without a write, its lease seen lost, keeps the refusals it counted since its last save for a cancel", { timeout: 120_000 }, async () => {
  const ids = await seedFailed('stopnowrite', 4);
  const [, hers] = ids;
  const jobs = jobStore((docs) => new JobStore(docs));
  const rows = await freezeSelection(stack.store, { endpointId: EP, eventIds: ids }, { all: true });
  // 10 a second: lots of one, and one in-flight mark (0.5 s of commands ahead) covering all four rows.
  const job = await jobs.create({ kind: 'resubmit', selection: { endpointId: EP, eventIds: ids }, rows, startedBy: 'tester', ratePerSecond: 10 });
  assert.equal((await manager.execute(EP, hers!, { kind: 'resubmit' }, 'alice')).outcome, 'sent');
  let lost = false;
  class LostAfterHers extends LeaseStore {
    override async renew(...args: Parameters<LeaseStore['renew']>): ReturnType<LeaseStore['renew']> {
      return lost ? undefined : super.renew(...args);
    }
  }
  class LosesLeaseAtHers extends Manager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const answers = await super.executeMany(...args);
      if (args[0].some((t) => t.eventId === hers)) lost = true;
      return answers;
    }
  }
  const losing = new LosesLeaseAtHers({ store: stack.store, client: stack.serviceBus.client });
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  const leases = tellsRelease(new LostAfterHers(stack.store.database, { now: () => Date.now() + (lost ? 3_600_000 : 0) }), () => job.operationId, released);
  const runner = new OperationsRunner({ store: stack.store, jobs, leases, manager: losing, scanEveryMs: 3_600_000, now: () => 0 });
  try {
    runner.kick();
    await over; // the run has stopped and given its lease back
    await runner.stop();
    const left = (await jobs.get(job.operationId))!;
    assert.deepEqual([left.state, left.cursor, left.inFlightTo, left.done, left.refused], ['running', 0, 4, 0, 0], 'no progress saved after the mark');
    assert.deepEqual(await Promise.all(ids.map((id) => resubmitsOf(id, job.operationId))), [1, 0, 0, 0], 'the run sent the first lot and stopped before the third');

    await jobs.setControl(job.operationId, 'cancel', 'operator');
    await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), job.operationId, 'cancelled');
    const end = (await jobs.get(job.operationId))!;
    assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 1, refused: 1, failed: 0 }, "the stopped run's refusal is counted");
    assert.deepEqual([end.refusals?.map((r) => r.eventId), end.awaitingReceipt], [[hers], [2, 3]]);
    assert.match(end.refusals![0]!.detail, /already sent by alice/);
  } finally {
    await runner.stop();
    await losing.close();
    jobs.docs.close();
  }
});

// Before, a holder whose lease ended while it applied the operator's cancel of its lot made no write at all, though
// its write is conditional on the version it last wrote anyway: the job stayed running, its late count found no
// cancel to count into, and the next run's cancel counted the lot by receipts - done 1, refused 0, failed 0, awaiting
// [1, 2, 3]. Now its cancel is written (no one wrote the job since) and recorded finished, by it alone.
leaseEndTest("a lot stopped by the operator's cancel, the holder's lease ending as it applies it, counts the events it had found refused or failed", 'cancellost', { at: 'wish', control: 'cancel' });

// Before, the same for a pause: the paused lot was not kept, the job stayed running, and a successor wrote it paused
// without the lot - its cancel then read done 1, refused 0, failed 0, awaiting [1, 2, 3].
leaseEndTest("a lot paused by the operator, the holder's lease ending as it applies the pause, the job then cancelled, counts the events it had found refused or failed", 'pauselost', { at: 'wish', control: 'pause' });

// What makes that write safe without the lease: a successor that took the job over and read it before the holder's
// cancel landed finds its own write refused and stops - the holder's cancel stands, recorded finished once, by it,
// and the cancelled job is not run again.
leaseEndTest("a successor that read the job before the holder's cancel, written after its lease ended, landed stops at its refused write", 'cancellostread', { at: 'wish', control: 'cancel', successorReadsFirst: true });


// Before, a run that found the job cancelled wrote it cancelled with the counts of the last save: the commands an
// earlier run had sent past the saved cursor (its progress write lost) were counted nowhere - done 0 of 5 sent.
test('a job cancelled after a run sent a lot whose progress was lost counts that lot done', { timeout: 120_000 }, async () => {
  const ids = await seedFailed('cancelcount', 5);
  const { jobs, job } = await sentWithProgressLost(ids);
  const saved = (await jobs.get(job.operationId))!;
  assert.deepEqual([saved.cursor, saved.inFlightTo, saved.done], [0, 5, 0], 'the lot was sent past the saved cursor');

  await jobs.setControl(job.operationId, 'cancel', 'operator');
  const end = await runUntil('the job to be cancelled', jobs, job.operationId, 'cancelled');
  assert.deepEqual({ done: end.done, refused: end.refused, failed: end.failed }, { done: 5, refused: 0, failed: 0 });
  for (const id of ids) assert.equal(await resubmitsOf(id, job.operationId), 1, `${id}: one command, not sent again`);
});

// Before, a cancelling successor counted the receipts below the in-flight mark once: a stalled holder whose send had
// passed the guard before its lease ended wrote its receipt after that count, and the cancelled job's done left the
// event out though its trail names the job (done 1 of the 2 commands sent). Now the cancel lists the rows it found
// without a receipt, and the holder, when its run ends, counts its late receipt into the ended job.
test("a receipt a stalled holder writes after its successor's cancel counted is counted in the cancelled job", { timeout: 120_000 }, async () => {
  const { ids, a, job } = await stalledAtSecondReceipt('latereceipt');
  const { b, end } = await cancelledBySuccessor(job.operationId);
  assert.equal(end.done, 1, "B counted the first event; the second's receipt was not written yet");
  await b.runner.stop();
  a.goOn(); // A wakes, its send long handed to the broker: it writes the receipt, then finds the job ended
  await lateReceiptCounted(a, b, ids, job.operationId);
});

/** A resubmit job of two events, run by replica A until it stalls between its second send and that send's receipt. */
async function stalledAtSecondReceipt(prefix: string, options?: Parameters<typeof stalledReplica>[1]) {
  const ids = await seedFailed(prefix, 2);
  const a = stalledReplica({ receiptOf: ids[1]! }, options);
  const job = await resubmitJob(a.jobs, ids);
  a.jobs.target = job.operationId;
  a.runner.kick();
  await waitFor('replica A stalled between its second send and its receipt', () => a.stalled(), { timeoutMs: 60_000 });
  return { ids, a, job };
}

/**
 * Once both runs are over (A's woken), checks that each event got one command and the cancelled job, B's alone,
 * counts both: the second's late receipt too, and nothing awaits a receipt.
 */
async function lateReceiptCounted(a: ReturnType<typeof stalledReplica>, b: ReturnType<typeof successorReplica>, ids: string[], operationId: string): Promise<void> {
  await a.over;
  await a.runner.stop();
  await b.runner.stop(); // B's run, its second look included, is over
  const now = (await b.jobs.get(operationId))!;
  a.jobs.docs.close();
  b.jobs.docs.close();
  await a.manager.close();
  for (const id of ids) assert.equal(await resubmitsOf(id, operationId), 1, `${id}: one command, its receipt naming the job`);
  assert.deepEqual({ state: now.state, done: now.done, refused: now.refused, failed: now.failed }, { state: 'cancelled', done: 2, refused: 0, failed: 0 }, 'the late receipt is counted');
  assert.deepEqual(now.awaitingReceipt, [], 'nothing awaits a receipt any more');
  const recorded = [a, b].map((r) => r.finished.filter((j) => j.operationId === operationId).length);
  assert.deepEqual(recorded, [0, 1], 'the job was recorded finished once, by B');
}

// The cancelling run's second look, after its write: the stalled holder wrote its receipt after the cancel's first
// look, and read the job before the cancel's write landed - it found the job running and counted nothing. Before,
// nothing tested that look (a plain write of the job cancelled left every test green); without it, done 1 of 2.
test("a late receipt its holder looked for before the cancel's write landed is counted by the cancelling run", { timeout: 120_000 }, async () => {
  const { ids, a, job } = await stalledAtSecondReceipt('latesecondlook', { seesLeaseEnd: true });
  // A's run, when it wakes, stops without a write (it saw its lease end) and looks for the cancel's list at once.
  await waitFor('replica A to see its lease end', () => a.leaseEndSeen(), { timeoutMs: 60_000 });
  let aRead!: (state: Job['state'] | undefined) => void;
  const aReadState = new Promise<Job['state'] | undefined>((r) => (aRead = r));
  let bWrote!: () => void;
  const cancelWritten = new Promise<void>((r) => (bWrote = r));
  // A's read of the job in its late count is answered only once B's cancel has landed: it is the version before it.
  a.jobs.afterStallRead = async (read) => {
    a.jobs.afterStallRead = undefined;
    aRead(read?.job.state);
    await cancelWritten;
  };
  /** B's cancel write waits for A: A wakes, writes its receipt and reads the job; then B's write goes on. */
  class WritesCancelAfterARead extends JobStore {
    #gated = false;
    override async save(j: Job, etag: string): Promise<string | undefined> {
      if (this.#gated || j.operationId !== job.operationId || j.state !== 'cancelled') return super.save(j, etag);
      this.#gated = true;
      a.goOn();
      await aReadState;
      try {
        return await super.save(j, etag);
      } finally {
        bWrote();
      }
    }
  }
  const b = successorReplica((docs) => new WritesCancelAfterARead(docs));
  await b.jobs.setControl(job.operationId, 'cancel', 'operator');
  b.runner.kick();
  assert.equal(await aReadState, 'running', "A read the job before B's cancel landed");
  await jobOnce('B to cancel the job', b.jobs, job.operationId, 'cancelled');
  await lateReceiptCounted(a, b, ids, job.operationId);
});

// Before, "operation completed" was logged after the final write too when that write was refused (a successor had
// written the job meanwhile): the log said completed of a job the store shows otherwise.
test('a run whose final write is refused does not log the job completed', { timeout: 120_000 }, async () => {
  const ids = await seedFailed('finalrefused', 2);
  /** Right before the run's final write, another replica writes the job (cancelled, as a successor would): a real 412. */
  class OvertakenAtTheEnd extends JobStore {
    overtaken = false;
    override async save(job: Job, etag: string): Promise<string | undefined> {
      if (job.state === 'completed' && !this.overtaken) {
        this.overtaken = true;
        const now = (await this.read(job.operationId))!;
        assert.ok(await super.save({ ...now.job, state: 'cancelled', finishedAt: new Date().toISOString() }, now.etag));
      }
      return super.save(job, etag);
    }
  }
  const jobs = jobStore((docs) => new OvertakenAtTheEnd(docs));
  const job = await resubmitJob(jobs, ids);
  const records: Array<{ msg?: string; operationId?: string }> = [];
  const level = log.level;
  setConsoleLogSink((record) => records.push(JSON.parse(record)));
  log.level = 'info';
  try {
    const runner = runnerWith(jobs);
    runner.kick();
    const mine = (text: string) => records.some((r) => r.operationId === job.operationId && r.msg?.startsWith(text));
    await waitFor('the refused final write', () => mine('operation was written by another replica'), { timeoutMs: 60_000 });
    await runner.stop(); // the run has ended: anything it logs after the write is in `records`
    assert.equal(mine('operation completed'), false, 'no "operation completed" for a job this run did not write completed');
    assert.equal((await jobs.get(job.operationId))?.state, 'cancelled', "the other replica's write stands");
  } finally {
    log.level = level;
    setConsoleLogSink(undefined);
    jobs.docs.close();
  }
});

// Before, the write keeping a lot its lease ended in (keepUncounted) moved updatedAt and left runningMs where the last
// progress save had put it: the view (runningMs plus the time since updatedAt) lost the time between that save and
// the write, and the job's speed rose with it - here runningMs 0 where the run's clock had moved 60 s. The run's clock
// is the test's, moved only as the lease ends, so the figure is exact - no timing.
test('the write keeping a lot its lease ended in moves runningMs with updatedAt', { timeout: 120_000 }, async () => {
  const [refusedEv, stopEv] = (await seedFailed('keepms', 2)) as [string, string];
  const jobs = jobStore((docs) => new JobStore(docs));
  const job = await resubmitJob(jobs, [refusedEv, stopEv]);
  let t = 0;
  let lost = false;
  /** `refusedEv` is refused at once; `stopEv`'s send fails, and as its retry is tried 60 s pass and the lease ends. */
  class RefusesThenLosesTheLease extends Manager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      if (args[3]?.operationId !== job.operationId) return super.executeMany(...args);
      return args[0].map((target) => ({
        ok: false,
        error: target.eventId === refusedEv ? new HttpError(409, 'conflict', 'resubmit is not possible for an event that is Completed') : new Error('simulated Service Bus outage'),
      }));
    }
    override async execute(...args: Parameters<Manager['execute']>): ReturnType<Manager['execute']> {
      if (args[1] !== stopEv) return super.execute(...args);
      t = 60_000;
      lost = true;
      throw new Error('simulated Service Bus outage');
    }
  }
  class EndsWhenLost extends LeaseStore {
    override async renew(lease: Lease, ttlMs: number): Promise<Lease | undefined> {
      return lost ? undefined : super.renew(lease, ttlMs);
    }
  }
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  const leases = tellsRelease(new EndsWhenLost(stack.store.database, { now: () => Date.now() + (lost ? LEASE_TTL_MS + 1_000 : 0) }), () => job.operationId, released);
  const faulty = new RefusesThenLosesTheLease({ store: stack.store, client: stack.serviceBus.client });
  const runner = new OperationsRunner({ store: stack.store, jobs, leases, manager: faulty, scanEveryMs: 3_600_000, now: () => t });
  try {
    runner.kick();
    await over; // the run has kept its lot and given the lease back
    await runner.stop();
    const left = (await jobs.get(job.operationId))!;
    assert.deepEqual([left.state, left.cursor, left.pausedLot?.map((r) => [r.row, r.kind])], ['running', 0, [[0, 'refused']]], 'the run kept its lot on the running job');
    assert.equal(left.runningMs, 60_000, "runningMs moved to the keeping write by the run's clock, as updatedAt did");
    // Not left running for the next test's runner: cancelled, the kept refusal counted.
    await jobs.setControl(job.operationId, 'cancel', 'operator');
    const end = await runUntil('the job to be cancelled', jobStore((docs) => new JobStore(docs)), job.operationId, 'cancelled');
    assert.deepEqual([end.done, end.refused, end.awaitingReceipt], [0, 1, [1]]);
  } finally {
    await runner.stop();
    jobs.docs.close();
    await faulty.close();
  }
});

// Before, a lot one of whose steps could not read this job's receipt (a 409 answer, the store not answering the
// receipt read) ended the run from inside the lot: nothing of the lot was counted or kept - its sent event, its
// refusal, its send failure - and the job stayed running at cursor 0 (a cancel before the next run stepped the lot
// listed the refusal and the send failure as awaiting a receipt, counted never). Now the Manager's answer stands for
// that event, as for a duplicate whose receipt is unread, and the lot is counted.
test('a receipt read failing in a step leaves the lot counted: the refusal stands, the others as they settled', { timeout: 120_000 }, async () => {
  const [refusedEv, sentEv, unsentEv] = (await seedFailed('stepread', 3)) as [string, string, string];
  const jobs = jobStore((docs) => new JobStore(docs));
  const job = await resubmitJob(jobs, [refusedEv, sentEv, unsentEv]);
  /** `refusedEv` is refused (409); `unsentEv`'s command cannot be sent (a broker outage's answer, each try). */
  class RefusesOneFailsOne extends Manager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      const [targets, ...rest] = args;
      if (rest[2]?.operationId !== job.operationId) return super.executeMany(...args);
      const answers = await super.executeMany(targets.filter((t) => t.eventId === sentEv), ...rest);
      return targets.map((t) =>
        t.eventId === sentEv ? answers.shift()! : { ok: false, error: t.eventId === refusedEv ? new HttpError(409, 'conflict', 'resubmit is not possible for an event that is Completed') : new Error('simulated Service Bus outage') },
      );
    }
    override async execute(...args: Parameters<Manager['execute']>): ReturnType<Manager['execute']> {
      if (args[1] === unsentEv) throw new Error('simulated Service Bus outage');
      return super.execute(...args);
    }
  }
  let thrown = false;
  const store = beforeReceiptRead(stack.store, (eventId) => {
    if (eventId === refusedEv && !thrown) {
      thrown = true;
      receiptReadFails();
    }
  });
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  const leases = tellsRelease(new LeaseStore(stack.store.database), () => job.operationId, released);
  const faulty = new RefusesOneFailsOne({ store: stack.store, client: stack.serviceBus.client });
  const runner = new OperationsRunner({ store, jobs, leases, manager: faulty, scanEveryMs: 3_600_000 });
  try {
    runner.kick();
    await over; // the run has ended and given its lease back (no scan runs it again within the test)
    await runner.stop();
    assert.equal(thrown, true, "the refused event's receipt read threw");
    const end = (await jobs.get(job.operationId))!;
    assert.deepEqual([end.state, end.done, end.refused, end.failed], ['completed', 1, 1, 1], 'the lot counted in the run that stepped it');
    assert.deepEqual([end.refusals?.map((r) => r.eventId), end.errors.map((e) => e.eventId)], [[refusedEv], [unsentEv]]);
    assert.match(end.refusals![0]!.detail, /Completed/);
    assert.deepEqual(await Promise.all([refusedEv, sentEv, unsentEv].map((id) => resubmitsOf(id, job.operationId))), [0, 1, 0]);
  } finally {
    await runner.stop();
    jobs.docs.close();
    await faulty.close();
  }
});

// Before, a write whose answer was lost - the store took it, the answer never came - ended the run as a failed write:
// a completion that had landed was never recorded finished (no audit of the job's end, and no scan runs an ended job
// again). Now the run reads the job back, finds it as written and goes on.
test('a completion whose answer was lost is recorded finished once it reads back as written', { timeout: 120_000 }, async () => {
  const ids = await seedFailed('lostanswer', 2);
  /** The completion reaches Cosmos; its answer is lost (a timeout after the store took the write). */
  class LosesTheCompletionsAnswer extends JobStore {
    lost = false;
    override async save(j: Job, etag: string): Promise<string | undefined> {
      const next = await super.save(j, etag);
      if (j.state === 'completed' && !this.lost) {
        this.lost = true;
        throw new Error('simulated lost answer: the socket closed after the write was sent');
      }
      return next;
    }
  }
  const jobs = jobStore((docs) => new LosesTheCompletionsAnswer(docs));
  const job = await resubmitJob(jobs, ids);
  let released!: () => void;
  const over = new Promise<void>((r) => (released = r));
  const finished: Job[] = [];
  const runner = new OperationsRunner({ store: stack.store, jobs, leases: tellsRelease(new LeaseStore(stack.store.database), () => job.operationId, released), manager, scanEveryMs: 3_600_000, onFinished: (j) => void finished.push(j) });
  try {
    runner.kick();
    await over; // the run has ended and given its lease back
    await runner.stop();
    assert.equal(jobs.lost, true, "the completion's answer was lost");
    const end = (await jobs.get(job.operationId))!;
    assert.deepEqual([end.state, end.done], ['completed', 2]);
    assert.deepEqual(finished.filter((j) => j.operationId === job.operationId).map((j) => [j.state, j.done]), [['completed', 2]], 'recorded finished once, by the run');
  } finally {
    await runner.stop();
    jobs.docs.close();
  }
});

// What a job's running time counts when a replica takes over a job whose holder died (docs/failures.md, "Running
// time of a job taken over"): the holder's running time up to its last write, then the successor's own. The time from
// that write to the takeover - the rest of the dead holder's lease, the scan that found the job - is not added:
// nobody ran the job then, and what the holder did after its last write is not in the job's counts either (the
// successor steps those rows again from the saved cursor), so the rate stays the counts over the time that made them.
// Pinned, not changed: the successor's first write adds nothing for the gap (runner.ts, lastSave). The successor's
// clock is the test's, moved by 2 s in its one lot, so the figure is exact: the dead holder's hour adds nothing.
test("a successor taking over a job whose holder died adds no time from the holder's last write to the takeover", { timeout: 120_000 }, async () => {
  const ids = await seedFailed('deadholder', 2);
  const jobs = jobStore((docs) => new JobStore(docs));
  const job = await resubmitJob(jobs, ids);
  const HOUR = 3_600_000;
  // The job as its holder left it: running for 5 s, its last write an hour ago, and its lease long expired.
  const { job: read, etag } = (await jobs.read(job.operationId))!;
  const lastWrite = new Date(Date.now() - HOUR);
  assert.ok(await jobs.save({ ...read, state: 'running', startedAt: new Date(lastWrite.getTime() - 5_000).toISOString(), runningMs: 5_000 }, etag, lastWrite));
  assert.ok(await new LeaseStore(stack.store.database, { now: () => lastWrite.getTime() }).acquire(`operation_${job.operationId}`, 'dead-replica', LEASE_TTL_MS));
  let t = 0;
  /** The successor's one lot takes 2 s by its clock. */
  class TwoSecondLot extends Manager {
    override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
      if (args[3]?.operationId === job.operationId) t += 2_000;
      return super.executeMany(...args);
    }
  }
  const successor = new TwoSecondLot({ store: stack.store, client: stack.serviceBus.client });
  const runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager: successor, scanEveryMs: 3_600_000, now: () => t });
  try {
    runner.kick();
    const end = await jobOnce('the successor to complete the job', jobs, job.operationId, 'completed');
    assert.equal(end.done, 2);
    assert.equal(end.runningMs, 7_000, "the holder's 5 s and the successor's 2 s; not the hour from the holder's last write to the takeover");
    assert.equal(jobView(end, null).perSecond, 0.3, '2 events in 7 s (0.29/s, one decimal)');
  } finally {
    await runner.stop();
    jobs.docs.close();
    await successor.close();
  }
});
