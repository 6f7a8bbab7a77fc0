// What happens to a session's parked events when an operator command settles an event. Resubmit, Skip and Complete
// handoff release the session (docs/sdk.md: a successful retry, a skip and a completed handoff release it the same
// way); Fail handoff keeps it blocked. Their confirmations say it from these functions (sessionFate), which also
// notice when the session's parked events wait on another event still unsettled: settling this one then releases
// nothing. Rows naming a blocker settled long ago (their parked copies lost) are leftovers, not a sign of another block.
// A release replays the session from its replay cursor, so rows naming another event are never counted as replayed.
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
 * The parked rows of a session that name another blocker than `eventId`. A release of `eventId` does not replay them:
 * the SDK's release replays the session's parked messages from its replay cursor on (packages/sdk/src/decide.ts
 * `drain`: NextReplaySequence up to NextDeferralSequence), which are those parked behind this event and those parked
 * behind a replay (naming no blocker). A row naming another event Y was parked while Y blocked the session; Y's
 * release replayed it, so a row still naming Y is a leftover of that replay (its parked copy lost, skipped with a
 * ReplayGap notice, the cursor moved past it), or in that replay now (the Resolver records its new park or answer when
 * it comes back), or, while Y is unsettled, waits on Y. Only rows of this very session are counted (a row of another
 * session never, whatever the list returned); a row naming none is listed behind this event by the parked panel, so it
 * is counted there, not here. `more`: rows beyond those read are parked in the session, so the count is a lower bound.
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

/** The session's parked rows that name other events than this one: how many, and which events they name. */
export interface OtherParked {
  count: number;
  /** Rows beyond those read are parked in the session: `count` is a lower bound. */
  atLeast: boolean;
  /** The events they name as their blocker, each once, in the order first named, with how many of the rows name it. */
  blockers: Array<{ eventId: string; count: number }>;
}

/** What the dialogs' reads say of the events named (readBlockerStandings); null: not read (in flight, failed or not asked). */
type Standings = Readonly<Record<string, BlockerStanding>> | null;

/**
 * The dialogs' line on the session's rows that name other events (null when there are none and nothing more is
 * parked), each group of rows by the standing of the event it names: a settled one's rows are leftovers of its replay
 * (or in it), an unsettled one's wait on it, one not known gets words true either way. None is said to be replayed by
 * this command (see otherParkedInSession). Fail handoff (`hold`) replays nothing: the rows not known to be leftovers
 * stay parked too. When more rows are parked than were read, a release says that those behind this event follow, and
 * so do any still being replayed (a copy that meets the blocked session parks behind its blocker).
 */
export function otherParkedText(outcome: SessionOutcome, others: OtherParked, standings: Standings): string | null {
  const standing = (b: { eventId: string }): BlockerStanding => standings?.[b.eventId] ?? 'unknown';
  const of = (s: BlockerStanding) => others.blockers.filter((b) => standing(b) === s);
  const settled = of('settled');
  const lines: string[] = [];
  if (outcome === 'hold') {
    const parked = others.count - rowsOf(settled);
    if (parked > 0) lines.push(`${parkedCountText(parked, others.atLeast)} more parked in this session (behind other events) stay parked too.`);
  } else {
    if (others.atLeast) lines.push('More events may be parked in this session than were read; those parked behind this event follow it, and so do any still being replayed.');
    const unknown = of('unknown');
    if (unknown.length > 0) lines.push(unsettledOrNotText(unknown));
    const blocking = of('blocking');
    if (blocking.length > 0) lines.push(waitingText(blocking));
  }
  if (settled.length > 0) lines.push(leftoverText(settled));
  return lines.length > 0 ? lines.join(' ') : null;
}

const rowsOf = (blockers: ReadonlyArray<{ count: number }>) => blockers.reduce((n, b) => n + b.count, 0);

/** "N more parked in this session name(s) …", in the number of the rows counted (those read). */
function moreParked(blockers: ReadonlyArray<{ count: number }>, singular: string, plural: string): { n: number; lead: string } {
  const n = rowsOf(blockers);
  return { n, lead: `${formatCount(n)} more parked in this session ${n === 1 ? singular : plural}` };
}

/** Rows naming events still unsettled (Failed, DeadLettered, a Pending handoff): they wait on those. */
function waitingText(blockers: ReadonlyArray<{ eventId: string; count: number }>): string {
  const { n, lead } = moreParked(blockers, 'waits', 'wait');
  const who = blockers.length === 1 ? `event ${blockers[0]!.eventId}, still unsettled` : 'other events, still unsettled';
  return `${lead} on ${who}, not on this one: ${n === 1 ? 'it stays' : 'they stay'} parked until ${blockers.length === 1 ? 'it is' : 'those are'} settled.`;
}

