// The chaos test's checks on hand-made evidence: what each invariant accepts and what it reports, so a green chaos
// run means the rules were applied, not that they could not fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HistoryEntry, StatusRowSummary } from '../lib/store/index.ts';
import { checkChaosInvariants, formatViolations, readStableEvidence, type ChaosEvidence } from './chaosInvariants.ts';

const NOW = new Date('2026-12-03T10:00:00.000Z');

function row(
  over: Partial<StatusRowSummary> & Pick<StatusRowSummary, 'eventId' | 'status'>,
): StatusRowSummary {
  return {
    id: over.eventId,
    endpointId: 'billing',
    sessionId: 'S1',
    subStatus: null,
    messageType: 'ResolutionResponse',
    eventTypeId: 'OrderPlaced',
    lastMessageId: `m-${over.eventId}`,
    parentMessageId: null,
    originatingMessageId: null,
    correlationId: null,
    from: null,
    to: null,
    enqueuedAt: null,
    requestMessageId: null,
    errorText: null,
    errorType: null,
    deadLetterReason: null,
    deadLetterErrorDescription: null,
    retryCount: null,
    retryLimit: null,
    handoffReason: null,
    externalJobId: null,
    expectedBy: null,
    blockedBy: null,
    createdAt: NOW.toISOString(),
    updatedAt: NOW.toISOString(),
    eventIdLower: over.eventId.toLowerCase(),
    sessionIdLower: (over.sessionId ?? 'S1').toLowerCase(),
    ...over,
  };
}

function request(endpointId: string, eventId: string, messageId: string): HistoryEntry {
  return {
    endpointId,
    eventId,
    messageId,
    messageType: 'EventRequest',
    recordedAt: NOW.toISOString(),
  } as HistoryEntry;
}

function evidence(rows: StatusRowSummary[], over: Partial<ChaosEvidence> = {}): ChaosEvidence {
  const counters = new Map<string, Record<string, number>>();
  for (const r of rows) {
    const b = r.status === 'Pending' && r.subStatus === 'Handoff' ? 'Handoff' : r.status;
    const c = counters.get(r.endpointId) ?? {};
    c[b] = (c[b] ?? 0) + 1;
    counters.set(r.endpointId, c);
  }
  return {
    now: NOW,
    rows,
    history: new Map(),
    counters,
    published: [],
    consumersOf: () => [],
    deadLetters: [],
    ...over,
  };
}

test('final statuses with their reasons, a live handoff and a Deferred row behind a failure pass', () => {
  const rows = [
    row({ eventId: 'e1', status: 'Completed' }),
    row({ eventId: 'e2', status: 'Failed', errorText: 'credit limit', sessionId: 'S2' }),
    row({ eventId: 'e3', status: 'Deferred', sessionId: 'S2' }),
    row({ eventId: 'e4', status: 'DeadLettered', deadLetterReason: 'Permanent failure' }),
    row({ eventId: 'e5', status: 'Unsupported' }),
    row({ eventId: 'e6', status: 'Skipped' }),
    row({ eventId: 'e7', status: 'Pending', subStatus: 'Handoff', expectedBy: '2026-12-03T10:00:30.000Z' }),
  ];
  assert.deepEqual(checkChaosInvariants(evidence(rows)), []);
});

test('a stranded Pending row, an overdue handoff and the Deferred row behind it are each reported with why', () => {
  const rows = [
    row({ eventId: 'p1', status: 'Pending', messageType: 'EventRequest' }),
    row({
      eventId: 'h1',
      status: 'Pending',
      subStatus: 'Handoff',
      sessionId: 'S3',
      expectedBy: '2026-12-03T09:59:00.000Z',
    }),
    row({ eventId: 'd1', status: 'Deferred', sessionId: 'S3' }),
    row({ eventId: 'f1', status: 'Failed' }),
  ];
  const e = evidence(rows, {
    deadLetters: [
      { entity: 'billing/billing', messageId: 'x', eventId: 'p1', reason: 'MaxDeliveryCountExceeded' },
    ],
  });
  const v = checkChaosInvariants(e);
  assert.deepEqual(
    v.map((x) => [x.eventId, x.invariant]),
    [
      ['p1', 'settled'],
      ['h1', 'settled'],
      ['d1', 'settled'],
      ['f1', 'settled'],
    ],
  );
  assert.match(v[0]!.cause ?? '', /MaxDeliveryCountExceeded/);
  assert.match(v[1]!.why, /overdue/);
  assert.match(v[2]!.why, /behind h1/);
  assert.match(v[3]!.why, /without an error text/);
  const report = formatViolations(v, e);
  assert.match(report, /4 violation\(s\): settled 4/);
  assert.match(report, /dead letter in billing\/billing/);
});

