// For the confirmation of a new bulk job ("Resubmit all" on a failure group or a selection): the most recent job
// that already covered the same events, so the operator sees "a previous job (by X, at T: 18 resubmitted, 18 failed
// again) covered these events" before resubmitting them a second time. Jobs are console documents listed newest
// first (jobs.ts); one covers the new selection when it acted on the same failure group in some of the same statuses,
// on some of the same listed event ids, or on the same filter. Its follow-up (failed again) is read as the Jobs drawer reads it (outcome.ts).
import { inScope, type ReadScope } from '../auth/readScope.ts';
import type { ConsoleContext } from '../context.ts';
import { log } from '../log.ts';
import { describeSelection } from './title.ts';
import type { Job, JobKind, JobState } from './jobs.ts';
import { outcomeOf } from './outcome.ts';
import type { SelectedRow, Selection } from './selection.ts';
import { getOperations } from './service.ts';

export interface PreviousJob {
  operationId: string;
  kind: JobKind;
  title: string;
  startedBy: string;
  startedAt: string;
  finishedAt: string | null;
  state: Job['state'];
  total: number;
  /** Commands it sent (resubmitted or skipped). */
  done: number;
  refused: number;
  failed: number;
  /** Of its first `checked` events, those in a failure enqueued after it started (null: could not be read). */
  failedAgain: number | null;
  checked: number;
}

/**
 * Whether the earlier job `prev` acted on the events the new selection names. A job on the same group counts only
 * if its statuses meet the new one's: a "Skip all" of the group's DeadLettered rows touched none of its Failed ones.
 * Their "Updated in" windows do not set them apart: both run to the present, and the rows the earlier job acted on
 * that failed again since were updated then, so they are in the new window whatever its start.
 */
export function coversSameEvents(prev: Pick<Job, 'selection' | 'endpoints'>, sel: Selection, rows: readonly SelectedRow[]): boolean {
  const p = prev.selection;
  const sameEndpoint = sel.endpointId === undefined || p.endpointId === sel.endpointId || (p.endpointId === undefined && prev.endpoints.includes(sel.endpointId));
  if (sel.groupId !== undefined && p.groupId === sel.groupId && sameEndpoint && statusesMeet(p.status, sel.status)) return true;
  if (p.eventIds !== undefined && p.endpointId !== undefined) {
    const ids = new Set(p.eventIds);
    if (rows.some((r) => r.endpointId === p.endpointId && ids.has(r.eventId))) return true;
  }
  return p.eventIds === undefined && sel.eventIds === undefined && JSON.stringify(canonical(p)) === JSON.stringify(canonical(sel));
}

/** Whether two selections' statuses share one; no status (or none listed) is every status (selection.ts ACTIONABLE). */
function statusesMeet(a: Selection['status'], b: Selection['status']): boolean {
  if (!a?.length || !b?.length) return true;
  return a.some((s) => b.includes(s));
}

/** A selection with its keys in one order and its statuses sorted: two equal filters compare equal. */
const canonical = (s: Selection) =>
  Object.fromEntries(
    Object.entries({ ...s, ...(s.status ? { status: [...s.status].sort() } : {}) })
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => a.localeCompare(b)),
  );

/**
 * The newest earlier job the caller may read that covered these events and started acting, or null - also when the
 * jobs cannot be listed or one of them is of a shape this code cannot read: the lookup is an aid to the
 * confirmation, which must not fail for it (logged, without the documents).
 */
export async function previousJobFor(ctx: ConsoleContext, sel: Selection, rows: readonly SelectedRow[], scope: ReadScope): Promise<PreviousJob | null> {
  return findPreviousJob(ctx, sel, rows, scope).catch((err: unknown) => {
    log.warn({ err: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' }, 'previous job lookup failed; the confirmation goes without it');
    return null;
  });
}

/**
 * The states of a job that was started, queried as such: the newest 100 of all job documents may be confirmations
 * alone (prepared, or discarded unconfirmed: every dialog leaves one), and then no earlier job was found.
 */
const STARTED_STATES: readonly JobState[] = ['queued', 'running', 'paused', 'completed', 'cancelled', 'failed'];

async function findPreviousJob(ctx: ConsoleContext, sel: Selection, rows: readonly SelectedRow[], scope: ReadScope): Promise<PreviousJob | null> {
  const { jobs } = getOperations(ctx);
  const prev = (await jobs.list(100, STARTED_STATES)).find(
    (j) => j.startedAt !== null && j.endpoints.every((e) => inScope(scope, e)) && coversSameEvents(j, sel, rows),
  );
  if (!prev || prev.startedAt === null) return null;
  // Best effort: the confirmation must not fail because the follow-up could not be read.
  const outcome = await outcomeOf(ctx, prev).catch(() => null);
  return {
    operationId: prev.operationId,
    kind: prev.kind,
    title: prev.title ?? describeSelection(prev.kind, prev.selection),
    startedBy: prev.startedBy,
    startedAt: prev.startedAt,
    finishedAt: prev.finishedAt,
    state: prev.state,
    total: prev.total,
    done: prev.done,
    refused: prev.refused,
    failed: prev.failed,
    failedAgain: outcome?.counts.failedAgain ?? null,
    checked: outcome?.checked ?? 0,
  };
}
