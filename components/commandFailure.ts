// Which failures of an operator command (resubmit, skip, handoff settlement) say the page may show a stale event.
import type { CHANGED_SINCE_SEEN_CODE } from '../server/manager/manager.ts';
import { ApiError } from './api.ts';

/**
 * Refusals about the request itself, answered before the event was looked at or touched: a bad body (400, e.g. an
 * edited payload its schema refuses), no session or no permission (401, 403), too large (413), wrong content type
 * (415), unprocessable (422), too many requests (429). The event shown is as current as it was.
 */
const REQUEST_REFUSALS: ReadonlySet<number> = new Set([400, 401, 403, 413, 415, 422, 429]);

/**
 * True when a command's failure means the event shown may no longer be its state, so the page should read it again
 * now rather than at its next timed refresh: 409 (its state does not allow the command: someone else resubmitted,
 * skipped or settled it, or a claim is in progress), 404 (it is gone), 412 and any other refusal not about the
 * request, a 5xx (the send failed after a claim, which the server undoes, or a gateway gave up while the command
 * may have gone through), and a request with no answer at all (dropped: it may have reached the server).
 */
export function commandFailureMayLeaveStaleEvent(error: unknown): boolean {
  if (error instanceof ApiError) return !REQUEST_REFUSALS.has(error.status);
  return true;
}

/**
 * The server's `code` of a resubmit or skip refused because the event moved on from the message the dialog was
 * opened on (or a handoff settlement naming a handoff another one has replaced since) (server/manager/manager.ts CHANGED_SINCE_SEEN_CODE: the type-only import ties the two, and keeps the
 * server module out of the browser bundle).
 */
const CHANGED_SINCE_SEEN: typeof CHANGED_SINCE_SEEN_CODE = 'changed';

/**
 * True for that refusal (409 with its code): the command was not sent because the event is no longer what the
 * operator decided on. The Event page then shows what it now is and lets a second, deliberate confirm act on that.
 * Other 409s (the state does not allow the command, a claim under way) are not this.
 */
export function isChangedSinceSeen(error: unknown): boolean {
  return error instanceof ApiError && error.status === 409 && error.code === CHANGED_SINCE_SEEN;
}
