// The Resubmit and Skip confirmations' wording on a session's parked events (components/sessionRelease.ts): a count
// with its noun and verb in the right number, and no "event(s)"; and the event page's parked panel after such a
// command, which says how many were released instead of a bare "Nothing parked".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedByReason } from '@nimbus/sdk/contract';
import { otherParkedInSession, otherParkedText, parkedCountText, parkedFollowText, releasedText, sessionFate } from './sessionRelease.ts';

test('several parked events: counted, plural', () => {
  assert.equal(parkedFollowText(8), 'its 8 parked events follow');
});

test('one parked event: singular noun and verb', () => {
  assert.equal(parkedFollowText(1), 'its 1 parked event follows');
});

test('none parked: says so instead of "its 0 parked events follow"', () => {
  assert.equal(parkedFollowText(0), 'nothing is parked behind it');
});

test('after the command: how many of those parked when it was sent were released', () => {
  assert.equal(releasedText(3, 0, 'resubmit'), '3 parked events released after the resubmit.');
  assert.equal(releasedText(1, 0, 'skip'), '1 parked event released after the skip.');
  assert.equal(releasedText(3, 1, 'resubmit'), '2 parked events released after the resubmit; 1 still parked.');
});

test('nothing released yet, or nothing was parked: no line', () => {
  assert.equal(releasedText(3, 3, 'resubmit'), null);
  assert.equal(releasedText(0, 0, 'resubmit'), null);
  assert.equal(releasedText(2, 4, 'resubmit'), null);
});

test('a parked list capped at its page when the command was sent: the number released is a lower bound', () => {
  assert.equal(releasedText(100, 0, 'resubmit', true), '100+ parked events released after the resubmit.');
  assert.equal(releasedText(100, 40, 'skip', true), '60+ parked events released after the skip; 40 still parked.');
});

test('a parked list capped at its page: the count is a lower bound, "100+", in the panel title and the dialogs', () => {
  assert.equal(parkedCountText(100, true), '100+');
  assert.equal(parkedCountText(100, false), '100');
  assert.equal(parkedCountText(0, false), '0');
  assert.equal(parkedFollowText(100, true), 'its 100+ parked events follow');
  assert.equal(parkedFollowText(100, false), 'its 100 parked events follow');
});

test('the rows parked behind other events are counted apart from those behind this one (or naming none), never as replayed by this release', () => {
  const row = (eventId: string, blocker: string | null) => ({
    eventId,
    sessionId: 'S-1',
    blockedBy: null,
    errorText: blocker === null ? 'Session S-1 is replaying parked messages' : blockedByReason('S-1', blocker),
  });
  const rows = [row('a', 'E'), row('b', 'E'), row('c', 'OTHER'), row('d', null), { ...row('e', null), blockedBy: 'OTHER' }];
  const E = { sessionId: 'S-1', eventId: 'E' };
  assert.deepEqual(otherParkedInSession(rows, E, false), { count: 2, atLeast: false, blockers: [{ eventId: 'OTHER', count: 2 }] });
  assert.equal(
    otherParkedText('release', otherParkedInSession(rows, E, false), { OTHER: 'blocking' }),
    '2 more parked in this session wait on event OTHER, still unsettled, not on this one: they stay parked until it is settled.',
  );
  assert.equal(otherParkedText('hold', otherParkedInSession(rows, E, true), null), '2+ more parked in this session (behind other events) stay parked too.');
  assert.equal(otherParkedText('release', otherParkedInSession(rows.slice(0, 2), E, false), null), null, 'all behind this event: no line');
});

test("a row of another session is never counted as this session's, whatever the list returned", () => {
  // A list route that trimmed its session filter (as it once did) answered for "S-1 " with the rows of "S-1".
  const parked = (sessionId: string, eventId: string) => ({ eventId, sessionId, blockedBy: null, errorText: blockedByReason(sessionId, 'OTHER') });
  const rows = [parked('S-1', 'a'), parked('S-1', 'b'), parked('S-1 ', 'c')];
  assert.deepEqual(otherParkedInSession(rows, { sessionId: 'S-1 ', eventId: 'E' }, false), { count: 1, atLeast: false, blockers: [{ eventId: 'OTHER', count: 1 }] });
  assert.deepEqual(otherParkedInSession(rows.slice(0, 2), { sessionId: 'S-1 ', eventId: 'E' }, false), { count: 0, atLeast: false, blockers: [] });
});

test('none of the rows read waits on another event but more are parked beyond them: the line says more may be, and that only those behind this event follow', () => {
  // This event holds back a full page itself: the rows read are all its own, and those behind other events would
  // otherwise go unmentioned.
  assert.equal(
    otherParkedText('release', { count: 0, atLeast: true, blockers: [] }, null),
    'More events may be parked in this session than were read; those parked behind this event follow it, and so do any still being replayed.',
  );
  assert.equal(otherParkedText('release', { count: 0, atLeast: false, blockers: [] }, null), null);
  assert.equal(otherParkedText('hold', { count: 0, atLeast: true, blockers: [] }, null), null);
});

