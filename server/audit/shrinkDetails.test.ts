// shrinkDetails: an audit entry's details over the size cap keep their small fields and lose only the ends of their
// largest values, each cut marked (pure logic; the store's side is in auditLog.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shrinkDetails, truncatedMarker } from './shrinkDetails.ts';

const size = (v: unknown) => JSON.stringify(v).length;

/** An edited resubmit's details with 50 long diff paths (server/audit/diff.ts keeps at most 50). */
const editedResubmit = () => ({
  edited: true,
  eventTypeId: { from: 'OrderPlaced', to: 'OrderPlacedV2' },
  payloadDiff: {
    changes: Array.from({ length: 50 }, (_, i) => ({ path: `/lines/${i}/${'k'.repeat(300)}`, op: 'changed', from: 'string', to: 'number' })),
    truncated: false,
  },
  messageId: 'resubmit-1a2b',
  outcome: 'sent',
});

test('details that fit are kept as they are', () => {
  const small = { edited: false, messageId: 'm-1' };
  assert.equal(shrinkDetails(small, 8_000), small);
});

test('an edited resubmit with 50 long diff paths keeps edited, the event type change and the message id', () => {
  const details = editedResubmit();
  assert.ok(size(details) > 8_000, 'the case is over the cap');
  const shrunk = shrinkDetails(details, 8_000);
  assert.ok(size(shrunk) <= 8_000, `${size(shrunk)} characters`);
  assert.equal(shrunk.edited, true);
  assert.deepEqual(shrunk.eventTypeId, { from: 'OrderPlaced', to: 'OrderPlacedV2' });
  assert.equal(shrunk.messageId, 'resubmit-1a2b');
  assert.equal(shrunk.outcome, 'sent');
  assert.deepEqual(shrunk.truncated, ['payloadDiff.changes']);
  const diff = shrunk.payloadDiff as { changes: unknown[]; truncated: boolean };
  assert.equal(diff.truncated, false, 'the diff\'s own fields stay');
  const kept = diff.changes.slice(0, -1);
  assert.ok(kept.length > 0, 'the first changes are kept');
  assert.deepEqual(kept, details.payloadDiff.changes.slice(0, kept.length));
  assert.equal(diff.changes.at(-1), truncatedMarker(50 - kept.length), 'the cut says how many changes are left out');
});

test('a long string is cut with a marker counting the characters left out; short strings and numbers stay', () => {
  const shrunk = shrinkDetails({ requested: 3, reason: 'busy', note: 'n'.repeat(20_000) }, 1_000);
  assert.ok(size(shrunk) <= 1_000, `${size(shrunk)} characters`);
  assert.equal(shrunk.requested, 3);
  assert.equal(shrunk.reason, 'busy');
  const note = shrunk.note as string;
  const kept = note.indexOf('…');
  assert.equal(note, 'n'.repeat(kept) + truncatedMarker(20_000 - kept, ' characters'));
  assert.deepEqual(shrunk.truncated, ['note']);
});

test('the largest values are cut first, and each only as far as needed', () => {
  const ids = Array.from({ length: 100 }, (_, i) => `evt-${String(i).padStart(4, '0')}`);
  const shrunk = shrinkDetails({ bulk: true, eventIds: ids, endpoints: ['billingendpoint', 'crmendpoint'] }, 800);
  assert.ok(size(shrunk) <= 800, `${size(shrunk)} characters`);
  assert.deepEqual(shrunk.endpoints, ['billingendpoint', 'crmendpoint'], 'the small array is left whole');
  assert.deepEqual(shrunk.truncated, ['eventIds']);
  assert.equal((shrunk.eventIds as string[]).at(-1), truncatedMarker(100 - ((shrunk.eventIds as string[]).length - 1)));
});

test('details too large in small fields alone are replaced by a note naming their keys', () => {
  const many = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`k${i}`, i]));
  const shrunk = shrinkDetails(many, 8_000);
  assert.equal(shrunk.omitted, 'details too large to record');
  assert.deepEqual((shrunk.keys as string[]).slice(0, 2), ['k0', 'k1']);
  assert.ok(size(shrunk) <= 8_000);
});
