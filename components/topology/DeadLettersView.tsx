'use client';
// The dead-letter browser of one subscription: peek with paging, filter by reason, each dead letter's reason,
// description, enqueued time, delivery count, application properties and body (rendered as text: React escapes
// it). A filtered page is read from at most 1,000 dead letters, so it can end short (even empty) with more of the
// queue left: the page says so and scans on. Replay of the selected dead letters or of all matching the filter
// goes preview → confirm → progress → result; a failed confirm shows its error in the dialog, which stays open.
// Dead letters whose replay is futile (`replayWarning`) are left out unless the operator ticks the preview's opt-in,
// which previews again with `includeWarned` so the confirm button states what is sent, warned ones included; an
// uncertain one's "Resend anyway" on a warned one needs its own explicit choice, which sends `includeWarned`.
// Purge states the count and asks for the typed `topic/subscription`. A dead letter whose replay died during its
// send is shown as uncertain with the evidence from the replay journal; it is sent again (or removed as
// delivered) only on the operator's explicit decision, which the server audits.
import { deliveredNote, deliveriesOf } from './deliveredNote.ts';
import Link from '../Link.tsx';
import { useEffect, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import { ApiError } from '../api.ts';
import { countOf, ErrorBox, Timestamp } from '../format.tsx';
import { DeadLetterEventLink, IncludeWarnedOption, PermanentFailuresWarning, ReplayWarningNote, ResendWarnedOption, WarnedSummary } from './DeadLetterLeads.tsx';
import { replayConfirmLabel, withoutWarned } from './withoutWarned.ts';
import { opsApi, type DeadLetter, type ReplayOperation, type ReplayPreview, type ReplaySelection, type UncertainDecision, type UncertainEvidence } from './opsApi.ts';
import { TypedConfirmDialog } from './TypedConfirmDialog.tsx';
import { useCan } from '../audit/accessApi.ts';
import { Topic } from '@nimbus/sdk/contract/names';
import { DEAD_LETTER_PAGE_SIZE, deadLettersQuery, queryKeys, replayOperationQuery } from '../queries.ts';
import { deadLettersSearch } from '../urlState.ts';
import { useUrlState, useUrlText } from '../useUrlState.ts';

export function DeadLettersView({ topic, subscription }: { topic: string; subscription: string }) {
  const client = useQueryClient();
  // Topics are named after endpoints: the endpoint's roles decide (a platform topic falls back to site-wide).
  const can = useCan();
  // A platform topic's dead letters (Resolver, Manager) hold every endpoint's messages: replaying them is for Owners.
  const platform = topic === Topic.Resolver || topic === Topic.Manager;
  const mayReplay = can(platform ? 'replay.platform' : 'replay', topic);
  // Reason filter and paging position live in the URL (deadLettersSearch): a reload, a shared link, Back and
  // Forward all open the same page of the same filter. The reason box keeps its own text until Filter is pressed.
  const { search, update } = useUrlState(deadLettersSearch);
  const { reason, from, prev } = search;
  const [reasonInput, setReasonInput] = useUrlText(reason);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  // A selection belongs to the page it was made on: another page or filter starts with none.
  const [selectionPage, setSelectionPage] = useState(`${reason}\n${from}`);
  if (selectionPage !== `${reason}\n${from}`) {
    setSelectionPage(`${reason}\n${from}`);
    setSelected(new Set());
  }
  const [preview, setPreview] = useState<{ selection: ReplaySelection; result: ReplayPreview } | null>(null);
  const [operationId, setOperationId] = useState<string | null>(null);
  const [purging, setPurging] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [deciding, setDeciding] = useState<{ item: DeadLetter; kind: UncertainDecision } | null>(null);
  // "Resend anyway" on a warned dead letter: the operator's explicit choice to send it although it will likely be refused again.
  const [resendWarned, setResendWarned] = useState(false);
  const needsResendChoice = deciding?.kind === 'resend' && deciding.item.replayWarning !== null;
  // The opt-in to replay warned dead letters too is part of the previewed selection, so what is confirmed is what was previewed.
  const includeWarned = preview?.selection.includeWarned === true;

  const q = useQuery(deadLettersQuery(topic, subscription, reason, from, { paused: operationId !== null }));
  const refresh = () => void client.invalidateQueries({ queryKey: queryKeys.deadLetters(topic, subscription) });
  const nextPage = (next: string) => update({ from: next, prev: from ? [...prev, from] : prev });
  const previousPage = () => update({ from: prev[prev.length - 1] ?? '', prev: prev.slice(0, -1) });

  const previewMutation = useMutation({
    mutationFn: (selection: ReplaySelection) => opsApi.previewReplay(topic, subscription, selection).then((result) => ({ selection, result })),
    onSuccess: (p) => {
      start.reset();
      setPreview(p);
    },
  });
  const start = useMutation({
    mutationFn: (selection: ReplaySelection) => opsApi.replay(topic, subscription, selection),
    onSuccess: (r) => {
      setPreview(null);
      setSelected(new Set());
      setLostOperation(null);
      setOperationId(r.operationId);
    },
  });
  const op = useQuery(replayOperationQuery(operationId));
  // An operation without a record (it never started, or its record is gone): nothing to wait for. The page lets
  // go of it, so the list refreshes and the buttons work again, and says so.
  const [lostOperation, setLostOperation] = useState<Error | null>(null);
  if (operationId !== null && op.error instanceof ApiError && op.error.status === 404) {
    setOperationId(null);
    setLostOperation(new Error(`Replay ${operationId.slice(0, 8)} has no progress record: it did not start, or its record is gone. The list shows what is in the queue now; the audit log has the replay's outcome.`));
  }
  const finished = op.data !== undefined && op.data.state !== 'running';
  useEffect(() => {
    // The list is stale once the replay ends: read it again.
    if (finished) void client.invalidateQueries({ queryKey: queryKeys.deadLetters(topic, subscription) });
  }, [finished, client, topic, subscription]);
  const decide = useMutation({
    mutationFn: (d: { item: DeadLetter; kind: UncertainDecision; includeWarned: boolean }) =>
      opsApi.replay(topic, subscription, { sequenceNumbers: [d.item.sequenceNumber], uncertain: d.kind, ...(d.includeWarned ? { includeWarned: true } : {}) }),
    onSuccess: (r) => {
      setDeciding(null);
      setLostOperation(null);
      setOperationId(r.operationId);
    },
  });
  // A decision's dialog opens without an earlier one's error and with the resend choice off.
  const openDecision = (d: { item: DeadLetter; kind: UncertainDecision }) => {
    decide.reset();
    setResendWarned(false);
    setDeciding(d);
  };
  const purge = useMutation({
    mutationFn: (typed: string) => opsApi.action(topic, subscription, 'purge', typed),
    onSuccess: (r) => {
      setPurging(false);
      setNotice(`Purged ${String(r.purged)} dead letters.`);
      refresh();
    },
  });

  // How many the queue holds, under the heading and in the purge dialog: the broker's count for this subscription
  // with its time, in the page's own answer (not the whole topology): the page lists 50 at a time, and "Replay all"
  // or "Purge" should not be a guess.
  const purgeCounts = q.data?.total ?? null;
  const items = q.data?.items ?? [];
  const next = q.data?.next ?? null;
  const replaying = operationId !== null && !finished;
  // With a reason filter one read scans at most 1,000 dead letters: a page can end short (or empty) with more of the
  // queue still to scan. Only a first page that is empty and ends the queue proves nothing matches.
  const nothingMatches = q.data !== undefined && from === '' && items.length === 0 && next === null;
  const toggle = (seq: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(seq)) n.delete(seq);
      else n.add(seq);
      return n;
    });

  return (
    <section>
      <p className="mb-1 text-sm">
        <Link href="/topology/subscriptions" className="text-sky-700 hover:underline">
          Topology · Subscriptions
        </Link>
      </p>
      <h1 className="mb-3 text-xl font-semibold">
        Dead letters · {topic} / {subscription}
      </h1>
      {purgeCounts ? (
        <p className="-mt-2 mb-3 text-sm text-slate-600" data-testid="deadletter-total">
          {countOf(purgeCounts.deadLetter, 'dead letter')} in this queue (the broker&apos;s count at <Timestamp at={purgeCounts.at} />)
        </p>
      ) : null}
      <form
        className="mb-3 flex flex-wrap items-center gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          // A new filter starts at its first page.
          update({ reason: reasonInput.trim(), from: '', prev: [] });
        }}
      >
        <input
          aria-label="Filter by reason"
          value={reasonInput}
          onChange={(e) => setReasonInput(e.target.value)}
          placeholder="Dead-letter reason (exact), e.g. CosmosDbThrottled"
          className="w-80 rounded border border-slate-300 px-2 py-1 text-sm"
        />
        <button type="submit" className="rounded border border-slate-300 px-2 py-1 text-sm hover:bg-slate-50">
          Filter
        </button>
        <div className="ml-auto flex gap-2">
          {mayReplay && <button
            type="button"
            disabled={selected.size === 0 || previewMutation.isPending || replaying}
            onClick={() => previewMutation.mutate({ sequenceNumbers: [...selected] })}
            className="rounded bg-sky-600 px-3 py-1 text-sm font-medium text-white hover:bg-sky-700 disabled:opacity-50"
          >
            Replay selected ({selected.size})
          </button>}
          {mayReplay && <button
            type="button"
            disabled={nothingMatches || previewMutation.isPending || replaying}
            onClick={() => previewMutation.mutate({ all: true, ...(reason ? { reason } : {}) })}
            className="rounded border border-sky-600 px-3 py-1 text-sm text-sky-700 hover:bg-sky-50 disabled:opacity-50"
          >
            Replay all{reason ? ` with reason ${reason}` : ''}
          </button>}
          {can('subscription.purge', topic) && <button type="button" onClick={() => setPurging(true)} className="rounded border border-red-300 px-3 py-1 text-sm text-red-700 hover:bg-red-50">
            Purge…
          </button>}
        </div>
      </form>
      {/* The errors of a confirmed replay or decision show in its dialog, which stays open: the page behind it is inert. */}
      <ErrorBox error={q.error ?? previewMutation.error ?? lostOperation ?? op.error} />
      {notice && (
        <p role="status" className="mb-2 rounded border border-emerald-200 bg-emerald-50 px-3 py-2 text-sm text-emerald-800">
          {notice}
        </p>
      )}
      {op.data && <ReplayProgress op={op.data} onClose={() => setOperationId(null)} />}
      {q.isLoading ? (
        <p className="text-sm text-slate-500">Loading…</p>
      ) : items.length === 0 && next === null ? (
        <p className="rounded border border-slate-200 bg-white px-3 py-6 text-center text-sm text-slate-500">
          No {from === '' ? '' : 'more '}dead letters{reason ? ` with reason ${reason}` : ''}.
        </p>
      ) : (
        <ul className="space-y-2">
          {items.map((d) => (
            <li key={d.sequenceNumber} className="rounded border border-slate-200 bg-white p-3 text-sm" data-dead-letter={d.messageId ?? ''}>
              <div className="flex flex-wrap items-center gap-3">
                <input type="checkbox" aria-label={`Select dead letter ${d.sequenceNumber}`} checked={selected.has(d.sequenceNumber)} onChange={() => toggle(d.sequenceNumber)} />
                <span className="font-mono text-xs text-slate-500">#{d.sequenceNumber}</span>
                <span className="font-mono text-xs">{d.messageId}</span>
                <DeadLetterEventLink event={d.event} />
                <span className="rounded bg-rose-100 px-1.5 py-0.5 text-xs font-medium text-rose-900">{d.reason ?? 'no reason'}</span>
                <span className="text-xs text-slate-500">
                  <DeliveredCount d={d} />
                  <Timestamp at={d.enqueuedAt} />
                </span>
                {d.sessionId && <span className="text-xs text-slate-500">session {d.sessionId}</span>}
              </div>
              {d.description && <p className="mt-1 whitespace-pre-wrap text-slate-700">{d.description}</p>}
              <ReplayWarningNote d={d} />
              {d.replay?.verdict === 'alreadySent' && (
                <p className="mt-1 text-xs text-emerald-800" data-replay-verdict="alreadySent">
                  Copy already sent by replay <span className="font-mono">{d.replay.operationId.slice(0, 8)}</span>
                  {d.replay.sentAt && (
                    <>
                      {' '}
                      at <Timestamp at={d.replay.sentAt} />
                    </>
                  )}
                  ; the next replay only removes it from the queue.
                </p>
              )}
              {d.replay?.verdict === 'uncertain' && (
                <div className="mt-2 rounded border border-amber-300 bg-amber-50 p-2 text-xs text-amber-900" data-replay-verdict="uncertain">
                  <b>Uncertain: may already have been delivered.</b>
                  {d.replay.evidence ? <Evidence e={d.replay.evidence} /> : null}
                  <p className="mt-1">A replay never sends it again by itself. Check the receiving side for MessageId {d.messageId}, then decide:</p>
                  {mayReplay && <div className="mt-1 flex gap-2">
                    <button type="button" onClick={() => openDecision({ item: d, kind: 'markDelivered' })} className="rounded border border-amber-400 bg-white px-2 py-0.5 hover:bg-amber-100">
                      Remove as delivered…
                    </button>
                    <button type="button" onClick={() => openDecision({ item: d, kind: 'resend' })} className="rounded border border-amber-400 bg-white px-2 py-0.5 hover:bg-amber-100">
                      Resend anyway…
                    </button>
                  </div>}
                </div>
              )}
              <details className="mt-1">
                <summary className="cursor-pointer text-xs text-sky-700">Properties and body</summary>
                <pre className="mt-1 max-h-48 overflow-auto rounded bg-slate-50 p-2 text-xs">{JSON.stringify(d.applicationProperties, null, 2)}</pre>
                <pre className="mt-1 max-h-64 overflow-auto whitespace-pre-wrap break-all rounded bg-slate-50 p-2 text-xs" data-body>
                  {d.bodyEncoding === 'base64' ? `(binary, base64) ${d.body}` : d.body}
                </pre>
              </details>
            </li>
          ))}
        </ul>
      )}
      {q.data && next !== null && items.length < DEAD_LETTER_PAGE_SIZE && (
        <p className="mt-2 flex flex-wrap items-center gap-2 rounded border border-slate-200 bg-white px-3 py-2 text-sm text-slate-600" data-scan-more>
          Scanned {q.data.scanned} dead letters, found {items.length === 0 ? 'no' : 'no more'} matches{reason ? ` with reason ${reason}` : ''} yet: more of the
          queue is left to scan.
          <button type="button" onClick={() => nextPage(next)} className="rounded border border-slate-300 px-2 py-0.5 hover:bg-slate-50">
            Continue scanning
          </button>
        </p>
      )}
      <div className="mt-3 flex gap-2">
        <button type="button" disabled={from === ''} onClick={previousPage} className="rounded border border-slate-300 px-2 py-1 text-sm disabled:opacity-40">
          Previous
        </button>
        <button
          type="button"
          disabled={next === null}
          onClick={() => next !== null && nextPage(next)}
          className="rounded border border-slate-300 px-2 py-1 text-sm disabled:opacity-40"
        >
          Next
        </button>
      </div>
      {preview && (
        <ConfirmDialog
          title={`Replay ${preview.result.count}${preview.result.truncated ? '+' : ''} dead letter${preview.result.count === 1 ? '' : 's'}`}
          confirmLabel={replayConfirmLabel(preview.result, includeWarned)}
          busy={start.isPending || previewMutation.isPending}
          disabled={preview.result.toSend + preview.result.alreadySent === 0}
          onCancel={() => {
            start.reset();
            setPreview(null);
          }}
          onConfirm={() => start.mutate(withoutWarned(preview.selection, preview.result))}
        >
          <p>
            Each is received under a lock, sent again to topic <b>{topic}</b> with the same MessageId and without ThrottleRetryCount,
            DeadLetterReason and DeadLetterErrorDescription, then removed from the dead-letter queue. A failed send leaves it in place.
          </p>
          {preview.result.alsoReaches.length > 0 ? (
            <div className="mt-2 rounded border border-amber-200 bg-amber-50 p-2">
              The copies also reach other subscriptions of {topic}:
              <ul className="list-disc pl-5">
                {preview.result.alsoReaches.map((r) => (
                  <li key={r.subscription}>
                    <b>{r.subscription}</b>: {r.count} {r.certain ? '' : '(rules not fully evaluable: may match)'}
                  </li>
                ))}
              </ul>
            </div>
          ) : (
            <p className="mt-2">No other subscription of {topic} receives the copies.</p>
          )}
          <ReplayJournalSummary p={preview.result} />
          <PermanentFailuresWarning count={preview.result.permanentFailures} />
          <WarnedSummary p={preview.result} included={includeWarned} />
          <IncludeWarnedOption
            p={preview.result}
            // Ticked at once while its preview loads (the checkbox follows the click), then the previewed selection's.
            included={previewMutation.isPending ? previewMutation.variables.includeWarned === true : includeWarned}
            busy={previewMutation.isPending || start.isPending}
            onChange={(include) => {
              // A new preview with the opt-in: its counts and copies' reach are the ones the confirm sends.
              const { includeWarned: _omit, ...rest } = preview.selection;
              previewMutation.mutate(include ? { ...rest, includeWarned: true } : rest);
            }}
          />
          {preview.result.truncated && <p className="mt-2 text-amber-800">More dead letters match than one replay handles; run it again afterwards.</p>}
          {preview.result.toSend + preview.result.alreadySent === 0 && (
            <p className="mt-2 font-medium" data-nothing-to-send>
              {nothingToSend(preview.result)}
            </p>
          )}
          <ErrorBox error={start.error ?? previewMutation.error} />
        </ConfirmDialog>
      )}
      {deciding && (
        <ConfirmDialog
          title={deciding.kind === 'resend' ? 'Resend an uncertain dead letter' : 'Remove an uncertain dead letter as delivered'}
          confirmLabel={deciding.kind === 'resend' ? 'Resend anyway' : 'Remove without sending'}
          danger
          busy={decide.isPending}
          // A warned one is resent only on the explicit choice below, never by the confirm alone.
          disabled={needsResendChoice && !resendWarned}
          onCancel={() => {
            decide.reset();
            setDeciding(null);
          }}
          onConfirm={() => decide.mutate({ ...deciding, includeWarned: needsResendChoice && resendWarned })}
        >
          <p>
            Dead letter #{deciding.item.sequenceNumber} (MessageId <span className="font-mono">{deciding.item.messageId}</span>) was being sent when its replay stopped;
            whether the copy reached topic <b>{topic}</b> is unknown.
          </p>
          {deciding.item.replay?.evidence && <Evidence e={deciding.item.replay.evidence} />}
          <p className="mt-2">
            {deciding.kind === 'resend'
              ? 'A copy is sent again. If the first one did arrive, receivers get this MessageId twice.'
              : 'The dead letter is removed without sending. If the first copy did not arrive, the message is gone.'}{' '}
            Your decision is recorded in the audit log.
          </p>
          {deciding.kind === 'resend' && <ResendWarnedOption d={deciding.item} chosen={resendWarned} busy={decide.isPending} onChange={setResendWarned} />}
          <ErrorBox error={decide.error} />
        </ConfirmDialog>
      )}
      {purging && (
        <TypedConfirmDialog
          title={`Purge the dead-letter queue of ${topic}/${subscription}`}
          expected={`${topic}/${subscription}`}
          confirmLabel="Purge"
          busy={purge.isPending}
          onCancel={() => {
            purge.reset();
            setPurging(false);
          }}
          onConfirm={(typed) => purge.mutate(typed)}
        >
          <p data-purge-count>
            {purgeCounts ? (
              <>
                <b>
                  {purgeCounts.deadLetter} dead letter{purgeCounts.deadLetter === 1 ? '' : 's'}
                </b>{' '}
                as of <Timestamp at={purgeCounts.at} />.
              </>
            ) : q.isPending ? (
              'Counting the dead letters…'
            ) : (
              'How many dead letters there are is not known.'
            )}
          </p>
          <p className="mt-1">
            Every dead letter of this subscription is deleted, including any that arrive meanwhile
            {reason ? <>, not only those with reason {reason}: a purge ignores the filter</> : null}. This cannot be undone.
          </p>
          <ErrorBox error={purge.error} />
        </TypedConfirmDialog>
      )}
    </section>
  );
}

