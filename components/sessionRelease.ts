// What happens to a session's parked events when an operator command settles an event. Resubmit, Skip and Complete
// handoff release the session (docs/sdk.md: a successful retry, a skip and a completed handoff release it the same
// way); Fail handoff keeps it blocked. Their confirmations say it from these functions (sessionFate), which also
// notice when the session's parked events wait on another event still unsettled: settling this one then releases
// nothing. Rows naming a blocker settled long ago (their parked copies lost) are leftovers, not a sign of another block.
import { blockerOf, type ParkedRef } from '../lib/store/parkedBlocker.ts';
import type { BlockerStanding } from './sessionParkedRead.ts';
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
  const named = rows
    .filter((r) => r.sessionId === sessionId && r.eventId !== eventId)
    .map((r) => blockerOf(r) ?? eventId)
    .filter((b) => b !== eventId);
  const blockers = new Map<string, number>();
  for (const b of named) blockers.set(b, (blockers.get(b) ?? 0) + 1);
  return { count: named.length, atLeast: more, blockers: [...blockers].map(([id, rowCount]) => ({ eventId: id, count: rowCount })) };
}

/** The session's parked rows that wait on other events than this one: how many, and which events they wait on. */
export interface OtherParked {
  count: number;
  /** Rows beyond those read are parked in the session: `count` is a lower bound. */
  atLeast: boolean;
  /** The events they name as their blocker, each once, in the order first named, with how many of the rows name it. */
  blockers: Array<{ eventId: string; count: number }>;
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
 * in (or when it cannot be made). Until it is in, the words are those of the usual case (this event is the session's
 * blocker), which a row naming it already proves.
 *
 * When no parked row names this event and the session's parked rows name another, `standings` says whether those
 * events still hold the session (readBlockerStandings: the first few named, read once; null while that read is in
 * flight or when it failed; a blocker missing from it is unknown):
 * - one of them is still blocking (Failed, DeadLettered, a Pending handoff): the session waits on it, not this one,
 *   so settling this event releases nothing and replays nothing, and the words say "stays blocked" on which;
 * - all are settled (Completed, Skipped): the rows are leftovers of their replay (a parked copy lost on the way is
 *   skipped with a ReplayGap notice and its row stays Deferred, packages/sdk/src/decide.ts replayGap; a later
 *   release replays from the cursor on, so not those), so the words are those of the usual case, and the leftovers
 *   are said as such, never counted as "will also be replayed";
 * - otherwise (not read yet, the read failed, a status that says neither): words true either way, that the session
 *   may stay blocked and that this replays none of those rows.
 */
export function sessionFate(
  outcome: SessionOutcome,
  behind: { listed: number; capped: boolean; naming: number },
  others: OtherParked | null,
  standings: Readonly<Record<string, BlockerStanding>> | null = null,
): { fate: string; others: string | null } {
  if (behind.naming === 0 && others !== null && others.count > 0) {
    const standing = (b: { eventId: string }): BlockerStanding => standings?.[b.eventId] ?? 'unknown';
    const unsettled = others.blockers.filter((b) => standing(b) !== 'settled');
    // The leftovers are the rows read (`atLeast` is about rows beyond them, which the first line already hedges).
    if (unsettled.length === 0) return usualFate(outcome, behind, { count: 0, atLeast: others.atLeast, blockers: [] }, { ...others, atLeast: false });
    const count = unsettled.reduce((n, b) => n + b.count, 0);
    const who = unsettled.length === 1 ? `event ${unsettled[0]!.eventId}` : 'other events';
    const n = parkedCountText(count, others.atLeast);
    const one = count === 1 && !others.atLeast;
    if (unsettled.some((b) => standing(b) === 'blocking')) {
      const parked = one ? `its ${n} parked event waits` : `its ${n} parked events wait`;
      return { fate: `stays blocked: ${parked} on ${who}, not this one${outcome === 'release' ? ', so none is replayed' : ''}`, others: null };
    }
    const parked = one ? `its ${n} parked event names` : `its ${n} parked events name`;
    if (outcome === 'hold') return { fate: `stays blocked; ${parked} ${who}, not this one`, others: null };
    const which = unsettled.length === 1 ? `${unsettled[0]!.eventId} is` : 'one of them is';
    return { fate: `may stay blocked: ${parked} ${who}, not this one; if ${which} still unsettled, the session waits on it, and this replays none of them`, others: null };
  }
  return usualFate(outcome, behind, others, null);
}

/** The usual words (this event holds the session); `leftovers`: rows naming only settled blockers, said as such. */
function usualFate(
  outcome: SessionOutcome,
  behind: { listed: number; capped: boolean },
  others: OtherParked | null,
  leftovers: OtherParked | null,
): { fate: string; others: string | null } {
  const left = leftovers ? leftoverText(leftovers) : null;
  const join = (a: string | null) => (a && left ? `${a} ${left}` : (a ?? left));
  if (outcome === 'release') return { fate: `is released and ${parkedFollowText(behind.listed, behind.capped)}`, others: join(others ? otherParkedText(others) : null) };
  const one = behind.listed === 1 && !behind.capped;
  const held = behind.listed === 0 ? '' : ` and its ${parkedCountText(behind.listed, behind.capped)} parked ${one ? 'event stays' : 'events stay'} parked`;
  const rest = others !== null && others.count > 0 ? `${parkedCountText(others.count, others.atLeast)} more parked in this session (behind other events) stay parked too.` : null;
  return { fate: `stays blocked until a resubmit or skip${held}`, others: join(rest) };
}

/** The line on parked rows that name only blockers already settled: leftovers of those blockers' replay. */
function leftoverText({ count, atLeast, blockers }: OtherParked): string {
  const one = count === 1 && !atLeast;
  const who = blockers.length === 1 ? `event ${blockers[0]!.eventId}, already settled` : 'other events, all already settled';
  return (
    `${parkedCountText(count, atLeast)} more parked in this session ${one ? 'names' : 'name'} ${who}: left over from ${blockers.length === 1 ? 'its' : 'their'} replay, ` +
    'where a parked copy lost on the way was skipped (a ReplayGap notice); such a row stays Deferred and is not replayed.'
  );
}
