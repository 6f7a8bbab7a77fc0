'use client';
// The jobs drawer, in the header of every page: recent bulk operations and dead-letter replays with a live progress
// bar, rate and ETA, and pause / resume / cancel for jobs that are still going. Each job is named by what it acts on
// (the failure group's title), with its start and end times (the viewer's zone choice), the id the audit log names
// (`operation/{id}`) and a link to its events as they are now: "sent" counts commands, not events fixed. Polls
// while open (and every 10 s while closed, to show how many jobs are running or paused on its button). The drawer
// opens below the header, so the Jobs button stays visible and closes it again.
import { useEffect, useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from '../Link.tsx';
import { Timestamp } from '../format.tsx';
import { jobsApi, type OperationSummary } from './jobsApi.ts';
import { buttonLabel, countParts, EMPTY_TEXT, GOING, outcomeParts, stateLabel, stoppedText } from './jobText.ts';
import { invalidateAfterJob, operationOutcomeQuery, operationsQuery, queryKeys } from '../queries.ts';
import { outcomeSettled } from './outcomePolling.ts';

function eta(s: number | null): string {
  if (s === null) return '';
  if (s < 60) return `${s} s left`;
  return `${Math.ceil(s / 60)} min left`;
}

/** How many of the drawer's jobs read their follow-up on their own (newest first); older ones on request. */
const OUTCOME_AUTO = 5;

/**
 * The follow-up of a resubmit or skip job: what its events are now ("now: 3 completed · 2 failed again"), read from
 * their status rows while the drawer shows it, so "did it work?" is answered here and not by counting a list.
 */
function JobOutcomeLine({ op, auto }: { op: OperationSummary; auto: boolean }) {
  const [asked, setAsked] = useState(false);
  const options = operationOutcomeQuery(op.operationId, op);
  const q = useQuery({ ...options, enabled: auto || asked });
  if (!auto && !asked) {
    return (
      <button type="button" className="mt-1 text-xs text-sky-700 underline" onClick={() => setAsked(true)}>
        Check what became of its events
      </button>
    );
  }
  if (q.error) return <p className="mt-1 text-xs text-red-700">{q.error.message}</p>;
  const parts = q.data ? outcomeParts(op, q.data) : null;
  // Settled (outcomePolling.ts: read once a minute, or not at all): the line says when it was read and can be read
  // again on request.
  const settled = q.data !== undefined && !q.isPlaceholderData && outcomeSettled(op, q.data);
  return (
    <div className="mt-1 flex flex-wrap gap-x-3 text-xs text-slate-600" data-testid="job-outcome" aria-live="polite">
      <span className="font-medium">now:</span>
      {parts === null ? (
        <span>{q.isPending ? 'checking…' : 'nothing to check'}</span>
      ) : (
        parts.map((p) => (
          <span key={p.text} className={p.failed ? 'font-medium text-red-700' : p.why ? 'underline decoration-dotted' : undefined} title={p.why} data-why={p.why}>
            {p.text}
            {p.why && <span className="sr-only"> ({p.why})</span>}
          </span>
        ))
      )}
      {settled && (
        <span data-testid="job-outcome-settled">
          as of <Timestamp at={q.data.at} />{' '}
          <button type="button" className="text-sky-700 underline" disabled={q.isFetching} onClick={() => void q.refetch()}>
            Refresh
          </button>
        </span>
      )}
    </div>
  );
}

function JobRow({ op, outcomeAuto, focused }: { op: OperationSummary; outcomeAuto: boolean; focused: boolean }) {
  const qc = useQueryClient();
  const item = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (focused) item.current?.scrollIntoView({ block: 'nearest' });
  }, [focused]);
  const control = useMutation({
    mutationFn: (action: 'pause' | 'resume' | 'cancel') => jobsApi.control(op.operationId, action),
    onSettled: () => qc.invalidateQueries({ queryKey: queryKeys.operations }),
  });
  const processed = op.done + op.refused + op.failed;
  const pct = op.total > 0 ? Math.round((processed / op.total) * 100) : 100;
  const active = GOING.has(op.state) && op.kind !== 'replay';
  const [counts, ...more] = countParts(op);
  const stopped = stoppedText(op);
  return (
    <li
      ref={item}
      className={`border-b border-slate-200 py-2 ${focused ? 'rounded bg-amber-50 ring-2 ring-amber-400' : ''}`}
      data-operation={op.operationId}
      data-state={op.state}
      data-focused={focused ? 'true' : undefined}
    >
      <div className="flex items-baseline justify-between gap-2 text-sm">
        <span className="break-words font-medium" data-testid="job-title">
          {op.title}
        </span>
        <span className="shrink-0 text-xs text-slate-500" data-testid="job-state">
          {stateLabel(op)}
        </span>
      </div>
      {/* Text, escaped by React as every string the console renders: the reason names the starter's display name. */}
      {stopped && (
        <p className="mt-1 break-words text-xs text-amber-800" data-testid="job-stopped">
          {stopped}
        </p>
      )}
      <div className="mt-1 h-2 w-full rounded bg-slate-200" role="progressbar" aria-valuemin={0} aria-valuemax={op.total} aria-valuenow={processed}>
        <div className={`h-2 rounded ${op.failed > 0 ? 'bg-amber-500' : 'bg-sky-600'}`} style={{ width: `${pct}%` }} />
      </div>
      <div className="mt-1 flex flex-wrap gap-x-3 text-xs text-slate-600" data-testid="job-counts">
        <span>{counts}</span>
        {more.map((m) => (
          <span key={m} className={m.endsWith('failed to send') ? 'text-red-700' : undefined}>
            {m}
          </span>
        ))}
        {op.state === 'running' && op.perSecond > 0 && <span>{op.perSecond}/s</span>}
        {op.state === 'running' && <span>{eta(op.etaSeconds)}</span>}
        <span>by {op.startedBy}</span>
      </div>
      <div className="mt-1 flex flex-wrap items-baseline gap-x-3 text-xs text-slate-600" data-testid="job-times">
        <span>
          started <Timestamp at={op.startedAt ?? op.createdAt} />
        </span>
        {op.finishedAt && (
          <span>
            ended <Timestamp at={op.finishedAt} />
          </span>
        )}
        {op.kind !== 'replay' && (
          <span className="font-mono" title="The audit log names the job so (Audit page, Event / target)" data-testid="job-id">
            operation/{op.operationId}
          </span>
        )}
        {op.eventsLink && (
          <Link href={op.eventsLink} className="text-sky-700 underline" data-testid="job-events">
            events now
          </Link>
        )}
      </div>
      {op.kind !== 'replay' && processed > 0 && <JobOutcomeLine op={op} auto={outcomeAuto} />}
      {active && (
        <div className="mt-1 flex gap-2 text-xs">
          {op.state !== 'paused' ? (
            <button type="button" className="rounded border px-2 py-0.5" onClick={() => control.mutate('pause')}>
              Pause
            </button>
          ) : (
            <button type="button" className="rounded border px-2 py-0.5" onClick={() => control.mutate('resume')}>
              Resume
            </button>
          )}
          <button type="button" className="rounded border border-red-300 px-2 py-0.5 text-red-700" onClick={() => control.mutate('cancel')}>
            Cancel
          </button>
          {control.error && <span className="text-red-700">{control.error.message}</span>}
        </div>
      )}
    </li>
  );
}