function ReplayProgress({ op, onClose }: { op: ReplayOperation; onClose: () => void }) {
  const running = op.state === 'running' && !op.interrupted;
  const tone = running ? 'border-sky-200 bg-sky-50 text-sky-900' : op.failed > 0 || op.interrupted ? 'border-amber-200 bg-amber-50 text-amber-900' : 'border-emerald-200 bg-emerald-50 text-emerald-900';
  return (
    <div role="status" className={`mb-3 flex flex-wrap items-center gap-3 rounded border px-3 py-2 text-sm ${tone}`} data-replay-state={op.state}>
      <b>{running ? 'Replaying…' : op.interrupted ? 'Replay interrupted' : op.state === 'done' ? 'Replay finished' : 'Replay failed'}</b>
      <span>{op.replayed} replayed</span>
      {op.failed > 0 && <span>{op.failed} failed (left in the queue)</span>}
      {op.alreadySent > 0 && <span>{op.alreadySent} already sent earlier (removed without sending)</span>}
      {op.uncertain > 0 && <span>{op.uncertain} uncertain (left in the queue: decide on each)</span>}
      {(op.skipped ?? 0) > 0 && <span data-replay-skipped>{op.skipped} skipped: replaying them unchanged is futile (left in the queue)</span>}
      {(op.arrivedAfterStart ?? 0) > 0 && <span data-replay-arrived>{op.arrivedAfterStart} arrived after the replay started, such as a copy that failed again (left in the queue)</span>}
      {op.decision && <span>{op.decided} decided: {op.decision === 'resend' ? 'resent' : 'removed as delivered'}</span>}
      {op.notCompleted > 0 && <span>{op.notCompleted} sent but not removed (lock lost; the next replay removes them)</span>}
      {op.error && <span className="text-xs">{op.error}</span>}
      {!running && (
        <button type="button" onClick={onClose} className="ml-auto text-xs underline">
          Dismiss
        </button>
      )}
    </div>
  );
}

