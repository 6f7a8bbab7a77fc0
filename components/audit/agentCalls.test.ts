// The Audit page's "Hide agent API calls" preset (components/audit/agentCalls.ts): it is the `agent.` part of
// "Action does not contain", so it lives in the URL like the other filters and keeps what the operator typed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hidesAgentCalls, withAgentCalls } from './agentCalls.ts';
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
