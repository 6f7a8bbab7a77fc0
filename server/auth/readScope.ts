// Which endpoints' data a caller may read: every endpoint with a role held site-wide, else the endpoints its
// per-endpoint roles name. Overviews are readable with any role (roles.ts decide), so every read that spans
// endpoints filters what it returns by this: an endpoint's Reader must not see other endpoints' error texts,
// payload key names or histories. Pure: no I/O, so server/queries.ts can use it without loading authorization.
import type { RoleAssignment } from './roles.ts';

export type ReadScope = { all: true } | { all: false; endpointIds: string[] };

export function scopeOf(assignments: readonly RoleAssignment[]): ReadScope {
  // An Agent role reads nothing through the console's reads (roles.ts): it widens no scope.
  const readers = assignments.filter((a) => a.role !== 'Agent');
  if (readers.some((a) => a.endpointId === null)) return { all: true };
  return { all: false, endpointIds: [...new Set(readers.map((a) => a.endpointId as string))] };
}

/** Whether a record of this endpoint (null: site-level, no endpoint) is within the scope. */
export const inScope = (scope: ReadScope, endpointId: string | null): boolean =>
  scope.all || (endpointId !== null && scope.endpointIds.includes(endpointId));