function Evidence({ e }: { e: UncertainEvidence }) {
  const state = { interrupted: 'its process died', running: 'still running', done: 'finished', failed: 'failed', unknown: 'no record' }[e.operationState];
  return (
    <dl className="mt-1 grid grid-cols-[auto_1fr] gap-x-2 text-xs" data-evidence>
      <dt>Replay</dt>
      <dd>
        <span className="font-mono">{e.operationId}</span> by {e.auditor} ({state})
      </dd>
      <dt>Send started</dt>
      <dd>
        <Timestamp at={e.claimedAt} />
      </dd>
      {e.decision && (
        <>
          <dt>Earlier decision</dt>
          <dd>
            {e.decision.kind} by {e.decision.by} at <Timestamp at={e.decision.at} />
          </dd>
        </>
      )}
    </dl>
  );
}

/** Why a preview has nothing to send (its confirm button is disabled). */
function nothingToSend(p: ReplayPreview): string {
  if (p.count === 0) return 'Nothing to send: no dead letter matches.';
  if (p.warned === p.count) return `Nothing to send: replaying ${p.count === 1 ? 'it' : 'them'} unchanged is futile (above).`;
  if (p.uncertain === 1) return 'Nothing to send: the one dead letter is uncertain; decide on it from the list.';
  return `Nothing to send: all ${p.uncertain} are uncertain; decide on them one by one from the list.`;
}

