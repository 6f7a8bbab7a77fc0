// Console roles and what each allows. Three roles, each including the one below it: Reader (look), Operator (act
// on events and dead letters: resubmit, skip, handoff settlement, replay, reconcile) and Owner (change how the
// platform runs: heartbeat settings, subscription pause/purge/restore, role grants). A role is held site-wide or
// for one endpoint. Roles come from the principal's token claims through NIMBUS_AUTH_ROLE_MAP, plus the grants
// Owners store in Cosmos (grants.ts). Pure logic: no I/O here, so the rules are unit-tested on their own.
import { z } from 'zod';
import type { Principal } from './principal.ts';

export const ROLES = ['Reader', 'Operator', 'Owner'] as const;
export type Role = (typeof ROLES)[number];

/** Every action the server authorizes. The UI asks /api/me for the same names. */
export const ACTIONS = {
  read: 'Reader',
  resubmit: 'Operator',
  skip: 'Operator',
  handoff: 'Operator',
  replay: 'Operator',
  /**
   * Replaying dead letters of a platform topic (Resolver, Manager): they hold every endpoint's messages, and a
   * replayed Resolver dead letter rewrites status rows of any endpoint, so the specification makes it an Owner's act.
   */
  'replay.platform': 'Owner',
  reconcile: 'Operator',
  /** A note on a failure group ("known: CRM maintenance until 10:00"): shown to everyone, so a site-wide act. */
  'failures.note': 'Operator',
  'heartbeat.send': 'Operator',
  'heartbeat.settings': 'Owner',
  'subscription.pause': 'Owner',
  'subscription.resume': 'Owner',
  'subscription.purge': 'Owner',
  'subscription.restoreRules': 'Owner',
  'grants.manage': 'Owner',
} as const satisfies Record<string, Role>;
export type Action = keyof typeof ACTIONS;
export const ACTION_NAMES = Object.keys(ACTIONS) as Action[];

/** Actions a service principal (bearer token) may take: only settling its own handoffs. */
export const SERVICE_ACTIONS: ReadonlySet<Action> = new Set<Action>(['handoff']);

const rank = (r: Role) => ROLES.indexOf(r);
export const roleCovers = (held: Role, needed: Role) => rank(held) >= rank(needed);
export const requiredRole = (action: Action): Role => ACTIONS[action];
export const isMutating = (action: Action) => action !== 'read';

/** One role held by a principal: site-wide (endpointId null) or on one endpoint. */
export interface RoleAssignment {
  role: Role;
  endpointId: string | null;
  /** Where it came from, for /api/me and the audit log: the claim (`roles:X`, `groups:Y`), a grant id, or `auth off`. */
  source: string;
}

// ---------------------------------------------------------------- claim mapping (NIMBUS_AUTH_ROLE_MAP)

/** `Owner` (site-wide) or `Operator:billing` (one endpoint). */
const assignmentText = z
  .string()
  .trim()
  .regex(/^(Reader|Operator|Owner)(:[A-Za-z0-9._-]{1,50})?$/, 'a role is Reader, Operator or Owner, optionally `:endpointId`');

const claimMap = z.record(z.string().min(1).max(256), z.union([assignmentText, z.array(assignmentText).max(50)]));

export const roleMapSchema = z
  .object({
    /** App-role claim value -> console role(s). */
    roles: claimMap.default({}),
    /** Group claim value (object id) -> console role(s). */
    groups: claimMap.default({}),
  })
  .strict();
export type RoleMap = z.output<typeof roleMapSchema>;

/** Without a mapping, app roles named exactly like the console roles grant them site-wide. */
export const DEFAULT_ROLE_MAP: RoleMap = { roles: { Reader: 'Reader', Operator: 'Operator', Owner: 'Owner' }, groups: {} };

export class RoleMapError extends Error {
  override readonly name = 'RoleMapError';
}

/** Parses NIMBUS_AUTH_ROLE_MAP; a RoleMapError says what is wrong (the value is configuration, not a secret). */
export function parseRoleMap(text: string | undefined): RoleMap {
  if (text === undefined || text.trim() === '') return DEFAULT_ROLE_MAP;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new RoleMapError('NIMBUS_AUTH_ROLE_MAP is not valid JSON (expected {"roles":{"<app role>":"Owner"},"groups":{"<group id>":["Operator:billing"]}})');
  }
  const r = roleMapSchema.safeParse(value);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new RoleMapError(`NIMBUS_AUTH_ROLE_MAP is invalid: ${issues}`);
  }
  return r.data;
}

