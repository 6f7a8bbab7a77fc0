// Browser calls for failure groups and bulk operations (server/failures, server/operations).
import { callApi } from '../api.ts';
import type { FailureGroupsView } from '../../server/failures/groups.ts';
import type { GroupNote } from '../../server/failures/notes.ts';
import type { OperationSummary } from '../../server/operations/routes.ts';
import type { JobView } from '../../server/operations/jobs.ts';
import type { JobOutcome, StillFailedSplit } from '../../server/operations/outcome.ts';
import type { Selection } from '../../server/operations/selection.ts';
import type { PreviousJob } from '../../server/operations/previousJob.ts';
import type { LeftOutEndpoint } from '../../server/operations/actableRows.ts';

export type FailureGroupItem = FailureGroupsView['groups'][number] & { note: GroupNote | null };
export type { OperationSummary, JobView, JobOutcome, LeftOutEndpoint, PreviousJob, Selection, StillFailedSplit };

/**
 * The prepare answer: the frozen count, the endpoints of the rows frozen and those left out (absent from an older
 * console replica during a rolling deploy: the dialog then names no endpoints).
 */
export interface PreparedJob {
  operationId: string;
  total: number;
  previous: PreviousJob | null;
  endpoints?: string[];
  leftOut?: LeftOutEndpoint[];
}

/**
 * A job's follow-up as any console replica may answer it: during a rolling deploy an older one answers without
 * `stillFailedSplit`, `refusals`, `waiting` and `refusedListed` (or without the split's `unknown`), and the drawer,
 * in the layout of every page, must read that too (jobText.ts and outcomePolling.ts supply what is missing).
 */
export type OutcomeAnswer = Omit<JobOutcome, 'stillFailedSplit' | 'refusals' | 'waiting' | 'refusedListed'> & {
  stillFailedSplit?: Omit<StillFailedSplit, 'unknown'> & { unknown?: number };
  refusals?: JobOutcome['refusals'];
  waiting?: number;
  refusedListed?: number;
};

const seg = encodeURIComponent;

export const jobsApi = {
  groups: (query: URLSearchParams) => callApi<Omit<FailureGroupsView, 'groups'> & { groups: FailureGroupItem[] }>(`/api/failure-groups?${query.toString()}`),
  setNote: (groupId: string, note: string) =>
    callApi<{ groupId: string; note: GroupNote }>(`/api/failure-groups/${seg(groupId)}/note`, { method: 'PUT', body: JSON.stringify({ note }) }),
  /** Freezes the selection into a held job: the answer's total is what the confirmation shows and the job acts on. */
  prepare: (kind: 'resubmit' | 'skip', selection: Selection) =>
    callApi<PreparedJob>('/api/operations', {
      method: 'POST',
      body: JSON.stringify({ kind, selection, hold: true }),
    }),
  list: () => callApi<{ operations: OperationSummary[] }>('/api/operations'),
  get: (id: string) => callApi<JobView>(`/api/operations/${seg(id)}`),
  /** What became of the job's events since (completed, failed again, …), from their rows now. */
  outcome: (id: string) => callApi<OutcomeAnswer>(`/api/operations/${seg(id)}/outcome`),
  control: (id: string, action: 'pause' | 'resume' | 'cancel') => callApi<JobView>(`/api/operations/${seg(id)}/${action}`, { method: 'POST' }),
};

/** Opens the jobs drawer (components/operations/JobsDrawer.tsx) from anywhere on the page, on one job if named. */
export function openJobsDrawer(operationId?: string): void {
  window.dispatchEvent(new CustomEvent('nimbus:jobs-open', { detail: operationId ? { operationId } : {} }));
}
