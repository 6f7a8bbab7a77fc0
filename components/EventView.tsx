'use client';
// Event page: status, identifiers, payload (highlighted, foldable JSON in a CodeMirror view loaded on demand: text
// nodes, never injected HTML), error and dead-letter details, handoff with countdown, blocked-by link, parked siblings,
// the message history as a timeline with a payload diff of any two of its messages, the audit trail, and the operator
// actions (the edited resubmit in a checked JSON editor beside the stored payload). A command that fails keeps its
// dialog open with the error inside it, to try again or cancel, and a failure that says the event may have moved on
// (409 and the like, see commandFailure.ts) reads it again at once. An open dialog whose command the event (as read
// again) no longer offers keeps what the operator typed, disables its confirm button and says why (eventCommands.ts).
import Link from './Link.tsx';
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api, endpointHref, eventHref, type CommandResult, type EventDetails } from './api.ts';
import { endpointQuery, eventQuery, queryKeys } from './queries.ts';
import { commandFailureMayLeaveStaleEvent, isChangedSinceSeen } from './commandFailure.ts';
import { ConfirmDialog, EventChanged } from './ConfirmDialog.tsx';
import { awaitedCommand, commandUnavailableReason, eventChangedText, isActionable, isHandoff, type EventCommand, type SeenState } from './eventCommands.ts';
import { MessageId } from './MessageId.tsx';
import { parkedCountText, releasedText } from './sessionRelease.ts';
import { SessionFate } from './SessionFate.tsx';
import { ErrorBox, formatDuration, StatusBadge, Timestamp, useNow } from './format.tsx';
import { EditResubmitDialog } from './payload/EditResubmitDialog.tsx';
import { HistoryDiff } from './payload/HistoryDiff.tsx';
import { PayloadView, payloadText as formatPayload } from './payload/PayloadView.tsx';
import { useCan } from './audit/accessApi.ts';
import { auditLogHref } from './audit/actionNames.ts';

type Dialog = null | EventCommand;

function Field({ label, children, mono = true }: { label: string; children: ReactNode; mono?: boolean }) {
  return (
    <div className="min-w-0">
      <dt className="text-xs text-slate-500">{label}</dt>
      <dd className={`truncate ${mono ? 'font-mono text-xs' : 'text-sm'}`}>{children ?? <span className="text-slate-500">—</span>}</dd>
    </div>
  );
}

function Panel({ title, children, tone = 'border-slate-200' }: { title: string; children: ReactNode; tone?: string }) {
  return (
    <section className={`mb-3 rounded border bg-white p-3 ${tone}`}>
      <h2 className="mb-2 text-sm font-semibold text-slate-700">{title}</h2>
      {children}
    </section>
  );
}

/** A trace id, linked to the tracing UI when NIMBUS_TRACE_URL_TEMPLATE is set (the server builds the URL). */
function TraceId({ traceId, url, testId }: { traceId: string; url: string | null; testId?: string }) {
  return url ? (
    <a href={url} target="_blank" rel="noopener noreferrer" className="text-sky-700 hover:underline" data-testid={testId}>
      {traceId}
    </a>
  ) : (
    <span data-testid={testId}>{traceId}</span>
  );
}

const HISTORY_TONE: Record<string, string> = {
  ResolutionResponse: 'bg-emerald-500',
  ErrorResponse: 'bg-red-500',
  DeferralResponse: 'bg-violet-500',
  SkipResponse: 'bg-slate-400',
  UnsupportedResponse: 'bg-orange-500',
  PendingHandoffResponse: 'bg-amber-500',
};

function HandoffCountdown({ expectedBy }: { expectedBy: string | null }) {
  const now = useNow(1000);
  if (!expectedBy) return <span className="text-slate-500">no deadline given</span>;
  const left = Date.parse(expectedBy) - now;
  // Relative to the clock of whoever rendered it (the server, for prefetched details): the next tick corrects it.
  return (
    <span className={left >= 0 ? 'text-amber-800' : 'font-semibold text-red-700'} data-testid="handoff-countdown" suppressHydrationWarning>
      {left >= 0 ? `due in ${formatDuration(left)}` : `overdue by ${formatDuration(left)}`}
    </span>
  );
}

