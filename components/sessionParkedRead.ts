// How the event page's command dialogs (components/SessionFate.tsx) read a session's parked rows through the
// Endpoint page's list route: which sessions it can be asked for exactly, and reading until a row beyond the counted
// ones is seen, so "200+" means more than 200; and whether the events those rows name as their blocker still hold the
// session (a row can name a blocker settled long ago: readBlockerStandings). Pure (no React, no server), so it runs in
// the browser and in unit tests.
import { PendingSubStatus, ResolutionStatus } from '@nimbus/sdk/contract/names';
import { exactIdProblem, type ExactIdFilter } from '../server/exactIdFilters.ts';

/**
 * Whether the Endpoint page's list route can be asked for exactly this session's rows. Such a session is not read;
 * '' is no session.
 */
export function sessionListable(sessionId: string): boolean {
  return listableId('sessionId', sessionId);
}

/**
 * Whether the list route's session or event id filter takes `id` exactly: both (server/queries.ts
 * eventListQuerySchema) take the id as it is, spaces and all, but refuse one of spaces alone (400) and one longer
 * than 128 characters (server/exactIdFilters.ts); '' is no filter, so no read of one id.
 */
function listableId(field: ExactIdFilter, id: string): boolean {
  return id !== '' && exactIdProblem(field, id) === undefined;
}

/** The list route's largest page (server/queries.ts eventListQuerySchema, `pageSize`). */
export const LIST_PAGE_MAX = 200;
/** How many of a session's parked rows the dialogs count. */
export const SESSION_PARKED_LIMIT = 200;
/** Most list reads per opening: Cosmos may end a page short with a continuation, or a full one with a continuation to nothing. */
const SESSION_PARKED_MAX_PAGES = 4;

/** One page of the list route, as it answers. */
export interface ListPage<T> {
  items: T[];
  continuation: string | null;
}

/**
 * The first SESSION_PARKED_LIMIT of a session's parked rows, and whether more are parked: read until one row beyond
 * the limit is seen or no continuation is left (as the event page's own parked list does, server/queries.ts
 * searchList), since a continuation alone can lead nowhere and would say "200+" for exactly 200. The first read asks
 * for a full page (the route's maximum, 200); a second, for the one row beyond it, only when that page came full
 * with a continuation. `more` is true without a row beyond the limit only when the reads stop at their cap with a
 * continuation left (Cosmos answering page after page short), where rows may still follow.
 */
export async function readSessionParked<T>(
  read: (pageSize: number, continuation: string | undefined) => Promise<ListPage<T>>,
): Promise<{ rows: T[]; more: boolean }> {
  const rows: T[] = [];
  let continuation: string | null = null;
  for (let pages = 0; pages < SESSION_PARKED_MAX_PAGES; pages++) {
    const page = await read(Math.min(LIST_PAGE_MAX, SESSION_PARKED_LIMIT + 1 - rows.length), continuation ?? undefined);
    rows.push(...page.items);
    continuation = page.continuation;
    if (rows.length > SESSION_PARKED_LIMIT || continuation === null) break;
  }
  return { rows: rows.slice(0, SESSION_PARKED_LIMIT), more: rows.length > SESSION_PARKED_LIMIT || continuation !== null };
}

/**
 * Whether an event that parked rows name as their blocker still holds its session: 'blocking' (Failed, DeadLettered
 * or a Pending handoff: it has not been resubmitted, skipped or completed), 'settled' (Completed or Skipped: the
 * session was released from it, so rows still naming it are leftovers of its replay, a parked copy lost on the way,
 * which the replay skipped with a ReplayGap notice and whose row stays Deferred), or 'unknown' (not read, no row of
 * it in the session, or a status that says neither, such as a Pending resubmit in flight).
 */
export type BlockerStanding = 'blocking' | 'settled' | 'unknown';

/** The standing of event `eventId` of session `sessionId` from list rows (only its own rows count, whatever the list returned). */
export function blockerStanding(
  rows: ReadonlyArray<{ eventId: string; sessionId: string; status: string; subStatus: string | null }>,
  { eventId, sessionId }: { eventId: string; sessionId: string },
): BlockerStanding {
  const own = rows.filter((r) => r.eventId === eventId && r.sessionId === sessionId);
  if (own.length === 0) return 'unknown';
  const blocking = (r: (typeof own)[number]) =>
    r.status === ResolutionStatus.Failed ||
    r.status === ResolutionStatus.DeadLettered ||
    (r.status === ResolutionStatus.Pending && r.subStatus === PendingSubStatus.Handoff);
  if (own.some(blocking)) return 'blocking';
  const settled = own.every((r) => r.status === ResolutionStatus.Completed || r.status === ResolutionStatus.Skipped);
  return settled ? 'settled' : 'unknown';
}

/** How many of the named blockers the dialogs read, the first ones named: one small read each, once per opening. */
export const BLOCKERS_READ_MAX = 3;
/** Rows one blocker read asks for: an event has one row per session, so a few leave room for its other sessions' rows. */
const BLOCKER_PAGE_SIZE = 10;

/**
 * The standings of the first BLOCKERS_READ_MAX `blockers` of session `sessionId`, each read with the list route's
 * exact eventId and sessionId filters (`read` is that route), spaces and all. An id the route refuses (spaces alone,
 * over 128 characters) is not asked for: 'unknown'. Blockers beyond the first few are left out (unknown to the
 * caller).
 */
export async function readBlockerStandings<T extends { eventId: string; sessionId: string; status: string; subStatus: string | null }>(
  read: (query: { eventId: string; sessionId: string; pageSize: number }) => Promise<ListPage<T>>,
  sessionId: string,
  blockers: readonly string[],
): Promise<Record<string, BlockerStanding>> {
  const asked = blockers.slice(0, BLOCKERS_READ_MAX);
  const standings = await Promise.all(
    asked.map(async (eventId): Promise<[string, BlockerStanding]> => {
      if (!listableId('eventId', eventId)) return [eventId, 'unknown'];
      const page = await read({ eventId, sessionId, pageSize: BLOCKER_PAGE_SIZE });
      return [eventId, blockerStanding(page.items, { eventId, sessionId })];
    }),
  );
  return Object.fromEntries(standings);
}
