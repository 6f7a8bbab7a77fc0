// Bulk operations as durable jobs (POST /api/operations): resubmit or skip every event of a frozen selection, a
// lot of Manager commands at a time (each with its claim + receipt, so a repeated step sends nothing twice),
// rate-limited, with progress in Cosmos. Three kinds of console document (platform container, server/heartbeat/platformDocs.ts):
//   job_<id>         the job: its selection, counts, cursor and state - written only by the runner holding the
//                    job's lease (and once by the creator) and, once it has ended, the late-receipt count
//                    (jobCounts.ts), each write conditional on the version it last read or wrote, so a holder that
//                    lost the lease without knowing it cannot write over its successor;
//   jobctl_<id>      the operator's wish (run / pause / cancel) - written only by the API;
//   jobsel_<id>_<n>  the frozen selection, 2,000 rows per document (a document stays far below Cosmos' 2 MB):
//                    [endpointId, eventId, sessionId] each (the session lets the runner read the row directly).
// A discarded job's selection is deleted when it is discarded (it never ran: nothing reads its rows); an ended job's
// documents, all three kinds, once it ended more than NIMBUS_JOB_RETENTION_DAYS ago (prune.ts).
// The runner (runner.ts) applies the wish at its next step; a paused job keeps its lease-free cursor and resumes
// where it stopped, in any replica.
import type { JobAuthority } from './authority.ts';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { limiter } from '../../lib/concurrency/limiter.ts';
import type { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { log } from '../log.ts';
import type { SelectedRow, Selection } from './selection.ts';

export const CHUNK_ROWS = 2_000;
export const MAX_ERRORS_KEPT = 50;
/** A job's selection chunks deleted at once (a discard, the retention sweep): a few, not 50, beside the console's other work. */
export const CHUNK_DELETES_AT_ONCE = 8;

/**
 * `prepared`: frozen for the operator's confirmation (created with `hold`), not started; it is either started
 * (`queued`), or `discarded` - cancelled in the confirmation, or never confirmed within PREPARED_TTL_MS. A
 * prepared or discarded job never ran: it is not listed with the jobs, and the runner never runs it.
 */
export type JobState = 'prepared' | 'queued' | 'running' | 'paused' | 'cancelled' | 'completed' | 'failed' | 'discarded';
/** States after which nothing more happens to a job. */
export const ENDED_STATES: ReadonlySet<JobState> = new Set(['completed', 'cancelled', 'failed', 'discarded']);
/** The others: a job in one of them still wants the runner (prepared: to expire it unless confirmed in time). */
export const UNFINISHED_STATES: readonly JobState[] = ['prepared', 'queued', 'running', 'paused'];
/**
 * How long a prepared job waits for its confirmation: a dialog left open (or a tab closed on it) must not leave a
 * job waiting for good. Ten minutes is long enough to check the count with someone, short enough that the frozen
 * list is not stale when started. The runner discards an expired one at its next scan; a confirmation after it is
 * refused (409) even before that.
 */
export const PREPARED_TTL_MS = 10 * 60_000;
/** What a bulk job can do to each row it selected; each is also the authorization action (roles.ts) it needs. */
export const JOB_KINDS = ['resubmit', 'skip'] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export type JobControl = 'run' | 'pause' | 'cancel';
/** The name a job request's refusal is audited under when its body names no kind that can be read: either. */
export const UNREAD_JOB_KIND = JOB_KINDS.join('|');

/** The kind a job request's body asks for, read before the rest of it is checked: it names the request's refusals. */
export function askedJobKind(body: unknown): JobKind | undefined {
  const kind = typeof body === 'object' && body !== null ? (body as { kind?: unknown }).kind : undefined;
  return JOB_KINDS.find((k) => k === kind);
}

export const operationIdSchema = z.string().uuid('an operation id is a UUID');
export const createOperationBody = z.object({
  kind: z.enum(JOB_KINDS),
  selection: z.unknown(),
  /**
   * Create the job prepared (not started, not listed), to be started with /resume once the operator confirmed the
   * count it was frozen with (the confirmation dialog's two steps; /cancel when they decline, PREPARED_TTL_MS when
   * they never answer).
   */
  hold: z.boolean().default(false),
});

/** Why a prepared job was discarded without running. */
export type DiscardReason = 'cancelled' | 'expired';

export interface JobError {
  endpointId: string;
  eventId: string;
  status: number;
  detail: string;
}

/** One endpoint's part of a job's counts. */
export type EndpointCounts = Pick<Job, 'total' | 'done' | 'refused' | 'failed'>;

export interface Job {
  operationId: string;
  kind: JobKind;
  selection: Selection;
  /** Endpoints the frozen selection touches (authorization of pause/resume/cancel, read scope of the job). */
  endpoints: string[];
  state: JobState;
  total: number;
  /** Events acted on (a command sent, or found already sent by this job). */
  done: number;
  /** Events whose state no longer allowed the command (changed meanwhile): counted, not errors. */
  refused: number;
  /**
   * The first MAX_ERRORS_KEPT refusals with the Manager's reason (status 409 or 404, detail "… is Completed", "no
   * stored payload …"): what the drawer's "refused N" explains. Absent on jobs from before it was kept.
   */
  refusals?: JobError[];
  /** Events whose command could not be sent (broker down after retries, store errors). */
  failed: number;
  /**
   * A job over several endpoints: each one's part of the counts, for its audit entries (a reader of one endpoint is
   * shown that endpoint's part: server/audit/readerScope.ts). Absent for one endpoint, and on older jobs.
   */
  byEndpoint?: Record<string, EndpointCounts>;
  /** Index of the next row of the selection to act on. */
  cursor: number;
  /**
   * Rows below this index may have had this job's command sent although `cursor` has not passed them: saved before
   * each lot's send, so a run that resumes from `cursor` looks for this job's receipt of each before sending (an
   * event the endpoint failed again meanwhile would otherwise get a second command). Absent until the first lot.
   */
  inFlightTo?: number;
  /**
   * Set when the job is cancelled: the rows (selection indices) between `cursor` and `inFlightTo` the cancelling run
   * found without this job's receipt. A former holder stalled past its lease may have sent one of those commands and
   * write its receipt after that count; whoever finds such a receipt later counts the row done and takes it off the
   * list, in one conditional write (jobCounts.ts, countLateReceipts), so `done` stays the rows with this job's receipt.
   */
  awaitingReceipt?: number[];
  /**
   * Set when the operator's pause stopped a lot in its retry wait, or the run's lease ended during a lot (kept then
   * only if no one had written the job since: runner.ts, keepUncounted): the refusals and send failures that lot had
   * met, by selection index (from `cursor` on). A cancel of the job counts them - no receipt shows them. A resumed
   * run steps the lot again and drops them only as its cursor passes their rows: a resumed run that stops before
   * that leaves them for the cancel (runner.ts; jobCounts.ts, passPausedLot).
   */
  pausedLot?: Array<{ row: number; kind: 'refused' | 'failed'; status: number; detail: string }>;
  chunks: number;
  /** Commands per second this job may send (0: no limit). */
  ratePerSecond: number;
  startedBy: string;
  /**
   * Who started it, as `kind:id` of the principal (startedBy is a display name, which two people may share): only
   * they may confirm or cancel it while prepared (authorizeControl.ts). Absent on older jobs.
   */
  startedById?: string;
  /**
   * Where the starter's role to act rests on grants alone, what to re-check before each lot (authority.ts): a grant
   * removed or lowered stops the job. Absent when claims gave it (no server-side record) and on older jobs.
   */
  authority?: JobAuthority;
  /** Why the runner stopped the job (`cancelled` by it): "stopped: <user> no longer holds <role> on <endpoints>". */
  stoppedReason?: string;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Time spent running (excludes pauses), for the rate and the ETA. */
  runningMs: number;
  errors: JobError[];
  /** A prepared job's deadline for its confirmation (absent on jobs created before prepared jobs existed). */
  expiresAt?: string | null;
  /** When the operator confirmed a prepared job (null: created to run at once, or never confirmed). */
  confirmedAt?: string | null;
  /** Set when a prepared job was discarded. */
  discardReason?: DiscardReason;
  /** What the job acts on, in words (the failure group's title, the endpoint); absent on older jobs. */
  title?: string;
}

export interface JobControlDoc {
  control: JobControl;
  by: string;
  at: string;
}

/** How many of the rows are on each endpoint. */
export function rowsByEndpoint(rows: readonly Pick<SelectedRow, 'endpointId'>[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of rows) counts[r.endpointId] = (counts[r.endpointId] ?? 0) + 1;
  return counts;
}

export const jobDoc = (id: string) => `job_${id}`;
const controlDoc = (id: string) => `jobctl_${id}`;
const chunkDoc = (id: string, n: number) => `jobsel_${id}_${n}`;

export class JobStore {
  readonly docs: PlatformDocs;
  readonly #preparedTtlMs: number;
  /** `preparedTtlMs`: PREPARED_TTL_MS unless a test needs a prepared job to expire sooner. */
  constructor(docs: PlatformDocs, options: { preparedTtlMs?: number } = {}) {
    this.docs = docs;
    this.#preparedTtlMs = options.preparedTtlMs ?? PREPARED_TTL_MS;
  }

  /**
   * Stores the frozen selection, then the job: queued, or - with `hold` - prepared, waiting for the operator's
   * confirmation (settlePrepared). A job document always has its rows.
   */
  async create(args: {
    kind: JobKind;
    selection: Selection;
    rows: SelectedRow[];
    startedBy: string;
    startedById?: string;
    authority?: JobAuthority;
    ratePerSecond: number;
    hold?: boolean;
    title?: string;
  }): Promise<Job> {
    const operationId = randomUUID();
    const chunks = Math.ceil(args.rows.length / CHUNK_ROWS);
    for (let n = 0; n < chunks; n++) {
      const rows = args.rows.slice(n * CHUNK_ROWS, (n + 1) * CHUNK_ROWS).map((r) => (r.sessionId === undefined ? [r.endpointId, r.eventId] : [r.endpointId, r.eventId, r.sessionId]));
      await this.docs.write(chunkDoc(operationId, n), { rows });
    }
    const now = new Date().toISOString();
    const totals = rowsByEndpoint(args.rows);
    const job: Job = {
      operationId,
      kind: args.kind,
      selection: args.selection,
      endpoints: Object.keys(totals).sort(),
      state: args.hold ? 'prepared' : 'queued',
      total: args.rows.length,
      done: 0,
      refused: 0,
      failed: 0,
      ...(Object.keys(totals).length > 1
        ? { byEndpoint: Object.fromEntries(Object.entries(totals).map(([e, total]) => [e, { total, done: 0, refused: 0, failed: 0 }])) }
        : {}),
      cursor: 0,
      chunks,
      ratePerSecond: args.ratePerSecond,
      startedBy: args.startedBy,
      ...(args.startedById ? { startedById: args.startedById } : {}),
      ...(args.authority ? { authority: args.authority } : {}),
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
      runningMs: 0,
      errors: [],
      refusals: [],
      expiresAt: args.hold ? new Date(Date.parse(now) + this.#preparedTtlMs).toISOString() : null,
      confirmedAt: null,
      ...(args.title ? { title: args.title } : {}),
    };
    // A prepared job's wish is 'pause' until confirmed: a runner that predates prepared jobs leaves it alone too.
    await this.docs.write(controlDoc(operationId), { control: args.hold ? 'pause' : 'run', by: args.startedBy, at: now } satisfies JobControlDoc);
    await this.docs.write(jobDoc(operationId), job, null);
    return job;
  }

  async get(id: string): Promise<Job | null> {
    return (await this.read(id))?.job ?? null;
  }

  /** The job with the version read, which the runner's saves are conditional on (save). */
  async read(id: string): Promise<{ job: Job; etag: string } | null> {
    const doc = await this.docs.read<Job>(jobDoc(id));
    return doc ? { job: doc.value, etag: doc.etag } : null;
  }

  /**
   * Ends the wait of a prepared job: `confirm` starts it (queued, the runner's wish 'run'), `cancel` discards it,
   * `expire` discards it when its confirmation time is up. Conditional on the job document read, so a confirmation
   * and the runner's expiry cannot both win. Answers what became of the job: `started`, `discarded` (cancelled),
   * `expired` (also for a confirmation that came too late), or `ended` (it was not prepared any more) with the job
   * as it is now.
   */
  async settlePrepared(id: string, decision: 'confirm' | 'cancel' | 'expire', by: string, now = Date.now()): Promise<{ result: 'started' | 'discarded' | 'expired' | 'ended'; job: Job | null }> {
    for (;;) {
      const doc = await this.docs.read<Job>(jobDoc(id));
      const job = doc?.value ?? null;
      if (!doc || !job || job.state !== 'prepared') return { result: 'ended', job };
      const expired = job.expiresAt ? now >= Date.parse(job.expiresAt) : false;
      if (decision === 'expire' && !expired) return { result: 'ended', job };
      const at = new Date(now).toISOString();
      let result: 'started' | 'discarded' | 'expired';
      if (decision === 'confirm' && !expired) {
        // The wish first: the runner reads it when it picks up the queued job.
        await this.setControl(id, 'run', by);
        Object.assign(job, { state: 'queued', confirmedAt: at } satisfies Partial<Job>);
        result = 'started';
      } else {
        const reason: DiscardReason = decision === 'cancel' && !expired ? 'cancelled' : 'expired';
        Object.assign(job, { state: 'discarded', discardReason: reason, finishedAt: at } satisfies Partial<Job>);
        result = reason === 'cancelled' ? 'discarded' : 'expired';
      }
      job.updatedAt = at;
      if (await this.docs.write(jobDoc(id), job, doc.etag)) {
        if (result !== 'started') await this.#dropDiscardedSelection(job);
        return { result, job };
      }
      // Someone else settled it first (the runner's expiry, another operator): read what they did.
    }
  }

  /**
   * A discarded job never ran and never will, so its frozen selection (up to 50 documents of 2,000 rows) is
   * useless at once; the job document stays until the retention, so the audit log's link to it still answers. A
   * failed delete does not fail the discard: the retention sweep deletes whatever chunks are left with the job.
   */
  async #dropDiscardedSelection(job: Job): Promise<void> {
    try {
      await this.#deleteChunks(job);
    } catch (err) {
      log.warn({ operationId: job.operationId, err: err instanceof Error ? err.message : String(err) }, 'discarded operation selection not deleted; the retention sweep deletes it');
    }
  }

  /**
   * Deletes the selection's chunks CHUNK_DELETES_AT_ONCE at a time: one after the other, up to 50 held a Cancel
   * request and the runner's scan (its expiry of a prepared job) for 50 round trips. Every delete is waited for
   * before the first failure is thrown, so nothing of a failed discard or sweep is still deleting behind the caller.
   */
  async #deleteChunks(job: Pick<Job, 'operationId' | 'chunks'>): Promise<void> {
    const bounded = limiter(CHUNK_DELETES_AT_ONCE);
    const names = Array.from({ length: job.chunks }, (_, n) => chunkDoc(job.operationId, n));
    const settled = await Promise.allSettled(names.map((name) => bounded(() => this.docs.delete(name))));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * Deletes a job with all its documents: the selection and the control first, the job document last, so a delete
   * that fails part-way leaves the job for the next sweep to find (each delete of a document already gone is fine).
   */
  async remove(job: Pick<Job, 'operationId' | 'chunks'>): Promise<void> {
    await this.#deleteChunks(job);
    await this.docs.delete(controlDoc(job.operationId));
    await this.docs.delete(jobDoc(job.operationId));
  }

  /**
   * Ended jobs (ENDED_STATES) that ended before `before`, at most `limit`, by their last write (their end) oldest
   * first: the retention's work.
   */
  async endedBefore(before: Date, limit: number): Promise<Job[]> {
    const docs = await this.docs.list<Job>('job_', limit, { stateIn: [...ENDED_STATES], finishedBefore: before.toISOString() });
    return docs.map((d) => d.value).filter((j) => typeof j?.operationId === 'string');
  }

  async control(id: string): Promise<JobControlDoc | null> {
    return (await this.docs.read<JobControlDoc>(controlDoc(id)))?.value ?? null;
  }

  async setControl(id: string, control: JobControl, by: string): Promise<void> {
    await this.docs.write(controlDoc(id), { control, by, at: new Date().toISOString() } satisfies JobControlDoc);
  }

  /**
   * The runner's write (it holds the job's lease; or the job has ended, and it counts late receipts: jobCounts.ts),
   * only if the job is still the version `etag` it last read or wrote. Answers the new version, or undefined when
   * someone wrote the job since: a replica that took the lease
   * over while this one, slow or paused past the lease's expiry, had not yet seen it end. Its write would put its
   * older progress over the new holder's (last writer wins), so it is refused, and the caller has lost the job.
   * `at`: the write's time (updatedAt), for a writer that moves `runningMs` to it (jobCounts.ts, keepLateOutcomes).
   */
  async save(job: Job, etag: string, at = new Date()): Promise<string | undefined> {
    job.updatedAt = at.toISOString();
    return this.docs.writeVersion(jobDoc(job.operationId), job, etag);
  }

  /**
   * The frozen selection in order; with `limit`, only its first `limit` rows, reading only the chunks that hold
   * them (the outcome's follow-up of a 100,000-event job needs one chunk, not fifty). None for a discarded job: it
   * acted on nothing, and its selection is deleted when it is discarded - nor for a job discarded or deleted (past
   * its retention) while its chunks were being read.
   */
  async rows(job: Job, limit = Infinity): Promise<SelectedRow[]> {
    if (job.state === 'discarded') return [];
    const out: SelectedRow[] = [];
    const chunks = Math.min(job.chunks, Math.ceil(limit / CHUNK_ROWS));
    for (let n = 0; n < chunks; n++) {
      const doc = await this.docs.read<{ rows: Array<[string, string, string?]> }>(chunkDoc(job.operationId, n));
      if (!doc) {
        const now = await this.get(job.operationId);
        if (!now || now.state === 'discarded') return [];
        throw new Error(`operation ${job.operationId}: selection part ${n} is missing`);
      }
      for (const [endpointId, eventId, sessionId] of doc.value.rows) out.push(sessionId === undefined ? { endpointId, eventId } : { endpointId, eventId, sessionId });
    }
    return out.length > limit ? out.slice(0, limit) : out;
  }

  /**
   * Recent jobs, newest first, at most `limit` (Infinity: all); with `states`, only jobs in one of them, queried as
   * such (prepared and discarded ones are included otherwise).
   */
  async list(limit = 100, states?: readonly JobState[]): Promise<Job[]> {
    return (await this.docs.list<Job>('job_', limit, states ? { stateIn: states } : {})).map((d) => d.value).filter((j) => typeof j?.operationId === 'string');
  }

  /**
   * Every job that has not ended, however old: the runner's work (to run, to resume, or - prepared - to expire),
   * which the newest N of all jobs may not reach, since every confirmation dialog adds a job document.
   */
  async unfinished(): Promise<Job[]> {
    return this.list(Infinity, UNFINISHED_STATES);
  }
}

/** What GET /api/operations/{id} answers: the job with the operator's wish applied and an ETA. */
export function jobView(job: Job, control: JobControlDoc | null, now = Date.now()) {
  const processed = job.done + job.refused + job.failed;
  const runningMs = job.runningMs + (job.state === 'running' && job.startedAt ? Math.max(0, now - Date.parse(job.updatedAt)) : 0);
  const perSecond = runningMs > 0 ? (processed * 1000) / runningMs : 0;
  const remaining = job.total - processed;
  const etaSeconds = job.state === 'running' && perSecond > 0 ? Math.ceil(remaining / perSecond) : null;
  // startedById is for authorization only: the view names the starter by display name, as before.
  const { selection, errors, cursor: _cursor, inFlightTo: _inFlightTo, awaitingReceipt: _awaitingReceipt, pausedLot: _pausedLot, chunks: _chunks, startedById: _startedById, authority: _authority, ...rest } = job;
  return {
    ...rest,
    kind: job.kind as JobKind | 'replay',
    selection,
    /** What the operator asked for last; the state follows at the runner's next step. */
    requested: control?.control ?? 'run',
    perSecond: Math.round(perSecond * 10) / 10,
    etaSeconds,
    errors,
  };
}
export type JobView = ReturnType<typeof jobView>;
