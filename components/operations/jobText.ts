// The words of the Jobs drawer (JobsDrawer.tsx), kept apart from React so their meaning is tested: what a job's
// counts mean ("sent" is a command sent, not an event fixed), how the header button counts jobs still going, and
// what the drawer says when it has nothing to list.
import type { JobOutcome, OperationSummary, OutcomeAnswer, StillFailedSplit } from './jobsApi.ts';

type Counted = Pick<OperationSummary, 'kind' | 'state' | 'total' | 'done' | 'refused' | 'failed'>;

/** Jobs that are still going: the button counts them by state. */
export const GOING = new Set<OperationSummary['state']>(['queued', 'running', 'paused']);

/**
 * The parts of a job's counts line. `done` counts commands sent (or dead letters replayed), not events that now
 * succeed: a resubmitted event may fail again, which the events link shows.
 */
export function countParts(op: Counted): string[] {
  const processed = op.done + op.refused + op.failed;
  const verb = op.kind === 'replay' ? 'replayed' : 'sent';
  const parts = [`${processed.toLocaleString('en-US')} / ${op.total.toLocaleString('en-US')} processed`, `${op.done.toLocaleString('en-US')} ${verb}`];
  if (op.refused > 0) parts.push(op.kind === 'replay' ? `${op.refused.toLocaleString('en-US')} uncertain` : `${op.refused.toLocaleString('en-US')} refused (state changed)`);
  if (op.failed > 0) parts.push(`${op.failed.toLocaleString('en-US')} failed to send`);
  return parts;
}

/** The state as the drawer says it: a queued job has been confirmed and starts at the runner's next step. */
export function stateLabel(op: Pick<OperationSummary, 'state' | 'requested'>): string {
  if (op.state === 'queued') return 'starting';
  if (op.state === 'running' && op.requested !== 'run') return `running (${op.requested} requested)`;
  return op.state;
}

/**
 * Why the runner stopped a cancelled job, as the drawer says it: "Stopped: Pat Smith no longer holds Operator on
 * billingendpoint" (the starter's granted role was revoked: server/operations/authority.ts). Null for an operator's
 * cancel, for any other state, and for an older replica's answer without the field. The reason is stored as
 * "stopped: …" (the audit record's words), so that prefix is not said twice.
 */
export function stoppedText(op: Pick<OperationSummary, 'state'> & { stoppedReason?: string | null }): string | null {
  if (op.state !== 'cancelled' || !op.stoppedReason) return null;
  return `Stopped: ${op.stoppedReason.replace(/^stopped:\s*/i, '')}`;
}

/** The header button: "Jobs", or "Jobs (2 running, 1 paused)" - a paused job is still a job someone must finish. */
export function buttonLabel(ops: ReadonlyArray<Pick<OperationSummary, 'state'>>): string {
  const running = ops.filter((o) => o.state === 'running' || o.state === 'queued').length;
  const paused = ops.filter((o) => o.state === 'paused').length;
  const parts = [running > 0 ? `${running} running` : null, paused > 0 ? `${paused} paused` : null].filter(Boolean);
  return parts.length > 0 ? `Jobs (${parts.join(', ')})` : 'Jobs';
}

/** What the drawer says with nothing to list: it lists bulk jobs and dead-letter replays alike. */
export const EMPTY_TEXT = 'No bulk jobs or dead-letter replays yet.';

const n = (v: number) => v.toLocaleString('en-US');

/** One part of the follow-up line; `why` explains it (the refusals' reasons), shown on hover and to screen readers. */
export interface OutcomePart {
  text: string;
  failed: boolean;
  why?: string;
}

/** The refusals' reasons in one line: "the event has no stored payload to resubmit (2); … is Completed (1)". */
export function refusalWhy(refusals: JobOutcome['refusals']): string | undefined {
  if (refusals.length === 0) return undefined;
  return refusals.map((r) => `${r.reason} (${n(r.events)})`).join('; ');
}

/**
 * Why the unchanged events are unchanged, as an older replica's answer says it too: without a split, all of them
 * not reached (what it would have said before refusals were told apart), without `unknown`, none.
 */
