// What the /api/operations routes call: create a job from a frozen selection, list jobs (and the dead-letter
// replays, server/subscriptions/replay.ts) within the caller's read scope, read one, and record the operator's
// pause / resume / cancel.
import { inScope, type ReadScope } from '../auth/readScope.ts';
import type { ConsoleContext } from '../context.ts';
import { getOpsServices } from '../heartbeat/services.ts';
import { badRequest, notFound } from '../http.ts';
import type { ReplayOperation } from '../subscriptions/replay.ts';
import { jobView, type Job, type JobControl, type JobKind, type JobView } from './jobs.ts';
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

export async function createOperation(ctx: ConsoleContext, kind: JobKind, selection: Selection, rows: SelectedRow[], startedBy: string, hold = false) {
  const { jobs, runner } = getOperations(ctx);
  const job = await jobs.create({ kind, selection, rows, startedBy, ratePerSecond: operationsRate(), hold });
  if (!hold) runner.kick();
  return { operationId: job.operationId, total: job.total, state: job.state };
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
  if (['completed', 'cancelled', 'failed'].includes(job.state)) throw badRequest(`operation ${job.operationId} has ended (${job.state})`);
  await jobs.setControl(job.operationId, control, by);
  runner.kick();
  return jobView(job, { control, by, at: new Date().toISOString() });
}

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
  etaSeconds: number | null;
  perSecond: number;
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
    etaSeconds: null,
    perSecond: 0,
  };
}

function describeSelection(kind: JobKind, s: Selection): string {
  const parts = [s.groupId ? `group ${s.groupId.slice(0, 8)}` : null, s.endpointId ?? null, s.status?.join('+') ?? null, s.eventTypeId ?? null].filter(Boolean);
  return `${kind} ${parts.join(' · ') || 'selection'}`;
}

export async function listOperations(ctx: ConsoleContext, scope: ReadScope): Promise<{ operations: OperationSummary[] }> {
  const { jobs } = getOperations(ctx);
  const [all, replays] = await Promise.all([jobs.list(100), getOpsServices(ctx).docs.list<ReplayOperation>('op_', 50)]);
  const controls = await Promise.all(all.map((j) => (['queued', 'running', 'paused'].includes(j.state) ? jobs.control(j.operationId) : Promise.resolve(null))));
  const out: OperationSummary[] = all
    .filter((j) => j.endpoints.every((e) => inScope(scope, e)))
    .map((j) => {
      const v = jobView(j, controls[all.indexOf(j)] ?? null);
      return {
        operationId: v.operationId,
        kind: v.kind,
        state: v.state,
        requested: v.requested,
        title: describeSelection(j.kind, j.selection),
        endpoints: j.endpoints,
        total: v.total,
        done: v.done,
        refused: v.refused,
        failed: v.failed,
        startedBy: v.startedBy,
        createdAt: v.createdAt,
        updatedAt: v.updatedAt,
        etaSeconds: v.etaSeconds,
        perSecond: v.perSecond,
      };
    });
  for (const r of replays) {
    const op = r.value;
    if (op?.kind !== 'replay') continue;
    const endpointId = ctx.catalog.endpoints.find((e) => e.id.toLowerCase() === op.topic.toLowerCase())?.id ?? null;
    if (inScope(scope, endpointId)) out.push(replaySummary(op, endpointId));
  }
  out.sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
  return { operations: out.slice(0, 100) };
}
