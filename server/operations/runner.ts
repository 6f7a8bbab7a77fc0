// Runs bulk operations (jobs.ts). Every console replica runs one OperationsRunner; it looks for jobs that want to
// run every few seconds (and at once when a job is created here), and runs a job only while it holds the job's
// lease (lib/store/leases.ts), so one replica acts on a job at a time. A replica that dies stops renewing; another
// takes the lease when it expires and continues from the saved cursor. A holder that is slow or paused past its
// lease's expiry has not seen it end while its successor already runs the job: so every write of the job is
// conditional on the version this run last read or wrote (JobStore.save), and a refused one means the job is
// someone else's now - the run stops at once, writing and sending nothing more (its successor's state stands).
// A write cannot guard a send, though: the holder may stall after its last write landed (under a rate limit one
// in-flight mark covers several lots). So right before each lot is sent the run also checks the expiry its lease
// keeper last renewed to, and sends nothing - stopping as on a refused write - once that is less than
// LEASE_SEND_MARGIN_MS away: a holder that lost its lease sends nothing once its lease is known, or due, to have
// ended. The same check is the guard the run hands the Manager (CommandOrigin.mayStillSend), asked after the lot's
// claims are written and right before each Service Bus batch of the lot is sent (a one-event command: before its
// claim too), and asked again before each of #step's one-event retries: a run whose lease ends during a lot stops
// there, the lot neither counted nor its cursor saved; the claims whose send was withheld are undone by the Manager
// and audited CommandNotSent, so the events read as before the lot (docs/failures.md, "A holder that lost its lease
// unseen stops"). The lot's refusals and send failures, which no receipt shows, are kept on the job when no one has
// written it since (a conditional write), or else counted by this run into a successor's cancel that listed them
// (keepUncounted), or - the job not ended yet - added to the successor's version once the run is over, where no run
// has passed or kept their rows (#run, keepLateOutcomes): a successor that carries the job on steps the lot again and
// counts them itself. That late write refuses the successor's next write; the successor, its lease still held and
// nothing else changed, takes the late outcomes and carries on at once (#runHeld, carryOn). So are those of the lots a run counted since its last write landed, however it stopped (a
// refused write, or none made: its lease seen lost before a progress save). #step's waits
// on a claim being sent elsewhere also read the operator's wish, so a cancel or pause stops the lot there rather
// than after up to 44 s of retries. Known limit: the batch handed to the broker before the
// check said no still lands, however late its send returns (up to SEND_TIMEOUT_MS after the check) - one batch at
// most, the rest of the lot is withheld; only fencing at the broker would stop it.
// A job steps through its rows a lot at a time (`concurrency` rows, or a tenth of a second's worth under a rate
// limit): Manager.executeMany claims, sends and receipts the lot's commands together, each event still with its
// own claim and receipt. The rows between the saved cursor (written at most every SAVE_EVERY_MS, after a whole
// lot) and the crash are stepped again. The
// endpoint may have answered such an event's command meanwhile with a new failure: the Manager would see a new
// failure to claim and send a second command under a new MessageId. So before a lot is sent the job saves how far
// its commands may have gone (`inFlightTo`); a run that starts (a restart, a lost lease, an error inside #run)
// first looks, for the rows between the saved cursor and that mark, for this job's receipt in the event's audit
// and counts an event that has one as done without asking the Manager. The others - and events still claimed -
// go to the Manager, which finds a claim's receipt and sends nothing ('duplicate'). Each event therefore gets one
// command. Two windows remain, both between a send and its receipt: a replica killed there leaves claims that the
// Manager re-sends after CLAIM_GRACE_MS with the same MessageIds, so an endpoint may receive a second copy (its
// inbox drops it; on Azure, duplicate detection on the topic first); and if the endpoint answers such a command
// with a new failure before the job resumes, no receipt names the job, and the event gets a second resubmit.
// A 'duplicate' whose receipt is someone else's (another operator's command, still Pending) is counted refused. A run
// that cancels the job first counts the rows between the saved cursor and the mark - those a lot of its own settled
// by their outcomes (sent, refused, failed), the others done when they have this job's receipt: no later run would.
// The rows it found without a receipt stay listed on the cancelled job (awaitingReceipt): a stalled former holder
// whose send passed the guard before its lease ended writes its receipt after that count, and then counts the row
// itself when its run ends (jobCounts.ts, countLateReceipts).
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { holdLease, type AuditEntry, type HeldLease, type LeaseStore, type MessageStore, type Settled } from '../../lib/store/index.ts';
import { sleep } from '../../lib/concurrency/sleep.ts';
import { describeError } from '../http.ts';
import { log } from '../log.ts';
import { isSendWithheld, type CommandOrigin, type CommandResult, type Manager } from '../manager/manager.ts';
import type { Auditor } from '../manager/commands.ts';
import type { Job, JobStore } from './jobs.ts';
import { actedByThisJob, count, countLateReceipts, isThisJobs, keepLateOutcomes, lateOutcomesOnly, passPausedLot, pausedLotOutcomes, setPausedLot, type StepOutcome, type UncountedLot } from './jobCounts.ts';
import { JobPruner } from './prune.ts';
import type { SelectedRow } from './selection.ts';

