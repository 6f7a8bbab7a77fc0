// How the event page's command dialogs (components/SessionFate.tsx) read a session's parked rows through the
// Endpoint page's list route: which sessions it can be asked for exactly, and reading until a row beyond the counted
// ones is seen, so "200+" means more than 200. Pure (no React, no server), so it runs in the browser and in unit tests.

/**
 * Whether the Endpoint page's list route can be asked for exactly this session's rows: its filter
 * (server/queries.ts eventListQuerySchema) takes the id as it is, spaces and all, but refuses one of spaces alone
 * (400) and one longer than 128 characters. Such a session is not read; '' is no session.
 */
export function sessionListable(sessionId: string): boolean {
  return sessionId.trim() !== '' && sessionId.length <= LIST_SESSION_ID_MAX;
}
const LIST_SESSION_ID_MAX = 128;

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
