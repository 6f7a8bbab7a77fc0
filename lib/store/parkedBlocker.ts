// Which event a parked (Deferred) row waits on: one rule, read in two forms. The console reads it in three places -
// "holds back N" on the Endpoint page (server/heldBack.ts), the event page's "Parked behind this event" list (the
// store's listParkedSiblings, which filters in its query) and the blocker each listed row and a parked event name
// (server/queries.ts) - and they must agree, or an event would hold back rows its own page does not list. So the rule
// lives here, as a function and as the query term that means the same (server/parkedBlocker.readers.test.ts holds the
// two to the same answers on the embedded Cosmos server).
//
// The rule: `blockedBy` when a store set it (the Resolver does not), else the blocker named by the park reason the
// subscriber writes and the Resolver stores as errorText (the SDK's blockedByReason / parseBlockedByReason), else
// none (a row parked behind a replay in progress, or a reason in another form).
import type { SqlParameter } from '@azure/cosmos';
import { blockedByReason, parseBlockedByReason } from '@nimbus/sdk/contract/names';

/** What a parked row says of the event its session waits on. */
export interface ParkedRef {
  sessionId: string;
  blockedBy: string | null;
  errorText: string | null;
}

/** The event a parked row waits on, or null when it names none (parked behind a replay, not a block). */
export function blockerOf(p: ParkedRef): string | null {
  if (p.blockedBy) return p.blockedBy;
  return parseBlockedByReason(p.errorText, p.sessionId) ?? null;
}

/**
 * blockerOf as a WHERE term over the alias `c`, for the parked rows of session `sessionId`: true of a row whose
 * blocker is `blocker` or that names none (what the event page lists behind `blocker`). It binds @blocker, @reason
 * and @prefix. The parse is a prefix match, so "names this blocker" is the whole reason text, and "names none" is
 * no text, another text, or the bare prefix.
 *
 * Written for the embedded server's cost as well as for Cosmos DB's meaning. The embedded engine evaluates every
 * term of the WHERE for every document of the endpoint (its AND and OR take both sides evaluated; no index), so
 * this term runs over 20,000 rows to find a session's few, and each property read of a document costs: `IN` lists
 * read blockedBy and errorText twice each instead of five times, which cut what the term adds to the query by a
 * quarter to a half (over one endpoint's 20,000 rows on 2026-12-05, the two forms timed side by side, p50: +14
 * against +18 ms on an idle machine, +34 against +65 ms at load average 13). It relies on the row schema
 * (statusRowSchema): blockedBy and errorText are always present, a string or null. A document missing one is not a
 * status row the store returns (queryPage drops it) and this term leaves it out rather than let it take a place on
 * the page; Cosmos SQL's `x IN (...)` is undefined, not true, for an absent x.
 */
export function blockerIsOrNoneSql(sessionId: string, blocker: string): { condition: string; parameters: SqlParameter[] } {
  return {
    condition:
      '(c.blockedBy = @blocker OR (c.blockedBy IN (null, "") AND ' +
      '(c.errorText IN (null, @reason, @prefix) OR NOT STARTSWITH(c.errorText, @prefix))))',
    parameters: [
      { name: '@blocker', value: blocker },
      { name: '@reason', value: blockedByReason(sessionId, blocker) },
      { name: '@prefix', value: blockedByReason(sessionId, '') },
    ],
  };
}
