// The console process's operations runner and job store, one per process (kept on globalThis like
// server/context.ts). Started by the first operations request, and by the launcher at start-up so jobs resume
// after a restart without waiting for anyone to open the console (scripts/start-stack.ts) - on a replica whose
// background duties are on (NIMBUS_BACKGROUND); one with them off only stores and reads jobs.
import { lapsedEndpoints, lapseReason } from './authority.ts';
import { listGrants } from '../auth/grants.ts';
import { LeaseStore } from '../../lib/store/index.ts';
import { writeAudit } from '../audit/auditLog.ts';
import type { ConsoleContext } from '../context.ts';
import { getOpsServices } from '../heartbeat/services.ts';
import { JobStore, PREPARED_TTL_MS, type Job } from './jobs.ts';
import { DEFAULT_CONCURRENCY, OperationsRunner } from './runner.ts';

/** NIMBUS_OPERATIONS_RATE: commands per second one job may send (default 50; 0 = no limit). */
export function operationsRate(env: Record<string, string | undefined> = process.env): number {
  const raw = env.NIMBUS_OPERATIONS_RATE?.trim();
  if (!raw) return 50;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`NIMBUS_OPERATIONS_RATE must be a number of commands per second >= 0 (got ${JSON.stringify(raw)})`);
  return n;
}

/**
 * NIMBUS_OPERATIONS_CONCURRENCY: commands one job keeps in flight (default 100, 1-100). They go as one lot: the
 * rows read in one Cosmos bulk request, the claims written in one, the commands sent in Service Bus message
 * batches, the receipts written in one (Manager.executeMany), so a lot costs about as many round trips as one
 * command did. `npm run bench jobs` compares lot sizes with the rate limit off; the rate limit
 * (NIMBUS_OPERATIONS_RATE) still paces the commands, in lots of a tenth of a second's worth.
 */
export function operationsConcurrency(env: Record<string, string | undefined> = process.env): number {
  const raw = env.NIMBUS_OPERATIONS_CONCURRENCY?.trim();
  if (!raw) return DEFAULT_CONCURRENCY;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new Error(`NIMBUS_OPERATIONS_CONCURRENCY must be a whole number from 1 to 100 (got ${JSON.stringify(raw)})`);
  return n;
}

export interface OperationsServices {
  jobs: JobStore;
  /** This replica's runner; one that does nothing where NIMBUS_BACKGROUND=off (the jobs run on other replicas). */
  runner: Pick<OperationsRunner, 'kick' | 'stop'>;
}

/**
 * A replica with its background duties off runs no job: not at start-up, and not when one of its requests (the
 * Jobs drawer's list, a new job, a resume) would wake a runner; a replica with them on picks the job up at its
 * next scan.
 */
const NO_RUNNER: OperationsServices['runner'] = { kick: () => undefined, stop: async () => undefined };

const KEY = Symbol.for('nimbus.console.operations');
type Slot = { services?: OperationsServices; ctx?: ConsoleContext };
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as Slot;

/**
 * Who started the job, as the audit log names an actor: the principal's kind and stable id (`startedById`, `kind:id`,
 * the kind never holding a colon), its display name beside it - two people may share a name, and the starter's other
 * entries (prepare, start) name the id. A job from before `startedById` was stored has only the name: it stands in for
 * the id, as a `user`, the only record there is of who started it.
 */
function finishedJobActor(job: Pick<Job, 'startedBy' | 'startedById'>): { actorKind: string; actorId: string; actorName: string } {
  const at = job.startedById?.indexOf(':') ?? -1;
  if (job.startedById === undefined || at <= 0) return { actorKind: 'user', actorId: job.startedBy, actorName: job.startedBy };
  return { actorKind: job.startedById.slice(0, at), actorId: job.startedById.slice(at + 1), actorName: job.startedBy };
}

/**
 * The job's audit record in the audit log: who, the selection, the counts. A cancelled job (or a prepared one that
 * expired unconfirmed) is `cancelled`, not failed: nothing went wrong, the operator stopped it or never started it.
 */
export async function auditFinishedJob(ctx: ConsoleContext, job: Job): Promise<void> {
  const outcome = job.state === 'completed' ? 'succeeded' : job.state === 'cancelled' || job.state === 'discarded' ? 'cancelled' : 'failed';
  const reason =
    job.state === 'completed'
      ? null
      : job.state === 'discarded'
        ? `not confirmed within ${Math.round(PREPARED_TTL_MS / 60_000)} min: discarded, nothing was sent`
        : (job.stoppedReason ?? job.state);
  await writeAudit(ctx.store.database, {
    ...finishedJobActor(job),
    roles: 'operation runner',
    action: `operation.${job.kind}`,
    endpointId: job.endpoints.length === 1 ? job.endpoints[0]! : null,
    // A job over several endpoints is filed under each, as its prepare and control entries are: each endpoint's
    // readers and filter find how it ended.
    ...(job.endpoints.length > 1 ? { endpoints: [...job.endpoints] } : {}),
    eventId: null,
    target: `operation/${job.operationId}`,
    outcome,
    status: 200,
    reason,
    details: {
      state: job.state,
      selection: job.selection,
      total: job.total,
      done: job.done,
      refused: job.refused,
      failed: job.failed,
      // Each endpoint's part: a reader of one of them is shown theirs, not the others' (server/audit/readerScope.ts).
      ...(job.byEndpoint ? { byEndpoint: job.byEndpoint } : {}),
    },
  }).catch(() => undefined);
}

/** The stop reason of a job whose starter's granted role is gone (authority.ts), read from the grants now. */
async function authorityLapsedFor(ctx: ConsoleContext, job: Job): Promise<string | null> {
  if (!job.authority) return null;
  const lapsed = lapsedEndpoints(job.authority, await listGrants(ctx.store.database));
  return lapsed.length > 0 ? lapseReason(job.startedBy, job.authority.role, lapsed) : null;
}

export function getOperations(ctx: ConsoleContext): OperationsServices {
  if (!slot.services || slot.ctx !== ctx) {
    void slot.services?.runner.stop();
    const jobs = new JobStore(getOpsServices(ctx).docs);
    const runner = ctx.config.background
      ? new OperationsRunner({
          store: ctx.store,
          jobs,
          leases: new LeaseStore(ctx.store.database),
          manager: ctx.manager,
          concurrency: operationsConcurrency(),
          onFinished: (job) => auditFinishedJob(ctx, job),
          authorityLapsed: (job) => authorityLapsedFor(ctx, job),
          prune: { retentionDays: ctx.config.jobRetentionDays },
        }).start()
      : NO_RUNNER;
    slot.services = { jobs, runner };
    slot.ctx = ctx;
  }
  return slot.services;
}

/** Starts this process's runner (the launcher, after startConsole): unfinished jobs resume without a request. */
export async function startConsoleOperations(env: Record<string, string | undefined> = process.env): Promise<{ stop(): Promise<void> }> {
  const { getContext } = await import('../context.ts');
  const ctx = await getContext(env);
  getOperations(ctx);
  return { stop: stopOperations };
}

export async function stopOperations(): Promise<void> {
  const s = slot.services;
  slot.services = undefined;
  slot.ctx = undefined;
  await s?.runner.stop();
}
