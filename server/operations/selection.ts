// What a bulk operation acts on: a filter over status rows (the Endpoint page's filter, a failure group, or listed
// event ids), resolved ONCE when the operation is created into the list of rows it names. The frozen list is
// what the confirmation counted and what the job acts on: events failing afterwards are not swept in.
import type { SqlParameter } from '@azure/cosmos';
import { z } from 'zod';
import { ResolutionStatus, resolutionStatusSchema } from '@nimbus/sdk/contract';
import { CONTAINERS, rethrowCosmos, type MessageStore } from '../../lib/store/index.ts';
import { inScope, type ReadScope } from '../auth/readScope.ts';
import { badRequest } from '../http.ts';
import { exactIdFilter, exactIdTarget } from '../exactIdFilterSchema.ts';

/** Most events one operation may name (a larger selection is refused: narrow the filter). */
export const MAX_SELECTION = 100_000;

const iso = z.iso.datetime({ offset: true });
export const selectionSchema = z
  .object({
    /**
     * The endpoint the operation acts on, by the rule for an id a command names: " billing" (endpoint ids hold no
     * spaces) and '' are a 400. Left out, the selection is its failure group's, on every endpoint the caller may act on;
     * '' was a 400 before the rule and stays one, never read as "every endpoint".
     */
    endpointId: exactIdTarget('endpointId').optional(),
    status: z.union([resolutionStatusSchema, z.literal('Handoff')]).array().max(10).optional(),
    groupId: z.string().regex(/^[0-9a-f]{20}$/, 'a failure group id is 20 hex digits').optional(),
    /**
     * Exact, spaces and all, by the list's own rule (server/exactIdFilterSchema.ts): "select all matching" must act on
     * the rows the list shows. Empty is no filter, as on the list; spaces alone and over-long ids are refused.
     */
    eventTypeId: exactIdFilter('eventTypeId'),
    sessionId: exactIdFilter('sessionId'),
    updatedFrom: iso.optional(),
    updatedBefore: iso.optional(),
    errorText: z.string().trim().min(1).max(200).optional(),
    eventIds: z.string().min(1).max(128).array().min(1).max(10_000).optional(),
  })
  .strict()
  .refine((s) => s.eventIds === undefined || s.endpointId !== undefined, { message: 'eventIds need an endpointId' })
  .refine((s) => s.endpointId !== undefined || s.groupId !== undefined, {
    message: 'a selection names an endpoint or a failure group',
  });
export type Selection = z.output<typeof selectionSchema>;

/** Rows a resubmit or skip can act on, when the selection names no status. */
export const ACTIONABLE = [ResolutionStatus.Failed, ResolutionStatus.DeadLettered, ResolutionStatus.Unsupported, 'Handoff'] as const;

export interface SelectedRow {
  endpointId: string;
  eventId: string;
  /**
   * The session of the row selected: the runner reads that row by a point read, in bulk. Absent in jobs frozen
   * before it was stored; the Manager then finds the event's rows through its history.
   */
  sessionId?: string;
}

/** The WHERE clause of a selection (also the export's: the same filter gives the same rows). */
export function selectionWhere(sel: Selection, scope: ReadScope, skipEndpoints: readonly string[] = []): { where: string[]; parameters: SqlParameter[] } {
  const where: string[] = [];
  const parameters: SqlParameter[] = [];
  if (sel.endpointId !== undefined) {
    where.push('c.endpointId = @ep');
    parameters.push({ name: '@ep', value: sel.endpointId });
  } else if (!scope.all) {
    where.push('ARRAY_CONTAINS(@eps, c.endpointId)');
    parameters.push({ name: '@eps', value: scope.endpointIds });
  }
  if (skipEndpoints.length > 0) {
    where.push('NOT ARRAY_CONTAINS(@skipEps, c.endpointId)');
    parameters.push({ name: '@skipEps', value: [...skipEndpoints] });
  }
  const statuses = sel.status && sel.status.length > 0 ? sel.status : [...ACTIONABLE];
  const plain = statuses.filter((s) => s !== 'Handoff');
  const parts: string[] = [];
  if (plain.length > 0) {
    parts.push('ARRAY_CONTAINS(@statuses, c.status)');
    parameters.push({ name: '@statuses', value: plain });
  }
  if (statuses.includes('Handoff')) parts.push(`(c.status = '${ResolutionStatus.Pending}' AND c.subStatus = 'Handoff')`);
  where.push(`(${parts.join(' OR ')})`);
  const eq = (field: string, name: string, value: string | undefined) => {
    if (value === undefined) return;
    where.push(`c.${field} = @${name}`);
    parameters.push({ name: `@${name}`, value });
  };
  eq('fingerprint', 'group', sel.groupId);
  eq('eventTypeId', 'type', sel.eventTypeId);
  eq('sessionId', 'session', sel.sessionId);
  if (sel.updatedFrom) {
    where.push('c.updatedAt >= @from');
    parameters.push({ name: '@from', value: new Date(sel.updatedFrom).toISOString() });
  }
  if (sel.updatedBefore) {
    where.push('c.updatedAt < @before');
    parameters.push({ name: '@before', value: new Date(sel.updatedBefore).toISOString() });
  }
  if (sel.errorText) {
    where.push('IS_STRING(c.errorText) AND CONTAINS(LOWER(c.errorText), @q)');
    parameters.push({ name: '@q', value: sel.errorText.toLowerCase() });
  }
  if (sel.eventIds) {
    where.push('ARRAY_CONTAINS(@ids, c.eventId)');
    parameters.push({ name: '@ids', value: [...new Set(sel.eventIds)] });
  }
  return { where, parameters };
}

