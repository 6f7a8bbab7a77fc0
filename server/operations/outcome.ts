// What became of a bulk job's events: the follow-up an operator needs after "Resubmit all" ("did it work? how many
// failed again?"). The job's counts say commands sent; this reads the frozen events' status rows as they are now
// and sorts them into completed, failed again (a failed status written after the job started), still failed (not
// changed since: refused, not reached, or its command could not be sent), in progress and skipped.
import { PendingSubStatus, ResolutionStatus } from '@nimbus/sdk/contract';
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

/**
 * Why the `stillFailed` events are unchanged (the four add up to it): the job has not reached them yet (at or past
 * its saved cursor and in neither list it kept; for a cancelled job, never), it refused them (their state did not
 * allow the command when it got there), their command could not be sent, or one of the last two without knowing
 * which (see reachedWhy). A cancel counts the rows from the cursor to the in-flight mark (runner.ts: the lot it
 * stopped, its refusals and send failures too) without moving the cursor past them, listing those it could not
 * count in `awaitingReceipt`: so a cancelled job has reached every other row below the mark - also a refusal or
 * send failure past MAX_ERRORS_KEPT, whose detail it did not keep - and a kept one is reached wherever it is. A
 * cancel by a build before 7f50936 left the window's rows without a receipt uncounted and unlisted: its counts fall
 * short of the mark, and those rows are not reached (outcomeOf).
 */
export interface StillFailedSplit {
  notReached: number;
  refused: number;
  notSent: number;
  /** Refused or not sent: the job kept neither every refusal nor every send failure, and this event in neither list. */
  unknown: number;
}

