// What happens to a session's parked events when an operator command releases the session. Resubmit and Skip both
// release it (docs/sdk.md: a successful retry and a skip release the session the same way), so their confirmations
// say the same thing, from these functions.
import { blockerOf, type ParkedRef } from '../lib/store/parkedBlocker.ts';
import { countOf, formatCount } from './format.tsx';

/**
 * How many events are parked, as the event page says it (the parked panel's title, the dialogs): the parked list is
 * one page (the first 100), so a list `capped` at its page gives a lower bound, "100+", never "100" for 150.
 */
export function parkedCountText(listed: number, capped: boolean): string {
  return capped ? `${formatCount(listed)}+` : formatCount(listed);
}

/** `session X is released and …` - the tail, by how many events are parked behind the one being settled. */
export function parkedFollowText(parked: number, capped = false): string {
  if (parked === 0) return 'nothing is parked behind it';
  if (capped) return `its ${parkedCountText(parked, true)} parked events follow`;
  return `its ${countOf(parked, 'parked event')} ${parked === 1 ? 'follows' : 'follow'}`;
}

/**
 * The parked panel's line after a command that releases the session (resubmit, skip, handoff completion): how many
 * of the events parked when it was sent have left the parked set since, e.g. "3 parked events released after the
 * resubmit". Null while none has (the session is not released yet, or nothing was parked).
 *
 * The counts are the lengths of the parked list the event's details carry, which is one page (the first 100):
 * `sentCapped` says the list had more parked behind it when the command was sent: the number released is then a
 * lower bound ("100+ parked events released"). A list capped now is a full page, never shorter than the one sent,
 * so it gives no line either way.
 */
export function releasedText(
  parkedWhenSent: number,
  parkedNow: number,
  command: string,
  sentCapped = false,
): string | null {
  const released = parkedWhenSent - parkedNow;
  if (released <= 0) return null;
  const counted = sentCapped ? `${parkedCountText(released, true)} parked events` : countOf(released, 'parked event');
  const still = parkedNow > 0 ? `; ${parkedNow} still parked` : '';
  return `${counted} released after the ${command}${still}.`;
}

/**
 * The parked events of a session that a release replays besides those behind `eventId`: the SDK's release asks the
 * deferred processor for every message parked in the session so far (packages/sdk/src/decide.ts `drain`, a bound
 * of NextDeferralSequence), not only those parked behind the released event. Those are the rows of this very
 * session naming another blocker (a row of another session is never counted, whatever the list returned); a row
 * naming none is listed behind this event by the parked panel, so it is counted there, not here.
 * `more`: rows beyond those read are parked in the session, so the count is a lower bound.
 */
export function otherParkedInSession(
  rows: Array<ParkedRef & { eventId: string }>,
  { sessionId, eventId }: { sessionId: string; eventId: string },
  more: boolean,
): { count: number; atLeast: boolean } {
  const count = rows.filter((r) => r.sessionId === sessionId && r.eventId !== eventId && (blockerOf(r) ?? eventId) !== eventId).length;
  return { count, atLeast: more };
}

/**
 * The dialogs' line for those: null when there are none and nothing more is parked. When none of the rows read waits
 * on another event but more are parked beyond them (this event holds back a full page itself), it says others may.
 */
export function otherParkedText({ count, atLeast }: { count: number; atLeast: boolean }): string | null {
  if (count === 0) return atLeast ? 'More events may be parked in this session behind other events; any there are will also be replayed in order.' : null;
  return `${parkedCountText(count, atLeast)} more parked in this session (behind other events) will also be replayed in order.`;
}
