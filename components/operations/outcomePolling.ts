// How often the Jobs drawer reads a job's follow-up again (GET /api/operations/{id}/outcome). Each read costs a
// chunk read and up to 20 bulk requests, for each of up to five jobs: worth it while the answer can change soon,
// not after. Once the job has ended and a read made after its end shows nothing on its way - or only events waiting
// for someone (a Pending handoff, a Deferred event), which can stay so for hours - automatic reads stop; the line
// says when it was read and offers Refresh. An operator at 3 a.m. wants a line that is true and says its age, not
// a drawer that keeps querying the store every 5 s all night for events that are waiting on another team's job.
import type { JobOutcome, OperationSummary } from './jobsApi.ts';
import { GOING } from './jobText.ts';

/** While a job runs, or its events are still being handled. */
export const OUTCOME_POLL_MS = 5_000;

/**
 * The next read's delay, or false to stop: the job ended, this answer was read after its end, and nothing it
 * checked is on its way other than events waiting for someone. An answer read before the end (the going phase's,
 * shown while the ended phase's first read is on its way) never stops it.
 */
export function outcomePollMs(
  op: Pick<OperationSummary, 'state' | 'finishedAt'>,
  outcome: Pick<JobOutcome, 'counts' | 'waiting' | 'at'> | undefined,
): number | false {
  if (GOING.has(op.state) || outcome === undefined) return OUTCOME_POLL_MS;
  if (op.finishedAt !== null && outcome.at < op.finishedAt) return OUTCOME_POLL_MS;
  return outcome.counts.inProgress > outcome.waiting ? OUTCOME_POLL_MS : false;
}

/**
 * Part of the outcome query's key: whether the job is still going. When a job ends, react-query would only re-decide
 * the interval on the data it has - read before the end, with events not reached yet and perhaps none in progress -
 * and stop there, leaving that line under the ended job's wording ("still failed (not retried)" in red for events it
 * did resubmit). A new key at the end guarantees one read after it.
 */
export const outcomePhase = (state: OperationSummary['state']): 'going' | 'ended' => (GOING.has(state) ? 'going' : 'ended');
