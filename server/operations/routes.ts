// What the /api/operations routes call: create a job from a frozen selection, list jobs (and the dead-letter
// replays, server/subscriptions/replay.ts) within the caller's read scope, read one, and record the operator's
// pause / resume / cancel.
import type { JobAuthority } from './authority.ts';
import { inScope, type ReadScope } from '../auth/readScope.ts';
import type { ConsoleContext } from '../context.ts';
import { getOpsServices } from '../heartbeat/services.ts';
import { badRequest, conflict, notFound } from '../http.ts';
import type { ReplayOperation } from '../subscriptions/replay.ts';
import { ENDED_STATES, jobView, PREPARED_TTL_MS, type Job, type JobControl, type JobKind, type JobState, type JobView } from './jobs.ts';
import { jobTitle } from './title.ts';
import { describeSelection } from './title.ts';
import { previousJobFor } from './previousJob.ts';
import { freezeSelection, selectionSchema, type SelectedRow, type Selection } from './selection.ts';
import { getOperations, operationsRate } from './service.ts';
import { parseOr400 } from '../http.ts';

export function parseSelection(raw: unknown): Selection {
  return parseOr400(selectionSchema, raw, 'selection');
}

/** The rows now matching, before anything is stored (the route authorizes every endpoint they touch). */
export async function resolveSelection(ctx: ConsoleContext, sel: Selection, scope: ReadScope): Promise<SelectedRow[]> {
  if (sel.endpointId !== undefined && !ctx.catalog.endpoints.some((e) => e.id === sel.endpointId))
    throw notFound(`endpoint ${sel.endpointId} is not in the catalog`);
  const rows = await freezeSelection(ctx.store, sel, scope);
  if (rows.length === 0) throw badRequest('the selection matches no events that can be resubmitted or skipped');
  return rows;
}

export async function createOperation(
  ctx: ConsoleContext,
  kind: JobKind,
  selection: Selection,
  rows: SelectedRow[],
  startedBy: { name: string; principalId: string; authority?: JobAuthority | undefined },
  hold = false,
  scope?: ReadScope,
) {
  const { jobs, runner } = getOperations(ctx);
  const title = await jobTitle(ctx.store.database, kind, selection, rows);
  // For the confirmation (a held job): the earlier job that covered these events, looked up before this one exists.
  const previous = hold && scope ? await previousJobFor(ctx, selection, rows, scope) : null;
  const job = await jobs.create({ kind, selection, rows, startedBy: startedBy.name, startedById: startedBy.principalId, ...(startedBy.authority ? { authority: startedBy.authority } : {}), ratePerSecond: operationsRate(), hold, title });
  if (!hold) runner.kick();
  // The job too, for the route's audit entry: it names the endpoints and their counts, already counted from the rows.
  return { answer: { operationId: job.operationId, total: job.total, state: job.state, ...(hold ? { previous } : {}) }, job };
}

export async function getJob(ctx: ConsoleContext, id: string, scope: ReadScope): Promise<Job> {
  const job = await getOperations(ctx).jobs.get(id);
  if (!job || !job.endpoints.every((e) => inScope(scope, e))) throw notFound(`operation ${id} is not known`);
  return job;
}

export async function operationView(ctx: ConsoleContext, id: string, scope: ReadScope): Promise<JobView> {
  const job = await getJob(ctx, id, scope);
  return jobView(job, await getOperations(ctx).jobs.control(id));
}

export async function controlOperation(ctx: ConsoleContext, job: Job, control: JobControl, by: string): Promise<JobView> {
  const { jobs, runner } = getOperations(ctx);
  if (ENDED_STATES.has(job.state)) throw badRequest(`operation ${job.operationId} has ended (${job.state})`);
  if (job.state === 'prepared') return settlePrepared(ctx, job, control, by);
  await jobs.setControl(job.operationId, control, by);
  runner.kick();
  return jobView(job, { control, by, at: new Date().toISOString() });
}

/**
 * The confirmation's answer to a prepared job: resume starts it (queued at once, so no one sees it waiting as if
 * paused), cancel discards it (it never ran: not listed, audited as cancelled). A confirmation after the job
 * expired is refused: the frozen list may be stale, prepare it again.
 */
async function settlePrepared(ctx: ConsoleContext, job: Job, control: JobControl, by: string): Promise<JobView> {
  const { jobs, runner } = getOperations(ctx);
  if (control === 'pause') throw badRequest(`operation ${job.operationId} has not started: confirm (resume) or cancel it`);
  const { result, job: now } = await jobs.settlePrepared(job.operationId, control === 'run' ? 'confirm' : 'cancel', by);
  if (!now) throw notFound(`operation ${job.operationId} is not known`);
  if (result === 'expired' && control === 'run')
    throw conflict(`operation ${job.operationId} was not confirmed within ${Math.round(PREPARED_TTL_MS / 60_000)} min and was discarded; prepare it again`);
  if (result === 'ended' && ENDED_STATES.has(now.state)) throw badRequest(`operation ${job.operationId} has ended (${now.state})`);
  if (result === 'ended') {
    // Confirmed by someone else between our read and our write: it is an ordinary job now, so the wish (a cancel
    // above all) is recorded the ordinary way rather than answered as if it had been carried out.
    await jobs.setControl(job.operationId, control, by);
    runner.kick();
    return jobView(now, { control, by, at: new Date().toISOString() });
  }
  if (result === 'started') runner.kick();
  return jobView(now, await jobs.control(job.operationId));
}