test('this event holds the session: the dialogs say it is released and what follows it', () => {
  const behind = { listed: 2, capped: false, naming: 2 };
  assert.deepEqual(sessionFate('release', behind, null), { fate: 'is released and its 2 parked events follow', others: null }, 'before the session read is in');
  assert.deepEqual(sessionFate('release', { listed: 0, capped: false, naming: 0 }, { count: 0, atLeast: false, blockers: [] }), {
    fate: 'is released and nothing is parked behind it',
    others: null,
  });
});

test('Fail handoff keeps the session blocked: it says what stays parked, not what is replayed', () => {
  assert.deepEqual(sessionFate('hold', { listed: 2, capped: false, naming: 2 }, { count: 3, atLeast: false, blockers: [{ eventId: 'Y', count: 3 }] }), {
    fate: 'stays blocked until a resubmit or skip and its 2 parked events stay parked',
    others: '3 more parked in this session (behind other events) stay parked too.',
  });
  assert.equal(sessionFate('hold', { listed: 1, capped: false, naming: 1 }, null).fate, 'stays blocked until a resubmit or skip and its 1 parked event stays parked');
  assert.equal(sessionFate('hold', { listed: 100, capped: true, naming: 100 }, null).fate, 'stays blocked until a resubmit or skip and its 100+ parked events stay parked');
  assert.deepEqual(sessionFate('hold', { listed: 0, capped: false, naming: 0 }, null), { fate: 'stays blocked until a resubmit or skip', others: null });
});

test('the session waits on another event still blocking (no parked row names this one): nothing is released or replayed, and it says on which', () => {
  const none = { listed: 0, capped: false, naming: 0 };
  const blocking = { Y: 'blocking', Z: 'blocking' } as const;
  assert.deepEqual(sessionFate('release', none, { count: 3, atLeast: false, blockers: [{ eventId: 'Y', count: 3 }] }, blocking), {
    fate: 'stays blocked: its 3 parked events wait on event Y, not this one, so none is replayed',
    others: null,
  });
  assert.equal(sessionFate('release', none, { count: 1, atLeast: false, blockers: [{ eventId: 'Y', count: 1 }] }, blocking).fate, 'stays blocked: its 1 parked event waits on event Y, not this one, so none is replayed');
  assert.equal(sessionFate('release', none, { count: 200, atLeast: true, blockers: [{ eventId: 'Y', count: 150 }, { eventId: 'Z', count: 50 }] }, blocking).fate, 'stays blocked: its 200+ parked events wait on other events, not this one, so none is replayed');
  assert.deepEqual(sessionFate('hold', none, { count: 2, atLeast: false, blockers: [{ eventId: 'Y', count: 2 }] }, blocking), { fate: 'stays blocked: its 2 parked events wait on event Y, not this one', others: null });
  // Rows naming no blocker are listed behind this event but do not make it the blocker.
  assert.equal(sessionFate('release', { listed: 1, capped: false, naming: 0 }, { count: 2, atLeast: false, blockers: [{ eventId: 'Y', count: 2 }] }, blocking).fate, 'stays blocked: its 2 parked events wait on event Y, not this one, so none is replayed');
  // One row naming this event proves it holds the session, whatever else is parked.
  assert.equal(sessionFate('release', { listed: 1, capped: false, naming: 1 }, { count: 2, atLeast: false, blockers: [{ eventId: 'Y', count: 2 }] }, blocking).fate, 'is released and its 1 parked event follows');
});