export function splitOf(o: Pick<OutcomeAnswer, 'counts' | 'stillFailedSplit'>): StillFailedSplit {
  const s = o.stillFailedSplit;
  return s ? { ...s, unknown: s.unknown ?? 0 } : { notReached: o.counts.stillFailed, refused: 0, notSent: 0, unknown: 0 };
}

/**
 * "N refused", or - when the job refused more events than it kept the reasons of (MAX_ERRORS_KEPT) - "N refused, M of
 * them listed": the count is exact, the reasons on hover are those of the M. An older replica's answer says nothing
 * of it (undefined): "N refused", as before.
 */
function refusedText(refused: number, listed: number | undefined): string {
  return listed !== undefined && listed < refused ? `${n(refused)} refused, ${n(listed)} of them listed` : `${n(refused)} refused`;
}

/**
 * The follow-up line of a job: what its events are now. "failed again" first, since it is what an operator acts
 * on next; parts at zero are left out, except "completed" and "failed again" of a resubmit, whose zero is news
 * ("0 completed" says the retry did not help). Events whose row has not changed are split by why: the job refused
 * them ("N refused", with the Manager's reasons; "N refused, M of them listed" past the reasons it kept) - in any state; it refused them or could not send their command,
 * without knowing which ("N refused or not sent", no reasons: see outcome.ts reachedWhy); while the job is still
 * going (running, paused, starting), the rest are "not reached yet" (at or past its cursor) or "not sent" (reached,
 * the command could not be sent), not a failure in red; once it has ended they are "still failed". A skip job
 * neither retries nor makes anything fail again: its words say skipped. Null before anything was checked.
 */
export function outcomeParts(
  op: Pick<OperationSummary, 'kind' | 'state'>,
  o: Pick<OutcomeAnswer, 'checked' | 'total' | 'counts' | 'stillFailedSplit' | 'refusals' | 'refusedListed'>,
): OutcomePart[] | null {
  if (o.checked === 0) return null;
  const c = o.counts;
  const split = splitOf(o);
  const resubmit = op.kind === 'resubmit';
  const going = GOING.has(op.state);
  const still = c.stillFailed - split.refused - split.unknown;
  const unchanged = going
    ? [
        { text: `${n(split.notReached)} not reached yet`, failed: false, keep: false, v: split.notReached },
        { text: `${n(split.notSent)} not sent`, failed: true, keep: false, v: split.notSent },
      ]
    : [{ text: `${n(still)} still failed (${resubmit ? 'not retried' : 'not skipped'})`, failed: true, keep: false, v: still }];
  const parts: { text: string; failed: boolean; keep: boolean; v: number; why?: string }[] = [
    { text: resubmit ? `${n(c.failedAgain)} failed again` : `${n(c.failedAgain)} failed since it started`, failed: true, keep: resubmit, v: c.failedAgain },
    ...unchanged,
    { text: refusedText(split.refused, o.refusedListed), failed: false, keep: false, v: split.refused, why: refusalWhy(o.refusals ?? []) },
    // Red: some of them may need their command sent again.
    { text: `${n(split.unknown)} refused or not sent`, failed: true, keep: false, v: split.unknown },
    { text: `${n(c.inProgress)} in progress`, failed: false, keep: false, v: c.inProgress },
    { text: `${n(c.completed)} completed`, failed: false, keep: resubmit, v: c.completed },
    { text: `${n(c.skipped)} skipped`, failed: false, keep: false, v: c.skipped },
    { text: `${n(c.unknown)} not found`, failed: false, keep: false, v: c.unknown },
  ];
  const shown: OutcomePart[] = parts
    .filter((p) => p.v > 0 || p.keep)
    .map(({ text, failed, v, why }) => ({ text, failed: failed && v > 0, ...(why ? { why } : {}) }));
  if (o.checked < o.total) shown.push({ text: `(first ${n(o.checked)} of ${n(o.total)} checked)`, failed: false });
  return shown;
}
