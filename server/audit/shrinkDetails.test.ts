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

/** A job's closing details over `n` endpoints, each one's part of the counts under byEndpoint. */
const closingOver = (n: number) => {
  const endpoints = Array.from({ length: n }, (_, i) => `endpoint-${String(i).padStart(3, '0')}`);
  return {
    state: 'completed',
    total: 2 * n,
    done: 2 * n,
    refused: 0,
    failed: 0,
    byEndpoint: Object.fromEntries(endpoints.map((e) => [e, { total: 2, done: 2, refused: 0, failed: 0, stale: { repaired: 0, unchanged: 2 } }])),
  };
};

test('per-endpoint parts over the cap lose their zero counts first, and are kept whole when that is enough', () => {
  const details = closingOver(60);
  assert.ok(size(details) > 4_000);
  const shrunk = shrinkDetails(details, 4_000);
  assert.ok(size(shrunk) <= 4_000, `${size(shrunk)} characters`);
  assert.deepEqual(Object.keys(shrunk.byEndpoint as object), Object.keys(details.byEndpoint), 'every part kept');
  assert.deepEqual((shrunk.byEndpoint as Record<string, unknown>)['endpoint-000'], { total: 2, done: 2, stale: { unchanged: 2 } });
  assert.deepEqual([shrunk.total, shrunk.refused, shrunk.truncated, shrunk.byEndpointTruncated], [120, 0, undefined, undefined], 'the totals keep their zeros; nothing cut');
});

test('per-endpoint parts still over the cap are cut to the first that fit, whole, the rest counted; the totals stay', () => {
  // It was `{ omitted, keys }`: numbers cannot be halved, and the whole of the details was lost.
  const details = closingOver(200);
  const shrunk = shrinkDetails(details, 2_000);
  assert.ok(size(shrunk) <= 2_000, `${size(shrunk)} characters`);
  assert.deepEqual([shrunk.state, shrunk.total, shrunk.done, shrunk.refused, shrunk.failed], ['completed', 400, 400, 0, 0]);
  const kept = Object.entries(shrunk.byEndpoint as object);
  assert.ok(kept.length > 0);
  assert.deepEqual(kept.map(([e]) => e), Object.keys(details.byEndpoint).slice(0, kept.length), 'the first parts');
  for (const [, part] of kept) assert.deepEqual(part, { total: 2, done: 2, stale: { unchanged: 2 } }, 'each kept part whole');
  assert.equal(shrunk.byEndpointTruncated, 200 - kept.length);
  assert.deepEqual(shrunk.truncated, ['byEndpoint']);
  // As many as fit: one more part would not.
  const oneMore = { ...shrunk, byEndpoint: Object.fromEntries(Object.entries(details.byEndpoint).slice(0, kept.length + 1)), byEndpointTruncated: 199 - kept.length };
  assert.ok(size(oneMore) > 2_000, 'one more part is over the cap');
});

test('parts larger than the cap alone are all cut, and the other values are cut as before', () => {
  const shrunk = shrinkDetails({ ...closingOver(200), eventIds: Array.from({ length: 300 }, (_, i) => `evt-${i}`) }, 600);
  assert.ok(size(shrunk) <= 600, `${size(shrunk)} characters`);
  assert.equal(shrunk.total, 400);
  assert.deepEqual(shrunk.truncated, ['byEndpoint', 'eventIds']);
  assert.deepEqual([shrunk.byEndpoint, shrunk.byEndpointTruncated], [{}, 200]);
});
