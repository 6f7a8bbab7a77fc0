// The text a subscriber parks a message with when its session is blocked, and the one reader of it. The subscriber
// writes it (decide.ts, as the DeferralResponse's ErrorText), the Resolver stores it verbatim as the parked row's
// errorText, and the console reads the blocker back out of it (server/heldBack.ts: "holds back N"). The Resolver
// records no separate blocker field, so this text is the only place a parked row names what it waits on: writer
// and reader share this module so the two cannot drift apart.

const SESSION = 'Session ';
const BLOCKED_BY = ' is blocked by ';

/** The park reason of a message whose session `sessionId` is blocked by the event `blockedByEventId`. */
export function blockedByReason(sessionId: string, blockedByEventId: string): string {
  return `${SESSION}${sessionId}${BLOCKED_BY}${blockedByEventId}`;
}

/**
 * The blocking event's id named by `text` when it is the park reason of a message in session `sessionId`;
 * undefined for any other text (another session's, a park behind a replay, none). The session is required, not
 * guessed from the text: session and event ids may both contain spaces, even " is blocked by ", so only a known
 * session makes the split unambiguous.
 */
export function parseBlockedByReason(text: string | null | undefined, sessionId: string): string | undefined {
  if (text == null) return undefined;
  const prefix = blockedByReason(sessionId, '');
  if (!text.startsWith(prefix) || text.length === prefix.length) return undefined;
  return text.slice(prefix.length);
}
