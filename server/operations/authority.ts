// Whether the starter of a bulk job still holds the role it acts with. A job runs for minutes after the request that
// started it, with that request's authority; a role revoked meanwhile (a grant removed or lowered on Admin → Access)
// must stop it rather than let it go on acting for someone who may no longer act. Only authority that rests on a
// grant can be re-checked: a grant is the console's own record (server/auth/grants.ts). A role from the sign-in
// token's claims (roles:, groups: through the role map) has no server-side record until the token is refreshed,
// so an endpoint any claim covered is not recorded and not re-checked. Pure functions; the runner asks them before
// each lot (runner.ts, RunnerOptions.authorityLapsed).
import type { Grant } from '../auth/grants.ts';
import { roleCovers, type Role, type RoleAssignment } from '../auth/roles.ts';

type Subject = { subjectKind: Grant['subjectKind']; subject: string };

/** What a job's authority rests on where grants alone gave it: per endpoint, the grant subjects that did. */
export interface JobAuthority {
  role: Role;
  endpoints: Array<{ endpointId: string; subjects: Subject[] }>;
}

const covers = (g: { role: Role; endpointId: string | null }, role: Role, endpointId: string) => roleCovers(g.role, role) && (g.endpointId === null || g.endpointId === endpointId);

/**
 * The authority to record with a new job: for each endpoint it acts on, the subjects (the starter itself, or a group
 * it was in) of the grants that gave `role` there - unless a claim gave it too (nothing to re-check then). Undefined
 * when no endpoint rests on grants alone.
 */
export function grantedAuthority(assignments: readonly RoleAssignment[], grants: readonly Grant[], role: Role, endpoints: readonly string[]): JobAuthority | undefined {
  const byId = new Map(grants.map((g) => [`grant:${g.id}`, g]));
  const recorded: JobAuthority['endpoints'] = [];
  for (const endpointId of endpoints) {
    const giving = assignments.filter((a) => covers(a, role, endpointId));
    if (giving.length === 0 || giving.some((a) => !byId.has(a.source))) continue;
    const subjects = new Map<string, Subject>();
    for (const a of giving) {
      const g = byId.get(a.source)!;
      subjects.set(`${g.subjectKind}:${g.subject}`, { subjectKind: g.subjectKind, subject: g.subject });
    }
    recorded.push({ endpointId, subjects: [...subjects.values()] });
  }
  return recorded.length > 0 ? { role, endpoints: recorded } : undefined;
}

/**
 * The endpoints where the recorded authority is gone: no grant to one of its subjects gives the role there any more
 * (removed, or changed to a lesser role or another endpoint). Empty while it holds.
 */
export function lapsedEndpoints(authority: JobAuthority, grants: readonly Grant[]): string[] {
  return authority.endpoints
    .filter(({ endpointId, subjects }) => !grants.some((g) => covers(g, authority.role, endpointId) && subjects.some((s) => s.subjectKind === g.subjectKind && s.subject === g.subject)))
    .map((e) => e.endpointId);
}

/** The job's stop reason when its starter's authority lapsed: "stopped: <user> no longer holds <role> on <endpoints>". */
export const lapseReason = (startedBy: string, role: Role, endpoints: readonly string[]): string => `stopped: ${startedBy} no longer holds ${role} on ${endpoints.join(', ')}`;
