// Which of a group-wide selection's frozen rows the caller may act on. A failure group spans endpoints, and a
// caller may be Operator on some of them and only Reader on others: "Resubmit all" acts on the endpoints the caller
// may act on (docs/failures.md) and says which were left out and why, rather than refusing the whole group for one
// endpoint. Pure: the decision is roles.ts decide, on the roles authorize() already read.
import type { Principal } from '../auth/principal.ts';
import { decide, type RoleAssignment } from '../auth/roles.ts';
import type { JobKind } from './jobs.ts';
import type { SelectedRow } from './selection.ts';

/** An endpoint whose frozen rows were left out of the job: the caller may read them but not take the action there. */
export interface LeftOutEndpoint {
  endpointId: string;
  /** Events of the selection on that endpoint, not acted on. */
  events: number;
  /** Why, in the authorization's words ("resubmit needs the Operator role on endpoint …; … has Reader …"). */
  reason: string;
}

/**
 * Splits frozen rows into those on endpoints where `kind` is allowed and, per endpoint, those left out. The rows
 * kept keep their order (oldest update first, the order the job acts on them).
 */
export function splitActable(
  rows: readonly SelectedRow[],
  kind: JobKind,
  who: { principal: Principal; assignments: readonly RoleAssignment[] },
): { rows: SelectedRow[]; leftOut: LeftOutEndpoint[] } {
  const decisions = new Map<string, ReturnType<typeof decide>>();
  const decisionOn = (endpointId: string) => {
    let d = decisions.get(endpointId);
    if (!d) decisions.set(endpointId, (d = decide(who.principal, who.assignments, kind, endpointId)));
    return d;
  };
  const kept: SelectedRow[] = [];
  const left = new Map<string, LeftOutEndpoint>();
  for (const row of rows) {
    const d = decisionOn(row.endpointId);
    if (d.allowed) {
      kept.push(row);
      continue;
    }
    const entry = left.get(row.endpointId) ?? { endpointId: row.endpointId, events: 0, reason: d.reason };
    entry.events++;
    left.set(row.endpointId, entry);
  }
  return { rows: kept, leftOut: [...left.values()].sort((a, b) => a.endpointId.localeCompare(b.endpointId)) };
}
