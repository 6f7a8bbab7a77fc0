'use client';
// Operations → Reconcile: rows that nothing will move (a claim without a receipt, a control request nobody
// answered or the subscriber refused, an answer that no longer parses), each with why it is stuck and what each possible repair does. The operator selects rows and, where a
// row offers more than one repair (re-send or restore), picks one; the parent applies the selection. A row that offers
// none (its state to restore is unknown, or a parked command, which is never repaired) is listed all the same,
// without controls: its "why" says why.
import { Timestamp } from '../format.tsx';
import type { RepairTarget, StuckRow } from '../topology/opsApi.ts';
import { TABLE_HEAD } from '../table.tsx';
import { EventCell } from './EventCell.tsx';
import { stuckKey } from './reconcileKeys.ts';

export function repairOf(r: Omit<StuckRow, 'kind'> & Pick<RepairTarget, 'kind'>, action: RepairTarget['action']): RepairTarget {
  return { kind: r.kind, endpointId: r.endpointId, eventId: r.eventId, sessionId: r.sessionId, rowMessageId: r.rowMessageId, action };
}

/** Why a kind is never repaired (other kinds offer none only when the state to put back is unknown). */
const NO_REPAIR: Partial<Record<StuckRow['kind'], string>> = {
  unreadable: 'None offered: the answer cannot be read (see why).',
  parked: 'None offered: the parked command runs when the event blocking its session is settled (see why).',
};

const KIND_DETAIL: Record<StuckRow['kind'], string> = { claim: 'claimed, no receipt', unanswered: 'unanswered request', refused: 'command refused', parked: 'parked, never answered', unreadable: 'answer unreadable' };

export function StuckRowsTable(props: {
  rows: StuckRow[];
  /** Selected rows by key, with the repair chosen for each. */
  chosen: Map<string, RepairTarget['action']>;
  onChange: (next: Map<string, RepairTarget['action']>) => void;
  /** Whether the caller may repair rows of this endpoint (the server allows an Operator there, or site-wide). */
  canRepair: (endpointId: string) => boolean;
}) {
  const { rows, chosen, onChange, canRepair } = props;
  if (rows.length === 0) return <p className="rounded border border-slate-200 bg-white px-3 py-4 text-sm text-slate-500">No stuck rows.</p>;
  // The column shows when any row may be repaired; a row of an endpoint the caller may not repair gets no controls.
  const anyRepairable = rows.some((r) => canRepair(r.endpointId) && r.repairs.length > 0);
  const set = (key: string, action: RepairTarget['action'] | undefined) => {
    const next = new Map(chosen);
    if (action === undefined) next.delete(key);
    else next.set(key, action);
    onChange(next);
  };
  return (
    <div className="overflow-x-auto rounded border border-slate-200 bg-white">
      <table className="w-full text-sm">
        <thead className={TABLE_HEAD}>
          <tr>
            {anyRepairable && <th scope="col" className="px-3 py-2">Repair</th>}
            <th scope="col" className="px-3 py-2">Event</th>
            <th scope="col" className="px-3 py-2">Why it is stuck</th>
            <th scope="col" className="px-3 py-2">What the repair does</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => {
            const key = stuckKey(r);
            const picked = chosen.get(key);
            const repairable = canRepair(r.endpointId) && r.repairs.length > 0;
            return (
              <tr key={key} className="border-t border-slate-100 align-top" data-stuck-event={r.eventId} data-stuck-kind={r.kind}>
                {anyRepairable && (
                  <td className="px-3 py-2">
                    {repairable && (
                      <input type="checkbox" aria-label={`Repair ${r.eventId} on ${r.endpointId}`} checked={picked !== undefined} onChange={() => set(key, picked === undefined ? r.repairs[0]!.action : undefined)} />
                    )}
                  </td>
                )}
                <EventCell endpointId={r.endpointId} eventId={r.eventId} sessionId={r.sessionId} detail={KIND_DETAIL[r.kind]}>
                  <div className="text-xs text-slate-500">
                    Pending by {r.rowMessageType ?? '?'} since <Timestamp at={r.rowUpdatedAt} />
                  </div>
                </EventCell>
                <td className="px-3 py-2 text-xs">{r.why}</td>
                <td className="px-3 py-2 text-xs">
                  {r.repairs.length === 0 && (
                    <span data-stuck-no-repair="">
                      {NO_REPAIR[r.kind] ?? 'None offered: Reconcile cannot tell which state to put back (see why).'} Check the event&apos;s
                      history on its page.
                    </span>
                  )}
                  {r.repairs.map((p) => (
                    <label key={p.action} className="mb-1 flex items-start gap-1.5">
                      {repairable && r.repairs.length > 1 && (
                        <input type="radio" name={`repair-${key}`} checked={picked === p.action} onChange={() => set(key, p.action)} aria-label={`${p.action} ${r.eventId} on ${r.endpointId}`} />
                      )}
                      <span>
                        <span className="font-medium">{p.action === 'resend' ? 'Re-send' : 'Restore'}</span>: {p.does}
                      </span>
                    </label>
                  ))}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
