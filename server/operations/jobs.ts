// Bulk operations as durable jobs (POST /api/operations): resubmit or skip every event of a frozen selection, a
// lot of Manager commands at a time (each with its claim + receipt, so a repeated step sends nothing twice),
// rate-limited, with progress in Cosmos. Three kinds of console document (platform container, server/heartbeat/platformDocs.ts):
//   job_<id>         the job: its selection, counts, cursor and state - written only by the runner holding the
//                    job's lease (and once by the creator), so progress never races;
//   jobctl_<id>      the operator's wish (run / pause / cancel) - written only by the API;
//   jobsel_<id>_<n>  the frozen selection, 2,000 rows per document (a document stays far below Cosmos' 2 MB):
//                    [endpointId, eventId, sessionId] each (the session lets the runner read the row directly).
// The runner (runner.ts) applies the wish at its next step; a paused job keeps its lease-free cursor and resumes
// where it stopped, in any replica.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { PlatformDocs } from '../heartbeat/platformDocs.ts';
import type { SelectedRow, Selection } from './selection.ts';

export const CHUNK_ROWS = 2_000;
export const MAX_ERRORS_KEPT = 50;

export type JobState = 'queued' | 'running' | 'paused' | 'cancelled' | 'completed' | 'failed';
/** What a bulk job can do to each row it selected; each is also the authorization action (roles.ts) it needs. */
export const JOB_KINDS = ['resubmit', 'skip'] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export type JobControl = 'run' | 'pause' | 'cancel';

export const operationIdSchema = z.string().uuid('an operation id is a UUID');
export const createOperationBody = z.object({
  kind: z.enum(JOB_KINDS),
  selection: z.unknown(),
  /**
   * Create the job paused, to be started with /resume once the operator confirmed the count it was frozen with
   * (the confirmation dialog's two steps; /cancel when they decline).
   */
  hold: z.boolean().default(false),
});

export interface JobError {
  endpointId: string;
  eventId: string;
  status: number;
  detail: string;
}

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
  /** Events whose command could not be sent (broker down after retries, store errors). */
  failed: number;
  /** Index of the next row of the selection to act on. */
  cursor: number;
  chunks: number;
  /** Commands per second this job may send (0: no limit). */
  ratePerSecond: number;
  startedBy: string;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Time spent running (excludes pauses), for the rate and the ETA. */
  runningMs: number;
  errors: JobError[];
}

export interface JobControlDoc {
  control: JobControl;
  by: string;
  at: string;
}

export const jobDoc = (id: string) => `job_${id}`;
const controlDoc = (id: string) => `jobctl_${id}`;
const chunkDoc = (id: string, n: number) => `jobsel_${id}_${n}`;

export class JobStore {
  readonly docs: PlatformDocs;
  constructor(docs: PlatformDocs) {
    this.docs = docs;
  }

  /** Stores the frozen selection, then the job (queued): a job document always has its rows. */
  async create(args: { kind: JobKind; selection: Selection; rows: SelectedRow[]; startedBy: string; ratePerSecond: number; hold?: boolean }): Promise<Job> {
    const operationId = randomUUID();
    const chunks = Math.ceil(args.rows.length / CHUNK_ROWS);
    for (let n = 0; n < chunks; n++) {
      const rows = args.rows.slice(n * CHUNK_ROWS, (n + 1) * CHUNK_ROWS).map((r) => (r.sessionId === undefined ? [r.endpointId, r.eventId] : [r.endpointId, r.eventId, r.sessionId]));
      await this.docs.write(chunkDoc(operationId, n), { rows });
    }
    const now = new Date().toISOString();
    const job: Job = {
      operationId,
      kind: args.kind,
      selection: args.selection,
      endpoints: [...new Set(args.rows.map((r) => r.endpointId))].sort(),
      state: args.hold ? 'paused' : 'queued',
      total: args.rows.length,
      done: 0,
      refused: 0,
      failed: 0,
      cursor: 0,
      chunks,
      ratePerSecond: args.ratePerSecond,
      startedBy: args.startedBy,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
      runningMs: 0,
      errors: [],
    };
    await this.docs.write(controlDoc(operationId), { control: args.hold ? 'pause' : 'run', by: args.startedBy, at: now } satisfies JobControlDoc);
    await this.docs.write(jobDoc(operationId), job, null);
    return job;
  }

  async get(id: string): Promise<Job | null> {
    return (await this.docs.read<Job>(jobDoc(id)))?.value ?? null;
  }

  async control(id: string): Promise<JobControlDoc | null> {
    return (await this.docs.read<JobControlDoc>(controlDoc(id)))?.value ?? null;
  }

  async setControl(id: string, control: JobControl, by: string): Promise<void> {
    await this.docs.write(controlDoc(id), { control, by, at: new Date().toISOString() } satisfies JobControlDoc);
  }

  /** The runner's write (it holds the job's lease). */
  async save(job: Job): Promise<void> {
    job.updatedAt = new Date().toISOString();
    await this.docs.write(jobDoc(job.operationId), job);
  }

  async rows(job: Job): Promise<SelectedRow[]> {
    const out: SelectedRow[] = [];
    for (let n = 0; n < job.chunks; n++) {
      const doc = await this.docs.read<{ rows: Array<[string, string, string?]> }>(chunkDoc(job.operationId, n));
      if (!doc) throw new Error(`operation ${job.operationId}: selection part ${n} is missing`);
      for (const [endpointId, eventId, sessionId] of doc.value.rows) out.push(sessionId === undefined ? { endpointId, eventId } : { endpointId, eventId, sessionId });
    }
    return out;
  }

  /** Recent jobs, newest first. */
  async list(limit = 100): Promise<Job[]> {
    return (await this.docs.list<Job>('job_', limit)).map((d) => d.value).filter((j) => typeof j?.operationId === 'string');
  }
}

/** What GET /api/operations/{id} answers: the job with the operator's wish applied and an ETA. */
export function jobView(job: Job, control: JobControlDoc | null, now = Date.now()) {
  const processed = job.done + job.refused + job.failed;
  const runningMs = job.runningMs + (job.state === 'running' && job.startedAt ? Math.max(0, now - Date.parse(job.updatedAt)) : 0);
  const perSecond = runningMs > 0 ? (processed * 1000) / runningMs : 0;
  const remaining = job.total - processed;
  const etaSeconds = job.state === 'running' && perSecond > 0 ? Math.ceil(remaining / perSecond) : null;
  const { selection, errors, cursor: _cursor, chunks: _chunks, ...rest } = job;
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
