// Where a dead letter leads an operator: to its event's page (history, payload, Resubmit with changes), and, in
// the replay preview, away from replaying unchanged what failed permanently. Kept apart from DeadLettersView so
// the list and the dialog only place them.
import Link from '../Link.tsx';
import { eventHref } from '../api.ts';
import type { DeadLetter } from './opsApi.ts';

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