let cachedMap: { text: string | undefined; map: RoleMap } | undefined;

/** This process's mapping, re-read when the variable changes (tests change it). */
export function currentRoleMap(env: Record<string, string | undefined> = process.env): RoleMap {
  const text = env.NIMBUS_AUTH_ROLE_MAP;
  if (!cachedMap || cachedMap.text !== text) cachedMap = { text, map: parseRoleMap(text) };
  return cachedMap.map;
}

function toAssignment(text: string, source: string): RoleAssignment {
  const [role, endpointId] = text.split(':') as [Role, string | undefined];
  return { role, endpointId: endpointId ?? null, source };
}

/** The roles a principal's claims map to. */
export function rolesFromClaims(principal: Principal, map: RoleMap): RoleAssignment[] {
  const out: RoleAssignment[] = [];
  const add = (kind: 'roles' | 'groups', values: string[]) => {
    for (const v of values) {
      const mapped = map[kind][v];
      if (mapped === undefined) continue;
      for (const a of Array.isArray(mapped) ? mapped : [mapped]) out.push(toAssignment(a, `${kind}:${v}`));
    }
  };
  add('roles', principal.roles);
  add('groups', principal.groups);
  return out;
}

// ---------------------------------------------------------------- decisions

/** The strongest role held on an endpoint (a site-wide role counts everywhere); null when none. */
export function effectiveRole(assignments: readonly RoleAssignment[], endpointId: string | undefined): Role | null {
  let best: Role | null = null;
  for (const a of assignments) {
    if (a.endpointId !== null && a.endpointId !== endpointId) continue;
    if (best === null || rank(a.role) > rank(best)) best = a.role;
  }
  return best;
}

export type Decision = { allowed: true; role: Role } | { allowed: false; role: Role | null; reason: string };

/**
 * May a principal holding these roles take this action (on this endpoint)? Without an endpoint, only site-wide
 * roles count: an Operator of one endpoint cannot run a site-wide command such as reconcile across all endpoints.
 */
export function decide(principal: Principal, assignments: readonly RoleAssignment[], action: Action, endpointId?: string): Decision {
  const needed = requiredRole(action);
  const role = effectiveRole(assignments, endpointId);
  if (principal.kind === 'service' && !SERVICE_ACTIONS.has(action))
    return { allowed: false, role, reason: `a service principal may only settle handoffs, not ${action}` };
  // Overviews that span endpoints (the endpoint list, search, flow, topology) are readable with any role
  // anywhere: an Operator of one endpoint still needs the map to find it. Actions stay scoped.
  if (action === 'read' && endpointId === undefined && assignments.length > 0) {
    const best = assignments.reduce<Role>((b, a) => (rank(a.role) > rank(b) ? a.role : b), 'Reader');
    return { allowed: true, role: best };
  }
  if (role !== null && roleCovers(role, needed)) return { allowed: true, role };
  const where = endpointId === undefined ? 'site-wide' : `on endpoint ${endpointId}`;
  return {
    allowed: false,
    role,
    reason: `${action} needs the ${needed} role ${where}; ${principal.name} has ${role ?? 'no role'}${role ? ` ${where}` : ''}`,
  };
}

/** What a principal may do: site-wide, and per endpoint where a per-endpoint role adds to that. For /api/me. */
export function permissions(
  principal: Principal,
  assignments: readonly RoleAssignment[],
  endpointIds: readonly string[],
): { site: Action[]; endpoints: Record<string, Action[]> } {
  const allowed = (endpointId?: string) => ACTION_NAMES.filter((a) => decide(principal, assignments, a, endpointId).allowed);
  const site = allowed();
  const endpoints: Record<string, Action[]> = {};
  for (const id of endpointIds) endpoints[id] = allowed(id);
  return { site, endpoints };
}

/** A short summary of roles for the audit log: `Owner`, `Operator:billing,Reader`. */
export function describeRoles(assignments: readonly RoleAssignment[]): string {
  const parts = [...new Set(assignments.map((a) => (a.endpointId === null ? a.role : `${a.role}:${a.endpointId}`)))];
  return parts.length === 0 ? 'none' : parts.sort().join(',');
}