export const LEASE_TTL_MS = 10_000;
/** Renewed this often, so two renewals may be slow or fail before the send margin below is reached. */
const LEASE_RENEW_EVERY_MS = LEASE_TTL_MS / 5;
/** A lot is sent only while the lease's last renewed expiry is at least this far ahead (clocks, a slow send start). */
const LEASE_SEND_MARGIN_MS = LEASE_TTL_MS / 3;
/** Commands per lot unless configured (NIMBUS_OPERATIONS_CONCURRENCY): a full Cosmos bulk request. */
export const DEFAULT_CONCURRENCY = 100;
/** Progress is written at most this often (and at every state change). */
const SAVE_EVERY_MS = 500;
/** The operator's pause / cancel is read this often while a job runs. */
const CONTROL_EVERY_MS = 500;

export interface RunnerOptions {
  store: MessageStore;
  jobs: JobStore;
  leases: LeaseStore;
  manager: Manager;
  /** How often to look for jobs to run or resume. */
  scanEveryMs?: number;
  /**
   * Commands in flight at once per job: one lot, read, claimed, sent and receipted together (Manager.executeMany).
   * At most 100 (a Cosmos bulk request's operations).
   */
  concurrency?: number;
  /** Called with each finished job (the job's audit record). */
  onFinished?: (job: Job) => Promise<void> | void;
  /**
   * Asked before each lot of a job that recorded its starter's authority (Job.authority): the stop reason when the
   * role is gone (authority.ts), else null. The job then ends as a cancel ends it - `cancelled`, the rows an earlier
   * run may have sent past the cursor counted by their receipts - with that reason (Job.stoppedReason), nothing more sent.
   */
  authorityLapsed?: (job: Job) => Promise<string | null>;
  /**
   * Deletes ended jobs past their retention beside the scans (prune.ts); `now` is the clock their ends are
   * compared with (tests). Without it, no job is ever deleted.
   */
  prune?: { retentionDays: number; now?: () => number };
  /**
   * The clock a run's progress saves (SAVE_EVERY_MS), its reads of the operator's wish (CONTROL_EVERY_MS) and its
   * running time are measured by: Date.now unless a test steps it (resume.test.ts, "between lots").
   */
  now?: () => number;
}

