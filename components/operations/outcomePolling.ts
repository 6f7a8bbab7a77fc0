// How often the Jobs drawer reads a job's follow-up again (GET /api/operations/{id}/outcome). Each read costs a
// chunk read and up to 20 bulk requests, for each of up to five jobs: worth it while the answer can change, not
// after - once the job has ended and none of its checked events is on its way, the line stays as it is.
import type { JobOutcome, OperationSummary } from './jobsApi.ts';
import { GOING } from './jobText.ts';

/** While a job runs, or its events are still being handled. */
export const OUTCOME_POLL_MS = 5_000;

/** The next read's delay, or false to stop: the job ended and nothing it checked is in progress. */
export function outcomePollMs(state: OperationSummary['state'], outcome: Pick<JobOutcome, 'counts'> | undefined): number | false {
  if (GOING.has(state) || outcome === undefined) return OUTCOME_POLL_MS;
  return outcome.counts.inProgress > 0 ? OUTCOME_POLL_MS : false;
}

/**
 * Part of the outcome query's key: whether the job is still going. When a job ends, react-query would only re-decide
 * the interval on the data it has - read before the end, with events not reached yet and perhaps none in progress -
 * and stop there, leaving that line under the ended job's wording ("still failed (not retried)" in red for events it
 * did resubmit). A new key at the end guarantees one read after it.
 */
export const outcomePhase = (state: OperationSummary['state']): 'going' | 'ended' => (GOING.has(state) ? 'going' : 'ended');
