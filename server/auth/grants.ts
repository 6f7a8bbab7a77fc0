// Role grants stored by Owners (Admin -> Access), in their own Cosmos container `roleGrants` (partition /subject:
// the principal or group a grant names). The whole set is small (people and groups x a few endpoints), so each
// console process keeps it in memory and re-reads it every few seconds: authorization then costs no Cosmos call
// per request, and a grant or revoke made on another instance is seen within GRANT_CACHE_MS.
import { createHash } from 'node:crypto';
import type { Container, Database } from '@azure/cosmos';
import type { Catalog } from '@nimbus/sdk/contract';
import { z } from 'zod';
import { badRequest } from '../http.ts';
import { exactIdTarget } from '../exactIdFilterSchema.ts';
import { cosmosStatus, rethrowCosmos } from '../../lib/store/index.ts';
import { openContainer, type ContainerSlot } from '../../lib/store/containers.ts';
import type { Principal } from './principal.ts';
import { ROLES, type RoleAssignment } from './roles.ts';
import { UNPRINTABLE } from './printable.ts';

export const GRANTS_CONTAINER = 'roleGrants';
const GRANT_CACHE_MS = 5_000;
const MAX_GRANTS = 5_000;

const grantFields = {
  /** `user` and `service` name a principal id (token oid/sub, or client id); `group` a group claim value. */
  subjectKind: z.enum(['user', 'service', 'group']),
  subject: z.string().trim().min(1).max(256),
  /** Shown on the Access page; optional. */
  subjectName: z.string().trim().max(256).optional(),
  role: z.enum(ROLES),
  endpointId: z.string().regex(/^[A-Za-z0-9._-]{1,50}$/, 'an endpoint id').nullable().default(null),
};
const printable = (what: string) => (v: string | undefined) => v === undefined || !UNPRINTABLE.test(v) || `${what} must not contain control or bidirectional-override characters`;
const checkPrintable = (what: string) => (v: string | undefined, ctx: z.RefinementCtx) => {
  const problem = printable(what)(v);
  if (problem !== true) ctx.addIssue({ code: 'custom', message: problem });
};

// An agent identity is granted per endpoint (docs/agents.md): a site-wide Agent grant would be every endpoint's.
// Stored grants are read with grantSchema, without the printable check: one written before it still loads.
export const grantInputSchema = z
  .object({
    ...grantFields,
    subject: grantFields.subject.superRefine(checkPrintable('subject')),
    subjectName: grantFields.subjectName.superRefine(checkPrintable('subjectName')),
    // By the one rule for an id a command names (server/exactIdFilters.ts), refused in its words: the Access page's
    // box is taken as typed (it was trimmed: spaces alone became a site-wide grant). Null: site-wide.
    endpointId: exactIdTarget('endpointId').nullable().default(null),
  })
  .strict()
  .refine((g) => g.role !== 'Agent' || g.endpointId !== null, { message: 'the Agent role is granted on one endpoint: name endpointId', path: ['endpointId'] });
export type GrantInput = z.input<typeof grantInputSchema>;

// Stored documents carry Cosmos's own fields (_etag, _ts...): not strict.
export const grantSchema = z.object({
  ...grantFields,
  id: z.string(),
  subjectName: z.string().nullable().default(null),
  grantedBy: z.string(),
  /** The granter's stable id (principalKey) beside the display name; absent on grants stored before it was recorded. */
  grantedById: z.string().optional(),
  grantedAt: z.string(),
});
export type Grant = z.output<typeof grantSchema>;

/**
 * A grant's endpoint must be one the catalog lists. Pre-granting an endpoint before it is deployed is not a
 * feature (docs/auth.md): a mistyped id would be stored, shown as a grant, and give nobody anything.
 */
export function requireGrantEndpoint(catalog: Pick<Catalog, 'endpoints'>, endpointId: string | null): void {
  if (endpointId !== null && !catalog.endpoints.some((e) => e.id === endpointId))
    throw badRequest(`endpoint ${endpointId} is not in the catalog: a grant names an endpoint the catalog lists (or none, for a site-wide role)`);
}

/** The same grant twice has the same id: granting is idempotent. */
export function grantId(g: { subjectKind: string; subject: string; role: string; endpointId: string | null }): string {
  return createHash('sha256').update(JSON.stringify([g.subjectKind, g.subject, g.role, g.endpointId])).digest('hex').slice(0, 32);
}

/** The grants that apply to a principal: those naming its id (with its kind) or one of its groups. */
export function grantsFor(principal: Principal, grants: readonly Grant[]): RoleAssignment[] {
  const groups = new Set(principal.groups);
  return grants
    .filter((g) => (g.subjectKind === 'group' ? groups.has(g.subject) : g.subjectKind === principal.kind && g.subject === principal.id))
    .map((g) => ({ role: g.role, endpointId: g.endpointId, source: `grant:${g.id}` }));
}

type Slot = ContainerSlot & { cache?: { at: number; grants: Promise<Grant[]> } };
const slot = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.grants')] ??= {}) as Slot;

function container(database: Database): Promise<Container> {
  // Grants read from another database are not these.
  if (slot.database !== database) slot.cache = undefined;
  return openContainer(slot, database, GRANTS_CONTAINER, '/subject');
}

async function readAll(database: Database): Promise<Grant[]> {
  const c = await container(database);
  try {
    const { resources } = await c.items
      .query({ query: 'SELECT * FROM c ORDER BY c.grantedAt DESC' }, { maxItemCount: MAX_GRANTS })
      .fetchNext();
    // A document that no longer parses is skipped rather than failing every request's authorization.
    return resources.flatMap((r) => {
      const p = grantSchema.safeParse(r);
      return p.success ? [p.data] : [];
    });
  } catch (err) {
    rethrowCosmos(err, 'role grants read');
  }
}

/** Every grant (cached for a few seconds). */
export function listGrants(database: Database, options: { fresh?: boolean } = {}): Promise<Grant[]> {
  const now = Date.now();
  if (!options.fresh && slot.database === database && slot.cache && now - slot.cache.at < GRANT_CACHE_MS) return slot.cache.grants;
  const p = readAll(database);
  slot.cache = { at: now, grants: p };
  p.catch(() => {
    if (slot.cache?.grants === p) slot.cache = undefined;
  });
  return p;
}

export async function addGrant(database: Database, input: GrantInput, grantedBy: string | { name: string; id: string }): Promise<Grant> {
  const g = grantInputSchema.parse(input);
  const by = typeof grantedBy === 'string' ? { grantedBy } : { grantedBy: grantedBy.name, grantedById: grantedBy.id };
  const grant: Grant = { ...g, subjectName: g.subjectName ?? null, id: grantId(g), ...by, grantedAt: new Date().toISOString() };
  const c = await container(database);
  try {
    await c.items.upsert(grant);
  } catch (err) {
    rethrowCosmos(err, 'role grant write');
  }
  slot.cache = undefined;
  return grant;
}

/** Removes a grant; returns it, or null when there was none with that id. */
export async function removeGrant(database: Database, id: string): Promise<Grant | null> {
  const existing = (await listGrants(database, { fresh: true })).find((g) => g.id === id);
  if (!existing) return null;
  const c = await container(database);
  try {
    await c.item(existing.id, existing.subject).delete();
  } catch (err) {
    if (cosmosStatus(err) !== 404) rethrowCosmos(err, 'role grant delete');
  }
  slot.cache = undefined;
  return existing;
}