/** Spaces commands `1000 / perSecond` ms apart (0: no limit). Shared by a job's workers. */
export class RateLimiter {
  #next = 0;
  readonly #gap: number;
  constructor(perSecond: number) {
    this.#gap = perSecond > 0 ? 1000 / perSecond : 0;
  }
  /** Waits for the slot of `n` commands sent together: the next lot's slot starts `n` gaps later. */
  async take(signal?: AbortSignal, n = 1): Promise<void> {
    if (this.#gap === 0) return;
    const now = performance.now();
    const at = Math.max(now, this.#next);
    this.#next = at + this.#gap * n;
    const wait = at - now;
    if (wait <= 1) return;
    await sleep(wait, signal);
  }
}

const WANTS_TO_RUN = new Set(['queued', 'running', 'paused']);

/** Whether `lease` is still held with LEASE_SEND_MARGIN_MS left by the lease store's clock (a send may start). */
function leaseHeld(lease: HeldLease, leases: LeaseStore): boolean {
  return !lease.signal.aborted && leases.now() < lease.expiresAt - LEASE_SEND_MARGIN_MS;
}

/** The job as the store holds it (a JSON document: no undefined fields), to compare with a read of it. */
function asStored(job: Job): Job {
  return JSON.parse(JSON.stringify(job)) as Job;
}

/**
 * What a run knows that the job may not hold: `sends`, set while it has handed the Manager commands since its last
 * write that landed; `lot`, the outcomes of a lot stopped uncounted - by its lease's end, or by the operator's cancel
 * or pause until their write lands (#runHeld, holdUncounted); `counted`, the refusals and send failures of the rows
 * it counted since its last write landed, by selection index; `superseded`, the outcomes the job kept (pausedLot) as
 * the run read it at its start - its own steps of those rows are newer (UncountedLot).
 */
interface Unsaved {
  sends: boolean;
  lot?: UncountedLot;
  counted: Map<number, StepOutcome>;
  superseded?: Job['pausedLot'];
}

/** The refusals and send failures a run knows and the job may not hold (Unsaved): its counted rows' and its lot's. */
function unsavedOutcomes(unsaved: Unsaved): UncountedLot | undefined {
  const byRow = new Map(unsaved.counted);
  const lot = unsaved.lot;
  lot?.outcomes.forEach((o, i) => o && o.kind !== 'done' && byRow.set(lot.from + i, o));
  const superseded = unsaved.superseded;
  if (byRow.size === 0) return lot && { ...lot, superseded };
  const from = Math.min(...byRow.keys(), lot?.from ?? Infinity);
  const outcomes: Array<StepOutcome | undefined> = [];
  for (const [row, o] of byRow) outcomes[row - from] = o;
  return { from, outcomes, superseded };
}

export class OperationsRunner {
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  readonly #o: Required<Omit<RunnerOptions, 'onFinished' | 'prune' | 'authorityLapsed'>> & Pick<RunnerOptions, 'onFinished' | 'authorityLapsed'>;
  readonly #pruner: JobPruner | undefined;
  #pruning: Promise<unknown> | undefined;
  readonly #running = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  readonly #stop = new AbortController();
  #scanning: Promise<void> | undefined;

  constructor(options: RunnerOptions) {
    const { prune, ...rest } = options;
    this.#o = { scanEveryMs: 2_000, concurrency: DEFAULT_CONCURRENCY, now: Date.now, ...rest };
    this.#pruner = prune && new JobPruner({ jobs: options.jobs, leases: options.leases, owner: this.owner, ...prune });
  }

  start(): this {
    this.#timer = setInterval(() => this.kick(), this.#o.scanEveryMs);
    this.#timer.unref();
    this.kick();
    return this;
  }

  /** Looks for work now (after a job was created or resumed here). */
  kick(): void {
    if (this.#stopped) return;
    // Beside the scan, not in it: a sweep's deletes must not hold up a job waiting to start. It is due at most once
    // an hour (prune.ts), so most kicks only compare two times. It ends between two jobs' deletes once stop() is
    // called, so stop() waits for one job's deletes at most, not the whole sweep.
    if (this.#pruner && !this.#pruning) this.#pruning = this.#pruner.sweepIfDue(this.#stop.signal).finally(() => (this.#pruning = undefined));
    if (this.#scanning) return;
    this.#scanning = this.#scan()
      .catch((err) => log.warn({ err: err instanceof Error ? err.message : String(err) }, 'operations scan failed'))
      .finally(() => (this.#scanning = undefined));
  }

  /** Stops taking work and lets running jobs stop at their next step (their leases are released). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#stop.abort();
    await this.#scanning;
    await this.#pruning;
    await Promise.all([...this.#running.values()]);
  }

  async #scan(): Promise<void> {
    const jobs = await this.#o.jobs.unfinished();
    for (const job of jobs) {
      if (this.#stopped) return;
      if (job.state === 'prepared') {
        await this.#expireIfUnconfirmed(job);
        continue;
      }
      if (!WANTS_TO_RUN.has(job.state) || this.#running.has(job.operationId)) continue;
      if (job.state === 'paused') {
        const ctl = await this.#o.jobs.control(job.operationId);
        if (ctl?.control === 'pause') continue;
      }
      const lease = await holdLease(this.#o.leases, `operation_${job.operationId}`, this.owner, { ttlMs: LEASE_TTL_MS, renewEveryMs: LEASE_RENEW_EVERY_MS });
      if (!lease) continue; // another replica runs it
      const run = this.#run(job.operationId, lease)
        .catch((err) => log.warn({ operationId: job.operationId, err: err instanceof Error ? err.message : String(err) }, 'operation step failed; it resumes at the next scan'))
        .finally(async () => {
          await lease.release();
          this.#running.delete(job.operationId);
        });
      this.#running.set(job.operationId, run);
    }
  }

  /**
   * A prepared job whose confirmation time is up is discarded (conditional on the document read: a confirmation
   * that lands first wins), and recorded like a finished job.
   */
  async #expireIfUnconfirmed(job: Job): Promise<void> {
    if (!job.expiresAt || Date.now() < Date.parse(job.expiresAt)) return;
    const { result, job: now } = await this.#o.jobs.settlePrepared(job.operationId, 'expire', this.owner);
    if (result !== 'expired' || !now) return;
    log.info({ operationId: job.operationId, kind: job.kind, total: job.total }, 'prepared operation expired unconfirmed');
    await this.#o.onFinished?.(now);
  }

  /**
   * Runs the job while the lease is held; then, when the run stopped holding refusals and send failures the job does
   * not - of a lot its lease's end or the operator's stop left uncounted (`unsaved.lot`), and of the lots it counted
   * since its last write landed - keeps them on the job where it has not ended and no run has passed or kept their
   * rows (jobCounts.ts, keepLateOutcomes): no receipt shows them, and a cancel made later would list them as awaiting
   * one. Before, they were counted only if that cancel had landed by the time this run ended (resume.test.ts, "a
   * successor that took it over paused", "a successor with smaller lots cancelled after its first"). Whatever stopped
   * the run: a write of it refused (another run wrote the job first), or no write made - its lease seen lost before a
   * lot, or at the loop's top, so no progress save; a write that threw, the store not answering. Before, only a refused
   * write added them, and a run that stopped without a write left the lots counted since its last save (under a rate
   * limit the in-flight mark runs ahead of the cursor) to the successor stepping them again - a cancel before that
   * listed them as awaiting a receipt (resume.test.ts, "a run that stops without a write"). Here the run may still hold
   * its lease (its expiry only near), so no successor has read the job yet; one that has finds its next write refused
   * and stops, as after any late write. And when the run handed the Manager commands
   * whose counts it never wrote (it stopped - lost its lease, its write refused - after their receipts were written),
   * counts those of them, and those outcomes, that a successor's cancel listed as awaiting their receipt: the job
   * ended without them.
   */
  async #run(id: string, lease: HeldLease): Promise<void> {
    const unsaved: Unsaved = { sends: false, counted: new Map() };
    try {
      await this.#runHeld(id, lease, unsaved);
    } finally {
      const known = unsavedOutcomes(unsaved);
      if (known?.outcomes.some((o) => o && o.kind !== 'done')) await this.#keepLate(id, known);
      if (unsaved.sends || unsaved.lot) await this.#countLate(id, 'operation ended by another replica: the commands this one sent late, or found refused or unsent, are counted in it', known);
    }
  }

  /** keepLateOutcomes, its outcome logged. Never throws, as #countLate: the late count still follows it. */
  async #keepLate(id: string, known: UncountedLot): Promise<void> {
    await keepLateOutcomes(this.#o.jobs, id, known).then(
      (n) => n > 0 && log.info({ operationId: id, kept: n }, 'operation run stopped: the refusals and send failures it knew and the job did not hold are kept on it'),
      (err) => log.warn({ operationId: id, err: err instanceof Error ? err.message : String(err) }, 'refusals and send failures of a stopped operation run not kept'),
    );
  }

  /**
   * countLateReceipts, its outcome logged (`counted`: what a count of some says). Never throws: the job has ended,
   * so an error here must not reach #scan's "it resumes at the next scan", and the late count is only a second look.
   */
  async #countLate(id: string, counted: string, lot?: UncountedLot): Promise<void> {
    await countLateReceipts(this.#o.jobs, this.#o.store, id, lot).then(
      (n) => n > 0 && log.info({ operationId: id, counted: n }, counted),
      (err) => log.warn({ operationId: id, err: err instanceof Error ? err.message : String(err) }, 'late receipts of an ended operation not counted'),
    );
  }

  /** `unsaved`: what this run knows and the job may not hold (Unsaved). */
  async #runHeld(id: string, lease: HeldLease, unsaved: Unsaved): Promise<void> {
    const { jobs, now: clock } = this.#o;
    const leaseLost = lease.signal;
    // Re-read under the lease: the listed copy may predate another replica's last save. The version read is the
    // one this run's first write must still find.
    const read = await jobs.read(id);
    if (!read || !WANTS_TO_RUN.has(read.job.state)) return;
    const { job } = read;
    unsaved.superseded = structuredClone(job.pausedLot);
    let version = read.etag;
    /** The job as this run last read or wrote it (JSON, as stored): what a late write is told apart from (carryOn). */
    let written = asStored(job);
    const stopSignal = AbortSignal.any([leaseLost, this.#stop.signal]);
    let lastSave = clock();
    /**
     * After a refused write: whether the job was written since by nothing but a stopped run's late write of its
     * outcomes (keepLateOutcomes), so this run may carry on over it - those outcomes taken into its own job where its
     * cursor has not passed their rows, the version read now the one its write retries on. The lease is asked after
     * the read: still held, with LEASE_SEND_MARGIN_MS left, no other run has held it since this run took it, so the
     * write read was not a new holder's (whose first write changes no more). Before, a successor whose write a former
     * holder's late write had refused stopped, and the job waited for the next scan (resume.test.ts, "a successor
     * whose write a stopped run's late outcomes refused carries the job on").
     */
    const carryOn = async (): Promise<boolean> => {
      const now = await jobs.read(id);
      if (!now || !leaseHeld(lease, this.#o.leases)) return false;
      const late = lateOutcomesOnly(written, now.job, job.cursor);
      if (!late) return false;
      // Older than this run's own steps of those rows, which come after: as the kept outcomes it read at its start.
      unsaved.superseded = [...(unsaved.superseded ?? []), ...late];
      if (late.length > 0) job.pausedLot = late;
      else delete job.pausedLot;
      version = now.etag;
      log.info({ operationId: id, kept: late.length }, "operation written meanwhile by a stopped run's late outcomes: carried on over them");
      return true;
    };
    /**
     * Writes the job if it is still the version this run last read or wrote. False when it is not: another replica
     * took the lease over (this one missed its end) and wrote the job; the caller stops without another write or send.
     * Every write of a running job moves its `runningMs` to the write, as it moves `updatedAt`: the view adds the time
     * since `updatedAt` to `runningMs`. Before, only a progress save did, and the write keeping a stopped lot
     * (keepUncounted, the cancel's catch) lost the time since the last save from the job's running time
     * (resume.test.ts, "the write keeping a lot its lease ended in moves runningMs").
     */
    /**
     * jobs.save; when it throws, the job read back: a write whose answer was lost (the store took it, the answer
     * never came) landed when the job reads exactly as written, and the run goes on from that version. Before, such a
     * write ended the run as one that failed: a cancel or a completion that had landed was never recorded finished (the
     * audit of its end; scans do not run an ended job again), and a cancel's second look for late receipts was not
     * made (resume.test.ts, "whose answer was lost"). Otherwise the error stands.
     */
    const saveOrFind = async (): Promise<string | undefined> => {
      try {
        return await jobs.save(job, version);
      } catch (err) {
        const now = await jobs.read(id).catch(() => null);
        if (now && isDeepStrictEqual(now.job, asStored(job))) return now.etag;
        throw err;
      }
    };
    const write = async ({ carry = false } = {}): Promise<boolean> => {
      const now = clock();
      if (job.state === 'running') job.runningMs += now - lastSave;
      lastSave = now;
      let next = await saveOrFind();
      // Once: refused again, the job is someone else's after all (or another late write came): the run stops as ever.
      if (next === undefined && carry && (await carryOn())) next = await saveOrFind();
      if (next === undefined) {
        log.warn({ operationId: id }, 'operation was written by another replica since this one read it (its lease was lost): stopping it here');
        return false;
      }
      version = next;
      written = asStored(job);
      // The job now holds what this run knew: its counts, or the stopped lot's outcomes (counted, or kept).
      unsaved.sends = false;
      delete unsaved.lot;
      unsaved.counted.clear();
      return true;
    };
    /** Saves the progress; false when the job is not this run's any more (the lease lost, or the write refused). */
    const save = async (): Promise<boolean> => {
      if (leaseLost.aborted) return false; // another replica may own the job now: it writes the progress
      return write({ carry: true });
    };
    /**
     * Writes the job in `state`; false when it did not (the lease lost - a cancel or a pause is written still - or
     * the write refused).
     */
    const finish = async (state: Job['state']): Promise<boolean> => {
      // Before the state changes: write() moves runningMs only while the job is running.
      if (job.state === 'running') job.runningMs += clock() - lastSave;
      lastSave = clock();
      job.state = state;
      if (state === 'completed' || state === 'cancelled' || state === 'failed') job.finishedAt = new Date().toISOString();
      // The operator's cancel or pause is written after a lost lease too (its receipt reads or the wish's read may
      // outlast the lease): the write is conditional, so a successor that wrote first refuses it, and one that read
      // the job before it finds its own write refused and stops - and only this run knows the lot's refusals and send
      // failures (before, neither was written: the lot counted by receipts alone, resume.test.ts, "the holder's
      // lease ending as it applies it"). A completion still is not: a successor finishes the job from its saved cursor.
      if (leaseLost.aborted && state !== 'cancelled' && state !== 'paused') return false;
      // Refused: the new holder ends the job (or has), and records it; this run must not record it a second time.
      // A completion carries on over a late write (its cursor is past every row: nothing of it is taken); a cancel
      // or a pause does not - what it counts or keeps was made from the job as this run last wrote it.
      if (!(await write({ carry: state === 'completed' }))) return false;
      if (job.finishedAt) await this.#o.onFinished?.(job);
      return true;
    };
    /**
     * Cancels the job, counting first the rows between the saved cursor and the in-flight mark: the job ends here,
     * and no later run would count them. `lot`: the outcomes of this run's lot that stopped at the cancel, from the
     * cursor on (undefined where the event's step was stopped); those are counted as they are - before, its refused
     * and failed events were counted nowhere. The others are counted done by this job's receipt (an earlier run sent
     * them and lost its progress), or listed as awaiting it: a stalled former holder may still write one, and counts
     * it then (jobCounts.ts). After the write, the listed rows are looked at again - the holder may have written its
     * receipt after the look above and read the job before this write landed, and then counts nothing. The
     * refusals and send failures kept on the job of a lot a pause or a lease's end stopped (Job.pausedLot) stand
     * for what no run steps again: the run that knew them has ended. This run's own lot, when it has one, is laid
     * over them - it stepped its rows last - but its lot may be smaller and end before theirs (another
     * NIMBUS_OPERATIONS_CONCURRENCY): past it, and where its step was stopped, the kept ones count (before, they
     * were dropped and their rows listed as awaiting a receipt: resume.test.ts, "inside a successor's smaller lot").
     * A kept row with this job's receipt counts done, though: a kept refusal or send failure says only that the run
     * that kept it sent nothing, and a later run may have sent it and stopped in that lot with its write refused, or
     * before a former run's outcomes were kept late (keepLateOutcomes) (before, the kept outcome was counted and no
     * receipt read: resume.test.ts, "a kept refusal's event then sent by the job"). Both are indexed from the cursor,
     * as the window is.
     */
    const cancel = async (rows: readonly SelectedRow[] | undefined, own?: ReadonlyArray<StepOutcome | undefined>, reason?: string): Promise<void> => {
      const kept = pausedLotOutcomes(job);
      const to = job.inFlightTo ?? 0;
      if (to > job.cursor) {
        const all = rows ?? (await jobs.rows(job));
        const window = all.slice(job.cursor, to);
        let sent: boolean[];
        try {
          sent = await Promise.all(window.map((row, i) => (own?.[i] ? true : this.#actedByThisJob(row.eventId, row.endpointId, id))));
        } catch (err) {
          // A receipt unread (the store did not answer) is not a receipt missing: listed as awaiting one, a done
          // event would be counted only if a later look found it, and the cancelling run's own second look asks the
          // same store. So the cancel is not written; this run's lot is kept on the job as a lease's end keeps it
          // (keepUncounted: conditional on the version this run last wrote, the older kept rows past it and where
          // its step was stopped still kept - the job's pausedLot is dropped only below, once the reads answered),
          // and the job stays running with the operator's cancel: the next run applies it, counting the kept
          // outcomes and reading every receipt again. Before, the run threw with nothing written and the lot's
          // refusal and send failure were counted nowhere - done 1, refused 0, failed 0 (resume.test.ts, "the
          // cancel's receipt read throwing"). The job is written even when that changes nothing kept, and with no lot
          // of its own (a cancel read between lots): the cursor may run behind the mark (a rate limit, or a run
          // resumed below a larger lot's mark), and the lots counted since the last progress save - their refusals
          // and send failures, which no receipt shows - are only in memory. Nothing has changed the job since the
          // last lot was counted (its counts, cursor and kept outcomes change together, after a whole lot), so it is
          // a progress save. Before, they were lost: done 3, refused 0 where it is 3, 1 (resume.test.ts, "a cancel
          // read between lots"). A write that throws is logged, and the read's error thrown.
          await (own ? keepUncounted(own, true) : write()).catch((writeErr: unknown) =>
            log.warn({ operationId: id, err: writeErr instanceof Error ? writeErr.message : String(writeErr) }, "operation's progress not written after its cancel's receipt read failed"),
          );
          throw err;
        }
        const awaiting: number[] = [];
        window.forEach((row, i) => {
          const o = own?.[i] ?? (sent[i] ? ({ kind: 'done' } as const) : kept[i]);
          if (o) count(job, row, o);
          else awaiting.push(job.cursor + i);
        });
        if (awaiting.length > 0) job.awaitingReceipt = awaiting;
      }
      delete job.pausedLot;
      // The reason only with the cancelled state: set before the receipt reads, a read that threw wrote it on the job
      // left running, and a job that went on carried "stopped: ..." into a later operator's cancel and its audit
      // record (authority.test.ts, "the receipt read failing at the stop").
      if (reason !== undefined) job.stoppedReason = reason;
      if ((await finish('cancelled')) && job.awaitingReceipt?.length) await this.#countLate(id, 'cancelled operation: late receipts of its former holder counted in it');
    };

    /**
     * Gives #run's late count the refusals and send failures of a lot this run stopped uncounted (`unsaved.lot`,
     * until a write of this run lands: the job then holds them); false when the lot has none.
     */
    const holdUncounted = (lot: ReadonlyArray<StepOutcome | undefined>): boolean => {
      if (!lot.some((o) => o && o.kind !== 'done')) return false;
      unsaved.lot = { from: job.cursor, outcomes: lot };
      return true;
    };

    /**
     * The refusals and send failures of a lot this run's lease's end stopped uncounted: only this run knows them (no
     * receipt shows them), and a cancel that counts the lot by receipts would count them nowhere. Kept on the job,
     * as a pause keeps its lot (Job.pausedLot), when no one has written it since this run did - the write is
     * conditional as ever, so it cannot put this run's state over a successor's, lease or not: a cancel then counts
     * them (also one inside a successor's smaller lot: cancel), and a run that steps the lot again drops them as its
     * cursor passes - each counted once. Refused, a successor holds the job: a resumed run that steps the lot again
     * counts them itself, and a cancel lists their rows as awaiting a receipt, which #run's late count then counts
     * with this run's outcomes - if the cancel landed before this run ended; else #run adds them to the job then
     * (keepLateOutcomes) for a later cancel. Before, a later cancel (the successor paused, or cancelled past its first
     * smaller lot) left them uncounted (resume.test.ts, "writing the job first"; docs/failures.md, "A holder that lost
     * its lease").
     * Written too when the lot has none but changes what the job keeps: its settled rows replace the older kept
     * outcomes of an earlier holder (setPausedLot), as this run stepped them last. Before, only a lot with a refusal
     * or a send failure was written, and a run that sent the kept rows again (done) left the older refusal and send
     * failure on them for the next cancel to count (resume.test.ts, "a later run sending its rows again").
     * `always`: written whatever it keeps (the cancel's catch: a progress save too).
     */
    const keepUncounted = async (lot: ReadonlyArray<StepOutcome | undefined>, always = false): Promise<void> => {
      // Set first: a write that throws may have landed or not, and the late count counts only rows no cancel did.
      // holdUncounted gates only that count: a lot of done and stopped steps gives it nothing to count.
      const held = holdUncounted(lot);
      const before = job.pausedLot;
      setPausedLot(job, lot);
      if (always || held || !isDeepStrictEqual(before, job.pausedLot)) await write();
    };

    const wish = async () => (await jobs.control(id))?.control ?? 'run';
    const w = await wish();
    if (w === 'cancel') return cancel(undefined);
    if (w === 'pause') {
      if (job.state !== 'paused') await finish('paused');
      return;
    }

    const rows = await jobs.rows(job);
    job.state = 'running';
    job.startedAt ??= new Date().toISOString();
    lastSave = clock();
    if (!(await write({ carry: true }))) return;
    log.info({ operationId: id, kind: job.kind, total: job.total, cursor: job.cursor }, 'operation running');
    const limiter = new RateLimiter(job.ratePerSecond);
    // Commands per step: the configured lot, or - under a rate limit - a tenth of a second's worth, so the limit
    // paces small lots rather than letting one large lot out at once.
    const size = job.ratePerSecond > 0 ? Math.max(1, Math.min(this.#o.concurrency, Math.floor(job.ratePerSecond / 10))) : this.#o.concurrency;
    const spec = job.kind === 'resubmit' ? ({ kind: 'resubmit' } as const) : ({ kind: 'skip' } as const);
    // Asked by the Manager right before each send, and here before each lot and each one-event retry: the lease's
    // last renewed expiry still LEASE_SEND_MARGIN_MS ahead. Once it says no it stays no for this run (a renewal that
    // lands late must not let the rest of a lot out after part of it was held back).
    let fenced = false;
    const mayStillSend = () => {
      fenced ||= !leaseHeld(lease, this.#o.leases);
      return !fenced;
    };
    const origin: CommandOrigin = { operationId: id, mayStillSend };
    let lastControl = clock();
    /** Ends the run as the operator's cancel or pause asks (true when it did); `lot`: as for cancel. */
    const obey = async (wished: Awaited<ReturnType<typeof wish>>, lot?: ReadonlyArray<StepOutcome | undefined>): Promise<boolean> => {
      if (wished === 'cancel') await cancel(rows, lot);
      else if (wished === 'pause') {
        // Kept with the paused job: a cancel of it runs without this run, and no receipt shows a refusal or a send
        // failure (before, a pause then a cancel counted them nowhere: resume.test.ts, "paused in its retry wait").
        if (lot) setPausedLot(job, lot);
        await finish('paused');
      } else return false;
      return true;
    };
    // Asked by #step inside its retry waits (the lot's events wait together): one read of the wish serves every wait
    // that ends within CONTROL_EVERY_MS of it. An unread wish is taken as 'run' - the retry then goes on, under the
    // lease guard as ever, and the loop reads the wish again between lots.
    let controlRead: { at: number; wish: Promise<Awaited<ReturnType<typeof wish>>> } | undefined;
    const stopWished = async (): Promise<boolean> => {
      if (!controlRead || clock() - controlRead.at >= CONTROL_EVERY_MS) controlRead = { at: clock(), wish: wish().catch(() => 'run' as const) };
      const wished = await controlRead.wish;
      return wished === 'cancel' || wished === 'pause';
    };

    // Rows below this may have had this job's command sent by an earlier run that saved no progress for them.
    const sentMaybeTo = Math.min(rows.length, job.inFlightTo ?? 0);
    // The mark runs ahead of the cursor by about SAVE_EVERY_MS of commands under a rate limit, so a job of lots of
    // five writes it every half second, not before every lot.
    const markAhead = Math.ceil((job.ratePerSecond * SAVE_EVERY_MS) / 1000);
    while (job.cursor < rows.length) {
      if (stopSignal.aborted) {
        await save();
        return; // stopping (or the lease is gone): the next holder continues from the saved cursor
      }
      if (clock() - lastControl >= CONTROL_EVERY_MS) {
        lastControl = clock();
        if (await obey(await wish())) return;
      }
      // The starter's role re-checked before each lot: a revoked grant stops the job here, between lots, as a cancel
      // would (what was sent is counted, nothing more goes out). An unreadable grant list is no revocation: the next
      // lot asks again.
      if (job.authority && this.#o.authorityLapsed) {
        const lapsed = await this.#o.authorityLapsed(job).catch(() => null);
        if (lapsed !== null) {
          log.warn({ operationId: id, cursor: job.cursor }, "operation stopped: its starter's role was revoked");
          await cancel(rows, undefined, lapsed);
          return;
        }
      }
      const batch = rows.slice(job.cursor, job.cursor + size);
      if ((job.inFlightTo ?? 0) < job.cursor + batch.length) {
        // Saved before the send (a failed write throws: nothing of this lot was sent), so a run that resumes
        // below the mark knows to look for this job's receipts. Without the lease nothing is written, and a write
        // refused because another replica wrote the job since means the lease was lost unseen: send nothing.
        job.inFlightTo = Math.min(rows.length, job.cursor + Math.max(batch.length, markAhead));
        if (!(await save())) return;
      }
      // An earlier run's commands, found by their receipts: counted done, not sent again.
      const earlier = job.cursor < sentMaybeTo ? await this.#sentEarlier(batch, job.cursor, sentMaybeTo, id) : batch.map(() => false);
      const toSend = batch.filter((_, i) => !earlier[i]);
      await limiter.take(stopSignal, toSend.length);
      // Stopped (or the lease lost) while waiting for the slot: this lot is not sent; the loop's top saves and returns.
      if (stopSignal.aborted) continue;
      // The mark written before this lot proves nothing about now: the run may have stalled since (in the receipt
      // reads, the rate slot, a paused process) past its lease's end, and a successor may have cancelled the job.
      // Sending nothing and writing nothing, as after a refused write: a successor's state stands, and if the lease
      // is still ours after all, the next scan resumes the job from its saved cursor.
      if (!mayStillSend()) {
        log.warn({ operationId: id }, "operation lot not sent: this replica's lease has ended or is about to (it stalled, or its renewals failed); stopping it here");
        return;
      }
      if (toSend.length > 0) unsaved.sends = true;
      // The starter's stable id with the name, when the job recorded it (jobs from before it did: the name alone).
      const auditor: Auditor = job.startedById !== undefined ? { name: job.startedBy, id: job.startedById } : job.startedBy;
      const first = toSend.length > 0 ? await this.#o.manager.executeMany(toSend, spec, auditor, origin) : [];
      const stepped = await Promise.all(toSend.map((row, i) => this.#step(row.endpointId, row.eventId, spec, auditor, origin, first[i]!, stopWished)));
      // The lease ended during the lot (the Manager held its sends back, undoing their claims, or a retry was not
      // made), or the operator cancelled or paused while an event waited to be retried: nothing of the lot is counted
      // and the cursor is not moved or saved - the successor (or the resumed job) goes on below the in-flight mark,
      // finds by their receipts the lot's events that did go out, and claims the others afresh. A cancel or pause
      // is applied here while the lease is still this run's (a cancel counts the lot's events as they settled).
      const sentOutcomes = [...stepped];
      const outcomes = batch.map((_, i) => (earlier[i] ? ({ kind: 'done' } as const) : sentOutcomes.shift()!));
      const settled = outcomes.map((o) => (o.kind === 'stopped' ? undefined : o));
      if (settled.includes(undefined)) {
        // Known to #run's late count before the cancel or pause is written: the lease may end while it is (the
        // cancel's receipt reads outlast it), and a successor may write the job first - the write is then refused and
        // the lot not kept (keepUncounted is not reached); a successor's cancel lists the rows as awaiting a receipt
        // (resume.test.ts, "a successor cancelling while the holder counts it"). A cancel that lands lists none of
        // them: nothing counts twice.
        holdUncounted(settled);
        // An unread wish is taken as 'run', as in the retry waits: the lot is then kept below, and the next run reads
        // the wish again. Before, the read's error ended the run before the lot was kept - the store stopping between
        // the wait's read of the cancel and this one - and the next cancel counted the lot by receipts alone, done 1,
        // refused 0, failed 0 (resume.test.ts, "the wish's read that applies it throwing").
        // The lease is asked before the read, as ever: a lease that ends during the read still has the wish applied.
        const unread = (err: unknown) => {
          log.warn({ operationId: id, err: err instanceof Error ? err.message : String(err) }, "operator's wish not read: the stopped lot is kept for the next run");
          return 'run' as const;
        };
        if (mayStillSend() && (await obey(await wish().catch(unread), settled))) return;
        log.warn({ operationId: id }, "operation lot not finished: this replica's lease ended during it (it stalled, or its renewals failed), or the operator stopped the job; stopping it here");
        await keepUncounted(settled);
        return;
      }
      batch.forEach((row, i) => count(job, row, settled[i]!));
      settled.forEach((o, i) => o!.kind !== 'done' && unsaved.counted.set(job.cursor + i, o!));
      job.cursor += batch.length;
      passPausedLot(job);
      if (clock() - lastSave >= SAVE_EVERY_MS && !(await save())) return;
    }
    // Logged only when the job was written completed: a refused write means a successor holds the job now.
    if (await finish('completed')) log.info({ operationId: id, done: job.done, refused: job.refused, failed: job.failed }, 'operation completed');
  }

  /**
   * One event's outcome, from the lot's first answer (Manager.executeMany): a short retry through the one-event
   * path when the broker was unavailable, the outcome classified. `stopWished`: whether the operator has cancelled
   * or paused the job since, asked after each wait on a claim being sent elsewhere (the job's wish is otherwise
   * read only between lots, and these waits last up to 44 s).
   */
  async #step(
    endpointId: string,
    eventId: string,
    spec: { kind: 'resubmit' } | { kind: 'skip' },
    auditor: Auditor,
    origin: CommandOrigin,
    first: Settled<CommandResult>,
    stopWished: () => Promise<boolean>,
  ): Promise<StepOutcome | { kind: 'stopped' }> {
    let answer = first;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        // Up to 44 s after the lot: the lease may have ended meanwhile (a successor may have cancelled the job), or,
        // after a wait on a claim being sent elsewhere, the operator stopped the job (below).
        if (origin.mayStillSend?.() === false) return { kind: 'stopped' };
        try {
          answer = { ok: true, value: await this.#o.manager.execute(endpointId, eventId, spec, auditor, origin) };
        } catch (error) {
          answer = { ok: false, error };
        }
      }
      if (answer.ok) {
        const other = answer.value.outcome === 'duplicate' ? await this.#sentByOther(answer.value, origin.operationId) : undefined;
        return other === undefined ? { kind: 'done' } : { kind: 'refused', status: 409, detail: other };
      }
      const err = answer.error;
      if (isSendWithheld(err)) return { kind: 'stopped' };
      // describeError recognises the Manager's refusals by name too: in the built console they can come from
      // another bundled copy of http.ts, and the job's item must record the reason ("… is Completed"), not "conflict".
      const d = describeError(err);
      const status = d.status;
      const detail = !d.internal ? d.detail : err instanceof Error ? err.message.slice(0, 300) : String(err);
      if (status === 409 || status === 404) {
        // A step repeated after a restart: the endpoint may have answered this job's command already. Unread (the
        // store did not answer), the Manager's answer stands - nothing was sent now either way, as for a duplicate's
        // receipt (#sentByOther). Before, the read's error ended the run from inside the lot: the outcomes its other
        // events had settled were known nowhere, and a cancel before the next run stepped them listed its refusals
        // and send failures as awaiting a receipt, counted never (resume.test.ts, "a receipt read failing in a step").
        const acted = await this.#actedByThisJob(eventId, endpointId, origin.operationId).catch((err: unknown) => {
          log.warn({ operationId: origin.operationId, eventId, err: err instanceof Error ? err.message : String(err) }, "operation step: this job's receipt not read; the Manager's answer stands");
          return false;
        });
        if (acted) return { kind: 'done' };
        // A claim without its receipt (a send in progress elsewhere, or one a crash interrupted) is not a
        // refusal: the Manager re-sends it once it is older than CLAIM_GRACE_MS (30 s); wait for that.
        if (status === 409 && detail.includes('being sent right now') && attempt < 12) {
          await new Promise((r) => setTimeout(r, 4000));
          // Before, only the lease was asked here: a healthy holder retried after a cancel and, the claim 30 s old,
          // re-sent it under the job's name (resume.test.ts, "stops at the operator's cancel").
          if (await stopWished()) return { kind: 'stopped' };
          continue;
        }
        return { kind: 'refused', status, detail };
      }
      if (attempt < 3) {
        await new Promise((r) => setTimeout(r, 500 * attempt));
        continue;
      }
      return { kind: 'failed', status, detail };
    }
  }

  /**
   * Why a 'duplicate' answer is not this job's command, naming who sent it (undefined when it is this job's, or its
   * receipt is not written yet: a claim the Resolver recorded whose sender may still write it, which may be this
   * job's own from a run that stopped before its receipts). Another operator's identical command still Pending is
   * not one this job sent: counted refused, as an event that changed before its turn is.
   */
  async #sentByOther(result: CommandResult, operationId: string): Promise<string | undefined> {
    let receipt: AuditEntry | null;
    try {
      receipt = await this.#o.store.getAudit(result.eventId, result.messageId);
    } catch (err) {
      // Unread, the answer stays what the Manager said (nothing was sent now either way).
      log.warn({ operationId, eventId: result.eventId, err: err instanceof Error ? err.message : String(err) }, 'duplicate command receipt not read');
      return undefined;
    }
    if (!receipt || isThisJobs(receipt, operationId)) return undefined;
    const by = receipt.data?.match(/"operationId":"([^"]+)"/)?.[1];
    return `the same command was already sent by ${receipt.auditor}${by ? ` (operation/${by})` : ''} and is still Pending; not sent again`;
  }

  /**
   * Per row of `batch` (starting at row `from`), whether it is below `to` and this job's receipt for it exists. By
   * endpoint and event alone, never the row's session: a job holds one row per endpoint and event (selection.ts),
   * and for an event with rows in several sessions the Manager sends the command on the row it fits - often not the
   * session frozen - so a receipt for another session is still this row's command (matched by session, such an
   * event was resubmitted again on resume: resume.test.ts, "rows in two sessions").
   */
  async #sentEarlier(batch: readonly SelectedRow[], from: number, to: number, operationId: string): Promise<boolean[]> {
    return Promise.all(batch.map((row, i) => (from + i < to ? this.#actedByThisJob(row.eventId, row.endpointId, operationId) : false)));
  }

  async #actedByThisJob(eventId: string, endpointId: string, operationId: string): Promise<boolean> {
    return actedByThisJob(this.#o.store, eventId, endpointId, operationId);
  }
}
