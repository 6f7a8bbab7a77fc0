// Who may pause, resume or cancel a bulk job (POST /api/operations/{id}/pause|resume|cancel), and the job itself.
// A prepared job (awaiting its confirmation) is its preparer's alone to confirm or cancel; an Owner may cancel it.
import { authorizeBeforeBody, authorizeEach, readScope, refuseAuthorized, type Authorized } from '../auth/authorize.ts';
import { principalKey } from '../auth/principal.ts';
import { getContext, type ConsoleContext } from '../context.ts';
import { effectiveRole, roleCovers, requiredRole } from '../auth/roles.ts';
import { JOB_KINDS, type Job, type JobKind } from './jobs.ts';
import { getJob } from './routes.ts';

/** The URL's name of each control (the job's control document says `run` for resume). */
export type ControlRoute = 'pause' | 'resume' | 'cancel';

/**
 * The kind whose role every other kind's role covers (roles.ts): whoever may run that kind nowhere may run no job,
 * whatever its kind, so the check before the job is read can ask for it. Today both kinds need Operator; were one
 * to need more, this stays the least of them rather than refusing an Operator a control the job allows.
 */
export const ANY_JOB_KIND: JobKind = leastJobKind();

function leastJobKind(): JobKind {
  const least = JOB_KINDS.find((k) => JOB_KINDS.every((other) => roleCovers(requiredRole(other), requiredRole(k))));
  // Roles not on one ladder (one kind for Agents, another for Owners) would need a check per kind before the read.
  if (least === undefined) throw new Error(`no job kind needs a role every other kind's role covers: ${JOB_KINDS.join(', ')}`);
  return least;
}

/**
 * Authorizes a control of job `id` and loads the job. First what needs no job - a session (401), our own origin and
 * a role that could run a job somewhere (403) - refused and audited as the control attempted (`operation.pause`,
 * target `operation/{id}`): the job's kind is not known yet, and reading it for a caller who may not read it (or a
 * page on another site) would cost a store read per forged request. Then the job under the caller's read scope (404
 * as for an unknown id), and its kind on every endpoint it touches (refusals audited as that kind), counted once
 * against the rate limit. Last, a prepared job controlled by anyone but its preparer: 403, audited as denied
 * (an Owner's cancel excepted).
 */
export async function authorizeJobControl(
  request: Request,
  id: string,
  control: ControlRoute,
): Promise<{ ctx: ConsoleContext; job: Job; who: Authorized }> {
  const subject = { target: `operation/${id}` };
  const caller = await authorizeBeforeBody(request, ANY_JOB_KIND, undefined, subject, `operation.${control}`);
  const ctx = await getContext();
  const job = await getJob(ctx, id, readScope(caller));
  // A job over no endpoint (nothing to authorize there): recorded under its own kind all the same.
  const who = (await authorizeEach(request, job.kind, job.endpoints, subject)) ?? { ...caller, action: job.kind };
  if (job.state === 'prepared' && !isPreparer(who, job) && !(control === 'cancel' && isOwnerOver(who, job)))
    await refuseAuthorized(who, `operation ${id} was prepared by ${job.startedBy}; prepare your own`);
  return { ctx, job, who };
}

/**
 * A prepared job waits for its preparer's confirmation: the runner sends its commands under the preparer's name, so
 * a confirmation by anyone else would be audited as theirs. Jobs from before startedById compare display names.
 */
function isPreparer(who: Authorized, job: Job): boolean {
  return job.startedById !== undefined ? job.startedById === principalKey(who.principal) : job.startedBy === who.user;
}

/** An Owner on every endpoint the job touches (site-wide for a job over none) may clear others' open confirmations. */
function isOwnerOver(who: Authorized, job: Job): boolean {
  const where = job.endpoints.length > 0 ? job.endpoints : [undefined];
  return where.every((e) => {
    const role = effectiveRole(who.assignments, e);
    return role !== null && roleCovers(role, 'Owner');
  });
}