/** Rows naming events whose standing is not known (not read, the read failed, a Pending resubmit): true either way. */
function unsettledOrNotText(blockers: ReadonlyArray<{ eventId: string; count: number }>): string {
  const { n, lead } = moreParked(blockers, 'names', 'name');
  if (blockers.length > 1) {
    return `${lead} other events, not this one: each waits on the event it names if that is still unsettled, or, if it is settled, is left over from its replay (not replayed) or being replayed.`;
  }
  const y = blockers[0]!.eventId;
  const [it, waits, is] = n === 1 ? ['it', 'waits', 'is'] : ['they', 'wait', 'are'];
  return `${lead} event ${y}, not this one: ${it} ${waits} on ${y} if it is still unsettled, or, if it is settled, ${is} left over from its replay (not replayed) or being replayed.`;
}

/**
 * Rows naming only events already settled (Completed, Skipped): leftovers of those events' replay, or, while that
 * replay is still under way, rows whose replayed copy the Resolver has not recorded yet (it runs, or parks again behind
 * the session's blocker); the store cannot tell the two apart (the ReplayGap notice is in history only).
 */
function leftoverText(blockers: ReadonlyArray<{ eventId: string; count: number }>): string {
  const { lead } = moreParked(blockers, 'names', 'name');
  const one = blockers.length === 1;
  const who = one ? `event ${blockers[0]!.eventId}, already settled` : 'other events, all already settled';
  return (
    `${lead} ${who}: left over from ${one ? 'its' : 'their'} replay, where a parked copy lost on the way was skipped (a ReplayGap notice), ` +
    'or, if that replay is still under way, being replayed (a copy that meets a blocked session parks behind its blocker and follows it); a leftover stays Deferred and is not replayed.'
  );
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
 * `standings` says whether the events the other rows name still hold the session (readBlockerStandings: the first few
 * named, read once; null while that read is in flight or when it failed; a blocker missing from it is unknown).
 * When no parked row names this event and the session's parked rows name another:
 * - one of them is still blocking (Failed, DeadLettered, a Pending handoff): the session waits on it, not this one,
 *   so settling this event releases nothing and replays nothing, and the words say "stays blocked" on which;
 * - all are settled (Completed, Skipped): the rows are leftovers of their replay (or in it, while it is under way),
 *   so the words are those of the usual case, with the leftovers said as such;
 * - otherwise (not read yet, the read failed, a status that says neither): words true either way, that the session
 *   may stay blocked and that this replays none of those rows.
 * When a parked row names this event, the fate is the usual one, and the other rows are said by their blockers'
 * standings (otherParkedText): never as replayed by this release.
 */
export function sessionFate(
  outcome: SessionOutcome,
  behind: { listed: number; capped: boolean; naming: number },
  others: OtherParked | null,
  standings: Standings = null,
): { fate: string; others: string | null } {
  if (behind.naming === 0 && others !== null && others.count > 0) {
    const standing = (b: { eventId: string }): BlockerStanding => standings?.[b.eventId] ?? 'unknown';
    const unsettled = others.blockers.filter((b) => standing(b) !== 'settled');
    if (unsettled.length > 0) return elsewhereFate(outcome, unsettled, others.atLeast, standing);
  }
  return usualFate(outcome, behind, others, standings);
}

/** No parked row names this event, and some name events not known to be settled: the session may wait on those. */
function elsewhereFate(
  outcome: SessionOutcome,
  unsettled: ReadonlyArray<{ eventId: string; count: number }>,
  atLeast: boolean,
  standing: (b: { eventId: string }) => BlockerStanding,
): { fate: string; others: null } {
  const count = rowsOf(unsettled);
  const who = unsettled.length === 1 ? `event ${unsettled[0]!.eventId}` : 'other events';
  const n = parkedCountText(count, atLeast);
  const one = count === 1 && !atLeast;
  if (unsettled.some((b) => standing(b) === 'blocking')) {
    const parked = one ? `its ${n} parked event waits` : `its ${n} parked events wait`;
    return { fate: `stays blocked: ${parked} on ${who}, not this one${outcome === 'release' ? ', so none is replayed' : ''}`, others: null };
  }
  const parked = one ? `its ${n} parked event names` : `its ${n} parked events name`;
  if (outcome === 'hold') return { fate: `stays blocked; ${parked} ${who}, not this one`, others: null };
  const which = unsettled.length === 1 ? `${unsettled[0]!.eventId} is` : 'one of them is';
  return { fate: `may stay blocked: ${parked} ${who}, not this one; if ${which} still unsettled, the session waits on it, and this replays none of them`, others: null };
}

/** The usual words (this event holds the session), with the line on the session's other parked rows. */
function usualFate(
  outcome: SessionOutcome,
  behind: { listed: number; capped: boolean },
  others: OtherParked | null,
  standings: Standings,
): { fate: string; others: string | null } {
  const rest = others ? otherParkedText(outcome, others, standings) : null;
  if (outcome === 'release') return { fate: `is released and ${parkedFollowText(behind.listed, behind.capped)}`, others: rest };
  const one = behind.listed === 1 && !behind.capped;
  const held = behind.listed === 0 ? '' : ` and its ${parkedCountText(behind.listed, behind.capped)} parked ${one ? 'event stays' : 'events stay'} parked`;
  return { fate: `stays blocked until a resubmit or skip${held}`, others: rest };
}