/** Endpoints / endpoint / event: the way back, also while the event loads or when it cannot be read. */
export function EventBreadcrumb({ endpointId, eventId }: { endpointId: string; eventId: string }) {
  return (
    <nav aria-label="Breadcrumb" className="mb-1 text-sm text-slate-500">
      <Link href="/" className="hover:underline">
        Endpoints
      </Link>{' '}
      /{' '}
      <Link href={endpointHref(endpointId)} className="hover:underline">
        {endpointId}
      </Link>{' '}
      / <span className="font-mono text-slate-700">{eventId}</span>
    </nav>
  );
}

export function EventView({ endpointId, eventId }: { endpointId: string; eventId: string }) {
  const qc = useQueryClient();
  // Buttons of actions the caller may not take are hidden; the server refuses them anyway.
  const can = useCan();
  const [dialog, setDialog] = useState<Dialog>(null);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [note, setNote] = useState('');
  const [reason, setReason] = useState('');
  const [followUntil, setFollowUntil] = useState(0);
  // A command that releases the session, with the count parked behind the event when it was sent: once the parked
  // set shrinks, the parked panel says how many were released, not only "Nothing parked" (kept for this view only;
  // a reload shows the panel as the store has it).
  const [releasing, setReleasing] = useState<{ parked: number; capped: boolean; command: string } | null>(null);

  // After an action, follow the event closely until the Resolver has recorded the outcome.
  const q = useQuery(eventQuery(endpointId, eventId, followUntil));
  const ep = useQuery(endpointQuery(endpointId)).data?.endpoint;

  const d: EventDetails | undefined = q.data;
  const e = d?.event;

  // A closing dialog gives focus back to the button that opened it. When the event moved on meanwhile (a refused
  // command, then the event read again), that button is gone and focus would be lost to the page's body: it goes
  // to the event's heading instead, where the page's new state starts.
  const heading = useRef<HTMLHeadingElement>(null);
  const openDialogWas = useRef<Dialog>(null);
  useEffect(() => {
    const closed = openDialogWas.current !== null && dialog === null;
    openDialogWas.current = dialog;
    if (closed && (document.activeElement === null || document.activeElement === document.body)) heading.current?.focus();
  }, [dialog]);

  // A dialog opens clean and closing it forgets its error. A command keeps running when its dialog is closed (Cancel
  // or Escape while it is being sent): its outcome then lands on the page, a notice or the error box below the
  // header, never inside the next dialog opened.
  // The event's last message as the page showed it when the dialog opened: Resubmit and Skip send it, and the server
  // refuses (409) a command on an event that has moved on since - another operator's resubmission failing again
  // under a new message must not be resubmitted a second time by a click made on the older view. Not the id read
  // at confirm time: the page refreshes behind an open dialog, and the operator decided on what the dialog opened on.
  // Complete / Fail handoff send it as the handoff they settle, for the same reason: read at confirm time, a dialog
  // opened on handoff H1 settled H2, a new handoff (another external job) that arrived behind it and the operator
  // never saw (e2e/console-handoff-stale-dialog.test.ts); the server answers 409 "changed" as for Resubmit and Skip.
  const [shownMessageId, setShownMessageId] = useState<string | undefined>(undefined);
  // After a refusal because the event had changed since (409 "changed"), the dialog stays open on the operator's
  // input and the event is read again; once that read is in, the dialog says what the event now is (`seenNow`) and
  // takes its message as the one seen, so a second, deliberate confirm acts on the new state. Before, every confirm
  // sent the id the dialog opened with and was refused again: the only way on was to close and reopen it, losing an
  // edited payload. Never before the refusal has been shown: switching silently would defeat the check.
  // `awaitingReadAfter`: the event's dataUpdatedAt when the refusal came in; any later one is a read begun after it
  // (the invalidation cancels a read under way, whose answer is then dropped).
  const [awaitingReadAfter, setAwaitingReadAfter] = useState<number | null>(null);
  const [seenNow, setSeenNow] = useState<SeenState | null>(null);
  // Which opening of a dialog a command belongs to: a refusal that lands after its dialog was closed (or another
  // opened) must not change what the next dialog sends.
  const opening = useRef(0);
  const forgetChange = () => {
    setAwaitingReadAfter(null);
    setSeenNow(null);
  };
  const openDialog = (next: Exclude<Dialog, null>) => {
    opening.current += 1;
    setActionError(null);
    setShownMessageId(e?.messageId);
    forgetChange();
    setDialog(next);
  };
  const closeDialog = () => {
    opening.current += 1;
    setDialog(null);
    setActionError(null);
    forgetChange();
  };
  useEffect(() => {
    if (awaitingReadAfter === null || !e || q.dataUpdatedAt <= awaitingReadAfter) return;
    setShownMessageId(e.messageId);
    setSeenNow({ status: e.status, subStatus: e.subStatus, messageType: e.messageType, messageId: e.messageId });
    setAwaitingReadAfter(null);
  }, [awaitingReadAfter, q.dataUpdatedAt, e]);

  const run = async (action: () => Promise<CommandResult>, label: string, releasesSession = false) => {
    setBusy(true);
    setActionError(null);
    forgetChange();
    const sentIn = opening.current;
    const parkedWhenSent = d?.parkedSiblings.length ?? 0;
    // The list is one page: past it, how many were parked (and so released) is only known as a lower bound.
    const parkedCapped = d?.parkedSiblingsCapped === true;
    try {
      const r = await action();
      if (releasesSession) setReleasing({ parked: parkedWhenSent, capped: parkedCapped, command: label.toLowerCase() });
      setNotice(r.outcome === 'duplicate' ? `${label} was already sent (${r.messageId}); nothing sent again.` : `${label} sent (${r.messageId}).`);
      setFollowUntil(Date.now() + 30_000);
      setDialog(null);
      void qc.invalidateQueries({ queryKey: queryKeys.events(endpointId) });
      void qc.invalidateQueries({ queryKey: queryKeys.endpoints });
      // The event is read again now (a read already under way, which may predate the command, is cancelled), and the
      // actions stay disabled (busy) until that read is in: until then the page shows the state before the command,
      // and its Resubmit / Skip buttons (and the r / s shortcuts, which press them) would send a second one.
      await qc.invalidateQueries({ queryKey: queryKeys.event(endpointId, eventId) });
    } catch (err) {
      // The dialog stays open with the error inside it (the page behind a modal dialog is inert and unread): the
      // operator reads why, then tries again or cancels, as in every other dialog of the console.
      setActionError(err);
      // The event moved on from the message the dialog opened on: what it now is comes with the read below.
      if (isChangedSinceSeen(err) && sentIn === opening.current)
        setAwaitingReadAfter(qc.getQueryState(queryKeys.event(endpointId, eventId))?.dataUpdatedAt ?? 0);
      // A 409 says the event moved on (another operator resubmitted or skipped it); a 5xx or a dropped request may
      // have changed it too: it is read again now, so the page (and its buttons) show its state when the dialog
      // closes, not the old one until the next timed refresh 10 s later. Not awaited: the retry stays at hand.
      if (commandFailureMayLeaveStaleEvent(err)) {
        void qc.invalidateQueries({ queryKey: queryKeys.event(endpointId, eventId) });
        void qc.invalidateQueries({ queryKey: queryKeys.events(endpointId) });
        void qc.invalidateQueries({ queryKey: queryKeys.endpoints });
      }
    } finally {
      setBusy(false);
    }
  };

  // An unknown event (a stale link, a typo) or a failed read still shows where it is and the way back.
  if (q.error || !d || !e)
    return (
      <section>
        <EventBreadcrumb endpointId={endpointId} eventId={eventId} />
        {q.error ? <ErrorBox error={q.error} /> : <p className="text-sm text-slate-500">Loading…</p>}
      </section>
    );

  const handoff = isHandoff(e);
  // Parked rows that name no blocker are listed (they may wait on this event); the panel says which they are.
  const unnamed = d.parkedSiblings.filter((s) => s.blockedBy === null).length;
  // What every dialog says of the session (components/SessionFate.tsx).
  const sessionOf = { endpointId, sessionId: e.sessionId, eventId, parked: { siblings: d.parkedSiblings, capped: d.parkedSiblingsCapped } };
  const released = releasing ? releasedText(releasing.parked, d.parkedSiblings.length, releasing.command, releasing.capped) : null;
  // A Pending row last written by an operator command: the console claimed it and the endpoint has not answered yet.
  const awaiting = awaitedCommand(e);
  // The open dialog's command, when the event as now read no longer offers it (someone else acted first). Not while
  // the command is under way: the page's own command may claim the event before its answer is in.
  const unavailable = dialog !== null && !busy ? commandUnavailableReason(dialog, e) : null;
  // After a "changed" refusal, what the event now is (when it still offers the command; otherwise `unavailable` says).
  const changed = dialog !== null && seenNow && !unavailable ? eventChangedText(dialog, seenNow) : null;
  const payloadText = e.payload === null || e.payload === undefined ? null : formatPayload(e.payload).text;
  const typeOptions = [...new Set([...(ep?.consumes ?? []), e.eventTypeId ?? ''])].filter(Boolean).sort();

  return (
    <section>
      <EventBreadcrumb endpointId={endpointId} eventId={eventId} />
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 ref={heading} tabIndex={-1} className="font-mono text-lg font-semibold focus:outline-none" data-testid="event-id">
          {e.eventId}
        </h1>
        <span data-testid="event-status">
          <StatusBadge status={e.status} subStatus={e.subStatus} />
        </span>
        <span className="text-sm text-slate-600">{e.eventTypeId}</span>
        <div className="ml-auto flex flex-wrap gap-2">
          {isActionable(e) ? (
            <>
              {can('resubmit', endpointId) && (
              <button type="button" onClick={() => openDialog('resubmit')} disabled={busy} className="rounded bg-sky-600 px-3 py-1 text-sm text-white hover:bg-sky-700 disabled:opacity-50">
                Resubmit
              </button>
              )}
              {can('resubmit', endpointId) && (
              <button
                type="button"
                onClick={() => openDialog('edit')}
                disabled={busy}
                className="rounded border border-sky-600 px-3 py-1 text-sm text-sky-700 hover:bg-sky-50 disabled:opacity-50"
              >
                Resubmit with changes
              </button>
              )}
              {can('skip', endpointId) && (
              <button type="button" onClick={() => openDialog('skip')} disabled={busy} className="rounded border border-red-300 px-3 py-1 text-sm text-red-700 hover:bg-red-50 disabled:opacity-50">
                Skip
              </button>
              )}
            </>
          ) : null}
          {handoff && can('handoff', endpointId) ? (
            <>
              <button type="button" onClick={() => openDialog('complete')} disabled={busy} className="rounded bg-emerald-600 px-3 py-1 text-sm text-white hover:bg-emerald-700 disabled:opacity-50">
                Complete handoff
              </button>
              <button type="button" onClick={() => openDialog('fail')} disabled={busy} className="rounded border border-red-300 px-3 py-1 text-sm text-red-700 hover:bg-red-50 disabled:opacity-50">
                Fail handoff
              </button>
            </>
          ) : null}
        </div>
      </div>
      {awaiting ? (
        <div data-testid="awaiting" className="mb-3 rounded border border-sky-200 bg-sky-50 px-3 py-2 text-sm text-sky-900">
          {awaiting} sent by an operator; waiting for {endpointId} to process it and the Resolver to record the outcome.
        </div>
      ) : null}
      {dialog === null ? <ErrorBox error={actionError} /> : null}
      {notice ? (
        <div role="status" className="mb-3 rounded border border-emerald-200 bg-emerald-50 px-3 py-2 text-sm text-emerald-800">
          {notice}
        </div>
      ) : null}

      <div className="grid gap-3 lg:grid-cols-3">
        <div className="min-w-0 lg:col-span-2">
          {e.errorText || e.errorType || e.deadLetterReason ? (
            <Panel title={e.status === 'DeadLettered' ? 'Dead letter' : 'Error'} tone="border-red-200">
              {e.errorType ? <div className="mb-1 font-mono text-xs text-red-900">{e.errorType}</div> : null}
              {e.errorText ? <pre className="whitespace-pre-wrap break-words text-sm text-red-800">{e.errorText}</pre> : null}
              {e.deadLetterReason ? (
                <div className="mt-2 text-sm">
                  <span className="text-slate-500">Dead-letter reason: </span>
                  <span className="font-medium">{e.deadLetterReason}</span>
                  {/* The SDK's description of a permanent failure is the error text again: shown once, above. */}
                  {e.deadLetterErrorDescription && e.deadLetterErrorDescription.trim() !== (e.errorText ?? '').trim() ? (
                    <div className="text-slate-700">{e.deadLetterErrorDescription}</div>
                  ) : null}
                </div>
              ) : null}
            </Panel>
          ) : null}

          {e.handoff ? (
            <Panel title="Handoff to an external system" tone="border-amber-200">
              <dl className="grid grid-cols-3 gap-2">
                <Field label="Reason" mono={false}>
                  {e.handoff.reason}
                </Field>
                <Field label="External job">{e.handoff.externalJobId}</Field>
                <Field label="Expected by">
                  <Timestamp at={e.handoff.expectedBy} />
                </Field>
              </dl>
              {handoff ? (
                <div className="mt-2 text-sm">
                  <HandoffCountdown expectedBy={e.handoff.expectedBy} />
                </div>
              ) : null}
            </Panel>
          ) : null}

          {e.blockedBy ? (
            <Panel title="Blocked" tone="border-violet-200">
              <p className="text-sm">
                Parked behind{' '}
                <Link href={eventHref(endpointId, e.blockedBy)} className="font-mono text-sky-700 hover:underline" data-testid="blocked-by">
                  {e.blockedBy}
                </Link>
                , which blocks session <span className="font-mono">{e.sessionId}</span>.
              </p>
            </Panel>
          ) : null}

          <Panel title="Payload">
            {payloadText === null ? (
              <p className="text-sm text-slate-500">No payload stored.</p>
            ) : (
              <PayloadView payload={e.payload} />
            )}
          </Panel>

          <Panel title={`Message history (${d.history.length})`}>
            <ol className="relative ml-2 border-l border-slate-200" data-testid="history">
              {d.history.map((h) => (
                <li key={h.messageId} className="mb-2 ml-4">
                  <span className={`absolute -left-1.5 mt-1 h-3 w-3 rounded-full border border-white ${HISTORY_TONE[h.messageType] ?? 'bg-sky-500'}`} />
                  <div className="flex flex-wrap items-baseline gap-2 text-sm">
                    <span className="font-medium">{h.messageType}</span>
                    <span className="text-xs text-slate-500">
                      {h.from ?? '?'} → {h.to ?? '?'}
                    </span>
                    <Timestamp at={h.enqueuedAt} />
                    {h.retryCount ? <span className="text-xs text-slate-500">retry {h.retryCount}</span> : null}
                  </div>
                  <div className="font-mono text-[11px] text-slate-500">
                    {h.messageId}
                    {h.traceId ? (
                      <>
                        {' · trace '}
                        <TraceId traceId={h.traceId} url={h.traceUrl} />
                      </>
                    ) : null}
                  </div>
                  {h.errorText ? <div className="text-xs text-red-700">{h.errorText}</div> : null}
                  {h.deadLetterReason ? <div className="text-xs text-rose-800">dead-lettered: {h.deadLetterReason}</div> : null}
                </li>
              ))}
              {d.history.length === 0 ? <li className="ml-4 text-sm text-slate-500">No messages recorded.</li> : null}
            </ol>
            <HistoryDiff history={d.history} />
          </Panel>
        </div>

        {/* min-w-0 as on the left: a grid item is otherwise as wide as its widest unbreakable line (a parked
            sibling's full event id), which at 390 px made the whole page scroll sideways. */}
        <div className="min-w-0">
          <Panel title="Identifiers">
            <dl className="grid grid-cols-1 gap-1.5">
              <Field label="Endpoint">{e.endpointId}</Field>
              <Field label="Session">
                {e.sessionId ? (
                  <Link href={endpointHref(endpointId, new URLSearchParams({ sessionId: e.sessionId }).toString())} className="text-sky-700 hover:underline">
                    {e.sessionId}
                  </Link>
                ) : null}
              </Field>
              <Field label="Last message">{e.messageId ? <MessageId id={e.messageId} /> : null}</Field>
              <Field label="Last message type">{e.messageType}</Field>
              <Field label="Parent message">{e.parentMessageId ? <MessageId id={e.parentMessageId} /> : null}</Field>
              <Field label="Originating message">{e.originatingMessageId ? <MessageId id={e.originatingMessageId} /> : null}</Field>
              <Field label="Correlation">{e.correlationId}</Field>
              <Field label="Trace">{d.trace ? <TraceId traceId={d.trace.traceId} url={d.trace.url} testId="event-trace" /> : null}</Field>
              <Field label="From → To">
                {e.from ?? '?'} → {e.to ?? '?'}
              </Field>
              <Field label="Retries">{e.retryCount != null ? `${e.retryCount}${e.retryLimit != null ? ` of ${e.retryLimit}` : ''}` : null}</Field>
              <Field label="Created">
                <Timestamp at={e.createdAt} />
              </Field>
              <Field label="Updated">
                <Timestamp at={e.updatedAt} />
              </Field>
            </dl>
          </Panel>

          <Panel title={`Parked behind this event (${parkedCountText(d.parkedSiblings.length, d.parkedSiblingsCapped)})`}>
            {released ? (
              <p role="status" className="mb-1 text-sm text-emerald-800" data-testid="parked-released">
                {released}
              </p>
            ) : null}
            {d.parkedSiblings.length === 0 ? (
              <p className="text-sm text-slate-500">Nothing parked behind this event{released ? ' now' : ''}.</p>
            ) : (
              <>
                {unnamed > 0 ? (
                  <p className="mb-1 text-xs text-slate-500" data-testid="parked-unnamed">
                    Naming no blocker: {unnamed} (parked behind a replay, say), listed because nothing says they wait on another event.
                  </p>
                ) : null}
                <ul className="text-sm" data-testid="parked-siblings">
                  {d.parkedSiblings.map((s) => (
                    <li key={s.eventId} className="flex items-center gap-2 py-0.5">
                      <StatusBadge status={s.status} subStatus={s.subStatus} />
                      <Link href={eventHref(endpointId, s.eventId)} className="truncate font-mono text-xs text-sky-700 hover:underline">
                        {s.eventId}
                      </Link>
                      <span className="text-xs text-slate-500">{s.eventTypeId}</span>
                      {s.blockedBy === null ? <span className="text-xs text-amber-700">names no blocker</span> : null}
                    </li>
                  ))}
                </ul>
              </>
            )}
          </Panel>

          {d.otherRows.length > 0 ? (
            <Panel title="Same event id in other sessions">
              <ul className="text-sm">
                {d.otherRows.map((r) => (
                  <li key={r.sessionId} className="flex gap-2">
                    <StatusBadge status={r.status} subStatus={r.subStatus} /> <span className="font-mono text-xs">{r.sessionId}</span>
                  </li>
                ))}
              </ul>
            </Panel>
          ) : null}

          <Panel title={`Audit trail (${d.audits.length})`}>
            {d.audits.length === 0 ? (
              <p className="text-sm text-slate-500">No operator actions yet.</p>
            ) : (
              <ul className="space-y-1.5 text-sm" data-testid="audits">
                {d.audits.map((a) => (
                  <li key={a.id}>
                    <div className="flex flex-wrap gap-2">
                      <span className="font-medium">{a.type}</span>
                      {/* The id (Entra oid, service or key id) on hover: two people may share a display name. */}
                      <span className="text-slate-500" title={a.auditorId}>by {a.auditor}</span>
                      <Timestamp at={a.at} />
                      {/* The Audit page names this act differently (resubmit, handoff…): the link filters it there. */}
                      <Link href={auditLogHref(eventId, a.type)} className="text-xs text-sky-700 hover:underline">
                        in Audit
                      </Link>
                    </div>
                    {a.comment ? <div className="text-xs text-slate-700">{a.comment}</div> : null}
                  </li>
                ))}
              </ul>
            )}
          </Panel>
        </div>
      </div>

      {dialog === 'resubmit' ? (
        <ConfirmDialog title="Resubmit this event?" confirmLabel="Resubmit" busy={busy} unavailable={unavailable} onCancel={closeDialog} onConfirm={() => run(() => api.resubmit(endpointId, eventId, shownMessageId), 'Resubmit', true)}>
          <SessionFate
            {...sessionOf}
            outcome="release"
            lead={
              <>
                Sends event <span className="font-mono">{eventId}</span> to <strong>{endpointId}</strong> again with its stored payload. If it succeeds,
              </>
            }
          />
          <ErrorBox error={actionError} />
          {changed ? <EventChanged text={changed} /> : null}
        </ConfirmDialog>
      ) : null}
      {dialog === 'skip' ? (
        <ConfirmDialog title="Skip this event?" confirmLabel="Skip" danger busy={busy} unavailable={unavailable} onCancel={closeDialog} onConfirm={() => run(() => api.skip(endpointId, eventId, shownMessageId), 'Skip', true)}>
          <SessionFate
            {...sessionOf}
            outcome="release"
            lead={
              <>
                Event <span className="font-mono">{eventId}</span> will never be processed by <strong>{endpointId}</strong>;
              </>
            }
          />
          <ErrorBox error={actionError} />
          {changed ? <EventChanged text={changed} /> : null}
        </ConfirmDialog>
      ) : null}
      {dialog === 'complete' ? (
        <ConfirmDialog title="Complete the handoff?" confirmLabel="Complete handoff" busy={busy} unavailable={unavailable} onCancel={closeDialog} onConfirm={() => run(() => api.completeHandoff(endpointId, eventId, shownMessageId ?? e.messageId, note.trim() || undefined), 'Handoff completion', true)}>
          <SessionFate {...sessionOf} outcome="release" lead="The external work is done: the event becomes Completed;" className="mb-2" />
          <label className="flex flex-col gap-1 text-xs text-slate-600">
            Note (optional)
            <input data-autofocus aria-label="Handoff note" value={note} onChange={(x) => setNote(x.target.value)} className="rounded border border-slate-300 px-2 py-1 text-sm" />
          </label>
          <ErrorBox error={actionError} />
          {changed ? <EventChanged text={changed} /> : null}
        </ConfirmDialog>
      ) : null}
      {dialog === 'fail' ? (
        <ConfirmDialog
          title="Fail the handoff?"
          confirmLabel="Fail handoff"
          danger
          busy={busy}
          // No reason yet: nothing to confirm. Not `busy`, which would label the button "Working…" as if sent.
          disabled={reason.trim() === ''}
          unavailable={unavailable}
          onCancel={closeDialog}
          onConfirm={() => run(() => api.failHandoff(endpointId, eventId, shownMessageId ?? e.messageId, reason.trim()), 'Handoff failure')}
        >
          <SessionFate {...sessionOf} outcome="hold" lead="The event becomes Failed with this reason;" className="mb-2" />
          <label className="flex flex-col gap-1 text-xs text-slate-600">
            Reason (required)
            <input data-autofocus aria-label="Failure reason" value={reason} onChange={(x) => setReason(x.target.value)} className="rounded border border-slate-300 px-2 py-1 text-sm" />
          </label>
          <ErrorBox error={actionError} />
          {changed ? <EventChanged text={changed} /> : null}
        </ConfirmDialog>
      ) : null}
      {dialog === 'edit' ? (
        <EditResubmitDialog
          originalText={payloadText}
          initialEventTypeId={e.eventTypeId ?? typeOptions[0] ?? ''}
          typeOptions={typeOptions}
          busy={busy}
          error={actionError}
          changed={changed}
          unavailable={unavailable}
          onCancel={closeDialog}
          onSubmit={(payload, eventTypeId) => void run(() => api.resubmit(endpointId, eventId, shownMessageId, { payload, eventTypeId }), 'Edited resubmission', true)}
        />
      ) : null}
    </section>
  );
}

/**
 * An event its endpoint does not know (a stale link, a typo): the page answers 404 (app/endpoints/[endpointId]/
 * events/[eventId]/not-found.tsx), and still shows where it is and the way back to the endpoint.
 */
export function EventNotFound({ endpointId, eventId }: { endpointId: string; eventId: string }) {
  return (
    <section>
      <EventBreadcrumb endpointId={endpointId} eventId={eventId} />
      <div role="alert" className="rounded border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800">
        Event {eventId} is not known on endpoint {endpointId}.
      </div>
    </section>
  );
}
