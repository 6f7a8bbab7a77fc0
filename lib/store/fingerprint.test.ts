// The normalisation table: real failure texts from the demo (demo/endpoints.ts, the SDK's settlements) and the
// specification, and what each becomes. Two texts that differ only in their variable parts must land in one group;
// texts naming different causes must not.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fingerprintOf, normaliseErrorText } from './fingerprint.ts';

const TABLE: Array<[string, string]> = [
  // demo: billing's credit check (CreditApprovalRequiredError)
  [
    'Order ORD-1042: invoice total 1548.00 EUR exceeds the credit limit of 1000.00 for CUST-17; approve the credit and resubmit',
    'Order <id>: invoice total <amount> EUR exceeds the credit limit of <amount> for <id>; approve the credit and resubmit',
  ],
  // demo: the CRM's throttling (CrmUnavailableError)
  [
    'CRM API answered 503 Service Unavailable (rate limit) while adding order ORD-7',
    'CRM API answered <n> Service Unavailable (rate limit) while adding order <id>',
  ],
  // demo: the ledger import's event without coordinates
  ['invoice INV-2026-0001 arrived without EventId or SessionId', 'invoice <id> arrived without EventId or SessionId'],
  // SDK: no handler (a permanent failure)
  ["no handler for 'CustomerUpdated'", "no handler for '<value>'"],
  // SDK: a blocked session (specification: SessionBlockedException)
  [
    'Session CUST-9 is blocked by event 3f2504e0-4f89-11d3-9a0c-0305e82c3301 since 2026-12-03T09:31:46.123Z',
    'Session <id> is blocked by event <guid> since <date>',
  ],
  // specification: a handoff failed by the external system, with a clock time and a quoted value
  [
    'Ledger rejected job LEDGER-INV-55: account "4711-ACME" closed at 10:00',
    'Ledger rejected job <id>: account "<value>" closed at <time>',
  ],
  // amounts with thousands separators, hex ids, URLs
  [
    'Payment of 12,500.75 refused by https://psp.example.com/v2/charges/ch_123?x=1 (trace 9f86d081884c7d659a2feaa0)',
    'Payment of <amount> refused by https://psp.example.com/<path> (trace <hex>)',
  ],
  // whitespace collapsed
  ['  timeout after   30000 ms\n while  calling ERP ', 'timeout after <n> ms while calling ERP'],
  // a text with nothing variable stays as it is
  ['The CRM is in maintenance', 'The CRM is in maintenance'],
];

describe('normaliseErrorText', () => {
  for (const [input, expected] of TABLE) {
    test(JSON.stringify(input.slice(0, 60)), () => assert.equal(normaliseErrorText(input), expected));
  }

  test('long texts are cut to 300 characters', () => {
    assert.equal(normaliseErrorText('x'.repeat(1000)).length, 300);
  });
});

const row = (status: string, over: Partial<Parameters<typeof fingerprintOf>[0]> = {}) => ({
  status,
  errorType: null,
  errorText: null,
  deadLetterReason: null,
  deadLetterErrorDescription: null,
  eventTypeId: null,
  ...over,
});

describe('fingerprintOf', () => {
  test('only Failed, DeadLettered and Unsupported rows have one', () => {
    for (const s of ['Completed', 'Pending', 'Deferred', 'Skipped']) assert.equal(fingerprintOf(row(s, { errorText: 'x' })), null);
    for (const s of ['Failed', 'DeadLettered', 'Unsupported']) assert.notEqual(fingerprintOf(row(s)), null);
  });

  test('the same cause on different orders, customers and amounts is one group', () => {
    const a = fingerprintOf(row('Failed', { errorType: 'CreditApprovalRequiredError', errorText: TABLE[0]![0] }));
    const b = fingerprintOf(
      row('Failed', {
        errorType: 'CreditApprovalRequiredError',
        errorText: 'Order ORD-9: invoice total 903.50 EUR exceeds the credit limit of 1000.00 for CUST-3; approve the credit and resubmit',
      }),
    );
    assert.equal(a!.groupId, b!.groupId);
    assert.equal(a!.title, TABLE[0]![1]);
  });

  test('the error type is part of the key', () => {
    const a = fingerprintOf(row('Failed', { errorType: 'A', errorText: 'boom' }));
    const b = fingerprintOf(row('Failed', { errorType: 'B', errorText: 'boom' }));
    assert.notEqual(a!.groupId, b!.groupId);
  });

  test('a dead letter falls back to its description and reason', () => {
    const fp = fingerprintOf(row('DeadLettered', { deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'Message could not be consumed after 10 delivery attempts.' }));
    assert.equal(fp!.title, 'Message could not be consumed after <n> delivery attempts.');
    assert.equal(fp!.errorType, 'DeadLettered');
  });

  // The row's own ids without digits: before, each event's text kept its id and made a group of its own.
  const OWN_IDS: Array<[string, string, string, string]> = [
    // [eventId, sessionId, errorText, title]
    ['wh-bare', 'sess-x', 'Warehouse rejected wh-bare: bin full', 'Warehouse rejected <id>: bin full'],
    ['wh-bare', 'sess-x', 'session sess-x blocked by wh-bare.', 'session <id> blocked by <id>.'],
    // Whole tokens only: a longer token that contains the id is not the id.
    ['bare', 'sess-x', 'wh-bare and bare_ness but bare!', 'wh-bare and bare_ness but <id>!'],
    // Regex characters in an id are literal.
    ['a.b+c', 'sess-x', 'event a.b+c failed, aXb+c not', 'event <id> failed, aXb+c not'],
    // Ids the rules normalise keep their old placeholder (existing group ids do not move).
    ['ORD-1042', 'CUST-17', 'Order ORD-1042 of CUST-17', 'Order <id> of <id>'],
    ['3f2504e0-4f89-11d3-9a0c-0305e82c3301', 'sess-x', 'event 3f2504e0-4f89-11d3-9a0c-0305e82c3301 failed', 'event <guid> failed'],
    // Too short to tell from a word.
    ['ab', 'sess-x', 'ab failed', 'ab failed'],
  ];
  for (const [eventId, sessionId, errorText, title] of OWN_IDS) {
    test(`own ids: ${JSON.stringify(errorText)}`, () => {
      assert.equal(fingerprintOf(row('Failed', { errorType: 'E', errorText, eventId, sessionId }))!.title, title);
    });
  }

  test("an error naming the row's own id is one group, with or without digits in the id", () => {
    const ofEvent = (eventId: string) =>
      fingerprintOf(row('Failed', { errorType: 'WarehouseError', errorText: `Warehouse rejected ${eventId}: bin full`, eventId, sessionId: 's1' }))!.groupId;
    assert.equal(ofEvent('wh-bare'), ofEvent('wh-0'));
  });

  test('a row without ids still fingerprints (callers that lack them)', () => {
    assert.equal(fingerprintOf(row('Failed', { errorType: 'E', errorText: 'wh-bare failed' }))!.title, 'wh-bare failed');
  });

  test('Unsupported rows group by event type', () => {
    const a = fingerprintOf(row('Unsupported', { eventTypeId: 'CustomerUpdated' }));
    const b = fingerprintOf(row('Unsupported', { eventTypeId: 'OrderPlaced' }));
    assert.equal(a!.title, 'no handler for event type CustomerUpdated');
    assert.notEqual(a!.groupId, b!.groupId);
  });
});
