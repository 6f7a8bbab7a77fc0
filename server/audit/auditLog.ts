// The console's audit log: every mutating action (what it was, by whom, with which role, and how it ended) and
// every refused attempt (401, 403 for role, origin or principal kind, 429). Its own Cosmos container `auditLog`,
// partitioned by month (`/month`, e.g. `2026-12`):
// - the Audit page reads newest first, almost always within a recent time range: a range inside one month is a
//   single-partition query, longer ranges fan out over a handful of months, never over every endpoint or user;
// - writes spread over time and no logical partition grows without bound (Cosmos caps one at 20 GB), and
//   retention can drop a whole month;
// - partitioning by endpoint or by user would fit one filter but leave site-wide actions (reconcile, grants,
//   heartbeat settings) without a natural key, and make the unfiltered page fan out over every partition.
// The per-event trail on the event page stays in the store's `audits` container (lib/store recordAudit).
import { randomUUID } from 'node:crypto';
import type { Container, Database, SqlParameter } from '@azure/cosmos';
import { z } from 'zod';
import { queryPage, rethrowCosmos, type Page } from '../../lib/store/index.ts';
import { openContainer, type ContainerSlot } from '../../lib/store/containers.ts';
import { exactIdFilter } from '../exactIdFilterSchema.ts';
import { AUDIT_TEXT_FILTER_MAX } from './auditTextFilters.ts';
import { shrinkDetails } from './shrinkDetails.ts';

export const AUDIT_CONTAINER = 'auditLog';

/**
 * `cancelled`: the operator stopped it, or it was prepared and never started (a bulk job cancelled in its
 * confirmation, or never confirmed) - neither a success nor a failure.
 */
export const auditOutcomeSchema = z.enum(['succeeded', 'failed', 'denied', 'cancelled']);
export type AuditOutcome = z.output<typeof auditOutcomeSchema>;

export const auditRecordSchema = z.object({
  id: z.string(),
  month: z.string(),
  at: z.string(),
  actorKind: z.string(),
  actorId: z.string(),
  actorName: z.string(),
  /** The caller's effective roles at the time (`Owner`, `Operator:billing`), or `none`. */
  roles: z.string(),
  action: z.string(),
  endpointId: z.string().nullable(),
  /**
   * Every endpoint an action over several names (a bulk job, its controls, a reconcile): endpointId is then null
   * and the entry is found under each of them, by the endpoint filter and by a per-endpoint reader alike - it was
   * filed under the last endpoint authorized, where the others' readers never saw it. Absent for one endpoint.
   */
  endpoints: z.array(z.string()).optional(),
  /**
   * Never stored: how many of `endpoints` an answer to a per-endpoint reader leaves unnamed (readerScope.ts), the
   * entry's details then cut down to that reader's endpoints.
   */
  otherEndpoints: z.number().int().optional(),
  eventId: z.string().nullable(),
  /** What else the action named: a subscription (`topic/subscription`), a grant, an operation. */
  target: z.string().nullable(),
  outcome: auditOutcomeSchema,
  /** The HTTP status the caller got. */
  status: z.number().int(),
  /** Why it was refused or failed. */
  reason: z.string().nullable(),
  /** Small structured details (a payload diff, counts, the settings changed); never a message body. */
  details: z.record(z.string(), z.unknown()).nullable(),
});
export type AuditRecord = z.output<typeof auditRecordSchema>;
export type AuditRecordInput = Omit<AuditRecord, 'id' | 'month' | 'at' | 'otherEndpoints'> & { at?: string };

/** Details are capped: bigger ones are shortened where they are largest (shrinkDetails.ts) rather than bloating the log. */
export const MAX_DETAILS_CHARS = 8_000;

const slot = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.auditLog')] ??= {}) as ContainerSlot;

export function auditContainer(database: Database): Promise<Container> {
  return openContainer(slot, database, AUDIT_CONTAINER, '/month');
}

export async function writeAudit(database: Database, input: AuditRecordInput): Promise<AuditRecord> {
  const at = input.at ?? new Date().toISOString();
  const details = input.details === null ? null : shrinkDetails(input.details, MAX_DETAILS_CHARS);
  const record: AuditRecord = { ...input, details, id: randomUUID(), at, month: at.slice(0, 7) };
  const c = await auditContainer(database);
  try {
    await c.items.create(record);
  } catch (err) {
    rethrowCosmos(err, 'audit log write');
  }
  return record;
}

