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

/** " (open event E)." after a warning about a dead letter whose event is known; nothing otherwise. */
function OpenEventSuffix({ d }: { d: Pick<DeadLetter, 'event'> }) {
  if (!d.event) return null;
  return (
    <>
      {' '}
      (
      <Link href={eventHref(d.event.endpointId, d.event.eventId)} className="text-sky-700 hover:underline">
        open event {d.event.eventId}
      </Link>
      ).
    </>
  );
}

/** A dead letter whose replay is futile or harmful (a refused Manager command…): why, and where to act instead. */
export function ReplayWarningNote({ d }: { d: Pick<DeadLetter, 'replayWarning' | 'event'> }) {
  if (!d.replayWarning) return null;
  return (
    <p className="mt-1 rounded border border-amber-300 bg-amber-50 p-2 text-xs text-amber-900" data-replay-warning={d.replayWarning.code}>
      Not replayed: {d.replayWarning.text}
      <OpenEventSuffix d={d} />
    </p>
  );
}

/**
 * The preview's list of selected dead letters whose replay is futile (a refused Manager command…), each with why and a
 * link to its event: left in the queue, or - when the operator opted in (`includeWarned`) - replayed anyway.
 */
export function WarnedSummary({ p, included }: { p: ReplayPreview; included: boolean }) {
  if (p.warned === 0) return null;
  return (
    <div className="mt-2 rounded border border-amber-300 bg-amber-50 p-2 text-amber-900" data-preview-warned={included ? 'included' : 'left'}>
      <p>
        {included ? (
          <>
            <b>
              {p.warned} of the selected messages {p.warned === 1 ? 'is' : 'are'} replayed although {p.warned === 1 ? 'it' : 'they'} will likely be refused again:
            </b>
          </>
        ) : (
          <>
            {p.warned} of the selected messages {p.warned === 1 ? 'is' : 'are'} left in the queue, not replayed:
          </>
        )}
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
      {p.warned > p.warnedItems.length && <p className="mt-1 text-xs">… and {p.warned - p.warnedItems.length} more.</p>}
    </div>
  );
}

/**
 * The operator's opt-in to replay the warned ones too (the request's `includeWarned`): off by default, shown only when
 * the preview has any that it would send (`warnedToSend`: an uncertain one stays in the queue either way). Changing it
 * asks for a new preview, so the counts and the confirm button are the server's.
 */
export function IncludeWarnedOption({ p, included, busy, onChange }: { p: ReplayPreview; included: boolean; busy: boolean; onChange: (include: boolean) => void }) {
  if (p.warnedToSend === 0) return null;
  return (
    <label className="mt-2 flex items-start gap-2 text-amber-900" data-include-warned>
      <input type="checkbox" className="mt-1" checked={included} disabled={busy} onChange={(e) => onChange(e.target.checked)} />
      <span>
        Also replay {p.warnedToSend} dead letter{p.warnedToSend === 1 ? '' : 's'} that will likely be refused again
      </span>
    </label>
  );
}

/**
 * "Resend anyway" on an uncertain dead letter that is also warned (`replayWarning`): why the copy will likely be
 * refused again, and the explicit choice to send it regardless (the request's `includeWarned`), off by default. Before,
 * the dialog said nothing of it and its request, without `includeWarned`, was refused 409 `replay-warned`.
 */
export function ResendWarnedOption({ d, chosen, busy, onChange }: { d: Pick<DeadLetter, 'replayWarning' | 'event'>; chosen: boolean; busy: boolean; onChange: (chosen: boolean) => void }) {
  if (!d.replayWarning) return null;
  return (
    <div className="mt-2 rounded border border-amber-300 bg-amber-50 p-2 text-amber-900" data-resend-warned={d.replayWarning.code}>
      <p>
        <b>It will likely be refused again:</b> {d.replayWarning.text}
        <OpenEventSuffix d={d} />
      </p>
      <label className="mt-1 flex items-start gap-2">
        <input type="checkbox" className="mt-1" checked={chosen} disabled={busy} onChange={(e) => onChange(e.target.checked)} />
        <span>Resend it although it will likely be refused again</span>
      </label>
    </div>
  );
}
