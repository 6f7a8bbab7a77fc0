// Where a dead letter leads an operator: to its event's page (history, payload, Resubmit with changes), and, in
// the replay preview, away from replaying unchanged what failed permanently. Kept apart from DeadLettersView so
// the list and the dialog only place them.
import Link from '../Link.tsx';
import { eventHref } from '../api.ts';
import type { DeadLetter, ReplayPreview } from './opsApi.ts';

/** The event id (a link to its page) and type of a dead letter; nothing for a message without an EventId. */
export function DeadLetterEventLink({ event }: { event: DeadLetter['event'] }) {
  if (!event) return null;
  return (
    <span className="text-xs" data-dead-letter-event={event.eventId}>
      event{' '}
      <Link href={eventHref(event.endpointId, event.eventId)} className="font-mono text-sky-700 hover:underline" title={`Open the event on ${event.endpointId}: history, payload, resubmit with changes`}>
        {event.eventId}
      </Link>
      {event.eventTypeId && <span className="text-slate-500"> · {event.eventTypeId}</span>}
    </span>
  );
}

/** The preview's warning that some selected dead letters will fail again when replayed unchanged. */
export function PermanentFailuresWarning({ count }: { count: number }) {
  if (count === 0) return null;
  return (
    <p className="mt-2 rounded border border-amber-300 bg-amber-50 p-2 text-amber-900" data-permanent-failures>
      {count} of the selected messages {count === 1 ? 'was' : 'were'} dead-lettered as {count === 1 ? 'a permanent failure' : 'permanent failures'}; replaying{' '}
      {count === 1 ? 'it' : 'them'} unchanged will fail again — open the event to resubmit with changes.
    </p>
  );
}

/** A dead letter whose replay is futile or harmful (a refused Manager command…): why, and where to act instead. */
export function ReplayWarningNote({ d }: { d: Pick<DeadLetter, 'replayWarning' | 'event'> }) {
  if (!d.replayWarning) return null;
  return (
    <p className="mt-1 rounded border border-amber-300 bg-amber-50 p-2 text-xs text-amber-900" data-replay-warning={d.replayWarning.code}>
      Not replayed: {d.replayWarning.text}
      {d.event && (
        <>
          {' '}
          (
          <Link href={eventHref(d.event.endpointId, d.event.eventId)} className="text-sky-700 hover:underline">
            open event {d.event.eventId}
          </Link>
          ).
        </>
      )}
    </p>
  );
}

/** The preview's list of selected dead letters a replay leaves in the queue because replaying them is futile. */
export function WarnedSummary({ p }: { p: ReplayPreview }) {
  if (p.warned === 0) return null;
  return (
    <div className="mt-2 rounded border border-amber-300 bg-amber-50 p-2 text-amber-900" data-preview-warned>
      <p>
        {p.warned} of the selected messages {p.warned === 1 ? 'is' : 'are'} left in the queue, not replayed:
      </p>
      <ul className="mt-1 max-h-40 list-disc overflow-auto pl-5 text-xs">
        {p.warnedItems.map((w) => (
          <li key={w.sequenceNumber}>
            #{w.sequenceNumber} {w.warning.text}
            {w.event && (
              <>
                {' '}
                —{' '}
                <Link href={eventHref(w.event.endpointId, w.event.eventId)} className="text-sky-700 hover:underline">
                  open event {w.event.eventId}
                </Link>
              </>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