test("rows naming a blocker settled long ago are leftovers: the session is released from this event, and they are not counted as replayed", () => {
  // The reviewer's case: M parked behind Y, its parked copy expired, Y was skipped (the replay skipped M with a
  // ReplayGap notice and left its row Deferred naming Y); later E failed and blocks S.
  const S = 'S';
  const lingering = { eventId: 'M', sessionId: S, blockedBy: null, errorText: blockedByReason(S, 'Y') };
  const others = otherParkedInSession([lingering], { sessionId: S, eventId: 'E' }, false);
  const none = { listed: 0, capped: false, naming: 0 };
  assert.deepEqual(sessionFate('release', none, others, { Y: 'settled' }), {
    fate: 'is released and nothing is parked behind it',
    others:
      '1 more parked in this session names event Y, already settled: left over from its replay, where a parked copy lost on the way was skipped (a ReplayGap notice), or, if that replay is still under way, being replayed (a copy that meets a blocked session parks behind its blocker and follows it); a leftover stays Deferred and is not replayed.',
  });
  assert.equal(sessionFate('hold', none, others, { Y: 'settled' }).fate, 'stays blocked until a resubmit or skip');
  // Several settled blockers, and a read that stopped at its cap: the leftovers are the rows read (what names which
  // blocker beyond them is unknown, not "3+"), and the rows not read only as "may be" parked.
  const two = { count: 3, atLeast: true, blockers: [{ eventId: 'Y', count: 2 }, { eventId: 'Z', count: 1 }] };
  assert.deepEqual(sessionFate('release', { listed: 1, capped: false, naming: 0 }, two, { Y: 'settled', Z: 'settled' }), {
    fate: 'is released and its 1 parked event follows',
    others:
      'More events may be parked in this session than were read; those parked behind this event follow it, and so do any still being replayed. 3 more parked in this session name other events, all already settled: left over from their replay, where a parked copy lost on the way was skipped (a ReplayGap notice), or, if that replay is still under way, being replayed (a copy that meets a blocked session parks behind its blocker and follows it); a leftover stays Deferred and is not replayed.',
  });
});

test('a named blocker still unsettled keeps "stays blocked"; one not known yet gets words true either way', () => {
  const none = { listed: 0, capped: false, naming: 0 };
  const one = { count: 1, atLeast: false, blockers: [{ eventId: 'Y', count: 1 }] };
  assert.equal(sessionFate('release', none, one, { Y: 'blocking' }).fate, 'stays blocked: its 1 parked event waits on event Y, not this one, so none is replayed');
  const hedged = 'may stay blocked: its 1 parked event names event Y, not this one; if Y is still unsettled, the session waits on it, and this replays none of them';
  assert.deepEqual(sessionFate('release', none, one, null), { fate: hedged, others: null }, 'the blocker read in flight or failed');
  assert.equal(sessionFate('release', none, one, { Y: 'unknown' }).fate, hedged, 'no row of Y, or a status that says neither');
  assert.equal(sessionFate('hold', none, one, null).fate, 'stays blocked; its 1 parked event names event Y, not this one');
  // One blocker still blocking settles it, whatever the others: its rows alone are counted.
  const mixed = { count: 5, atLeast: false, blockers: [{ eventId: 'Y', count: 2 }, { eventId: 'Z', count: 3 }] };
  assert.equal(sessionFate('release', none, mixed, { Y: 'settled', Z: 'blocking' }).fate, 'stays blocked: its 3 parked events wait on event Z, not this one, so none is replayed');
  // A settled one and one not read (beyond the first few, say): hedged on the one not known.
  assert.equal(
    sessionFate('release', none, mixed, { Y: 'settled' }).fate,
    'may stay blocked: its 3 parked events name event Z, not this one; if Z is still unsettled, the session waits on it, and this replays none of them',
  );
});

test('rows naming this event and rows naming another event settled long ago: the release replays the first, the others are leftovers, never "will also be replayed"', () => {
  // The SDK's release replays from the session's replay cursor (packages/sdk/src/decide.ts drain: NextReplaySequence
  // up to NextDeferralSequence); a row still naming a settled Y had its copy lost in Y's replay, which moved the
  // cursor past it (ReplayGap), or is in that replay now. Either way it is not one that follows this event.
  const S = 'S';
  const rows = [
    { eventId: 'a', sessionId: S, blockedBy: null, errorText: blockedByReason(S, 'E') },
    { eventId: 'b', sessionId: S, blockedBy: null, errorText: blockedByReason(S, 'E') },
    { eventId: 'lost', sessionId: S, blockedBy: null, errorText: blockedByReason(S, 'Y') },
  ];
  const others = otherParkedInSession(rows, { sessionId: S, eventId: 'E' }, false);
  const behind = { listed: 2, capped: false, naming: 2 };
  const leftover =
    '1 more parked in this session names event Y, already settled: left over from its replay, where a parked copy lost on the way was skipped (a ReplayGap notice), or, if that replay is still under way, being replayed (a copy that meets a blocked session parks behind its blocker and follows it); a leftover stays Deferred and is not replayed.';
  assert.deepEqual(sessionFate('release', behind, others, { Y: 'settled' }), { fate: 'is released and its 2 parked events follow', others: leftover });
  assert.deepEqual(sessionFate('hold', behind, others, { Y: 'settled' }), {
    fate: 'stays blocked until a resubmit or skip and its 2 parked events stay parked',
    others: leftover,
  });
});

