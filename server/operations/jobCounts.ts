// How a bulk job's counts are made (runner.ts): each row's outcome in the job's totals, whether a row has this job's
// receipt (how a run finds the commands an earlier run sent past the saved cursor), and the late count of a
// cancelled job's receipts. A run that cancels the job counts the rows between the saved cursor and the in-flight
// mark by their receipts, then ends the job; a former holder stalled past its lease may have handed one of those
// commands to the broker before its lease ended and write the receipt only after that count. The cancel therefore
// lists the rows it found without a receipt (Job.awaitingReceipt), and whoever may have written, or may see, such a
// receipt afterwards counts it: the former holder when its run ends having sent something it never saved, and the
// cancelling run once its own write landed. Each writes its receipt (or the job) first and reads the other second,
// so at least one of them sees the other's write (where a read sees the last write: docs/failures.md, "Late receipts
// of a cancelled job"); the count and the list change in one conditional write, so a row is counted once whoever
// finds it. A former holder whose lease ended during a lot (or while it wrote the operator's cancel or pause of it)
// also counts, the same way, the rows of that lot it found refused or could not send and a successor's cancel listed:
// no receipt shows those to the cancel. A run that stops with outcomes the job does not hold - that lot's refusals and
// send failures, and those of lots it counted since its last write landed - its write refused because another run
// wrote the job first, or not made (its lease seen lost, so no progress save) - adds them to the job as it is now
// while it has not ended (keepLateOutcomes), where no run has
// passed or kept their rows: a cancel counts them then, and a run that steps the rows again replaces or drops them
// as it does a pause's kept lot. Re-deriving an ended job's counts from receipts on each read was the other way: a trail read per row on
// every poll, and a receipt proves only done, not the refusals and send failures the job counted.
import { isDeepStrictEqual } from 'node:util';
import type { AuditEntry, MessageStore } from '../../lib/store/index.ts';
import { ENDED_STATES, MAX_ERRORS_KEPT, type Job, type JobStore } from './jobs.ts';
import type { SelectedRow } from './selection.ts';
import { log } from '../log.ts';

/** One event's outcome in a job's counts. */
export type StepOutcome = { kind: 'done' } | { kind: 'refused'; status: number; detail: string } | { kind: 'failed'; status: number; detail: string };

/** Counts `row`'s outcome in the job (and its endpoint's part), keeping the first refusals and send failures. */
export function count(job: Job, row: SelectedRow, o: StepOutcome): void {
  const part = job.byEndpoint?.[row.endpointId];
  if (part) part[o.kind]++;
  if (o.kind === 'done') job.done++;
  else if (o.kind === 'refused') {
    job.refused++;
    const refusals = (job.refusals ??= []);
    if (refusals.length < MAX_ERRORS_KEPT) refusals.push({ endpointId: row.endpointId, eventId: row.eventId, status: o.status, detail: o.detail });
  } else {
    job.failed++;
    if (job.errors.length < MAX_ERRORS_KEPT) job.errors.push({ endpointId: row.endpointId, eventId: row.eventId, status: o.status, detail: o.detail });
  }
}

/**
 * Keeps on the job the refusals and send failures of the lot (from `job.cursor` on) a pause stopped (Job.pausedLot).
 * Where the newer lot settled a row (done too) its outcome replaces what was kept of it: it stepped the row last.
 * Where its step was stopped, and past its end (a replica with a smaller lot size paused before reaching them), the
 * earlier kept outcomes stay - as a cancel inside the lot counts them (runner.ts, cancel). Before, a stopped step
 * dropped them, and the cancel of the paused job listed the row as awaiting a receipt where a cancel in the same lot
 * counted it (resume.test.ts, "paused in a successor's later lot").
 */
export function setPausedLot(job: Job, lot: ReadonlyArray<StepOutcome | undefined>): void {
  const earlier = pausedLotOutcomes(job);
  const kept = lot.flatMap((settled, i) => {
    const o = settled ?? earlier[i];
    return o && o.kind !== 'done' ? [{ row: job.cursor + i, kind: o.kind, status: o.status, detail: o.detail }] : [];
  });
  keepPausedLot(job, [...kept, ...(job.pausedLot ?? []).filter((r) => r.row >= job.cursor + lot.length)]);
}

/**
 * Drops the kept outcomes of the rows the cursor has passed: the run that moved it stepped and counted them. Kept
 * until then, not dropped when a resumed run starts: a run that stops before it re-steps the lot (the replica
 * stopping, a write refused) would leave a later cancel without them (resume.test.ts, "resumed on a replica").
 */
export function passPausedLot(job: Job): void {
  keepPausedLot(job, (job.pausedLot ?? []).filter((r) => r.row >= job.cursor));
}

