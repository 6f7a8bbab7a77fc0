// What the route handlers call: each function takes parsed, authorized input and returns the JSON to send.
import type { ConsoleContext } from './context.ts';
import { notFound } from './http.ts';
import type { CommandResult } from './manager/manager.ts';
import type { CommandSpec } from './manager/commands.ts';
import { HttpError } from './http.ts';

export function requireEndpoint(ctx: ConsoleContext, endpointId: string): void {
  if (!ctx.catalog.endpoints.some((e) => e.id === endpointId))
    throw notFound(`endpoint ${endpointId} is not in the catalog`);
}

export function requireEventType(ctx: ConsoleContext, eventTypeId: string | undefined): void {
  if (eventTypeId !== undefined && !ctx.catalog.eventTypes.some((t) => t.id === eventTypeId))
    throw new HttpError(400, 'bad request', `event type ${eventTypeId} is not in the catalog`);
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

/** Runs one command per event, a few at a time (the broker and the store are shared), reporting each result. */
export async function runBulk(
  ctx: ConsoleContext,
  endpointId: string,
  eventIds: string[],
  spec: CommandSpec,
  auditor: string,
): Promise<BulkResult> {
  const unique = [...new Set(eventIds)];
  const results: BulkResult['results'] = new Array(unique.length);
  let next = 0;
  const worker = async () => {
    while (next < unique.length) {
      const i = next++;
      const eventId = unique[i]!;
      try {
        const r = await ctx.manager.execute(endpointId, eventId, spec, auditor);
        results[i] = { eventId, outcome: r.outcome, messageId: r.messageId };
      } catch (err) {
        if (err instanceof HttpError)
          results[i] = { eventId, outcome: 'error', status: err.status, error: err.message, detail: err.detail };
        else results[i] = { eventId, outcome: 'error', status: 500, error: 'internal error', detail: 'the command failed' };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, unique.length) }, worker));
  return {
    requested: unique.length,
    sent: results.filter((r) => r.outcome === 'sent').length,
    duplicates: results.filter((r) => r.outcome === 'duplicate').length,
    failed: results.filter((r) => r.outcome === 'error').length,
    results,
  };
}