/** How far a job has got: its state and how many events it has processed. */
const progressOf = (op: OperationSummary) => `${op.state}:${op.done + op.refused + op.failed}`;

/**
 * When a job this page sees processes events or ends, what it changed is read again at once (the failure groups
 * would otherwise wait for their 15 s refresh, the lists for theirs). The first list only sets the baseline, and a
 * job that has processed nothing (held, or cancelled before it started) changed nothing.
 */
function useRefreshAfterJobs(ops: OperationSummary[] | undefined): void {
  const qc = useQueryClient();
  const seen = useRef<Map<string, string> | null>(null);
  useEffect(() => {
    if (!ops) return;
    const before = seen.current;
    seen.current = new Map(ops.map((o) => [o.operationId, progressOf(o)]));
    if (before === null) return;
    const moved = ops.filter((o) => o.done + o.refused + o.failed > 0 && before.get(o.operationId) !== progressOf(o));
    if (moved.length === 0) return;
    const endpoints = moved.some((o) => o.endpoints.length === 0) ? [] : [...new Set(moved.flatMap((o) => o.endpoints))];
    void invalidateAfterJob(qc, endpoints);
  }, [ops, qc]);
}

/** Where the drawer starts: just below the header holding the button, so the button stays visible and usable. */
function belowHeader(button: HTMLElement | null): number {
  const header = button?.closest('header');
  return header ? Math.max(0, Math.round(header.getBoundingClientRect().bottom)) : 0;
}

export function JobsDrawer() {
  const [open, setOpen] = useState(false);
  const [top, setTop] = useState(0);
  // Keyboard use: opening moves focus into the drawer (its Close button); Escape or Close puts it back on the button.
  const toggle = useRef<HTMLButtonElement>(null);
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (open) close.current?.focus();
  }, [open]);
  const show = () => {
    setTop(belowHeader(toggle.current));
    setOpen(true);
  };
  const shut = () => {
    setOpen(false);
    toggle.current?.focus();
  };
  // The job a link asked to see (a confirmation's "previous job"): marked and scrolled to once it is listed.
  const [focusId, setFocusId] = useState<string | null>(null);
  useEffect(() => {
    const onOpen = (e: Event) => {
      setFocusId((e as CustomEvent<{ operationId?: string }>).detail?.operationId ?? null);
      show();
    };
    window.addEventListener('nimbus:jobs-open', onOpen);
    return () => window.removeEventListener('nimbus:jobs-open', onOpen);
  }, []);
  const q = useQuery(operationsQuery(open));
  const ops = q.data?.operations ?? [];
  useRefreshAfterJobs(q.data?.operations);
  return (
    <>
      <button ref={toggle} type="button" onClick={() => (open ? shut() : show())} className="text-slate-300 hover:text-white" aria-expanded={open} data-testid="jobs-button">
        {buttonLabel(ops)}
      </button>
      {open && (
        <aside
          className="theme-follow fixed bottom-0 right-0 z-40 w-[28rem] max-w-full overflow-y-auto border-l border-slate-300 bg-white p-4 text-slate-900 shadow-xl"
          style={{ top }}
          aria-label="Jobs"
          data-testid="jobs-drawer"
          onKeyDown={(e) => e.key === 'Escape' && shut()}
        >
          <div className="mb-2 flex items-center justify-between">
            <h2 className="text-lg font-semibold">Jobs</h2>
            <button ref={close} type="button" onClick={shut} className="text-sm text-slate-600">
              Close
            </button>
          </div>
          {q.error && <p className="text-sm text-red-700">{q.error.message}</p>}
          {ops.length === 0 && !q.isLoading && <p className="text-sm text-slate-500">{EMPTY_TEXT}</p>}
          <ul>
            {ops.map((op, i) => (
              <JobRow key={op.operationId} op={op} outcomeAuto={i < OUTCOME_AUTO || op.operationId === focusId} focused={op.operationId === focusId} />
            ))}
          </ul>
        </aside>
      )}
    </>
  );
}