function keepPausedLot(job: Job, kept: NonNullable<Job['pausedLot']>): void {
  if (kept.length > 0) job.pausedLot = kept;
  else delete job.pausedLot;
}

/** The outcomes a pause kept, as the stopped lot's (indexed from `job.cursor`, undefined where none was kept). */
export function pausedLotOutcomes(job: Job): Array<StepOutcome | undefined> {
  const lot: Array<StepOutcome | undefined> = [];
  for (const { row, ...o } of job.pausedLot ?? []) if (row >= job.cursor) lot[row - job.cursor] = o;
  return lot;
}

/** Does the receipt name this job (the Manager writes the operation's id into it)? */
export function isThisJobs(audit: AuditEntry, operationId: string): boolean {
  return audit.data !== null && audit.data.includes(`"operationId":"${operationId}"`);
}

/** Does the event's audit trail hold this job's receipt for a command on `endpointId`? */
export async function actedByThisJob(store: MessageStore, eventId: string, endpointId: string, operationId: string): Promise<boolean> {
  const audits = await store.listAudits(eventId, { pageSize: 50 });
  return audits.items.some((a) => a.endpointId === endpointId && isThisJobs(a, operationId));
}

/** Conditional writes tried before giving up: each refusal means another writer counted meanwhile. */
const LATE_COUNT_ATTEMPTS = 5;

/**
 * A lot a run stepped but never counted (its lease ended during it): its outcomes from selection row `from` on,
 * undefined where an event's step was stopped.
 */
export interface UncountedLot {
  from: number;
  outcomes: ReadonlyArray<StepOutcome | undefined>;
  /**
   * The kept outcomes (Job.pausedLot) of the job as the run read it when it started: older than the run's own step
   * of those rows, so its late outcome replaces one still kept as it was (keepLateOutcomes).
   */
  superseded?: Job['pausedLot'];
}

/**
 * Counts the rows of an ended job's `awaitingReceipt` that have this job's receipt now as done, and - `lot`: the
 * caller's own lot that its lease's end left uncounted - the rows that lot found refused or could not send as such
 * (no receipt shows those: only the run that stepped them knows), taking them off the list in the same write
 * (conditional on the version read; a refused write is read again). A row is on the list only if the cancel did not
 * count it, so nothing is counted twice. Answers how many rows it counted; 0 for a job that is not ended or awaits
 * nothing.
 */
export async function countLateReceipts(jobs: JobStore, store: MessageStore, operationId: string, lot?: UncountedLot): Promise<number> {
  const known = (i: number): StepOutcome | undefined => {
    const o = lot?.outcomes[i - lot.from];
    return o && o.kind !== 'done' ? o : undefined;
  };
  for (let attempt = 0; attempt < LATE_COUNT_ATTEMPTS; attempt++) {
    const read = await jobs.read(operationId);
    const awaiting = read?.job.awaitingReceipt;
    if (!read || !awaiting?.length || !ENDED_STATES.has(read.job.state)) return 0;
    const { job, etag } = read;
    const rows = await jobs.rows(job, Math.max(...awaiting) + 1);
    const found = await Promise.all(
      awaiting.map(async (i): Promise<StepOutcome | undefined> => {
        const row = rows[i];
        if (!row) return undefined;
        return (await actedByThisJob(store, row.eventId, row.endpointId, operationId)) ? { kind: 'done' } : known(i);
      }),
    );
    if (!found.some(Boolean)) return 0;
    awaiting.forEach((i, k) => found[k] && count(job, rows[i]!, found[k]));
    job.awaitingReceipt = awaiting.filter((_, k) => !found[k]);
    if ((await jobs.save(job, etag)) !== undefined) return found.filter(Boolean).length;
  }
  return 0;
}

