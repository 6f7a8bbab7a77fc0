// "holds back N" on the Endpoint page's failure rows: a failed event blocks its session, and the session's later
// events are parked (Deferred) behind it until it is resubmitted or skipped. The list shows how many, so an
// operator sees which failure matters most without opening each one.
//
// One query per page of the list, not one per row: the parked rows of every session the page's failure rows name
// are read as their session ids alone (`SELECT VALUE c.sessionId`, in the endpoint's partition) and counted here.
// The embedded Cosmos server has no GROUP BY (DESIGN.md §6), and a COUNT per session would be the N+1 this avoids.
// The read stops at PARKED_READ_CAP ids: a page whose sessions hold more parked events than that shows its counts
// as lower bounds ("holds back 5,000+") instead of reading without bound.
//
// The counts are an aid, the list is the page: a failed count read (a throttled query, say) logs a warning and
// returns the page without counts, so an operator still sees the failures, not a 503 for the whole list.
import { ResolutionStatus } from '@nimbus/sdk/contract';
import { CONTAINERS, FAILURE_STATUSES, type MessageStore } from '../lib/store/index.ts';
import type { EventListItem } from './queries.ts';
import { log } from './log.ts';

export const PARKED_READ_CAP = 5000;

const FAILURE = new Set<string>(FAILURE_STATUSES);

/** The page's failure rows with `holdsBack` set (rows outside a session, or other statuses, are left as they are). */
export async function withHeldBack<P extends { items: EventListItem[] }>(store: MessageStore, endpointId: string, page: P): Promise<P> {
  const sessions = [...new Set(page.items.filter((i) => FAILURE.has(i.status) && i.sessionId !== '').map((i) => i.sessionId))];
  if (sessions.length === 0) return page;
  let ids: unknown[];
  try {
    const r = await store.database
      .container(CONTAINERS.events)
      .items.query<unknown>(
        {
          query: `SELECT TOP ${PARKED_READ_CAP} VALUE c.sessionId FROM c WHERE c.endpointId = @ep AND c.status = @parked AND ARRAY_CONTAINS(@sessions, c.sessionId)`,
          parameters: [
            { name: '@ep', value: endpointId },
            { name: '@parked', value: ResolutionStatus.Deferred },
            { name: '@sessions', value: sessions },
          ],
        },
        { partitionKey: [endpointId] },
      )
      .fetchAll();
    ids = r.resources;
  } catch (err) {
    log.warn({ endpointId, err: (err as Error)?.message ?? String(err) }, 'parked counts unreadable; the list is shown without them');
    return page;
  }
  const counts = new Map<string, number>();
  for (const id of ids) if (typeof id === 'string') counts.set(id, (counts.get(id) ?? 0) + 1);
  const atLeast = ids.length >= PARKED_READ_CAP;
  return {
    ...page,
    items: page.items.map((i) =>
      FAILURE.has(i.status) && i.sessionId !== '' ? { ...i, holdsBack: { count: counts.get(i.sessionId) ?? 0, atLeast } } : i,
    ),
  };
}