test('rows naming this event and rows naming another event still unsettled: those wait on it, not replayed by this release', () => {
  const behind = { listed: 2, capped: false, naming: 2 };
  const three = { count: 3, atLeast: false, blockers: [{ eventId: 'Y', count: 3 }] };
  assert.deepEqual(sessionFate('release', behind, three, { Y: 'blocking' }), {
    fate: 'is released and its 2 parked events follow',
    others: '3 more parked in this session wait on event Y, still unsettled, not on this one: they stay parked until it is settled.',
  });
  const one = { count: 1, atLeast: false, blockers: [{ eventId: 'Y', count: 1 }] };
  assert.equal(sessionFate('release', behind, one, { Y: 'blocking' }).others, '1 more parked in this session waits on event Y, still unsettled, not on this one: it stays parked until it is settled.');
  const two = { count: 2, atLeast: false, blockers: [{ eventId: 'Y', count: 1 }, { eventId: 'Z', count: 1 }] };
  assert.equal(
    sessionFate('release', behind, two, { Y: 'blocking', Z: 'blocking' }).others,
    '2 more parked in this session wait on other events, still unsettled, not on this one: they stay parked until those are settled.',
  );
  // Fail handoff keeps the session blocked: they stay parked, as every row does.
  assert.equal(sessionFate('hold', behind, three, { Y: 'blocking' }).others, '3 more parked in this session (behind other events) stay parked too.');
});

test('rows naming this event and rows naming another event whose standing is not known: words true either way, never "will also be replayed"', () => {
  const behind = { listed: 2, capped: false, naming: 2 };
  const three = { count: 3, atLeast: false, blockers: [{ eventId: 'Y', count: 3 }] };
  const hedged =
    '3 more parked in this session name event Y, not this one: they wait on Y if it is still unsettled, or, if it is settled, are left over from its replay (not replayed) or being replayed.';
  assert.equal(sessionFate('release', behind, three, null).others, hedged, 'the blocker read in flight or failed');
  assert.equal(sessionFate('release', behind, three, { Y: 'unknown' }).others, hedged, 'no row of Y, or a Pending resubmit');
  assert.equal(sessionFate('release', behind, three).others, hedged, 'not read');
  const one = { count: 1, atLeast: false, blockers: [{ eventId: 'Y', count: 1 }] };
  assert.equal(
    sessionFate('release', behind, one, null).others,
    '1 more parked in this session names event Y, not this one: it waits on Y if it is still unsettled, or, if it is settled, is left over from its replay (not replayed) or being replayed.',
  );
  const two = { count: 2, atLeast: false, blockers: [{ eventId: 'Y', count: 1 }, { eventId: 'Z', count: 1 }] };
  assert.equal(
    sessionFate('release', behind, two, null).others,
    '2 more parked in this session name other events, not this one: each waits on the event it names if that is still unsettled, or, if it is settled, is left over from its replay (not replayed) or being replayed.',
  );
});

test('rows naming this event and rows naming several other events, each said by its own standing', () => {
  const behind = { listed: 1, capped: false, naming: 1 };
  const mixed = { count: 6, atLeast: false, blockers: [{ eventId: 'Y', count: 1 }, { eventId: 'Z', count: 2 }, { eventId: 'W', count: 3 }] };
  assert.deepEqual(sessionFate('release', behind, mixed, { Y: 'settled', Z: 'blocking' }), {
    fate: 'is released and its 1 parked event follows',
    others:
      '3 more parked in this session name event W, not this one: they wait on W if it is still unsettled, or, if it is settled, are left over from its replay (not replayed) or being replayed. ' +
      '2 more parked in this session wait on event Z, still unsettled, not on this one: they stay parked until it is settled. ' +
      '1 more parked in this session names event Y, already settled: left over from its replay, where a parked copy lost on the way was skipped (a ReplayGap notice), or, if that replay is still under way, being replayed (a copy that meets a blocked session parks behind its blocker and follows it); a leftover stays Deferred and is not replayed.',
  });
});

test('more parked than read: rows beyond them are not said to be replayed; only those behind this event follow it', () => {
  const behind = { listed: 100, capped: true, naming: 100 };
  assert.deepEqual(sessionFate('release', behind, { count: 0, atLeast: true, blockers: [] }), {
    fate: 'is released and its 100+ parked events follow',
    others: 'More events may be parked in this session than were read; those parked behind this event follow it, and so do any still being replayed.',
  });
  assert.equal(
    sessionFate('release', behind, { count: 1, atLeast: true, blockers: [{ eventId: 'Y', count: 1 }] }, { Y: 'settled' }).others,
    'More events may be parked in this session than were read; those parked behind this event follow it, and so do any still being replayed. ' +
      '1 more parked in this session names event Y, already settled: left over from its replay, where a parked copy lost on the way was skipped (a ReplayGap notice), or, if that replay is still under way, being replayed (a copy that meets a blocked session parks behind its blocker and follows it); a leftover stays Deferred and is not replayed.',
  );
});
