// The Search page's session links (components/searchLinks.ts): each leads to the Endpoint page's list of exactly the
// session found, as the page's URL state and the list route read it, or says why there is no such list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sessionListLink } from './searchLinks.ts';
import { endpointSearch, parseSearch } from './urlState.ts';
import { exactIdFilter } from '../server/exactIdFilterSchema.ts';

/** What the Endpoint page at `href` filters on: its URL state, and the list route's reading of the same session. */
function readBack(href: string) {
  const url = new URL(href, 'http://console.test');
  const state = parseSearch(endpointSearch, url.searchParams);
  return { path: url.pathname, sessionId: state.sessionId, status: state.status, routeSessionId: exactIdFilter('sessionId').parse(state.sessionId) };
}

test('a found session links to the list of exactly that session, spaces and all; spaces alone get the reason, not a link', () => {
  for (const sessionId of ['S1', ' S1', 'S1 ', ' S1 ', 'ORD 42', ' a+b&c=d ', '  ', '\t', ' \u00a0 ']) {
    const link = sessionListLink('billingendpoint', sessionId);
    assert.ok(link, JSON.stringify(sessionId));
    if (link.href === undefined) {
      // Only what the page's filter refuses goes unlinked, in the rule's words.
      assert.match(link.refused, /^a session id of spaces alone is not a filter$/, JSON.stringify(sessionId));
      assert.equal(sessionId.trim(), '', `${JSON.stringify(sessionId)} is refused`);
      continue;
    }
    // Every link leads to the session found: read as "no filter" it listed every session.
    assert.deepEqual(readBack(link.href), { path: '/endpoints/billingendpoint', sessionId, status: [], routeSessionId: sessionId }, JSON.stringify(sessionId));
  }
  assert.equal(sessionListLink('billingendpoint', '  ')?.href, undefined, 'spaces alone: no link');
});

test("a session's failures link keeps the session exactly with the failed statuses; an event outside any session has no link", () => {
  const link = sessionListLink('crmendpoint', ' CUST-2002 ', ['Failed', 'DeadLettered', 'Unsupported']);
  assert.deepEqual(readBack(link!.href!), { path: '/endpoints/crmendpoint', sessionId: ' CUST-2002 ', status: ['Failed', 'DeadLettered', 'Unsupported'], routeSessionId: ' CUST-2002 ' });
  assert.equal(sessionListLink('crmendpoint', ''), null);
});
