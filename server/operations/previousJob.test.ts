// Which earlier job "covered these events" for the confirmation of a new one (previousJob.ts coversSameEvents), as
// pure logic: a job on the same failure group covers the new selection only if it acted on some of the same
// statuses - a "Skip all" of the group's DeadLettered rows acted on none of its Failed ones, so it is no previous job
// of "Resubmit all Failed" (it was named as one). A group job with no status acted on all of the group's statuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coversSameEvents } from './previousJob.ts';
import type { Selection } from './selection.ts';

const G = '0123456789abcdef0123';
const EP = 'billingendpoint';
const job = (selection: Selection) => ({ selection, endpoints: [EP] });
const rows = [{ endpointId: EP, eventId: 'e-1', sessionId: 'S-1' }];

test('a job on the same group covers the new one only when their statuses meet', () => {
  const failed: Selection = { groupId: G, status: ['Failed'] };
  assert.equal(coversSameEvents(job({ groupId: G, status: ['DeadLettered'] }), failed, rows), false, 'DeadLettered alone acted on none of the Failed rows');
  assert.equal(coversSameEvents(job({ groupId: G, status: ['Failed'] }), failed, rows), true);
  assert.equal(coversSameEvents(job({ groupId: G, status: ['DeadLettered', 'Failed'] }), failed, rows), true);
  assert.equal(coversSameEvents(job({ groupId: G }), failed, rows), true, 'no status: every status of the group');
  assert.equal(coversSameEvents(job({ groupId: G, status: ['Unsupported'] }), { groupId: G }, rows), true, 'the new one takes every status, the Unsupported too');
  assert.equal(coversSameEvents(job({ groupId: G, status: [] }), failed, rows), true, 'an empty status list is no filter');
});

test('the window does not set a group job apart: both run to the present, and a row it acted on that failed again is in the new one', () => {
  assert.equal(coversSameEvents(job({ groupId: G, updatedFrom: '2026-12-01T00:00:00.000Z' }), { groupId: G, updatedFrom: '2026-12-06T01:00:00.000Z' }, rows), true);
  assert.equal(coversSameEvents(job({ groupId: G }), { groupId: G, updatedFrom: '2026-12-06T01:00:00.000Z' }, rows), true);
});

test('another group, or the same group on another endpoint, is not covered', () => {
  assert.equal(coversSameEvents(job({ groupId: 'f'.repeat(20) }), { groupId: G }, rows), false);
  assert.equal(coversSameEvents({ selection: { groupId: G, endpointId: 'crmendpoint' }, endpoints: ['crmendpoint'] }, { groupId: G, endpointId: EP }, rows), false);
});
