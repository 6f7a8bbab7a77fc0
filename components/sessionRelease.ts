// What happens to a session's parked events when an operator command settles an event. Resubmit, Skip and Complete
// handoff release the session (docs/sdk.md: a successful retry, a skip and a completed handoff release it the same
// way); Fail handoff keeps it blocked. Their confirmations say it from these functions (sessionFate), which also
// notice when the session's parked events wait on another event: settling this one then releases nothing.
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
): OtherParked {
  const blockers = rows
    .filter((r) => r.sessionId === sessionId && r.eventId !== eventId)
    .map((r) => blockerOf(r) ?? eventId)
    .filter((b) => b !== eventId);
  return { count: blockers.length, atLeast: more, blockers: [...new Set(blockers)] };
}

/** The session's parked rows that wait on other events than this one: how many, and which events they wait on. */
export interface OtherParked {
  count: number;
  /** Rows beyond those read are parked in the session: `count` is a lower bound. */
  atLeast: boolean;
  /** The events they name as their blocker, each once. */
  blockers: string[];
}

/**
 * The dialogs' line for those: null when there are none and nothing more is parked. When none of the rows read waits
 * on another event but more are parked beyond them (this event holds back a full page itself), it says others may.
 */
export function otherParkedText({ count, atLeast }: { count: number; atLeast: boolean }): string | null {
  if (count === 0) return atLeast ? 'More events may be parked in this session behind other events; any there are will also be replayed in order.' : null;
  return `${parkedCountText(count, atLeast)} more parked in this session (behind other events) will also be replayed in order.`;
}

/** What the dialog's command does to the session: releases it (resubmit, skip, complete handoff) or keeps it blocked (fail handoff). */
export type SessionOutcome = 'release' | 'hold';

/**
 * The dialogs' words on the session, after "session X ": its `fate`, and the line on its other parked events
 * (`others`, null for none).
 *
 * `behind` is the event page's parked list: the rows behind this event (`naming` of them name it as their blocker;
 * the others name none), one page (`capped`). `others` is the session read (otherParkedInSession), null until it is
 * in (or when it cannot be made). When no parked row names this event and the session's parked rows name another,
 * the session waits on that one, not this: settling this event releases nothing and replays nothing, and the words
 * say so instead of "is released". Until the read is in, the words are those of the usual case (this event is the
 * session's blocker), which a row naming it already proves.
 */
export function sessionFate(
  outcome: SessionOutcome,
  behind: { listed: number; capped: boolean; naming: number },
  others: OtherParked | null,
): { fate: string; others: string | null } {
  if (behind.naming === 0 && others !== null && others.count > 0) {
    const who = others.blockers.length === 1 ? `event ${others.blockers[0]}` : 'other events';
    const n = parkedCountText(others.count, others.atLeast);
    const parked = others.count === 1 && !others.atLeast ? `its ${n} parked event waits` : `its ${n} parked events wait`;
    return { fate: `stays blocked: ${parked} on ${who}, not this one${outcome === 'release' ? ', so none is replayed' : ''}`, others: null };
  }
  if (outcome === 'release') return { fate: `is released and ${parkedFollowText(behind.listed, behind.capped)}`, others: others ? otherParkedText(others) : null };
  const one = behind.listed === 1 && !behind.capped;
  const held = behind.listed === 0 ? '' : ` and its ${parkedCountText(behind.listed, behind.capped)} parked ${one ? 'event stays' : 'events stay'} parked`;
  const rest = others !== null && others.count > 0 ? `${parkedCountText(others.count, others.atLeast)} more parked in this session (behind other events) stay parked too.` : null;
  return { fate: `stays blocked until a resubmit or skip${held}`, others: rest };
}
