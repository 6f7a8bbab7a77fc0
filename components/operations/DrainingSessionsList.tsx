'use client';
// Operations → Reconcile: endpoint sessions that drain forever (the replay waits for a parked message that is
// gone), each with why and what the repair does (move the replay past the gap, replay what is still parked).
import type { ReconcilePreview } from '../topology/opsApi.ts';
import { sessionKey } from './reconcileKeys.ts';

export function DrainingSessionsList(props: {
  scan: ReconcilePreview['draining'] | undefined;
  selected: Set<string>;
  onChange: (next: Set<string>) => void;
  /** Whether the caller may repair sessions of this endpoint (an Operator there, or site-wide). */
  canRepair: (endpointId: string) => boolean;
}) {
  const { scan, selected, onChange, canRepair } = props;
  if (!scan) return null;
  const toggle = (key: string) => {
    const next = new Set(selected);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    onChange(next);
  };
  return (
    <div>
      <p className="mb-1 text-xs text-slate-500">
        Sessions with parked events, read under the session&apos;s lock.
        {scan.busy > 0 ? ` ${scan.busy} were being handled by their endpoint (live) and were not looked at.` : ''}
      </p>
      {'error' in scan && scan.error ? <p className="mb-1 text-xs text-amber-700">{scan.error}</p> : null}
      {scan.scanLimited ? (
        <p className="mb-1 text-xs text-amber-700" data-sessions-scan-limited>
          Scan stopped after {Math.round(scan.elapsedMs / 1000)} s: {scan.checked} of {scan.candidates} sessions checked. The findings below are
          those of the checked sessions; scan again for the rest.
        </p>
      ) : null}
      {/* A scan cut short found nothing in what it checked: that is not "no session drains with a gap". */}
      {scan.sessions.length === 0 && !scan.scanLimited && (
        <p className="rounded border border-slate-200 bg-white px-3 py-4 text-sm text-slate-500">No session drains with a gap.</p>
      )}
      {scan.sessions.length > 0 && (
        <ul className="space-y-1 text-sm">
          {scan.sessions.map((d) => (
            <li key={sessionKey(d)} className="flex items-start gap-2 rounded border border-amber-200 bg-amber-50 px-3 py-1.5" data-draining-session={d.sessionId}>
              {canRepair(d.endpointId) && <input type="checkbox" aria-label={`Repair session ${d.sessionId}`} checked={selected.has(sessionKey(d))} onChange={() => toggle(sessionKey(d))} />}
              <div>
                <div>
                  session <span className="font-mono text-xs">{d.sessionId}</span> on {d.endpointId} · parked {d.nextDeferralSequence}, replayed up to #{d.nextReplaySequence}, still parked:{' '}
                  {d.parkedSequences.length > 0 ? d.parkedSequences.map((n) => `#${n}`).join(', ') : 'none'}
                </div>
                <div className="text-xs">Why: {d.why}</div>
                <div className="text-xs">Repair: {d.does}</div>
              </div>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
