// The ids of the last messages applied to a status row (`appliedMessageIds`), newest first, carried forward from
// version to version: what the stale-write guard's already-applied rule (staleWriteGuard.ts, rule 7) reads. Part of
// the contract, beside the guard, because the store keeps them on every row and the SDK's test harness must keep
// them the same way to project what the Resolver records (a copy refused by rule 7 there is refused here too).
// A terminal write (an ErrorResponse) passes the guard's other rules, so a copy of it that comes back after a later
// message of its row would be applied again over the later version: rule 7 refuses it, and the Resolver's time series
// does not count a copy applied again (a row of an older writer). The row's last message id alone cannot say so (it is
// the later message's); these ids can, for copies of the last MAX_APPLIED_MESSAGE_IDS messages of the row.

/** Ids a row keeps at most (the oldest dropped first): ~40 bytes each for GUIDs, 128 at most. */
export const MAX_APPLIED_MESSAGE_IDS = 8;

/**
 * The ids of messages applied to `row` (null: no row yet), newest first. A row written before the field existed (or
 * with a damaged list) knows only its last message: as the check was before.
 */
export function appliedMessageIdsOf(row: { lastMessageId: string; appliedMessageIds?: readonly string[] | undefined } | null): string[] {
  if (row === null) return [];
  return row.appliedMessageIds ? [...row.appliedMessageIds] : [row.lastMessageId];
}

/**
 * The ids a row carries once `messageId` made its new version over `existing`: that id first, then those of the
 * version it replaces without it (a copy applied again moves to the front instead of taking a second place), at
 * most MAX_APPLIED_MESSAGE_IDS.
 */
export function nextAppliedMessageIds(
  existing: { lastMessageId: string; appliedMessageIds?: readonly string[] | undefined } | null,
  messageId: string,
): string[] {
  return [messageId, ...appliedMessageIdsOf(existing).filter((id) => id !== messageId)].slice(0, MAX_APPLIED_MESSAGE_IDS);
}
