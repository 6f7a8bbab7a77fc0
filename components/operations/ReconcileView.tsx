'use client';
// Operations → Reconcile: rows still Pending although their history holds the response that settled them, with
// the evidence; rows that nothing will move (a command claimed with no receipt, a control request nobody answered),
// with why and what the repair does; handoffs past their ExpectedBy (flagged only). Apply re-writes the stored
// outcome, re-sends or restores, each conditional on the row version shown here; the result says what changed.
// The scan is not prefetched (app/operations/reconcile/page.tsx): until it answers the page says it is scanning, and
// a failed scan shows its error alone, never empty lists that would read as "nothing stuck". The rows and the broker's
// session scan are read apart: the rows show as soon as the store answers, and the sessions part has its own
// "checking…" state and says when the scan stopped at its time budget.
import Link from '../Link.tsx';
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { eventHref } from '../api.ts';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import { ErrorBox, formatDuration, Timestamp } from '../format.tsx';
import { opsApi, type ReconcileResult, type RepairTarget } from '../topology/opsApi.ts';
import { repairOf, StuckRowsTable } from './StuckRowsTable.tsx';
import { DrainingSessionsList } from './DrainingSessionsList.tsx';
import { EventCell } from './EventCell.tsx';
import { sessionKey, staleKey as keyOf, stuckKey, unchangedLines } from './reconcileKeys.ts';
import { useCan } from '../audit/accessApi.ts';
import { TABLE_HEAD } from '../table.tsx';
import { queryKeys, reconcileRowsQuery, reconcileSessionsQuery } from '../queries.ts';