test('a published event without a row at one of its consumers, and counters off by one, are reported', () => {
  const rows = [row({ eventId: 'e1', status: 'Completed', endpointId: 'billing' })];
  const e = evidence(rows, {
    history: new Map([['e1', [request('billing', 'e1', 'M1')]]]),
    published: [{ producer: 'shop', eventTypeId: 'OrderPlaced', messageId: 'M1', sessionId: 'S1' }],
    consumersOf: () => ['billing', 'shipping'],
    counters: new Map([['billing', { Completed: 2 }]]),
  });
  const v = checkChaosInvariants(e);
  assert.deepEqual(
    v.map((x) => [x.invariant, x.endpointId]),
    [
      ['recorded', 'shipping'],
      ['counters', 'billing'],
    ],
  );
  assert.match(v[1]!.why, /Completed: counter 2, rows 1/);
});

// chaos42: the Resolver applied a PendingHandoffResponse and a DeferralResponse between the rows read and the
// counters read. Read once, the rows still show the request copies and the counters already moved.
const E3A = 'InvoiceIssued-a~parked~replayed';
const E3B = 'InvoiceIssued-b~parked~replayed';
const copyRow = (eventId: string, lastMessageId: string) =>
  row({ eventId, endpointId: 'erp', sessionId: 'C7', status: 'Pending', messageType: 'EventRequest', lastMessageId, updatedAt: '2026-12-03T09:59:00.000Z' });
const answered = [
  row({ eventId: 'a', endpointId: 'erp', sessionId: 'C7', status: 'Pending', subStatus: 'Handoff', messageType: 'PendingHandoffResponse', lastMessageId: 'Ra', parentMessageId: E3A, expectedBy: '2026-12-03T10:00:30.000Z' }),
  row({ eventId: 'b', endpointId: 'erp', sessionId: 'C7', status: 'Deferred', messageType: 'DeferralResponse', lastMessageId: 'Rb', parentMessageId: E3B }),
];
const answers = new Map([
  ['a', [request('erp', 'a', E3A), { ...request('erp', 'a', 'Ra'), messageType: 'PendingHandoffResponse', sessionId: 'C7', parentMessageId: E3A } as HistoryEntry]],
  ['b', [request('erp', 'b', E3B), { ...request('erp', 'b', 'Rb'), messageType: 'DeferralResponse', sessionId: 'C7', parentMessageId: E3B } as HistoryEntry]],
]);
for (const entries of answers.values()) for (const h of entries) h.sessionId = 'C7';
const movedCounters = new Map([['erp', { Handoff: 1, Deferred: 1 }]]);

test('evidence read while the Resolver applies two answers is read again until rows and counters are one moment', async () => {
  const reads = [
    { rows: [copyRow('a', E3A), copyRow('b', E3B)], counters: movedCounters }, // the chaos42 read
    { rows: answered, counters: movedCounters },
    { rows: answered, counters: movedCounters },
  ];
  let n = 0;
  const { evidence: read, moved } = await readStableEvidence(async () => reads[Math.min(n++, reads.length - 1)]!, { pauseMs: 0 });
  assert.deepEqual(moved, []);
  const v = checkChaosInvariants(evidence(read.rows, { counters: read.counters, history: answers }));
  assert.deepEqual(v.filter((x) => x.invariant === 'counters'), [], 'no counters violation from a torn read');
});

test('a Pending row whose own history holds the answer to the message it shows is reported as not applied, not stranded', () => {
  const v = checkChaosInvariants(evidence([copyRow('a', E3A), copyRow('b', E3B)], { history: answers }));
  assert.deepEqual(v.map((x) => [x.invariant, x.eventId]), [['applied', 'a'], ['applied', 'b']]);
  assert.match(v[0]!.why, /holds PendingHandoffResponse Ra answering it: recorded, not applied/);
  assert.doesNotMatch(v[0]!.why, /nothing will move it/);
});
