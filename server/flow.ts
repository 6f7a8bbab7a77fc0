// The Flow view's data: the catalog's producers → event types → consumers, with each consumer's events of each
// type over a recent period counted by current status. One bounded query per consumer endpoint (its partition),
// aggregated here: the embedded Cosmos server has no GROUP BY (DESIGN.md §6).
import { z } from 'zod';
import type { Catalog } from '@nimbus/sdk/contract';
import { CONTAINERS, queryAll, type MessageStore } from '../lib/store/index.ts';
import { exactIdFilter } from './exactIdFilterSchema.ts';

/** Rows read per consumer at most; beyond it the counts are marked truncated (a lower bound). */
export const FLOW_ROW_LIMIT = 5000;

export const flowQuerySchema = z.object({
  period: z.coerce.number().int().refine((v) => [5, 15, 60, 240, 1440].includes(v), 'period is 5, 15, 60, 240 or 1440 minutes').default(15),
  /** Exact, spaces and all, as on the Endpoint page (server/exactIdFilters.ts): " OrderPlaced" is no type of the catalog. */
  eventTypeId: exactIdFilter('eventTypeId'),
});
export type FlowQuery = z.output<typeof flowQuerySchema>;

export interface FlowCounts {
  total: number;
  completed: number;
  failed: number;
  deferred: number;
  deadLettered: number;
  unsupported: number;
  pending: number;
  skipped: number;
}

export interface FlowSnapshot {
  periodMinutes: number;
  from: string;
  eventTypes: Array<{
    eventTypeId: string;
    producers: string[];
    consumers: Array<{ endpointId: string; counts: FlowCounts; truncated: boolean }>;
  }>;
}

const rowSchema = z.object({ eventTypeId: z.string().nullable(), status: z.string() });
const KEY: Record<string, keyof FlowCounts> = {
  Completed: 'completed',
  Failed: 'failed',
  Deferred: 'deferred',
  DeadLettered: 'deadLettered',
  Unsupported: 'unsupported',
  Pending: 'pending',
  Skipped: 'skipped',
};
const zero = (): FlowCounts => ({ total: 0, completed: 0, failed: 0, deferred: 0, deadLettered: 0, unsupported: 0, pending: 0, skipped: 0 });

export async function flowSnapshot(store: MessageStore, catalog: Catalog, q: FlowQuery, now = new Date()): Promise<FlowSnapshot> {
  const from = new Date(now.getTime() - q.period * 60_000).toISOString();
  const types = catalog.eventTypes.filter((t) => !q.eventTypeId || t.id === q.eventTypeId);
  const consumers = catalog.endpoints.filter((e) => e.consumes.some((c) => types.some((t) => t.id === c)));
  const perConsumer = new Map<string, { counts: Map<string, FlowCounts>; truncated: boolean }>();
  await Promise.all(
    consumers.map(async (ep) => {
      const parameters = [
        { name: '@ep', value: ep.id },
        { name: '@from', value: from },
      ];
      let where = 'c.endpointId = @ep AND c.updatedAt >= @from';
      if (q.eventTypeId) {
        where += ' AND c.eventTypeId = @type';
        parameters.push({ name: '@type', value: q.eventTypeId });
      }
      const r = await queryAll(
        store.database.container(CONTAINERS.events),
        { query: `SELECT c.eventTypeId, c.status FROM c WHERE ${where}`, parameters },
        rowSchema,
        { partitionKey: [ep.id], limit: FLOW_ROW_LIMIT },
        'flow counts',
      );
      const counts = new Map<string, FlowCounts>();
      for (const row of r.items) {
        const key = row.eventTypeId ?? '';
        const c = counts.get(key) ?? zero();
        c.total++;
        const k = KEY[row.status];
        if (k) c[k]++;
        counts.set(key, c);
      }
      perConsumer.set(ep.id, { counts, truncated: r.truncated });
    }),
  );
  return {
    periodMinutes: q.period,
    from,
    eventTypes: types.map((t) => ({
      eventTypeId: t.id,
      producers: catalog.endpoints.filter((e) => e.produces.includes(t.id)).map((e) => e.id),
      consumers: catalog.endpoints
        .filter((e) => e.consumes.includes(t.id))
        .map((e) => {
          const pc = perConsumer.get(e.id);
          return { endpointId: e.id, counts: pc?.counts.get(t.id) ?? zero(), truncated: pc?.truncated ?? false };
        }),
    })),
  };
}
