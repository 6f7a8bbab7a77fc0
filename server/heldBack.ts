// "holds back N" on the Endpoint page's rows that block their session: a failed event (or one handed off to an
// external job) blocks its session, and the session's later events are parked (Deferred) behind it until it is
// resubmitted, skipped or its handoff settles. The list shows how many, so an operator sees which failure matters
// most without opening each one.
//
// Counted per blocker, not per session: not every failure in a session blocks it (an Unsupported answer and a
// first-time permanent dead letter leave it open, packages/sdk/src/decide.ts), and the blocker may be a Pending
// handoff. Each parked row names its blocker: the subscriber parks it with the text "Session S is blocked by E",
// which the Resolver stores as the row's errorText; the SDK's contract writes and reads that text
// (blockedByReason / parseBlockedByReason), so the subscriber and this count cannot drift apart. `blockedBy` is read
// first for stores that set it, but the Resolver does not write it (blockerOf, lib/store/parkedBlocker.ts: the rule
// the event page's parked list uses too). A parked row that names no blocker (parked behind a replay in progress)
// is counted for nobody.
//
// One query per page of the list, not one per row: the parked rows of every session the page's candidate rows name
// are read (their session, blockedBy and errorText, in the endpoint's partition) and attributed here. The embedded
// Cosmos server has no GROUP BY (DESIGN.md §6), and a COUNT per row would be the N+1 this avoids. The read stops at
// PARKED_READ_CAP rows: a page whose sessions hold more parked events than that shows its counts as lower bounds
// ("holds back 5,000+"), and a row none of the read rows named gets no count at all (it may be the one the unread
// rows name), not a "none parked" that might be false.
//
// The counts are an aid, the list is the page: a failed count read (a throttled query, say) logs a warning and
// returns the page without counts, so an operator still sees the failures, not a 503 for the whole list.
import { PendingSubStatus, ResolutionStatus } from '@nimbus/sdk/contract';
import { blockerOf, CONTAINERS, FAILURE_STATUSES, type MessageStore, type ParkedRef } from '../lib/store/index.ts';
import { listEndpointEvents, type EventListItem, type EventListQuery } from './queries.ts';
import { log } from './log.ts';

export const PARKED_READ_CAP = 5000;

const FAILURE = new Set<string>(FAILURE_STATUSES);

/** A row that may block its session: a failure, or a Pending handoff. Rows outside a session block nothing. */
function mayBlock(i: Pick<EventListItem, 'status' | 'subStatus' | 'sessionId'>): boolean {
  if (i.sessionId === '') return false;
  return FAILURE.has(i.status) || (i.status === ResolutionStatus.Pending && i.subStatus === PendingSubStatus.Handoff);
}

const key = (sessionId: string, eventId: string) => `${sessionId}\u0000${eventId}`;

/**
 * The page's rows with `holdsBack` set from the parked rows read (`capped`: the read stopped at its cap). Only a row
 * that may block its session gets one, counting the parked rows that name it; when the read was capped, a row no
 * read row names is left without one (unknown), and the others' counts are lower bounds.
 */
export function attributeParked<I extends EventListItem>(items: I[], parked: ParkedRef[], capped: boolean): I[] {
  const counts = new Map<string, number>();
  for (const p of parked) {
    const blocker = blockerOf(p);
    if (blocker !== null) counts.set(key(p.sessionId, blocker), (counts.get(key(p.sessionId, blocker)) ?? 0) + 1);
  }
  return items.map((i) => {
    if (!mayBlock(i)) return i;
    const count = counts.get(key(i.sessionId, i.eventId)) ?? 0;
    if (capped && count === 0) return i;
    return { ...i, holdsBack: { count, atLeast: capped } };
  });
}

function asParkedRef(d: unknown): ParkedRef | null {
  if (typeof d !== 'object' || d === null) return null;
  const { sessionId, blockedBy, errorText } = d as Record<string, unknown>;
  if (typeof sessionId !== 'string') return null;
  return {
    sessionId,
    blockedBy: typeof blockedBy === 'string' ? blockedBy : null,
    errorText: typeof errorText === 'string' ? errorText : null,
  };
}

/** The page's blocking rows with `holdsBack` set (other rows are left as they are). */
export async function withHeldBack<P extends { items: EventListItem[] }>(store: MessageStore, endpointId: string, page: P): Promise<P> {
  const sessions = [...new Set(page.items.filter(mayBlock).map((i) => i.sessionId))];
  if (sessions.length === 0) return page;
  let docs: unknown[];
  try {
    const r = await store.database
      .container(CONTAINERS.events)
      .items.query<unknown>(
        {
          query: `SELECT TOP ${PARKED_READ_CAP} c.sessionId, c.blockedBy, c.errorText FROM c WHERE c.endpointId = @ep AND c.status = @parked AND ARRAY_CONTAINS(@sessions, c.sessionId)`,
          parameters: [
            { name: '@ep', value: endpointId },
            { name: '@parked', value: ResolutionStatus.Deferred },
            { name: '@sessions', value: sessions },
          ],
        },
        { partitionKey: [endpointId] },
      )
      .fetchAll();
    docs = r.resources;
  } catch (err) {
    log.warn({ endpointId, err: (err as Error)?.message ?? String(err) }, 'parked counts unreadable; the list is shown without them');
    return page;
  }
  const parked = docs.map(asParkedRef).filter((p): p is ParkedRef => p !== null);
  return { ...page, items: attributeParked(page.items, parked, docs.length >= PARKED_READ_CAP) };
}

/** The Endpoint page's list as its route answers it: a page of rows, with the blocking rows' counts. */
export async function endpointEventsPage(store: MessageStore, endpointId: string, filter: EventListQuery) {
  return withHeldBack(store, endpointId, await listEndpointEvents(store, endpointId, filter));
}