/** What the replay journal already knows of the previewed dead letters. */
function ReplayJournalSummary({ p }: { p: ReplayPreview }) {
  if (p.alreadySent === 0 && p.uncertain === 0) return <p className="mt-2">{p.toSend} will be sent.</p>;
  return (
    <div className="mt-2 rounded border border-slate-200 p-2" data-preview-journal>
      <p>
        <b>{p.toSend}</b> will be sent. <b>{p.alreadySent}</b> already sent by an earlier replay (removed without sending again).{' '}
        <b>{p.uncertain}</b> uncertain: may already have been delivered; left in the queue.
      </p>
      {p.uncertainItems.length > 0 && (
        <ul className="mt-1 max-h-40 list-disc overflow-auto pl-5 text-xs">
          {p.uncertainItems.map((u) => (
            <li key={u.sequenceNumber}>
              #{u.sequenceNumber} <span className="font-mono">{u.messageId}</span> — send started <Timestamp at={u.claimedAt} /> by replay {u.operationId.slice(0, 8)} ({u.operationState})
            </li>
          ))}
        </ul>
      )}
      {p.uncertain > 0 && <p className="mt-1 text-xs">Decide on uncertain dead letters one by one from the list.</p>}
    </div>
  );
}

/** "delivered N× · " before the enqueued time; nothing when the broker gave no count (deliveredNote.ts). */
function DeliveredCount({ d }: { d: DeadLetter }) {
  const n = deliveriesOf(d);
  if (n === null) return null;
  return (
    <>
      <span title={deliveredNote(n)} data-testid="delivered-count">
        delivered {n}×
      </span>{' '}
      ·{' '}
    </>
  );
}
