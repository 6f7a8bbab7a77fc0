// Which of a group-wide selection's rows the caller may act on. A failure group spans endpoints, and a
// caller may be Operator on some of them and only Reader on others: "Resubmit all" acts on the endpoints the caller
// may act on (docs/failures.md) and says which were left out and why, rather than refusing the whole group for one
// endpoint. Pure: the decision is roles.ts decide, on the roles authorize() already read.
import type { Principal } from '../auth/principal.ts';
import { decide, type RoleAssignment } from '../auth/roles.ts';
import type { JobKind } from './jobs.ts';

/** An endpoint whose frozen rows were left out of the job: the caller may read them but not take the action there. */
export interface LeftOutEndpoint {
  endpointId: string;
  /** Events of the selection on that endpoint, not acted on. */
  events: number;
  /** Why, in the authorization's words ("resubmit needs the Operator role on endpoint …; … has Reader …"). */
  reason: string;
}

/**
 * Where the caller may take `kind`: `keep` for freezeActable (server/operations/selection.ts), which counts the rows
 * it refuses per endpoint, and `leftOut` to say those endpoints with the authorization's reason. The decision is
 * taken once per endpoint.
 */
export function actableOn(
  kind: JobKind,
  who: { principal: Principal; assignments: readonly RoleAssignment[] },
): { keep: (endpointId: string) => boolean; leftOut: (dropped: ReadonlyMap<string, number>) => LeftOutEndpoint[] } {
  const decisions = new Map<string, ReturnType<typeof decide>>();
  const decisionOn = (endpointId: string) => {
    let d = decisions.get(endpointId);
    if (!d) decisions.set(endpointId, (d = decide(who.principal, who.assignments, kind, endpointId)));
    return d;
  };
  return {
    keep: (endpointId) => decisionOn(endpointId).allowed,
    leftOut: (dropped) =>
      [...dropped]
        .map(([endpointId, events]) => {
          const d = decisionOn(endpointId);
          return { endpointId, events, reason: d.allowed ? '' : d.reason };
        })
        .sort((a, b) => a.endpointId.localeCompare(b.endpointId)),
  };
}
