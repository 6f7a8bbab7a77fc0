// Operations → Reconcile: how the page tells rows apart, and the lines of an apply's "unchanged" list. A row is
// one event on one endpoint (and session): the same eventId lives on every endpoint the event was published to,
// so an eventId alone names no row - two subscribers' rows would share a selection, a React key and a result line.
import type { ReconcileResult, StaleRow } from '../topology/opsApi.ts';

type RowId = Pick<StaleRow, 'endpointId' | 'eventId' | 'sessionId'>;

/** A stale row, and the target naming it in the apply's result. */
export const staleKey = (r: RowId) => `${r.endpointId}\u0000${r.eventId}\u0000${r.sessionId}`;

/** A stuck row (the same row may be stuck by a claim or by an unanswered request), and its repair target. */
export const stuckKey = (r: RowId & { kind: string }) => `${r.kind}\u0000${staleKey(r)}`;

/** A draining session, and its repair target. */
export const sessionKey = (d: { endpointId: string; sessionId: string }) => `${d.endpointId}\u0000${d.sessionId}`;

/** What the apply left unchanged, one line each with why: keyed and worded by endpoint, never by eventId alone. */
export function unchangedLines(result: ReconcileResult): Array<{ key: string; text: string }> {
  const unchanged = <T extends { outcome: string }>(rs: T[]) => rs.filter((r) => r.outcome === 'unchanged');
  return [
    ...unchanged(result.results).map((r) => ({ key: `stale\u0000${staleKey(r.target)}`, text: `${r.target.eventId} on ${r.target.endpointId}: ${r.reason ?? ''}` })),
    ...unchanged(result.sessions).map((r) => ({
      key: `session\u0000${sessionKey(r.target)}`,
      text: `session ${r.target.sessionId} on ${r.target.endpointId}: ${r.reason ?? ''}`,
    })),
    ...unchanged(result.repairs).map((r) => ({
      key: `stuck\u0000${stuckKey(r.target)}`,
      text: `${r.target.eventId} on ${r.target.endpointId} (${r.target.action}): ${r.reason ?? ''}`,
    })),
  ];
}
