// Under the Resubmit / Skip dialogs' "its N parked events follow": the other events parked in the session, which the
// release replays too (the SDK replays every parked message of the session, components/sessionRelease.ts). Read once
// when the dialog opens (the session's parked rows through the Endpoint page's list route, until one beyond the 200
// counted is seen: components/sessionParkedRead.ts), never polled: the event page's own parked read lists only the
// events behind this one, by design (its query filters on the blocker). The read asks for the session id exactly,
// spaces and all; one the list route refuses (spaces alone, longer than 128 characters) is not read. The wrapper's
// data-session-parked says whether the read is in, so a test waits for it, not for time.
import { useQuery } from '@tanstack/react-query';
import { sessionParkedQuery } from './queries.ts';
import { sessionListable } from './sessionParkedRead.ts';
import { otherParkedInSession, otherParkedText } from './sessionRelease.ts';

export function SessionParkedOthers({ endpointId, sessionId, eventId }: { endpointId: string; sessionId: string; eventId: string }) {
  const listable = sessionListable(sessionId);
  const q = useQuery(sessionParkedQuery(endpointId, sessionId));
  const text = q.data ? otherParkedText(otherParkedInSession(q.data.rows, { sessionId, eventId }, q.data.more)) : null;
  const state = !listable ? 'unlistable' : q.isSuccess ? 'read' : q.isError ? 'failed' : 'reading';
  return (
    <div data-session-parked={state}>
      {text ? (
        <p className="mt-2" data-testid="session-parked-others">
          {text}
        </p>
      ) : null}
      {state === 'failed' ? (
        <p className="mt-2 text-xs text-slate-500" data-testid="session-parked-unread">
          The session&apos;s other parked events could not be read; any there are will also be replayed in order.
        </p>
      ) : null}
      {state === 'unlistable' ? (
        <p className="mt-2 text-xs text-slate-500" data-testid="session-parked-unread">
          The session&apos;s other parked events are not counted (its id, spaces alone or over 128 characters, cannot be
          looked up); any there are will also be replayed in order.
        </p>
      ) : null}
    </div>
  );
}
