// The rule by which a per-endpoint reader sees an audit entry over several endpoints (readerScope.ts), on entries
// shaped as the writers store them; the routes and the store are exercised in multiEndpointAudit.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditRecord } from './auditLog.ts';
import { entryForReader } from './readerScope.ts';
import { shrinkDetails } from './shrinkDetails.ts';
import { auditRecord } from '../testing/auditEntry.ts';

const entry = (endpoints: string[] | undefined, details: Record<string, unknown> | null): AuditRecord =>
  auditRecord({
    actorId: 'oid-op',
    actorName: 'op@test',
    action: 'operation.skip',
    endpointId: endpoints === undefined ? 'billing' : null,
    ...(endpoints !== undefined ? { endpoints } : {}),
    target: 'operation/op-1',
    details,
  });
const billingOnly = new Set(['billing']);

test('an entry over endpoints the reader all reads, or over one endpoint, is shown whole', () => {
  const both = entry(['billing', 'crm'], { total: 3, byEndpoint: { billing: { total: 2 }, crm: { total: 1 } } });
  assert.equal(entryForReader(both, new Set(['billing', 'crm', 'erp'])), both);
  const one = entry(undefined, { total: 3 });
  assert.equal(entryForReader(one, billingOnly), one);
});

test("totals become the reader's part, nested counts included; other endpoints are counted, not named", () => {
  const seen = entryForReader(
    entry(['billing', 'crm', 'erp'], {
      state: 'completed',
      selection: { groupId: 'g1' },
      endpoints: ['billing', 'crm', 'erp'],
      total: 6,
      stale: { repaired: 1, unchanged: 5 },
      byEndpoint: { billing: { total: 2, stale: { repaired: 1, unchanged: 1 } }, crm: { total: 3, stale: { repaired: 0, unchanged: 3 } }, erp: { total: 1, stale: { repaired: 0, unchanged: 1 } } },
    }),
    billingOnly,
  );
  assert.deepEqual([seen.endpoints, seen.otherEndpoints], [['billing'], 2]);
  assert.deepEqual(seen.details, {
    state: 'completed',
    selection: { groupId: 'g1' },
    endpoints: ['billing'],
    total: 2,
    stale: { repaired: 1, unchanged: 1 },
    byEndpoint: { billing: { total: 2, stale: { repaired: 1, unchanged: 1 } } },
  });
});

test('counts stored without a part per endpoint (older entries) are left out, what is not a count kept', () => {
  const seen = entryForReader(entry(['billing', 'crm'], { state: 'completed', total: 3, done: 3, refusalsNotAudited: 2, via: 'mcp' }), billingOnly);
  assert.deepEqual(seen.details, { state: 'completed', via: 'mcp' });
  assert.equal(entryForReader(entry(['billing', 'crm'], null), billingOnly).details, null);
});

/** A closing entry over billing, crm and erp as shrinkDetails leaves it past the cap: zeros out of the parts, erp's cut. */
const cutEntry = () =>
  entry(['billing', 'crm', 'erp'], {
    state: 'completed',
    total: 6,
    done: 5,
    refused: 1,
    failed: 0,
    stale: { repaired: 0, unchanged: 6 },
    byEndpoint: { billing: { total: 2, done: 1, refused: 1, stale: { unchanged: 2 } }, crm: { total: 3, done: 3, stale: { unchanged: 3 } } },
    byEndpointTruncated: 1,
    truncated: ['byEndpoint'],
  });

test("a reader whose part is kept sees their counts, those left out as zeros being 0, in the totals' shape", () => {
  const seen = entryForReader(cutEntry(), billingOnly);
  assert.deepEqual(seen.details, {
    state: 'completed',
    total: 2,
    done: 1,
    refused: 1,
    failed: 0,
    stale: { repaired: 0, unchanged: 2 },
    byEndpoint: { billing: { total: 2, done: 1, refused: 1, stale: { unchanged: 2 } } },
    truncated: ['byEndpoint'],
  });
  assert.deepEqual((entryForReader(cutEntry(), new Set(['crm'])).details as { refused: number }).refused, 0, "crm's refused, left out of its part as 0");
});

test("a reader whose part was cut sees no counts: not the totals, not another endpoint's part", () => {
  const seen = entryForReader(cutEntry(), new Set(['erp']));
  assert.deepEqual([seen.endpoints, seen.otherEndpoints], [['erp'], 2]);
  assert.deepEqual(seen.details, { state: 'completed', byEndpoint: {}, truncated: ['byEndpoint'] });
  // A reader of billing and erp: billing's part is there, erp's is not - their sum would be short, so no totals.
  const both = entryForReader(cutEntry(), new Set(['billing', 'erp']));
  assert.deepEqual(both.details, {
    state: 'completed',
    byEndpoint: { billing: { total: 2, done: 1, refused: 1, stale: { unchanged: 2 } } },
    truncated: ['byEndpoint'],
  });
});

test('which counts a reader sees does not tell whether a cut-off endpoint had a count other than 0', () => {
  // 200 endpoints; only the last one (cut off by the cap) failed an event, or none did. A reader of the first one
  // saw `failed: 0` in one case and no `failed` at all in the other: the key's presence told them.
  const closing = (failedOnLast: number) => {
    const names = Array.from({ length: 200 }, (_, i) => `endpoint-${String(i).padStart(3, '0')}`);
    const byEndpoint = Object.fromEntries(names.map((e, i) => [e, { total: 2, done: 2, refused: 0, failed: i === 199 ? failedOnLast : 0 }]));
    const details = shrinkDetails({ state: 'completed', total: 400, done: 400 - failedOnLast, refused: 0, failed: failedOnLast, byEndpoint }, 2_000);
    return entryForReader(entry(names, details), new Set(['endpoint-000'])).details;
  };
  const none = closing(0);
  const one = closing(1);
  assert.equal((none as { failed?: number }).failed, 0, JSON.stringify(none));
  assert.deepEqual(
    { total: one!.total, done: one!.done, refused: one!.refused, failed: one!.failed },
    { total: none!.total, done: none!.done, refused: none!.refused, failed: none!.failed },
    'the reader of endpoint-000 sees the same counts either way',
  );
});