/**
 * Adds to the job the refusals and send failures (`lot`) a run stopped with and never wrote - its write refused
 * because another run wrote the job first, or not made - as kept outcomes (Job.pausedLot), for the rows the job's
 * cursor has not passed and no kept outcome names: a successor that carried the job on paused, or cancelled before
 * stepping them again, would otherwise list them as awaiting a receipt (no receipt shows them) after this run's late
 * count had found the job not ended. Kept, they are what a pause keeps: a cancel counts them (a row with this job's
 * receipt done, runner.ts), a run that steps the rows replaces them or drops them as its cursor passes - each once.
 * What the job keeps already stands (a successor stepped those rows after this run did); so does an ended job
 * (countLateReceipts counts a cancel's listed rows). Conditional on the version read; a refused write is read again.
 * A running successor finds its next write refused, reads the job again and - still holding its lease, the job
 * changed by nothing but such outcomes (lateOutcomesOnly) - takes them and carries on; otherwise it stops, as after
 * a lost lease, keeping its own outcomes the same way, and the job resumes at the next scan. Answers how many it kept.
 *
 * A kept outcome is replaced only where it is still the one the run read when it started (`lot.superseded`): the
 * run stepped the row after that, so its outcome is the newer, as a newer pause's lot replaces the kept one
 * (setPausedLot). Before, it never replaced one: an older run's send failure kept by a pause, the job resumed, the
 * resumed run refused on the row and its write refused (a successor paused it first), was counted failed - once, but
 * of the older step's kind (jobCounts.test.ts, "replaces a kept outcome the run had read"). Any other kept outcome
 * stands: a successor kept it after the run's read, and which of the two steps came last is not known (the stalled
 * run's may have been answered after the successor's). Either way the row is counted once, refused or failed - both
 * mean this job sent nothing for it then - and a row the job did send counts done by its receipt at the cancel
 * whatever is kept.
 *
 * The write of a running job moves its `runningMs` to the write's time, as the runner's progress saves do: the view
 * adds the time since `updatedAt` to it (jobs.ts, jobView), and before, the late write moved `updatedAt` alone, so
 * the job's running time dropped by the time since the successor's last save and its speed rose with it.
 *
 * Given up after LATE_COUNT_ATTEMPTS refused writes in a row (each one another run's write: a successor saving its
 * progress), logged with the job and how many outcomes were not kept. The job stays as its writers left it, not
 * ended, so the scans run it on: the rows are at or past its cursor (else nothing was left to add), and the run that
 * holds it steps them again from the cursor and counts them itself - the Manager asked again, the send retried. They
 * are lost for good only if the job is cancelled - or paused, then cancelled - before a run steps them: the cancel
 * lists them as awaiting a receipt, and none comes (docs/failures.md).
 */
export async function keepLateOutcomes(jobs: JobStore, operationId: string, lot: UncountedLot): Promise<number> {
  let notKept = 0;
  for (let attempt = 0; attempt < LATE_COUNT_ATTEMPTS; attempt++) {
    const read = await jobs.read(operationId);
    if (!read || ENDED_STATES.has(read.job.state)) return 0;
    const { job, etag } = read;
    // Kept by someone after this run's read: stands. Kept as this run read it: older than its step, replaced.
    const stale = (r: NonNullable<Job['pausedLot']>[number]) => (lot.superseded ?? []).some((s) => isDeepStrictEqual(s, r));
    const added = lot.outcomes.flatMap((o, i) => {
      const row = lot.from + i;
      const open = row >= job.cursor && row < (job.inFlightTo ?? 0) && !(job.pausedLot ?? []).some((r) => r.row === row && !stale(r));
      return o && o.kind !== 'done' && open ? [{ row, kind: o.kind, status: o.status, detail: o.detail }] : [];
    });
    const rows = new Set(added.map((r) => r.row));
    const replaced = (job.pausedLot ?? []).filter((r) => rows.has(r.row));
    // An outcome the same as the one kept changes nothing: no write (a successor's progress is not stopped for it).
    const changes = added.filter((a) => !replaced.some((r) => isDeepStrictEqual(r, a)));
    if (changes.length === 0) return 0;
    notKept = changes.length;
    job.pausedLot = [...(job.pausedLot ?? []).filter((r) => !rows.has(r.row)), ...added].sort((a, b) => a.row - b.row);
    const at = new Date();
    if (job.state === 'running' && job.startedAt) job.runningMs += Math.max(0, at.getTime() - Date.parse(job.updatedAt));
    if ((await jobs.save(job, etag, at)) !== undefined) return changes.length;
  }
  log.warn({ operationId, outcomes: notKept, attempts: LATE_COUNT_ATTEMPTS }, "a stopped operation run's refusals and send failures not kept: the job was written by another run before each write; the run holding it steps their rows again");
  return 0;
}

/**
 * After a write of the run holding the job was refused: the outcomes a stopped run's late write (keepLateOutcomes)
 * added to the job, to be carried on by the holder - or undefined when the job as read now (`now`) differs from the
 * version the holder last wrote or read (`written`) by more than such a write changes (the kept outcomes, runningMs,
 * updatedAt): another writer, and the holder stops as before. Only the kept outcomes of rows at or past the holder's
 * `cursor` are answered: those before it the holder has stepped and counted since its last write, as its cursor
 * passing them would drop them (passPausedLot). The caller must know besides that no other run held the job since
 * (its lease still held after this read): a new holder's first write of a running job changes no more than this.
 */
export function lateOutcomesOnly(written: Job, now: Job, cursor: number): NonNullable<Job['pausedLot']> | undefined {
  const rest = ({ pausedLot: _kept, runningMs: _ms, updatedAt: _at, ...others }: Job) => others;
  if (!isDeepStrictEqual(rest(written), rest(now))) return undefined;
  return (now.pausedLot ?? []).filter((r) => r.row >= cursor);
}
