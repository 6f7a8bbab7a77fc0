// An event's history on one endpoint for reconcile's checks, oldest first, all pages up to a cap: an event with
// thousands of entries is a loop. Past the cap the newest entries are missing, so a check about one message (was
// a command recorded? was it answered?) must not rely on this list: it reads that message's entry by id
// (store.getHistory) or its answers by their link (store.listHistoryAnswers), and only when the list was cut.
// One endpoint's only: an event published to several subscribers has a row per endpoint under the same eventId,
// and its history holds every endpoint's entries. Another endpoint's response is no evidence for this row (it
// would "settle" a row its own subscriber never answered), nor its state one to restore.
import type { HistoryEntry, MessageStore } from '../../lib/store/index.ts';

export const HISTORY_CAP = 2000;

export interface EventHistoryRead {
  /** This endpoint's entries among those read, oldest first. */
  entries: HistoryEntry[];
  /** True when an entry past the cap exists (read, never put in `entries`): the newest entries are not in `entries`. */
  cutOff: boolean;
  /** Entries among those read (any endpoint's) that no longer parse: not in `entries`, so a check must not trust it alone. */
  corrupt: number;
}

/**
 * `cap`: entries read (every endpoint's) before it stops; a test passes a small one to read a long event cheaply.
 * A continuation token after the cap's entries is no proof that one follows: Cosmos may end a last page with one
 * that leads to an empty page (lib/store/paging.ts, queryAll). So the read asks for one entry past the cap, alone
 * on its own page (never mixed into `entries`), and `cutOff` says whether it exists: an event with exactly the
 * cap's entries is whole, and a check that trusts a whole list (entryToRestore's fallback) keeps working on it.
 */
export async function readEventHistory(store: MessageStore, endpointId: string, eventId: string, cap = HISTORY_CAP): Promise<EventHistoryRead> {
  const entries: HistoryEntry[] = [];
  let token: string | undefined;
  let read = 0;
  let corrupt = 0;
  do {
    const page = await store.listHistory(eventId, { pageSize: Math.min(200, cap - read), continuationToken: token });
    read += page.items.length + page.corrupt.length;
    corrupt += page.corrupt.length;
    entries.push(...page.items.filter((h) => h.endpointId === endpointId));
    token = page.continuationToken;
  } while (token && read < cap);
  return { entries, cutOff: token !== undefined && (await entryBeyond(store, eventId, token)), corrupt };
}

/**
 * Whether the history continues after `token`: one entry's page (parsing or not), so nothing more is read. An empty
 * page that still has a continuation is the store's pager giving up after its bounded run of empty pages
 * (lib/store/paging.ts, fetchPage): no proof that the history ends, so the list is taken as cut.
 */
async function entryBeyond(store: MessageStore, eventId: string, token: string): Promise<boolean> {
  const next = await store.listHistory(eventId, { pageSize: 1, continuationToken: token });
  return next.items.length + next.corrupt.length > 0 || next.continuationToken !== undefined;
}

/** readEventHistory's entries, for checks that read the store themselves for what a cut list lacks. */
export async function eventHistory(store: MessageStore, endpointId: string, eventId: string, cap = HISTORY_CAP): Promise<HistoryEntry[]> {
  return (await readEventHistory(store, endpointId, eventId, cap)).entries;
}
