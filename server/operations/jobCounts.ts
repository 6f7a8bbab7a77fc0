// How a bulk job's counts are made (runner.ts): each row's outcome in the job's totals, and whether a row has this
// job's receipt (how a run finds the commands an earlier run sent past the saved cursor).
import type { AuditEntry, MessageStore } from '../../lib/store/index.ts';
import { MAX_ERRORS_KEPT, type Job } from './jobs.ts';
import type { SelectedRow } from './selection.ts';

/** One event's outcome in a job's counts. */
export type StepOutcome = { kind: 'done' } | { kind: 'refused'; status: number; detail: string } | { kind: 'failed'; status: number; detail: string };

/** Counts `row`'s outcome in the job (and its endpoint's part), keeping the first refusals and send failures. */
export function count(job: Job, row: SelectedRow, o: StepOutcome): void {
  const part = job.byEndpoint?.[row.endpointId];
  if (part) part[o.kind]++;
  if (o.kind === 'done') job.done++;
  else if (o.kind === 'refused') {
    job.refused++;
    const refusals = (job.refusals ??= []);
    if (refusals.length < MAX_ERRORS_KEPT) refusals.push({ endpointId: row.endpointId, eventId: row.eventId, status: o.status, detail: o.detail });
  } else {
    job.failed++;
    if (job.errors.length < MAX_ERRORS_KEPT) job.errors.push({ endpointId: row.endpointId, eventId: row.eventId, status: o.status, detail: o.detail });
  }
}

/** Does the receipt name this job (the Manager writes the operation's id into it)? */
export function isThisJobs(audit: AuditEntry, operationId: string): boolean {
  return audit.data !== null && audit.data.includes(`"operationId":"${operationId}"`);
}

/** Does the event's audit trail hold this job's receipt for a command on `endpointId`? */
export async function actedByThisJob(store: MessageStore, eventId: string, endpointId: string, operationId: string): Promise<boolean> {
  const audits = await store.listAudits(eventId, { pageSize: 50 });
  return audits.items.some((a) => a.endpointId === endpointId && isThisJobs(a, operationId));
}