/** How a selection is frozen: which endpoints' rows the job may hold, and the most it may hold. */
export interface FreezeOptions {
  /**
   * Whether the rows on an endpoint are kept (the caller may act there, server/operations/actableRows.ts); the rows
   * not kept are only counted, per endpoint. Every row is kept without it.
   */
  keep?: (endpointId: string) => boolean;
  /** The most rows kept (MAX_SELECTION); lower only in tests. */
  max?: number;
  /**
   * Every endpoint rows may be on (the catalog's). With `keep`, rows are read only on the readable endpoints `keep`
   * accepts, and each readable endpoint it refuses has its events counted apart, at most `max` of them: a caller
   * who acts on one small endpoint and reads every other must not make the freeze read every row of a site-wide
   * group (a scan past the limit used to stop it at 100,001 rows).
   */
  endpoints?: readonly string[];
  /** Endpoints whose rows are not read at all (those `endpoints` and `keep` leave out, counted apart). */
  skip?: readonly string[];
}

/** The rows frozen, and the count of events left out per endpoint (those `keep` refused). */
export interface FrozenSelection {
  rows: SelectedRow[];
  dropped: Map<string, number>;
}

/**
 * The rows the selection names now, oldest update first (the order they are acted on), one per endpoint and
 * event (an event with rows in two sessions is one command: the Manager picks the row the command fits).
 */
export async function freezeSelection(store: MessageStore, sel: Selection, scope: ReadScope): Promise<SelectedRow[]> {
  return (await freezeActable(store, sel, scope)).rows;
}

/**
 * freezeSelection, keeping only the rows on endpoints `keep` accepts. The limit counts the rows kept: rows the
 * job will never act on (an endpoint the caller may only read) must not make a group too big to act on where the
 * caller may - "Resubmit all" names no endpoint, so the caller could not narrow it.
 */
export async function freezeActable(store: MessageStore, sel: Selection, scope: ReadScope, opts: FreezeOptions = {}): Promise<FrozenSelection> {
  const max = opts.max ?? MAX_SELECTION;
  const dropped = new Map<string, number>();
  const { keep, endpoints } = opts;
  if (keep && endpoints && sel.endpointId === undefined) {
    const readable = endpoints.filter((e) => inScope(scope, e));
    const refused = readable.filter((e) => !keep(e));
    if (refused.length > 0) {
      // Every other row is read as before (endpoints outside the catalog included, `keep` deciding for them).
      const frozen = await freezeActable(store, sel, scope, { keep, max, skip: refused });
      for (const e of refused) {
        const events = await countSelectedEvents(store, { ...sel, endpointId: e }, scope, max);
        if (events > 0) frozen.dropped.set(e, events);
      }
      return frozen;
    }
  }
  if (sel.endpointId !== undefined && !inScope(scope, sel.endpointId)) return { rows: [], dropped };
  if (!scope.all && scope.endpointIds.length === 0) return { rows: [], dropped };
  const { where, parameters } = selectionWhere(sel, scope, opts.skip);
  const iterator = store.database.container(CONTAINERS.events).items.query<{ e: string; v: string; s: string }>(
    { query: `SELECT c.endpointId AS e, c.eventId AS v, c.sessionId AS s FROM c WHERE ${where.join(' AND ')} ORDER BY c.updatedAt ASC`, parameters },
    { maxItemCount: 10_000, ...(sel.endpointId !== undefined ? { partitionKey: [sel.endpointId] } : {}) },
  );
  const seen = new Set<string>();
  const out: SelectedRow[] = [];
  try {
    while (iterator.hasMoreResults()) {
      for (const r of (await iterator.fetchNext()).resources ?? []) {
        const key = `${r.e}\u0000${r.v}`;
        if (seen.has(key)) continue;
        seen.add(key);
        if (opts.keep && !opts.keep(r.e)) {
          dropped.set(r.e, (dropped.get(r.e) ?? 0) + 1);
          continue;
        }
        out.push({ endpointId: r.e, eventId: r.v, sessionId: r.s });
        if (out.length > max)
          throw badRequest(`the selection names more than ${max.toLocaleString('en-US')} events; narrow the filter`);
      }
    }
  } catch (err) {
    if (err instanceof Error && err.name === 'HttpError') throw err;
    rethrowCosmos(err, 'selection');
  }
  return { rows: out, dropped };
}

/** The distinct events a one-endpoint selection names, counted up to `cap` (the rows past it are not read). */
async function countSelectedEvents(store: MessageStore, sel: Selection & { endpointId: string }, scope: ReadScope, cap: number): Promise<number> {
  const { where, parameters } = selectionWhere(sel, scope);
  const iterator = store.database
    .container(CONTAINERS.events)
    .items.query<string>({ query: `SELECT VALUE c.eventId FROM c WHERE ${where.join(' AND ')}`, parameters }, { maxItemCount: 10_000, partitionKey: [sel.endpointId] });
  const events = new Set<string>();
  try {
    while (events.size < cap && iterator.hasMoreResults()) for (const id of (await iterator.fetchNext()).resources ?? []) events.add(id);
  } catch (err) {
    rethrowCosmos(err, 'selection');
  }
  return Math.min(events.size, cap);
}