export interface JobOutcome {
  operationId: string;
  total: number;
  /** Events looked at: the first OUTCOME_CHECK_LIMIT of the frozen selection. */
  checked: number;
  counts: OutcomeCounts;
  stillFailedSplit: StillFailedSplit;
  /**
   * Of `inProgress`, events waiting for someone rather than for the broker: a Pending handoff (its job reports when it
   * reports, hours later maybe) or a Deferred event (parked behind another event of its session). They can stay so
   * for good; the drawer reads an ended job whose only events in progress are these once a minute, not every 5 s.
   */
  waiting: number;
  /** The Manager's reasons for the refusals the job recorded (its first MAX_ERRORS_KEPT), most frequent first. */
  refusals: Array<{ reason: string; events: number }>;
  /**
   * Of `stillFailedSplit.refused`, the events whose refusal the job kept (with its reason, in `refusals`): fewer
   * when it refused more than MAX_ERRORS_KEPT, whose count it knows but whose reasons it did not keep.
   */
  refusedListed: number;
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
    // A row whose session no longer reads is counted there but cannot be point-read: unknown, as before.
    const keys = [...sessions].flatMap(([eventId, e]) => e.sessions.map((sessionId) => ({ endpointId, eventId, sessionId })));
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

/** A Pending handoff or a Deferred row: waiting for someone, not for the broker (see JobOutcome.waiting). */
const isWaiting = (row: StatusRow): boolean =>
  (row.status === ResolutionStatus.Pending && row.subStatus === PendingSubStatus.Handoff) || row.status === ResolutionStatus.Deferred;

/**
 * Why a reached event is unchanged. The job keeps the first MAX_ERRORS_KEPT refusals and send failures, but its
 * counts `refused` and `failed` are exact: an event in neither list was refused if every failure was kept, not sent
 * if every refusal was kept, and otherwise either - a broker outage during a 2,000-event job must not read as
 * 1,950 refused with the Manager's reasons.
 */
export function reachedWhy(job: Pick<Job, 'refused' | 'failed' | 'errors' | 'refusals'>): (endpointId: string, eventId: string) => Exclude<keyof StillFailedSplit, 'notReached'> {
  const refusals = job.refusals ?? [];
  const refused = new Set(refusals.map((e) => eventKey(e.endpointId, e.eventId)));
  const notSent = new Set(job.errors.map((e) => eventKey(e.endpointId, e.eventId)));
  const everyFailureKept = job.failed <= job.errors.length;
  const everyRefusalKept = job.refused <= refusals.length;
  return (endpointId, eventId) => {
    const key = eventKey(endpointId, eventId);
    if (refused.has(key)) return 'refused';
    if (notSent.has(key)) return 'notSent';
    if (everyFailureKept) return 'refused';
    if (everyRefusalKept) return 'notSent';
    return 'unknown';
  };
}

/** The refusals' reasons, counted, most frequent first. */
function refusalReasons(job: Job): JobOutcome['refusals'] {
  const by = new Map<string, number>();
  for (const r of job.refusals ?? []) by.set(r.detail, (by.get(r.detail) ?? 0) + 1);
  return [...by].map(([reason, events]) => ({ reason, events })).sort((a, b) => b.events - a.events);
}

export async function outcomeOf(ctx: ConsoleContext, job: Job): Promise<JobOutcome> {
  const rows = await getOperations(ctx).jobs.rows(job, OUTCOME_CHECK_LIMIT);
  const counts: OutcomeCounts = { completed: 0, failedAgain: 0, stillFailed: 0, inProgress: 0, skipped: 0, unknown: 0 };
  const split: StillFailedSplit = { notReached: 0, refused: 0, notSent: 0, unknown: 0 };
  const why = reachedWhy(job);
  const keptRefusals = new Set((job.refusals ?? []).map((e) => eventKey(e.endpointId, e.eventId)));
  const kept = new Set([...keptRefusals, ...job.errors.map((e) => eventKey(e.endpointId, e.eventId))]);
  // A cancelled job counted its rows up to the in-flight mark, but those awaiting a receipt (StillFailedSplit). Each
  // row below the cursor is counted once as the cursor passes it, and a cancel (its late counts too) counts or lists
  // each row of the window once, so the counts and the list add up to the mark. A cancel by a build before 7f50936
  // counted by receipts alone and listed nothing (a rate-limited job's mark runs ahead by rows never sent): short
  // of the mark, the window is not taken as reached - its rows are "not reached" but the kept ones.
  const awaiting = new Set(job.awaitingReceipt ?? []);
  const windowCounted = job.done + job.refused + job.failed + awaiting.size >= (job.inFlightTo ?? 0);
  const countedTo = job.state === 'cancelled' && windowCounted ? (job.inFlightTo ?? 0) : 0;
  const reached = (i: number, key: string) => i < job.cursor || kept.has(key) || (i < countedTo && !awaiting.has(i));
  let refusedListed = 0;
  let waiting = 0;
  for (const [i, row] of (await currentRows(ctx, rows)).entries()) {
    const kind = classifyRow(row, job.startedAt);
    counts[kind]++;
    if (kind === 'inProgress' && row && isWaiting(row)) waiting++;
    if (kind !== 'stillFailed') continue;
    // The job document read is one save: its cursor and its counts are of the same moment.
    const { endpointId, eventId } = rows[i]!;
    const key = eventKey(endpointId, eventId);
    if (!reached(i, key)) split.notReached++;
    else {
      const reason = why(endpointId, eventId);
      split[reason]++;
      if (reason === 'refused' && keptRefusals.has(key)) refusedListed++;
    }
  }
  return {
    operationId: job.operationId,
    total: job.total,
    checked: rows.length,
    counts,
    stillFailedSplit: split,
    waiting,
    refusals: refusalReasons(job),
    refusedListed,
    at: new Date().toISOString(),
  };
}

/** GET /api/operations/{id}/outcome: the same visibility as the job itself (an unreadable job is unknown). */
export async function operationOutcome(ctx: ConsoleContext, id: string, scope: ReadScope): Promise<JobOutcome> {
  return outcomeOf(ctx, await getJob(ctx, id, scope));
}
