// Retention of bulk jobs (jobs.ts): nothing else deletes a job's documents, and every confirmation dialog leaves a
// job behind (prepared, then discarded), so without this the platform container grows for ever. An ended job
// (ENDED_STATES) whose end is older than NIMBUS_JOB_RETENTION_DAYS is deleted with its control and its selection;
// a job that has not ended is never touched, however old. The runner (runner.ts) asks for a sweep at each scan;
// one is made at most once an hour per replica, and only by the replica that takes the sweep's lease, which is
// left to run out rather than released: the other replicas find it held and skip their sweep within that hour.
// A sweep deletes at most PRUNE_BATCH jobs, those that ended first first; the rest wait for the next hour (a backlog
// drains 2,400 jobs a day). That is still up to 100 jobs of up to 52 documents each, seconds of deletes, so a sweep
// stops between jobs once the runner is stopping (its stop signal): a console's shutdown must not wait for it past
// NIMBUS_STOP_GRACE_MS, and the next sweep (on any replica) deletes the rest. Every delete is idempotent (a document already gone is fine), so two
// sweeps that overlap after all (a lease lapsed under a slow sweep) do no harm. A failure is logged, without the
// documents, and the sweep tries again an hour later; it never throws.
import type { LeaseStore } from '../../lib/store/index.ts';
import { log } from '../log.ts';
import type { JobStore } from './jobs.ts';

/** How often one replica sweeps (and how long the sweep's lease keeps the others from it). */
export const PRUNE_EVERY_MS = 60 * 60_000;
/** The most jobs one sweep deletes. */
export const PRUNE_BATCH = 100;
/** The sweep's lease (lib/store/leases.ts), one for all replicas. */
export const PRUNE_LEASE = 'operations_prune';
const DAY_MS = 24 * 60 * 60_000;

export interface PruneOptions {
  jobs: JobStore;
  leases: LeaseStore;
  /** This replica's name in the lease. */
  owner: string;
  /** NIMBUS_JOB_RETENTION_DAYS. */
  retentionDays: number;
  /** The clock jobs' ends are compared with (epoch ms); tests move it instead of waiting. */
  now?: () => number;
}

/**
 * Deletes up to `limit` jobs that ended before `before`, those that ended first first. A job whose delete fails is left for the
 * next sweep, and the others are still deleted: one document the store refuses must not keep every later job. Once
 * `signal` is aborted it deletes no further job (the one being deleted is finished: its deletes are already out).
 */
export async function pruneEndedJobs(jobs: JobStore, before: Date, limit = PRUNE_BATCH, signal?: AbortSignal): Promise<{ deleted: number; failed: number }> {
  let deleted = 0;
  let failed = 0;
  let firstError: unknown;
  for (const job of await jobs.endedBefore(before, limit)) {
    if (signal?.aborted) break;
    try {
      await jobs.remove(job);
      deleted++;
    } catch (err) {
      failed++;
      firstError ??= err;
    }
  }
  if (failed > 0) log.warn({ failed, deleted, err: firstError instanceof Error ? firstError.message : String(firstError) }, 'ended operations not deleted; the next sweep tries again');
  return { deleted, failed };
}

export class JobPruner {
  readonly #o: PruneOptions;
  readonly #now: () => number;
  /** When this replica last tried to sweep (-Infinity: not yet, so the first scan sweeps). */
  #last = -Infinity;

  constructor(options: PruneOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Sweeps if this replica has not tried within PRUNE_EVERY_MS and takes the lease; answers how many jobs were
   * deleted (0 when it did not sweep). Returns between two jobs once `signal` (the runner's stop) is aborted.
   * Never throws.
   */
  async sweepIfDue(signal?: AbortSignal): Promise<number> {
    const now = this.#now();
    if (now - this.#last < PRUNE_EVERY_MS) return 0;
    this.#last = now;
    try {
      // Taken for the whole interval and not released: a replica whose hour comes round sooner finds it held.
      // The holder takes it again at its own next sweep (acquire renews a lease already its own).
      const lease = await this.#o.leases.acquire(PRUNE_LEASE, this.#o.owner, PRUNE_EVERY_MS);
      if (!lease || signal?.aborted) return 0;
      const { deleted } = await pruneEndedJobs(this.#o.jobs, new Date(now - this.#o.retentionDays * DAY_MS), PRUNE_BATCH, signal);
      if (deleted > 0) log.info({ deleted, retentionDays: this.#o.retentionDays }, 'ended operations past their retention deleted');
      return deleted;
    } catch (err) {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'ended operations not pruned; the next sweep tries again');
      return 0;
    }
  }
}
