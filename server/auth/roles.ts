// Console roles and what each allows. Three roles, each including the one below it: Reader (look), Operator (act
// on events and dead letters: resubmit, skip, handoff settlement, replay, reconcile) and Owner (change how the
// platform runs: heartbeat settings, subscription pause/purge/restore, role grants, alert rules). A role is held
// site-wide or for one endpoint. Beside them stands Agent (the agent zone, docs/agents.md): held on one endpoint
// only, it may receive, settle and publish there through the Agent API and nothing else - not even read the
// console's pages. Operator and Owner include the Agent's rights on their endpoints. Roles come from the
// principal's token claims through NIMBUS_AUTH_ROLE_MAP, plus the grants
// Owners store in Cosmos (grants.ts). Pure logic: no I/O here, so the rules are unit-tested on their own.
import { z } from 'zod';
import type { Principal } from './principal.ts';

export const ROLES = ['Reader', 'Operator', 'Owner', 'Agent'] as const;
export type Role = (typeof ROLES)[number];
/** The roles that include each other, weakest first. Agent is outside this ladder. */
const LADDER: readonly Role[] = ['Reader', 'Operator', 'Owner'];

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
  /** The Agent API (server/agent/): the catalog an agent may see, its pending handoffs, settling, publishing. */
  'agent.catalog': 'Agent',
  'agent.receive': 'Agent',
  'agent.settle': 'Agent',
  'agent.publish': 'Agent',
  /** Alert rules and channels (Admin → Alerts): who gets paged, and where their webhook secrets go. */
  'alerts.manage': 'Owner',
} as const satisfies Record<string, Role>;
export type Action = keyof typeof ACTIONS;
export const ACTION_NAMES = Object.keys(ACTIONS) as Action[];

/**
 * Actions a service principal (bearer token) may take, whatever its roles: settling handoffs, the Agent API, and
 * what an assistant on the MCP server (server/mcp/) needs - reading events, resubmitting and skipping them. How the
 * platform runs (replay, reconcile, heartbeats, subscriptions, grants) stays with people signed in.
 */
export const SERVICE_ACTIONS: ReadonlySet<Action> = new Set<Action>([
  'read',
  'handoff',
  'resubmit',
  'skip',
  'agent.catalog',
  'agent.receive',
  'agent.settle',
  'agent.publish',
]);

const rank = (r: Role) => LADDER.indexOf(r);
/** Whether a held role allows what `needed` allows: the ladder, plus Agent's rights within Operator and Owner. */
export const roleCovers = (held: Role, needed: Role): boolean => {
  if (needed === 'Agent') return held === 'Agent' || rank(held) >= rank('Operator');
  if (held === 'Agent') return false;
  return rank(held) >= rank(needed);
};
export const requiredRole = (action: Action): Role => ACTIONS[action];
/** Reads: not subject to the same-origin check nor the change rate limit (the Agent API limits its own calls). */
const READS: ReadonlySet<Action> = new Set<Action>(['read', 'agent.catalog', 'agent.receive']);
export const isMutating = (action: Action) => !READS.has(action);

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
  .regex(
    /^((Reader|Operator|Owner)(:[A-Za-z0-9._-]{1,50})?|Agent:[A-Za-z0-9._-]{1,50})$/,
    'a role is Reader, Operator or Owner, optionally `:endpointId`, or Agent:endpointId',
  );

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

/**
 * The strongest role of the ladder held on an endpoint (a site-wide role counts everywhere); null when none. An
 * Agent role is not on the ladder: it is answered only when nothing else is held there.
 */
export function effectiveRole(assignments: readonly RoleAssignment[], endpointId: string | undefined): Role | null {
  let best: Role | null = null;
  for (const a of assignments) {
    if (a.endpointId !== null && a.endpointId !== endpointId) continue;
    if (a.role === 'Agent') continue;
    if (best === null || rank(a.role) > rank(best)) best = a.role;
  }
  if (best === null && assignments.some((a) => a.role === 'Agent' && a.endpointId === endpointId && endpointId !== undefined)) return 'Agent';
  return best;
}

/** The endpoints on which these roles allow the Agent API: every endpoint (`all`) with a site-wide Operator or Owner. */
export function agentEndpoints(assignments: readonly RoleAssignment[]): { all: true } | { all: false; endpointIds: string[] } {
  if (assignments.some((a) => a.endpointId === null && roleCovers(a.role, 'Agent'))) return { all: true };
  return { all: false, endpointIds: [...new Set(assignments.filter((a) => a.endpointId !== null && roleCovers(a.role, 'Agent')).map((a) => a.endpointId as string))] };
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
    return {
      allowed: false,
      role,
      reason: `a service principal may not ${action} (it may read, settle handoffs, resubmit, skip and use the Agent API)`,
    };
  // Overviews that span endpoints (the endpoint list, search, flow, topology) are readable with any role of the
  // ladder anywhere: an Operator of one endpoint still needs the map to find it. Actions stay scoped. An Agent
  // role reads nothing: an agent sees the Agent API's catalog and its pending handoffs, no more.
  const ladder = assignments.filter((a) => a.role !== 'Agent');
  if (action === 'read' && endpointId === undefined && ladder.length > 0) {
    const best = ladder.reduce<Role>((b, a) => (rank(a.role) > rank(b) ? a.role : b), 'Reader');
    return { allowed: true, role: best };
  }
  // The Agent API's catalog names no endpoint: allowed with the Agent's rights on any endpoint (it then lists those).
  if (action === 'agent.catalog' && endpointId === undefined) {
    const holder = assignments.find((a) => roleCovers(a.role, 'Agent'));
    if (holder) return { allowed: true, role: holder.role };
  }
  if (needed === 'Agent' && endpointId !== undefined) {
    const holder = assignments.find((a) => (a.endpointId === null || a.endpointId === endpointId) && roleCovers(a.role, 'Agent'));
    if (holder) return { allowed: true, role: holder.role };
  }
  if (role !== null && roleCovers(role, needed)) return { allowed: true, role };
  const where = endpointId === undefined ? (needed === 'Agent' ? 'on some endpoint' : 'site-wide') : `on endpoint ${endpointId}`;
  if (needed === 'Agent')
    return { allowed: false, role, reason: `${action} needs the Agent role (or Operator) ${where}; ${principal.name} has ${role ?? 'no role'}${role ? ` ${where}` : ''}` };
  if (role === 'Agent')
    return { allowed: false, role, reason: `${action} needs the ${needed} role ${where}; ${principal.name} has only the Agent role there, which allows the Agent API and nothing else` };
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
