// What became of a bulk job's events: the follow-up an operator needs after "Resubmit all" ("did it work? how many
// failed again?"). The job's counts say commands sent; this reads the frozen events' status rows as they are now
// and sorts them into completed, failed again (a failed status written after the job started), still failed (not
// changed since: refused, not reached, or its command could not be sent), in progress and skipped.
import { ResolutionStatus } from '@nimbus/sdk/contract';
import type { ReadScope } from '../auth/readScope.ts';
import type { ConsoleContext } from '../context.ts';
import type { StatusRow } from '../../lib/store/schemas.ts';
import type { Job } from './jobs.ts';
import { getJob } from './routes.ts';
import type { SelectedRow } from './selection.ts';
import { getOperations } from './service.ts';

/**
 * How many of a job's events are looked at: the first chunk of the frozen selection (CHUNK_ROWS is as many), then
 * point reads in bulk, 100 a request: 20 requests at most. The drawer
 * asks again while it is open, so a job of 100,000 events must not cost 1,000 requests each time; the answer says
 * how many were checked.
 */
export const OUTCOME_CHECK_LIMIT = 2_000;

const FAILED: ReadonlySet<string> = new Set([ResolutionStatus.Failed, ResolutionStatus.DeadLettered, ResolutionStatus.Unsupported]);

export interface OutcomeCounts {
  completed: number;
  /** In a failed status written after the job started: the command was handled and the event failed again. */
  failedAgain: number;
  /** In a failed status not changed since the job started (refused, not reached yet, or not sent). */
  stillFailed: number;
  /** Pending (a handoff too) or Deferred: on its way. */
  inProgress: number;
  skipped: number;
  /** No row or a row that could not be read. */
  unknown: number;
}

export interface JobOutcome {
  operationId: string;
  total: number;
  /** Events looked at: the first OUTCOME_CHECK_LIMIT of the frozen selection. */
  checked: number;
  counts: OutcomeCounts;
  at: string;
}

/**
 * When the message behind the row's status was enqueued (the broker's time of the failure), not when the row was
 * last written: the Manager's restore of a claim it could not send, and Reconcile's restore, rewrite a failed row
 * now with the failure it had - "failed again" would be false. Rows without it (older writers) fall back to updatedAt.
 */
const answeredAt = (row: StatusRow): string => row.enqueuedAt ?? row.updatedAt;

/** Sorts one event's row as it is now against the moment the job started (null: not started). */
export function classifyRow(row: StatusRow | null | undefined, startedAt: string | null): keyof OutcomeCounts {
  if (!row) return 'unknown';
  if (row.status === ResolutionStatus.Completed) return 'completed';
  if (row.status === ResolutionStatus.Skipped) return 'skipped';
  if (FAILED.has(row.status)) return startedAt !== null && answeredAt(row) > startedAt ? 'failedAgain' : 'stillFailed';
  return 'inProgress';
}

const eventKey = (endpointId: string, eventId: string) => `${endpointId}\u0000${eventId}`;

/**
 * The newest row of each event frozen without its session (older selections): per endpoint, one query for the
 * sessions of all of them, then point reads in bulk - not one query per event, which for 2,000 such events meant
 * 2,000 sequential queries per poll. An event absent from the answer has no row, or its rows could not be read
 * (both count as unknown).
 */
async function newestRowsOfSessionless(ctx: ConsoleContext, rows: readonly SelectedRow[]): Promise<Map<string, StatusRow>> {
  const out = new Map<string, StatusRow>();
  const byEndpoint = new Map<string, string[]>();
  for (const r of rows) byEndpoint.set(r.endpointId, [...(byEndpoint.get(r.endpointId) ?? []), r.eventId]);
  for (const [endpointId, eventIds] of byEndpoint) {
    // Undefined when the endpoint holds too many rows of them to list at once: unknown this time, not guessed.
    const sessions = await ctx.store.listEventSessions(endpointId, eventIds).catch(() => undefined);
    if (!sessions) continue;
    const keys = [...sessions].flatMap(([eventId, ids]) => ids.map((sessionId) => ({ endpointId, eventId, sessionId })));
    const read = await ctx.store.getStatusRows(keys);
    keys.forEach((k, n) => {
      const key = eventKey(endpointId, k.eventId);
      const row = read[n];
      const had = out.get(key);
      if (row && (!had || row.updatedAt > had.updatedAt)) out.set(key, row);
    });
  }
  return out;
}

/** The current rows of the selected events, in order; a row frozen without its session is the event's newest. */
async function currentRows(ctx: ConsoleContext, rows: readonly SelectedRow[]): Promise<Array<StatusRow | null | undefined>> {
  const keyed = rows.flatMap((r, i) => (r.sessionId === undefined ? [] : [{ i, key: { endpointId: r.endpointId, eventId: r.eventId, sessionId: r.sessionId } }]));
  const out: Array<StatusRow | null | undefined> = new Array(rows.length).fill(undefined);
  const read = await ctx.store.getStatusRows(keyed.map((k) => k.key));
  keyed.forEach((k, n) => (out[k.i] = read[n]));
  const sessionless = rows.filter((r) => r.sessionId === undefined);
  if (sessionless.length === 0) return out;
  const newest = await newestRowsOfSessionless(ctx, sessionless);
  for (const [i, r] of rows.entries()) if (r.sessionId === undefined) out[i] = newest.get(eventKey(r.endpointId, r.eventId));
  return out;
}

export async function outcomeOf(ctx: ConsoleContext, job: Job): Promise<JobOutcome> {
  const rows = await getOperations(ctx).jobs.rows(job, OUTCOME_CHECK_LIMIT);
  const counts: OutcomeCounts = { completed: 0, failedAgain: 0, stillFailed: 0, inProgress: 0, skipped: 0, unknown: 0 };
  for (const row of await currentRows(ctx, rows)) counts[classifyRow(row, job.startedAt)]++;
  return { operationId: job.operationId, total: job.total, checked: rows.length, counts, at: new Date().toISOString() };
}

/** GET /api/operations/{id}/outcome: the same visibility as the job itself (an unreadable job is unknown). */
export async function operationOutcome(ctx: ConsoleContext, id: string, scope: ReadScope): Promise<JobOutcome> {
  return outcomeOf(ctx, await getJob(ctx, id, scope));
}
