// Where a Search result's session leads (components/SearchView.tsx): the endpoint's list filtered to exactly that
// session, spaces and all, or the reason there is no such list. Pure, so the links are checked without a browser
// (searchLinks.test.ts).
import { endpointHref } from './api.ts';
import { exactIdProblem } from '../server/exactIdFilters.ts';
import { eventListSearch, toSearch, type EventListSearch } from './urlState.ts';

/** A link to the session's list on the endpoint, or why the Endpoint page cannot list that session. */
export type SessionLink = { href: string; refused?: undefined } | { href?: undefined; refused: string };

/**
 * The endpoint's list filtered to `sessionId` exactly (and to `status`, when given); null for an event outside any
 * session (''), which has no session list. Search trims what is typed, but a found event's session id is taken as
 * stored: " S1" links to the session " S1". One the Endpoint page's filter refuses by the one id rule
 * (server/exactIdFilters.ts: spaces alone) gets the rule's reason instead of a link: written into the URL, the page
 * read it as no filter and listed every session under a link that named one.
 */
export function sessionListLink(endpointId: string, sessionId: string, status: EventListSearch['status'] = []): SessionLink | null {
  if (sessionId === '') return null;
  const problem = exactIdProblem('sessionId', sessionId);
  // The rule's reason without its advice to the filter box ("leave it empty for …"), which no link can follow.
  if (problem) return { refused: problem.split(';')[0]! };
  return { href: endpointHref(endpointId, toSearch(eventListSearch, { sessionId, status })) };
}
