// Operations → Reconcile: an event published to several subscribers has a row on each endpoint under one eventId.
// The apply's "unchanged" lines must name and key each of those rows apart (endpoint + eventId), not by eventId.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ReconcileResult } from '../topology/opsApi.ts';
import { staleKey, stuckKey, unchangedLines } from './reconcileKeys.ts';

const row = (endpointId: string) => ({ endpointId, eventId: 'evt-shared', sessionId: 'S-1', rowMessageId: `m-${endpointId}` });

test('two rows with one eventId on two endpoints: distinct keys, and each unchanged line names its endpoint', () => {
  assert.notEqual(staleKey(row('billingendpoint')), staleKey(row('erpendpoint')));
  assert.notEqual(stuckKey({ ...row('billingendpoint'), kind: 'claim' }), stuckKey({ ...row('erpendpoint'), kind: 'claim' }));
  const result: ReconcileResult = {
    repaired: 0,
    unchanged: 4,
    results: [
      { target: row('billingendpoint'), outcome: 'unchanged', reason: 'the row changed since the preview (now Completed)' },
      { target: row('erpendpoint'), outcome: 'unchanged', reason: 'the row no longer exists' },
    ],
    repairs: [
      { target: { ...row('billingendpoint'), kind: 'claim', action: 'resend' }, outcome: 'unchanged', reason: 'r1' },
      { target: { ...row('erpendpoint'), kind: 'claim', action: 'resend' }, outcome: 'unchanged', reason: 'r2' },
    ],
    sessions: [],
  };
  const lines = unchangedLines(result);
  assert.equal(new Set(lines.map((l) => l.key)).size, 4, 'one React key per row');
  assert.deepEqual(
    lines.map((l) => l.text),
    [
      'evt-shared on billingendpoint: the row changed since the preview (now Completed)',
      'evt-shared on erpendpoint: the row no longer exists',
      'evt-shared on billingendpoint (resend): r1',
      'evt-shared on erpendpoint (resend): r2',
    ],
  );
});

test('repaired rows are not listed; unchanged sessions are, by endpoint and session', () => {
  const result: ReconcileResult = {
    repaired: 1,
    unchanged: 1,
    results: [{ target: row('billingendpoint'), outcome: 'repaired', status: 'Completed' }],
    repairs: [],
    sessions: [{ target: { endpointId: 'erpendpoint', sessionId: 'S-9', nextReplaySequence: 0 }, outcome: 'unchanged', reason: 'the session no longer drains with a gap' }],
  };
  assert.deepEqual(unchangedLines(result).map((l) => l.text), ['session S-9 on erpendpoint: the session no longer drains with a gap']);
});
