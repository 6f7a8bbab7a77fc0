// What the route handlers call: each function takes parsed, authorized input and returns the JSON to send.
import type { ConsoleContext } from './context.ts';
import { describeError, HttpError, notFound } from './http.ts';
import { log } from './log.ts';
import type { CommandResult, CommandTarget } from './manager/manager.ts';
import type { Auditor } from './manager/commands.ts';

export function requireEndpoint(ctx: ConsoleContext, endpointId: string): void {
  if (!ctx.catalog.endpoints.some((e) => e.id === endpointId))
    throw notFound(`endpoint ${endpointId} is not in the catalog`);
}

export function requireEventType(ctx: ConsoleContext, eventTypeId: string | undefined): void {
  if (eventTypeId !== undefined && !ctx.catalog.eventTypes.some((t) => t.id === eventTypeId))
    // Quoted: an id taken exactly may carry a space the page would collapse (" OrderPlaced" read as OrderPlaced).
    throw new HttpError(400, 'bad request', `event type ${JSON.stringify(eventTypeId)} is not in the catalog`);
}

export interface BulkResult {
  requested: number;
  sent: number;
  duplicates: number;
  failed: number;
  results: Array<
    | { eventId: string; outcome: CommandResult['outcome']; messageId: string }
    | { eventId: string; outcome: 'error'; status: number; error: string; detail: string }
  >;
}

/**
 * Runs one command per event, reporting each result as a click on that event would get it (sent, duplicate, the
 * 404 or 409 refusal). In lots (Manager.executeMany): the events' sessions and row counts are found in one query, then the rows
 * are read, claimed, sent and receipted a lot at a time; an event the lot cannot settle alone (unknown, a row in
 * several sessions, refused, already claimed) takes the one-event path, a few at a time (the broker and the store
 * are shared). The receipts are a click's (no bulk operation named).
 */
export async function runBulk(
  ctx: ConsoleContext,
  endpointId: string,
  eventIds: string[],
  spec: { kind: 'resubmit' } | { kind: 'skip' },
  auditor: Auditor,
): Promise<BulkResult> {
  const unique = [...new Set(eventIds)];
  // Without a session the event is decided as execute() decides it (which also finds an unknown event's 404).
  const sessions = await ctx.store.listEventSessions(endpointId, unique).catch(() => undefined);
  // The same query counted each event's rows (damaged ones too): the lot takes the count and does not query again.
  const targets: CommandTarget[] = unique.map((eventId) => {
    const s = sessions?.get(eventId);
    return s?.sessions.length === 1 ? { endpointId, eventId, sessionId: s.sessions[0]!, rows: s.rows } : { endpointId, eventId };
  });
  const settled = await ctx.manager.executeMany(targets, spec, auditor, undefined, { oneEventConcurrency: 4 });
  const results: BulkResult['results'] = settled.map((r, i) => {
    const eventId = unique[i]!;
    if (r.ok) return { eventId, outcome: r.value.outcome, messageId: r.value.messageId };
    // describeError, not `instanceof HttpError`: in the built console the Manager's errors can come from another
    // bundled copy of http.ts, and a refusal (404, 409) must read as the same refusal a single click gets.
    const d = describeError(r.error);
    if (d.internal) {
      const err = r.error;
      log.error({ endpointId, eventId, err: err instanceof Error ? { name: err.name, message: err.message } : String(err) }, 'bulk command failed');
      return { eventId, outcome: 'error', status: 500, error: 'internal error', detail: 'the command failed' };
    }
    return { eventId, outcome: 'error', status: d.status, error: d.error, detail: d.detail };
  });
  return {
    requested: unique.length,
    sent: results.filter((r) => r.outcome === 'sent').length,
    duplicates: results.filter((r) => r.outcome === 'duplicate').length,
    failed: results.filter((r) => r.outcome === 'error').length,
    results,
  };
}
