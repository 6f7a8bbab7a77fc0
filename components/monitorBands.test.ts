// Monitor's banding rule (components/monitorBands.ts): an endpoint whose counters cannot be read is not shown as
// Healthy on the strength of zeros that mean "unknown", nor one whose heartbeat could not be checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EndpointOverview } from './api.ts';
import { bandOf } from './monitorBands.ts';

const quiet: EndpointOverview = {
  endpointId: 'crmendpoint',
  owner: null,
  description: null,
  inCatalog: true,
  produces: [],
  consumes: [],
  counts: { pending: 0, handoff: 0, deferred: 0, failed: 0, deadLettered: 0, unsupported: 0, completed: 0, skipped: 0 },
  oldestFailureAt: null,
  lastActivityAt: null,
  heartbeat: { status: 'On', at: null, sdkVersion: null, busy: false },
};

test('a quiet endpoint is Healthy; failures or heartbeat Off are Failing; deferrals are Watching', () => {
  assert.equal(bandOf(quiet), 'Healthy');
  assert.equal(bandOf({ ...quiet, counts: { ...quiet.counts, failed: 1 } }), 'Failing');
  assert.equal(bandOf({ ...quiet, heartbeat: { ...quiet.heartbeat, status: 'Off' } }), 'Failing');
  assert.equal(bandOf({ ...quiet, counts: { ...quiet.counts, deferred: 2 } }), 'Watching');
});

test('unreadable counters (zeros that mean "unknown") are Watching, not Healthy; heartbeat Off still Failing', () => {
  const unreadable: EndpointOverview = { ...quiet, countersUnreadable: true };
  assert.equal(bandOf(unreadable), 'Watching');
  assert.equal(bandOf({ ...unreadable, heartbeat: { ...quiet.heartbeat, status: 'Off' } }), 'Failing');
});

test('a heartbeat whose overdue probe could not be checked (evidence unknown) is Watching, not Healthy; failures still Failing', () => {
  const unknown: EndpointOverview = { ...quiet, heartbeat: { ...quiet.heartbeat, evidenceUnknown: true } };
  assert.equal(bandOf(unknown), 'Watching');
  assert.equal(bandOf({ ...unknown, counts: { ...quiet.counts, failed: 1 } }), 'Failing');
});
