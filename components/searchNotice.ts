// The Search page's note on lists it could not show in full (a pure function, so its wording is tested directly).
import type { SearchResult } from './api.ts';

/** What the page says when a search list was cut, or null when every list is complete. */
export function searchCutNotice(r: Pick<SearchResult, 'limit' | 'truncated'>): string | null {
  // Each list (by event id, by session id) stops at 25: say so, or a short prefix looks like it found everything.
  const cutBy = [r.truncated.byEventId ? 'event id' : null, r.truncated.bySessionId ? 'session id' : null].filter((x) => x !== null);
  if (cutBy.length === 0) return null;
  return `Showing the first ${r.limit} matches by ${cutBy.join(' and by ')} — refine the search to see the others.`;
}
