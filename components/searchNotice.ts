// The Search page's note on lists it could not show in full (a pure function, so its wording is tested directly).
import type { SearchResult } from './api.ts';

type Lists<T> = { byEventId: T; bySessionId: T };
const LISTS = [
  ['byEventId', 'event id'],
  ['bySessionId', 'session id'],
] as const satisfies ReadonlyArray<readonly [keyof Lists<unknown>, string]>;

const matches = (n: number) => `${n} ${n === 1 ? 'match' : 'matches'}`;

/**
 * What the page says when a search list was cut, or null when every list is complete. A list cut at its limit
 * shows "the first 25"; a list the page cap stopped (`scanLimited`: it read `maxPages` store pages and the query
 * had not ended) shows only what those pages held, perhaps fewer than 25, and whether anything more matches is
 * unknown: the note says how many it shows and that the search stopped looking, never "the first 25".
 */
export function searchCutNotice(r: Pick<SearchResult, 'limit' | 'maxPages' | 'truncated' | 'scanLimited' | 'shown'>): string | null {
  const atLimit = LISTS.filter(([k]) => r.truncated[k] && !r.scanLimited[k]).map(([, label]) => label);
  const stopped = LISTS.filter(([k]) => r.scanLimited[k]);
  if (atLimit.length === 0 && stopped.length === 0) return null;
  const shown = [
    ...(atLimit.length > 0 ? [`the first ${r.limit} matches by ${atLimit.join(' and by ')}`] : []),
    ...stopped.map(([k, label]) => `${matches(r.shown[k])} by ${label}`),
  ];
  if (stopped.length === 0) return `Showing ${shown.join(' and ')} — refine the search to see the others.`;
  // Which list the cap stopped, when that is not plain from the sentence (both did, or only one of two shown).
  const which = stopped.length === 2 ? ' per list' : atLimit.length > 0 ? ` by ${stopped[0]![1]}` : '';
  return `Showing ${shown.join(' and ')}; the search stopped after reading ${r.maxPages} pages${which} — refine it to see any others.`;
}