export const auditQuerySchema = z
  .object({
    // The ids are taken exactly, spaces and all, by the rule of every id filter (server/exactIdFilters.ts): an event
    // id is whatever its publisher set, so " E1" is another event than "E1" here as on the Endpoint page.
    endpointId: exactIdFilter('endpointId'),
    eventId: exactIdFilter('eventId'),
    /**
     * A user's name or id, exactly, but trimmed: what an operator types of a sign-in name, as the grants store
     * their subjects (server/auth/grants.ts), not an id a publisher set.
     */
    user: z.string().trim().min(1).max(AUDIT_TEXT_FILTER_MAX.user).optional(),
    /** Any part of the action's name, ignoring case (`skip`: `skip` and `operation.skip`). */
    action: z.string().trim().min(1).max(AUDIT_TEXT_FILTER_MAX.action).optional(),
    /**
     * Leaves out the actions whose name contains any of these comma-separated parts, ignoring case
     * (`agent.receive,agent.settle`: the demo's ledger agent writes one of them every few seconds).
     */
    notAction: z.string().trim().min(1).max(AUDIT_TEXT_FILTER_MAX.notAction).optional(),
    outcome: auditOutcomeSchema.optional(),
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    pageSize: z.coerce.number().int().min(1).max(200).default(50),
    continuation: z.string().max(8_000).optional(),
  })
  .strict()
  .refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) <= Date.parse(q.to), 'from is after to');
export type AuditQuery = z.output<typeof auditQuerySchema>;

/**
 * One page of the audit log, newest first, with the filters given. `endpointIds` limits it to those endpoints'
 * entries, an entry over several endpoints included when one of them is listed (site-level entries, without an
 * endpoint, are left out): a caller with roles on single endpoints.
 */
export async function queryAudit(database: Database, q: AuditQuery, endpointIds?: readonly string[]): Promise<Page<AuditRecord>> {
  const where: string[] = [];
  const parameters: SqlParameter[] = [];
  if (endpointIds !== undefined) {
    // An entry over several endpoints is one of the caller's if any of them is readable: the action touched it.
    where.push('(ARRAY_CONTAINS(@readable, c.endpointId) OR EXISTS(SELECT VALUE e FROM e IN c.endpoints WHERE ARRAY_CONTAINS(@readable, e)))');
    parameters.push({ name: '@readable', value: [...endpointIds] });
  }
  const eq = (field: string, name: string, value: string | undefined) => {
    if (value === undefined) return;
    where.push(`c.${field} = @${name}`);
    parameters.push({ name: `@${name}`, value });
  };
  if (q.endpointId !== undefined) {
    where.push('(c.endpointId = @endpoint OR ARRAY_CONTAINS(c.endpoints, @endpoint))');
    parameters.push({ name: '@endpoint', value: q.endpointId });
  }
  eq('eventId', 'event', q.eventId);
  // Any part of the action's name, ignoring case: an operator looking for skips types "Skip" and must also get the
  // bulk jobs' `operation.skip`; an exact match answered "nothing recorded" to both.
  if (q.action !== undefined) {
    where.push('CONTAINS(LOWER(c.action), @action)');
    parameters.push({ name: '@action', value: q.action.toLowerCase() });
  }
  // Excluded: each part is a parameter of its own (never spliced into the query text).
  const excluded = [...new Set((q.notAction ?? '').split(',').map((part) => part.trim().toLowerCase()).filter((part) => part !== ''))];
  excluded.forEach((part, i) => {
    where.push(`NOT CONTAINS(LOWER(c.action), @notAction${i})`);
    parameters.push({ name: `@notAction${i}`, value: part });
  });
  eq('outcome', 'outcome', q.outcome);
  if (q.user !== undefined) {
    where.push('(c.actorName = @user OR c.actorId = @user)');
    parameters.push({ name: '@user', value: q.user });
  }
  const from = q.from === undefined ? undefined : new Date(q.from).toISOString();
  const to = q.to === undefined ? undefined : new Date(q.to).toISOString();
  if (from !== undefined) {
    where.push('c.at >= @from');
    parameters.push({ name: '@from', value: from });
  }
  if (to !== undefined) {
    where.push('c.at <= @to');
    parameters.push({ name: '@to', value: to });
  }
  const query = `SELECT * FROM c${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY c.at DESC`;
  // A range inside one month is answered by that month's partition alone.
  const month = from !== undefined && to !== undefined && from.slice(0, 7) === to.slice(0, 7) ? from.slice(0, 7) : undefined;
  const c = await auditContainer(database);
  return queryPage(
    c,
    { query, parameters },
    auditRecordSchema,
    { pageSize: q.pageSize, continuationToken: q.continuation, ...(month !== undefined ? { partitionKey: month } : {}) },
    'audit log query',
  );
}