export function ReconcileView() {
  const client = useQueryClient();
  // Repair is an Operator action: the server lets a site-wide Operator repair any row, and an Operator of an
  // endpoint the rows of that endpoint (route.ts, authorizeEach). So the controls are offered per row.
  const can = useCan();
  const canRepair = (endpointId: string) => can('reconcile', endpointId);
  const q = useQuery(reconcileRowsQuery());
  const sessionScan = useQuery(reconcileSessionsQuery());
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [repairs, setRepairs] = useState<Map<string, RepairTarget['action']>>(new Map());
  const [sessions, setSessions] = useState<Set<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  const [result, setResult] = useState<ReconcileResult | null>(null);
  const stale = q.data?.stale ?? [];
  // Only rows the caller may repair are selectable; the filter also drops a selection whose right was lost since.
  const selectable = stale.filter((r) => canRepair(r.endpointId));
  const chosen = selectable.filter((r) => selected.has(keyOf(r)));
  const stuck = q.data?.stuck ?? [];
  const chosenRepairs = stuck.flatMap((r) => {
    const action = repairs.get(stuckKey(r));
    // An unreadable-answer row offers no repair, so it is never chosen.
    return action && r.kind !== 'unreadable' && canRepair(r.endpointId) ? [repairOf({ ...r, kind: r.kind }, action)] : [];
  });
  const draining = sessionScan.data?.draining.sessions ?? [];
  const chosenSessions = draining
    .filter((d) => sessions.has(sessionKey(d)) && canRepair(d.endpointId))
    .map((d) => ({ endpointId: d.endpointId, sessionId: d.sessionId, nextReplaySequence: d.nextReplaySequence }));
  const count = chosen.length + chosenRepairs.length + chosenSessions.length;
  const apply = useMutation({
    mutationFn: () =>
      opsApi.reconcileApply(
        chosen.map((r) => ({ endpointId: r.endpointId, eventId: r.eventId, sessionId: r.sessionId, rowMessageId: r.rowMessageId })),
        chosenRepairs,
        chosenSessions,
      ),
    onSuccess: (r) => {
      setResult(r);
      setConfirming(false);
      setSelected(new Set());
      setRepairs(new Map());
      setSessions(new Set());
      void client.invalidateQueries({ queryKey: queryKeys.reconcile });
    },
  });
  const allSelected = selectable.length > 0 && chosen.length === selectable.length;
  // The button shows to whoever may repair any row listed (a site-wide Operator also when none is).
  const mayRepair = can('reconcile') || [...stale, ...stuck.filter((r) => r.repairs.length > 0), ...draining].some((r) => canRepair(r.endpointId));
  // A failed apply keeps the dialog open with its error inside; closing the dialog forgets the error.
  const closeConfirm = () => {
    setConfirming(false);
    apply.reset();
  };

  return (
    <section>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold">Operations · Reconcile Pending rows</h1>
        <button
          type="button"
          onClick={() => void client.invalidateQueries({ queryKey: queryKeys.reconcile })}
          className="ml-auto rounded border border-slate-300 px-2 py-1 text-sm hover:bg-slate-50"
        >
          {q.isFetching || sessionScan.isFetching ? 'Scanning…' : 'Scan again'}
        </button>
        {mayRepair && <button
          type="button"
          disabled={count === 0}
          onClick={() => {
            apply.reset();
            setConfirming(true);
          }}
          className="rounded bg-sky-600 px-3 py-1 text-sm font-medium text-white hover:bg-sky-700 disabled:opacity-50"
        >
          Repair selected ({count})
        </button>}
      </div>
      <ErrorBox error={q.error} />
      {result && (
        <div role="status" className="mb-3 rounded border border-emerald-200 bg-emerald-50 px-3 py-2 text-sm text-emerald-900" data-reconcile-result>
          {result.repaired} repaired, {result.unchanged} unchanged.
          {unchangedLines(result).map((line) => (
            <div key={line.key} className="text-xs">
              {line.text}
            </div>
          ))}
        </div>
      )}
      {!q.data && q.isPending && (
        <p role="status" className="rounded border border-slate-200 bg-white px-3 py-4 text-sm text-slate-500" data-reconcile-scanning>
          Scanning Pending rows…
        </p>
      )}
      {q.data && (
        <>
          <p className="mb-2 text-xs text-slate-500">
            {q.data.scanned} Pending rows scanned at <Timestamp at={q.data.generatedAt} />
            {q.data.truncated ? ' (more rows than one scan reads: scan again after repairing)' : ''}.
          </p>
          <h2 className="mb-1 mt-3 font-semibold">Stale Pending rows ({stale.length})</h2>
          {stale.length === 0 ? (
            <p className="rounded border border-slate-200 bg-white px-3 py-4 text-sm text-slate-500">No stale Pending rows.</p>
          ) : (
            <div className="overflow-x-auto rounded border border-slate-200 bg-white">
              <table className="w-full text-sm">
                <thead className={TABLE_HEAD}>
                  <tr>
                    {selectable.length > 0 && (
                      <th scope="col" className="px-3 py-2">
                        <input type="checkbox" aria-label="Select all" checked={allSelected} onChange={() => setSelected(allSelected ? new Set() : new Set(selectable.map(keyOf)))} />
                      </th>
                    )}
                    <th scope="col" className="px-3 py-2">Event</th>
                    <th scope="col" className="px-3 py-2">Row now</th>
                    <th scope="col" className="px-3 py-2">Stored response (evidence)</th>
                    <th scope="col" className="px-3 py-2">Becomes</th>
                  </tr>
                </thead>
                <tbody>
                  {stale.map((r) => (
                    <tr key={keyOf(r)} className="border-t border-slate-100" data-stale-event={r.eventId}>
                      {selectable.length > 0 && (
                        <td className="px-3 py-2">
                          {canRepair(r.endpointId) && (
                            <input
                              type="checkbox"
                              aria-label={`Select ${r.eventId} on ${r.endpointId}`}
                              checked={selected.has(keyOf(r))}
                              onChange={() =>
                                setSelected((s) => {
                                  const n = new Set(s);
                                  if (n.has(keyOf(r))) n.delete(keyOf(r));
                                  else n.add(keyOf(r));
                                  return n;
                                })
                              }
                            />
                          )}
                        </td>
                      )}
                      <EventCell endpointId={r.endpointId} eventId={r.eventId} sessionId={r.sessionId} detail={r.eventTypeId ?? '—'} />
                      <td className="px-3 py-2 text-xs">
                        Pending by {r.rowMessageType ?? '?'} <span className="font-mono">{r.rowMessageId}</span>
                        <div>
                          <Timestamp at={r.rowUpdatedAt} />
                        </div>
                      </td>
                      <td className="px-3 py-2 text-xs">
                        {r.evidence.messageType} <span className="font-mono">{r.evidence.messageId}</span>
                        <div>
                          <Timestamp at={r.evidence.enqueuedAt} /> · {r.evidence.rule === 'answers-row' ? 'answers the message the row shows' : 'came after the message the row shows'}
                        </div>
                      </td>
                      <td className="px-3 py-2 font-medium">{r.evidence.status}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2 className="mb-1 mt-5 font-semibold">Stuck rows ({stuck.length})</h2>
          <p className="mb-1 text-xs text-slate-500">
            Pending because of a command or request that nothing will answer. Select a row and, where it offers two, the repair; a row that offers none says why.
          </p>
          <StuckRowsTable rows={stuck} chosen={repairs} onChange={setRepairs} canRepair={canRepair} />
          <h2 className="mb-1 mt-5 font-semibold">Sessions draining with a gap{sessionScan.data ? ` (${draining.length})` : ''}</h2>
          {/* Its own states: the broker may take long to lock sessions; the rows above do not wait for it. */}
          {!sessionScan.data && sessionScan.isPending && (
            <p role="status" className="rounded border border-slate-200 bg-white px-3 py-4 text-sm text-slate-500" data-reconcile-sessions-scanning>
              Checking parked sessions under their locks…
            </p>
          )}
          <ErrorBox error={sessionScan.error} />
          <DrainingSessionsList scan={sessionScan.data?.draining} selected={sessions} onChange={setSessions} canRepair={canRepair} />
          <h2 className="mb-1 mt-5 font-semibold">Handoffs past their ExpectedBy ({q.data.overdueHandoffs.length})</h2>
          <p className="mb-1 text-xs text-slate-500">Only flagged: their outcome is in the external system. Complete or fail them from the event page.</p>
          {q.data.overdueHandoffs.length > 0 && (
            <ul className="space-y-1 text-sm">
              {q.data.overdueHandoffs.map((h) => (
                <li key={`${h.endpointId}/${h.eventId}/${h.sessionId}`} className="rounded border border-amber-200 bg-amber-50 px-3 py-1.5">
                  <Link href={eventHref(h.endpointId, h.eventId)} className="font-mono text-xs text-sky-700 hover:underline">
                    {h.eventId}
                  </Link>{' '}
                  on {h.endpointId}: {h.handoffReason ?? 'handoff'} {h.externalJobId ? `(job ${h.externalJobId})` : ''} — overdue by {formatDuration(h.overdueSeconds * 1000)}
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      {confirming && (
        <ConfirmDialog title={`Repair ${count} row${count === 1 ? '' : 's'}`} confirmLabel={`Repair ${count}`} busy={apply.isPending} onCancel={closeConfirm} onConfirm={() => apply.mutate()}>
          Each row gets the status of its stored response, through the same guarded write the Resolver uses, and only if it is still the
          Pending version shown here. Stuck rows are re-sent or restored as chosen, again only if unchanged. Rows that changed
          meanwhile are left alone. Every repair is written to the event&apos;s audit trail.
          {/* In the dialog, not on the page: the page behind a modal dialog is inert and never announced. */}
          {apply.error && (
            <div className="mt-3">
              <ErrorBox error={apply.error} />
            </div>
          )}
        </ConfirmDialog>
      )}
    </section>
  );
}
