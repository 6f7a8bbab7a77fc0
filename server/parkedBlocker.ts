// The event a parked row waits on, read the way the subscriber wrote it. Pure (the SDK's contract only), so the
// Endpoint page's "holds back N" (server/heldBack.ts) and the event page's dialogs in the browser
// (components/sessionRelease.ts) attribute parked rows by one rule.
import { parseBlockedByReason } from '@nimbus/sdk/contract';

/** What a parked row says of the event its session waits on. */
export interface ParkedRef {
  sessionId: string;
  blockedBy: string | null;
  errorText: string | null;
}

/**
 * The event a parked row waits on, or null when it names none (parked behind a replay, not a block). `blockedBy` is
 * read first for stores that set it; the Resolver does not, and the row names its blocker in its park reason.
 */
export function blockerOf(p: ParkedRef): string | null {
  if (p.blockedBy) return p.blockedBy;
  return parseBlockedByReason(p.errorText, p.sessionId) ?? null;
}
