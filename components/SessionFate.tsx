// What a dialog's command does to the event's session, said in the dialog: "session X is released and its N parked
// events follow" (Resubmit, Skip, Complete handoff) or "stays blocked" (Fail handoff), and the line on the other events
// parked in the session, behind other events, which a release of this one does not replay (the SDK replays from the
// session's replay cursor: components/sessionRelease.ts otherParkedInSession, sessionFate). The words come from the
// event page's parked list and one read of the session's parked rows when the dialog opens (the Endpoint page's list
// route, until one beyond the 200 counted is seen: components/sessionParkedRead.ts), never polled: the event page's own
// parked read lists only the events behind this one, by design (its query filters on the blocker). When that read
// finds rows naming other events, the first few events they name are read too (the same list route, by exact event
// id, once: sessionBlockersQuery): a row can keep naming a blocker settled long ago (its parked copy lost, skipped by
// the replay, its row left Deferred), so the words must neither say the session waits on a settled event nor count
// such a row as replayed. A session id the list route refuses (spaces alone, longer than 128 characters) is not read.
// The wrapper's data-session-parked says whether the reads are in ("read" once the words are final), so a test waits
// for it, not for time.
import type { ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { sessionBlockersQuery, sessionParkedQuery } from './queries.ts';
import { BLOCKERS_READ_MAX, sessionListable } from './sessionParkedRead.ts';
import { otherParkedInSession, sessionFate, type SessionOutcome } from './sessionRelease.ts';

export function SessionFate(props: {
  endpointId: string;
  sessionId: string;
  eventId: string;
  outcome: SessionOutcome;
  /** The event page's parked list: the rows behind this event, one page (`capped`: more follow). */
  parked: { siblings: ReadonlyArray<{ blockedBy: string | null }>; capped: boolean };
  /** The dialog's words before "session X …". */
  lead: ReactNode;
  className?: string;
}) {
  const { endpointId, sessionId, eventId, outcome, parked } = props;
  const q = useQuery(sessionParkedQuery(endpointId, sessionId));
  const others = q.data ? otherParkedInSession(q.data.rows, { sessionId, eventId }, q.data.more) : null;
  const behind = { listed: parked.siblings.length, capped: parked.capped, naming: parked.siblings.filter((s) => s.blockedBy !== null).length };
  // Rows naming other events: do those events still hold the session (it waits on them), or are the rows leftovers?
  const named = others !== null && others.count > 0 ? others.blockers.slice(0, BLOCKERS_READ_MAX).map((b) => b.eventId) : [];
  const b = useQuery(sessionBlockersQuery(endpointId, sessionId, named));
  const words = sessionFate(outcome, behind, others, b.data ?? null);
  const blockersIn = named.length === 0 || b.isSuccess || b.isError;
  // No session (''): nothing to read, nothing to say of one.
  const state =
    sessionId === '' ? 'none' : !sessionListable(sessionId) ? 'unlistable' : q.isError ? 'failed' : q.isSuccess && blockersIn ? 'read' : 'reading';
  return (
    <div data-session-parked={state} className={props.className}>
      <p>
        {props.lead}{' '}
        {sessionId === '' ? (
          'its session'
        ) : (
          <>
            session <span className="font-mono">{sessionId}</span>
          </>
        )}{' '}
        {words.fate}.
      </p>
      {words.others ? (
        <p className="mt-2" data-testid="session-parked-others">
          {words.others}
        </p>
      ) : null}
      {state === 'failed' ? (
        <p className="mt-2 text-xs text-slate-500" data-testid="session-parked-unread">
          The session&apos;s other parked events could not be read.
        </p>
      ) : null}
      {named.length > 0 && b.isError ? (
        <p className="mt-2 text-xs text-slate-500" data-testid="session-blockers-unread">
          Whether the {named.length === 1 ? 'event they name is' : 'events they name are'} still unsettled could not be read.
        </p>
      ) : null}
      {state === 'unlistable' ? (
        <p className="mt-2 text-xs text-slate-500" data-testid="session-parked-unread">
          The session&apos;s other parked events are not counted (its id, spaces alone or over 128 characters, cannot be
          looked up).
        </p>
      ) : null}
    </div>
  );
}
