// How often the Jobs drawer reads a job's follow-up again (GET /api/operations/{id}/outcome). Each read costs a
// chunk read and up to 20 bulk requests, for each of up to five jobs: worth it every 5 s while the answer can change
// soon, not after. Once the job has ended and a read made after its end shows nothing on its way - or only events
// waiting for someone (a Pending handoff, a Deferred event), which can stay so for hours - the line is settled: it
// says when it was read and offers Refresh. An operator at 3 a.m. wants a line that is true and says its age, not a
// drawer that queries the store every 5 s all night for events that are waiting on another team's job. Settled
// with events waiting, it is still read once a minute: a Deferred event whose blocker has just completed is replayed
// a moment later, and a line stopped on it would say "1 in progress" for good.
import type { OperationSummary, OutcomeAnswer } from './jobsApi.ts';
import { GOING } from './jobText.ts';

/** While a job runs, or its events are still being handled. */
export const OUTCOME_POLL_MS = 5_000;

/** Once settled with events waiting for someone: a minute, so a replayed Deferred event shows, at a twelfth of the reads. */
export const OUTCOME_WAITING_POLL_MS = 60_000;

type Read = Pick<OutcomeAnswer, 'counts' | 'waiting' | 'at'>;

/**
 * Whether the line is settled: the job ended, this answer was read after its end, and nothing it checked is on its
 * way other than events waiting for someone. An answer read before the end (the going phase's, shown while the
 * ended phase's first read is on its way) is never settled; nor is one without `waiting` (an older replica's, during
 * a rolling deploy): it cannot tell waiting events from events on their way.
 */
export function outcomeSettled(op: Pick<OperationSummary, 'state' | 'finishedAt'>, outcome: Read | undefined): boolean {
  if (GOING.has(op.state) || outcome === undefined) return false;
  if (op.finishedAt !== null && outcome.at < op.finishedAt) return false;
  if (outcome.counts.inProgress === 0) return true;
  return outcome.waiting !== undefined && outcome.counts.inProgress <= outcome.waiting;
}

/** The next read's delay, or false to stop: settled with nothing in progress, nothing left to change. */
export function outcomePollMs(op: Pick<OperationSummary, 'state' | 'finishedAt'>, outcome: Read | undefined): number | false {
  if (!outcomeSettled(op, outcome)) return OUTCOME_POLL_MS;
  return outcome!.counts.inProgress > 0 ? OUTCOME_WAITING_POLL_MS : false;
}

/**
 * Part of the outcome query's key: whether the job is still going. When a job ends, react-query would only re-decide
 * the interval on the data it has - read before the end, with events not reached yet and perhaps none in progress -
 * and stop there, leaving that line under the ended job's wording ("still failed (not retried)" in red for events it
 * did resubmit). A new key at the end guarantees one read after it.
 */
export const outcomePhase = (state: OperationSummary['state']): 'going' | 'ended' => (GOING.has(state) ? 'going' : 'ended');
