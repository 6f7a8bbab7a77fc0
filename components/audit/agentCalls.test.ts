// The Audit page's "Hide agent API calls" preset (components/audit/agentCalls.ts): it is the `agent.` part of
// "Action does not contain", so it lives in the URL like the other filters and keeps what the operator typed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentCallsRefusal, hidesAgentCalls, withAgentCalls } from './agentCalls.ts';
import { auditSearch, parseSearch, toSearch } from '../urlState.ts';

test('hiding agent calls adds agent. and keeps the other parts', () => {
  assert.equal(withAgentCalls('', true), 'agent.');
  assert.equal(withAgentCalls('heartbeat', true), 'heartbeat, agent.');
  assert.equal(withAgentCalls('heartbeat, agent.', true), 'heartbeat, agent.');
});

test('showing them again takes only agent. out', () => {
  assert.equal(withAgentCalls('heartbeat, agent.', false), 'heartbeat');
  assert.equal(withAgentCalls('Agent.', false), '');
  // Named agent actions the operator typed are theirs: not the preset.
  assert.equal(withAgentCalls('agent.receive,agent.settle', false), 'agent.receive, agent.settle');
});

test('the toggle reads its state from the filter, as the server matches it (ignoring case)', () => {
  assert.equal(hidesAgentCalls(''), false);
  assert.equal(hidesAgentCalls('agent.receive, agent.settle'), false);
  assert.equal(hidesAgentCalls(' AGENT. '), true);
});

test('kept in the URL: the preset survives the page URL round trip', () => {
  const qs = toSearch(auditSearch, {
    ...parseSearch(auditSearch, new URLSearchParams()),
    notAction: withAgentCalls('', true),
  });
  assert.equal(hidesAgentCalls(parseSearch(auditSearch, new URLSearchParams(qs)).notAction), true);
});

test('a filter the preset would take past the route\'s length is refused, not read as no filter', () => {
  // 192 + ", agent." is exactly 200: taken, and it survives the URL round trip.
  const fits = withAgentCalls('x'.repeat(192), true);
  assert.equal(agentCallsRefusal(fits), undefined);
  assert.equal(parseSearch(auditSearch, new URLSearchParams({ notAction: fits })).notAction, fits);
  // One more character: the URL state would drop the whole filter, so the box refuses and says why.
  const over = withAgentCalls('x'.repeat(193), true);
  assert.equal(parseSearch(auditSearch, new URLSearchParams({ notAction: over })).notAction, '');
  assert.match(agentCallsRefusal(over) ?? '', /^Hide agent API calls is not applied: .* over 200 characters/);
});