/**
 * Jobs the drawer lists: every one going on (they are few), however old - a paused job must stay in reach of its
 * Resume - and the newest LISTED_FINISHED that ended. Not the prepared ones (a confirmation still open) nor those
 * discarded unconfirmed, of which every confirmation dialog leaves one.
 */
const GOING_ON: readonly JobState[] = ['queued', 'running', 'paused'];
const FINISHED: readonly JobState[] = ['completed', 'cancelled', 'failed'];
const LISTED_FINISHED = 100;

/** One row of the jobs list: bulk jobs and dead-letter replays in one shape. */
export interface OperationSummary {
  operationId: string;
  kind: JobKind | 'replay';
  state: JobView['state'];
  requested: JobControl;
  title: string;
  /** The endpoints whose events the job acts on (empty when not known). */
  endpoints: string[];
  total: number;
  done: number;
  refused: number;
  failed: number;
  startedBy: string;
  createdAt: string;
  updatedAt: string;
  /** When it started acting (null: not yet) and when it ended (null: still going). */
  startedAt: string | null;
  finishedAt: string | null;
  etaSeconds: number | null;
  perSecond: number;
  /** Where to see the events it acted on now (the failure group's events on the Endpoint page), when one place. */
  eventsLink: string | null;
  /**
   * Why the runner stopped a cancelled job ("stopped: <user> no longer holds <role> on <endpoints>": the starter's
   * granted role was revoked, authority.ts); null for an operator's cancel, any other state and a replay. The drawer
   * shows it, so such a job does not read as if an operator had cancelled it.
   */
  stoppedReason: string | null;
}

function replaySummary(op: ReplayOperation, endpointId: string | null): OperationSummary {
  const endpoints = endpointId ? [endpointId] : [];
  const state = op.state === 'running' ? 'running' : op.state === 'done' ? 'completed' : 'failed';
  const done = op.replayed + op.alreadySent;
  return {
    operationId: op.id,
    kind: 'replay',
    state,
    requested: 'run',
    title: `replay dead letters of ${op.topic}/${op.subscription}`,
    endpoints,
    total: done + op.failed + op.uncertain + op.notCompleted,
    done,
    refused: op.uncertain,
    failed: op.failed + op.notCompleted,
    startedBy: op.auditor,
    createdAt: op.startedAt,
    updatedAt: op.updatedAt,
    startedAt: op.startedAt,
    finishedAt: op.state === 'running' ? null : op.updatedAt,
    etaSeconds: null,
    perSecond: 0,
    eventsLink: null,
    stoppedReason: null,
  };
}

/** The Endpoint page of the events a job acted on, filtered as its selection was (one endpoint only). */
function eventsLinkOf(j: Job): string | null {
  if (j.endpoints.length !== 1) return null;
  const q = new URLSearchParams();
  if (j.selection.groupId) q.set('groupId', j.selection.groupId);
  if (j.selection.eventTypeId) q.set('eventTypeId', j.selection.eventTypeId);
  const qs = q.toString();
  return `/endpoints/${encodeURIComponent(j.endpoints[0]!)}${qs ? `?${qs}` : ''}`;
}

export async function listOperations(ctx: ConsoleContext, scope: ReadScope): Promise<{ operations: OperationSummary[] }> {
  const { jobs } = getOperations(ctx);
  const replaysRead = getOpsServices(ctx).docs.list<ReplayOperation>('op_', 50);
  // The jobs going on first, then the finished ones: a job that ends between the two reads is then in both (its
  // ended copy is the newer), never in neither, as it could be with the two read at once (finished read first).
  const going = await jobs.list(Infinity, GOING_ON);
  const [finished, replays] = await Promise.all([jobs.list(LISTED_FINISHED, FINISHED), replaysRead]);
  const ended = new Set(finished.map((j) => j.operationId));
  const all = [...going.filter((j) => !ended.has(j.operationId)), ...finished];
  const controls = await Promise.all(all.map((j) => (GOING_ON.includes(j.state) ? jobs.control(j.operationId) : Promise.resolve(null))));
  const out: OperationSummary[] = all
    .filter((j) => j.endpoints.every((e) => inScope(scope, e)))
    .map((j) => {
      const v = jobView(j, controls[all.indexOf(j)] ?? null);
      return {
        operationId: v.operationId,
        kind: v.kind,
        state: v.state,
        requested: v.requested,
        title: j.title ?? describeSelection(j.kind, j.selection),
        endpoints: j.endpoints,
        total: v.total,
        done: v.done,
        refused: v.refused,
        failed: v.failed,
        startedBy: v.startedBy,
        createdAt: v.createdAt,
        updatedAt: v.updatedAt,
        startedAt: v.startedAt,
        finishedAt: v.finishedAt,
        etaSeconds: v.etaSeconds,
        perSecond: v.perSecond,
        eventsLink: eventsLinkOf(j),
        // Written only with the cancelled state (runner.ts, cancel): a reason is never shown beside another state.
        stoppedReason: j.state === 'cancelled' ? (j.stoppedReason ?? null) : null,
      };
    });
  for (const r of replays) {
    const op = r.value;
    if (op?.kind !== 'replay') continue;
    const endpointId = ctx.catalog.endpoints.find((e) => e.id.toLowerCase() === op.topic.toLowerCase())?.id ?? null;
    if (inScope(scope, endpointId)) out.push(replaySummary(op, endpointId));
  }
  out.sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
  // Every job going on, and the newest of the others (ended jobs, replays) up to LISTED_FINISHED.
  let others = 0;
  return { operations: out.filter((o) => (o.kind !== 'replay' && GOING_ON.includes(o.state)) || others++ < LISTED_FINISHED) };
}
