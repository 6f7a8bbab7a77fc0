'use client';
// The confirmation of a bulk job (Resubmit all / Skip all): the selection is frozen first, as a prepared job (not
// listed, not run; the server discards it after 10 minutes without an answer), so the count shown is exactly the
// count the job acts on; Confirm starts it (/resume: queued at once), Cancel discards it (/cancel, audited as
// cancelled). When an earlier job already covered these events, the dialog says so - who ran it, when, how many it
// resubmitted and how many failed again - with a way to look at it first (cancel this one, open the drawer on it).
// A selection that names no endpoint (a failure group) is said with the endpoints of the rows frozen, and the
// endpoints left out because the caller may only read there are named with why (frozenText.ts).
import { useEffect, useRef, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import { countOf, ErrorBox, Timestamp } from '../format.tsx';
import { jobsApi, openJobsDrawer, type PreparedJob, type PreviousJob, type Selection } from './jobsApi.ts';
import { GOING } from './jobText.ts';
import { frozenOn, leftOutLines } from './frozenText.ts';
import { queryKeys } from '../queries.ts';

export function BulkJobConfirm(props: { kind: 'resubmit' | 'skip'; selection: Selection; what: string; onClose: (confirmed: boolean) => void }) {
  const qc = useQueryClient();
  const [prepared, setPrepared] = useState<PreparedJob | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const started = useRef(false);
  const { kind, selection } = props;
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    jobsApi.prepare(kind, selection).then(setPrepared, (e: unknown) => setError(e instanceof Error ? e.message : String(e)));
  }, [kind, selection]);
  const verb = kind === 'resubmit' ? 'Resubmit' : 'Skip';
  const close = async (confirmed: boolean, thenShow?: string) => {
    setBusy(true);
    // A retry starts clean: the last attempt's alert beside "Working…" would read as this attempt's answer.
    setError(null);
    try {
      if (prepared) await jobsApi.control(prepared.operationId, confirmed ? 'resume' : 'cancel');
      void qc.invalidateQueries({ queryKey: queryKeys.operations });
      if (confirmed || thenShow) openJobsDrawer(thenShow);
      props.onClose(confirmed);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  const n = prepared?.total.toLocaleString();
  const events = prepared ? countOf(prepared.total, 'event') : '';
  // Where the frozen rows are, when the selection did not name it: from the answer, not the page's list.
  const on = selection.endpointId === undefined && prepared?.endpoints ? frozenOn(prepared.endpoints) : '';
  const leftOut = prepared?.leftOut ? leftOutLines(kind, prepared.leftOut) : [];
  return (
    <ConfirmDialog
      title={prepared ? `${verb} ${events}?` : `${verb} ${props.what}?`}
      confirmLabel={prepared ? `${verb} ${events}` : 'Counting…'}
      danger={kind === 'skip'}
      busy={busy || !prepared}
      onConfirm={() => void close(true)}
      onCancel={() => void close(false)}
    >
      {prepared ? (
        <p data-testid="bulk-count">
          Exactly <strong>{n}</strong> {prepared.total === 1 ? 'event' : 'events'} ({props.what}{on ? ` ${on}` : ''}) will be {kind === 'resubmit' ? 'sent again with their stored payloads' : 'skipped: never processed, their sessions released'}. The list is frozen now: events failing later are not included, and events that change before their turn are counted as refused. The job runs on the server; follow it in the Jobs drawer.
        </p>
      ) : (
        !error && <p>Freezing the selection…</p>
      )}
      {leftOut.length > 0 && (
        <div className="mt-2 rounded border border-amber-300 bg-amber-50 px-2 py-1 text-sm text-amber-900" data-testid="left-out">
          {leftOut.map((l) => (
            <p key={l}>{l}</p>
          ))}
        </div>
      )}
      {prepared?.previous && <PreviousJobNote job={prepared.previous} busy={busy} onShow={(id) => void close(false, id)} />}
      {/* An alert, as in every dialog: the page behind the modal is inert, and a screen reader announces it here. */}
      {error && (
        <div className="mt-2">
          <ErrorBox error={error} />
        </div>
      )}
    </ConfirmDialog>
  );
}

/** "A previous job (…, by X, at T: 18 resubmitted, 18 failed again) covered these events", and a way to look at it. */
function PreviousJobNote({ job, busy, onShow }: { job: PreviousJob; busy: boolean; onShow: (operationId: string) => void }) {
  const n = (v: number) => v.toLocaleString('en-US');
  const acted = job.kind === 'resubmit' ? `${n(job.done)} resubmitted` : `${n(job.done)} skipped`;
  const again =
    job.failedAgain === null
      ? 'what became of them could not be read'
      : `${n(job.failedAgain)} ${job.kind === 'resubmit' ? 'failed again' : 'failed since it started'}${job.checked < job.total ? ` of the first ${n(job.checked)} checked` : ''}`;
  return (
    <div className="mt-2 rounded border border-amber-300 bg-amber-50 px-2 py-1 text-sm text-amber-900" data-testid="previous-job">
      <p>
        A previous job (<span className="font-mono">operation/{job.operationId}</span>, by {job.startedBy}, at <Timestamp at={job.startedAt} />: {acted},{' '}
        {again}
        {GOING.has(job.state) ? `; still ${job.state}` : ''}) covered these events.
      </p>
      <button type="button" className="text-sky-700 underline" disabled={busy} onClick={() => onShow(job.operationId)}>
        Cancel this and show that job in the Jobs drawer
      </button>
    </div>
  );
}
