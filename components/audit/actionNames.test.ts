// The two names of one operator act (components/audit/actionNames.ts): the Audit page shows the event page's name
// beside the log's action, and the event page's trail links to the Audit page filtered to the same act.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { auditLogHref, eventTrailName } from './actionNames.ts';
import { parseSearch, auditSearch } from '../urlState.ts';

test('the event trail name of a logged action', () => {
  assert.equal(
    eventTrailName({ action: 'resubmit', details: { edited: true, payloadDiff: [] } }),
    'ResubmitWithChanges',
  );
  assert.equal(eventTrailName({ action: 'resubmit', details: { edited: false } }), 'Resubmit');
  assert.equal(eventTrailName({ action: 'skip', details: null }), 'Skip');
  assert.equal(eventTrailName({ action: 'handoff', details: { settlement: 'complete' } }), 'CompleteHandoff');
  assert.equal(eventTrailName({ action: 'handoff', details: { settlement: 'fail' } }), 'FailHandoff');
  // The Agent API and MCP say completed / failed.
  assert.equal(
    eventTrailName({ action: 'agent.settle', details: { settlement: 'completed' } }),
    'CompleteHandoff',
  );
  assert.equal(eventTrailName({ action: 'agent.settle', details: { settlement: 'failed' } }), 'FailHandoff');
});

test('actions with no entry of their own in the event trail: no name', () => {
  assert.equal(eventTrailName({ action: 'agent.receive', details: { handedOut: 'evt-1' } }), null);
  assert.equal(eventTrailName({ action: 'grants.manage', details: null }), null);
  // A refused settlement whose details do not say which: no guess.
  assert.equal(eventTrailName({ action: 'handoff', details: null }), null);
});

test('the Audit link of a trail entry: the event, and the log action where there is exactly one', () => {
  const link = (type: string) =>
    parseSearch(auditSearch, new URLSearchParams(auditLogHref('evt 1/ä', type).split('?')[1]));
  assert.equal(auditLogHref('evt-1', 'ResubmitWithChanges'), '/audit?eventId=evt-1&action=resubmit');
  assert.equal(link('ResubmitWithChanges').eventId, 'evt 1/ä');
  assert.equal(link('Resubmit').action, 'resubmit');
  assert.equal(link('Skip').action, 'skip');
  // Logged as handoff or agent.settle: the event id alone.
  assert.equal(link('CompleteHandoff').action, '');
  assert.equal(auditLogHref('evt-1', 'CompleteHandoff'), '/audit?eventId=evt-1');
});
